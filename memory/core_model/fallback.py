"""The core model's distiller while today's core-model tokens last, the rule distiller after.

Past `core_model_daily_tokens` the core model refuses every call (CoreModelCapped): the
session is then distilled by the rules instead of waiting for tomorrow or spending its
retry attempts, and its distillation says why (`fallback`), so the write path can report
and count it.
"""

from __future__ import annotations

import dataclasses

from mnemoproxy.errors import CoreModelCapped
from mnemoproxy.memory.distill.protocol import Distiller
from mnemoproxy.memory.models import Distillation, SessionInput

FALLBACK_REASON = "core_model_daily_tokens reached: distilled by the rule-based distiller"


class CapFallbackDistiller:
    """Implements `Distiller`: `primary` (the LLM distiller), or `fallback` (the rules) once
    the core model is capped for the day."""

    def __init__(self, primary: Distiller, fallback: Distiller) -> None:
        self._primary = primary
        self._fallback = fallback

    async def distill(self, session: SessionInput) -> Distillation:
        try:
            return await self._primary.distill(session)
        except CoreModelCapped:
            distillation = await self._fallback.distill(session)
            return dataclasses.replace(distillation, fallback=FALLBACK_REASON)

"""The distiller contract: what a distiller does (the core model it may be given is
memory/core_model/client.py's)."""

from __future__ import annotations

from typing import Protocol

from mnemoproxy.memory.models import Distillation, SessionInput


class Distiller(Protocol):
    """Turns one session's turns into an episode, pinned facts and identity facts."""

    async def distill(self, session: SessionInput) -> Distillation: ...

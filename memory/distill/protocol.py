"""The distiller contracts: what a distiller does, and the core-model client it is given.

The LLM distiller never imports HTTP code: the proxy's upstream client implements
`CoreModel` and is injected, so `memory` stays below `proxy` in the layering.
"""

from __future__ import annotations

from typing import Any, Protocol

from mnemoproxy.memory.models import Distillation, SessionInput


class Distiller(Protocol):
    """Turns one session's turns into an episode, pinned facts and identity facts."""

    async def distill(self, session: SessionInput) -> Distillation: ...


class CoreModel(Protocol):
    """One chat completion against the core model.

    `json_schema` is a bare JSON Schema object (the shape of the expected reply); the client
    wraps it into the wire format it speaks (e.g. OpenAI's
    `response_format={"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`).
    Returns the assistant text; raises `UpstreamError` or `UpstreamTimeout` on failure.
    """

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
    ) -> str: ...


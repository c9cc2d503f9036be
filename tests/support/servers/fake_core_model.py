"""A core model for tests that answers from a script, in memory (no server)."""

from __future__ import annotations

import asyncio
from typing import Any

from mnemoproxy.memory.core_model.client import Completion


class FakeCoreModel:
    """Records every call and answers from a script: a reply text, a Completion (e.g. one cut
    off by max_tokens), or an exception to raise."""

    def __init__(self, *script: str | Completion | Exception, delay: float = 0.0):
        self.script = list(script)
        self.delay = delay
        self.calls: list[dict[str, Any]] = []

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        self.calls.append(
            {
                "messages": messages,
                "json_schema": json_schema,
                "timeout": timeout,
                "max_tokens": max_tokens,
            }
        )
        if self.delay:
            await asyncio.sleep(self.delay)
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer if isinstance(answer, Completion) else Completion(answer)

    @property
    def prompt(self) -> str:
        return "\n".join(message["content"] for message in self.calls[-1]["messages"])


# A distillation a core model might answer for a session where Lena introduces herself.
LENA_DISTILLATION = {
    "episode": {
        "summary": "Lena said hello.",
        "topics": [],
        "entities": [],
        "decisions": [],
        "action_items": [],
        "salience": 0.4,
    },
    "pinned_candidates": [],
    "identity_facts": ["User's name is Lena"],
}

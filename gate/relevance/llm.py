"""Mode "llm": the core model classifies the message in one tiny call.

Any failure (error, timeout, an answer that is not one of the sections) falls back to
the heuristic gate, so the chat never waits long or breaks because of the classifier.
"""

from __future__ import annotations

import asyncio
import json
import logging

from mnemoproxy.gate.relevance.scan import scan_window
from mnemoproxy.gate.relevance.types import (
    SECTIONS,
    CoreModel,
    Gate,
    GateContext,
    GateDecision,
    Section,
)

log = logging.getLogger(__name__)

MAX_ENTITIES_IN_PROMPT = 30

SYSTEM_PROMPT = """\
You route a chat message to the part of the user's long-term memory it needs.
Answer with one of these words (as {"section": "<word>"} when JSON is required):
identity - the user asks who they are: their name, age, home, job.
pinned - their preferences, standing facts or decisions ("my favourite", "am I allergic").
episode - an earlier conversation or past event ("last week", "remember when", a known name).
transcript - their own exact earlier words ("what did I say", "quote me").
none - anything answerable without memory (general knowledge, a task on the text given).
"""

ANSWER_SCHEMA: dict = {
    "type": "object",
    "properties": {"section": {"type": "string", "enum": list(SECTIONS)}},
    "required": ["section"],
    "additionalProperties": False,
}


def parse_section(answer: str) -> Section | None:
    """The section named by the model's answer: a bare word or {"section": ...}."""
    text = answer.strip()
    if text.startswith("{"):
        try:
            text = str(json.loads(text).get("section", ""))
        except (ValueError, AttributeError):
            return None
    word = text.strip().strip("\"'`.").lower()
    for section in SECTIONS:
        if word == section:
            return section
    return None


class LLMGate:
    def __init__(self, core: CoreModel, fallback: Gate, timeout: float = 1.5):
        self._core = core
        self._fallback = fallback
        self.timeout = timeout

    async def decide(self, message: str, context: GateContext) -> GateDecision:
        try:
            async with asyncio.timeout(self.timeout):
                completion = await self._core.complete(
                    self._prompt(message, context),
                    json_schema=ANSWER_SCHEMA,
                    timeout=self.timeout,
                    max_tokens=12,
                )
        except TimeoutError:
            return await self._fall_back(message, context, "timeout")
        except Exception as exc:  # the classifier is optional; the chat is not
            log.warning("llm relevance gate failed, using the heuristic: %r", exc)
            return await self._fall_back(message, context, type(exc).__name__)
        answer = completion.text
        section = parse_section(answer)
        if section is None:
            return await self._fall_back(message, context, f"unknown answer {answer[:40]!r}")
        return GateDecision(section, f"llm: {section}")

    async def _fall_back(self, message: str, context: GateContext, why: str) -> GateDecision:
        decision = await self._fallback.decide(message, context)
        return GateDecision(decision.section, f"llm fallback ({why}): {decision.reason}")

    @staticmethod
    def _prompt(message: str, context: GateContext) -> list[dict]:
        system = SYSTEM_PROMPT
        names = list(context.known_entities)[:MAX_ENTITIES_IN_PROMPT]
        if names:
            system += f"Names the memory knows: {', '.join(names)}.\n"
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": scan_window(message)},
        ]

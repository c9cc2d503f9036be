"""Mode "llm": the heuristic decides, and the core model arbitrates where it is unsure.

Asked to route every message, a small core model did worse than the heuristic ("write a
haiku about autumn" -> preferences, "what is 2+2?" -> identity). So the model is asked
one yes/no question, and only about the heuristic's unsure injections (medium or low
confidence): whether answering needs what memory holds of the user. It can withhold
such a block, never add one where the heuristic saw no reason, and never widen one.
Anything else (an error, a timeout, an answer that is not yes or no) leaves the
heuristic's decision as it was, so the chat never waits long or breaks for the model.
Past `core_model_daily_tokens` the model is not asked at all: the heuristic decides alone,
as in mode heuristic, until the UTC day ends (memory logs that once).
"""

from __future__ import annotations

import asyncio
import json
import logging

from mnemoproxy.errors import CoreModelCapped
from mnemoproxy.gate.relevance.heuristic import HeuristicGate
from mnemoproxy.gate.relevance.scan import scan_window
from mnemoproxy.gate.relevance.types import CoreModel, GateContext, GateDecision

log = logging.getLogger(__name__)

MAX_ENTITIES_IN_PROMPT = 30
# The answer is one JSON boolean; a few tokens more than it needs, never a runaway.
MAX_ANSWER_TOKENS = 12

SYSTEM_PROMPT = """\
You decide whether replying to a user's chat message needs what an assistant remembers
about this user from earlier conversations: their life, plans, preferences, people and
things they mentioned before. General knowledge, tasks on the text given, and small talk
do not need it. Answer {"needs_memory": true} or {"needs_memory": false}.
"""

ANSWER_SCHEMA: dict = {
    "type": "object",
    "properties": {"needs_memory": {"type": "boolean"}},
    "required": ["needs_memory"],
    "additionalProperties": False,
}


def parse_answer(answer: str) -> bool | None:
    """The model's yes or no: {"needs_memory": bool}, or a bare true/false/yes/no."""
    text = answer.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text).get("needs_memory")
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, bool) else None
    word = text.strip("\"'`. \n").lower()
    return {"true": True, "yes": True, "false": False, "no": False}.get(word)


class LLMGate:
    """timeout: seconds the model may take; the read path gives it half the chat's memory
    read deadline, so that the rest of the read still fits."""

    def __init__(self, core: CoreModel, heuristic: HeuristicGate, timeout: float = 1.0):
        self._core = core
        self._heuristic = heuristic
        self.timeout = timeout

    async def decide(self, message: str, context: GateContext) -> GateDecision:
        decision = await self._heuristic.decide(message, context)
        if not decision.inject or decision.confidence == "high":
            return decision
        try:
            async with asyncio.timeout(self.timeout):
                completion = await self._core.complete(
                    self._prompt(message, context),
                    json_schema=ANSWER_SCHEMA,
                    timeout=self.timeout,
                    max_tokens=MAX_ANSWER_TOKENS,
                )
        except TimeoutError:
            return self._unanswered(decision, "timeout")
        except CoreModelCapped:
            return self._unanswered(decision, "core_model_daily_tokens reached")
        except Exception as exc:  # the arbiter is optional; the chat is not
            log.warning("llm relevance gate failed, keeping the heuristic's decision: %r", exc)
            return self._unanswered(decision, type(exc).__name__)
        needs_memory = parse_answer(completion.text)
        if needs_memory is None:
            return self._unanswered(decision, f"unknown answer {completion.text[:40]!r}")
        if not needs_memory:
            return GateDecision("none", f"llm: memory not needed ({decision.reason})")
        return GateDecision(
            decision.section, f"llm: memory needed ({decision.reason})", decision.confidence
        )

    @staticmethod
    def _unanswered(decision: GateDecision, why: str) -> GateDecision:
        return GateDecision(
            decision.section, f"llm unanswered ({why}): {decision.reason}", decision.confidence
        )

    @staticmethod
    def _prompt(message: str, context: GateContext) -> list[dict]:
        system = SYSTEM_PROMPT
        names = list(context.known_entities)[:MAX_ENTITIES_IN_PROMPT]
        if names:
            system += f"Names this user's memory knows: {', '.join(names)}.\n"
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": scan_window(message)},
        ]

"""The relevance gate: from the latest user message, which memory is worth injecting.

Injecting memory into an unrelated prompt is noise the model may act on; missing memory
the user plainly refers to is a wrong answer. Three modes:

    off        AlwaysGate     always inject; the lexical rules only pick the section
    heuristic  HeuristicGate  lexical rules, then known entities, then a retrieval probe
    llm        LLMGate        one short classification call, the heuristic as fallback

Only the latest user message's text is given (the caller extracts it from multimodal
parts); long messages are scanned at the head and tail only (see relevance/scan.py).
"""

from __future__ import annotations

import asyncio
import logging

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import SettingError
from mnemoproxy.gate.relevance.llm import LLMGate
from mnemoproxy.gate.relevance.scan import Cues, scan_window, shared_scanner
from mnemoproxy.gate.relevance.types import (
    SECTIONS,
    CoreModel,
    Gate,
    GateContext,
    GateDecision,
    Probe,
    Section,
)

__all__ = [
    "SECTIONS",
    "AlwaysGate",
    "CoreModel",
    "Gate",
    "GateContext",
    "GateDecision",
    "HeuristicGate",
    "LLMGate",
    "Section",
    "make_gate",
]

log = logging.getLogger(__name__)

NO_CUE = GateDecision("none", "no memory cue")

# (cue label, section, reason prefix) in priority order: the first label found wins.
RULES: tuple[tuple[str, Section, str], ...] = (
    ("identity", "identity", "identity question"),
    ("transcript", "transcript", "verbatim recall"),
    ("episode", "episode", "earlier conversation"),
    ("calendar", "episode", "time reference"),
    ("recall", "episode", "recall request"),
    ("preference", "pinned", "preference or decision"),
)


def _rule_matches(cues: Cues) -> dict[str, str]:
    """The cue matches that count, after the rules that combine or condition them."""
    matches = dict(cues.matches)
    if "verbatim" in matches and "my_speech" in matches:
        matches.setdefault("transcript", matches["verbatim"])
    # A date or a preference mentioned in passing ("last week I went hiking", "my favourite
    # band is on tonight") tells memory something; only asked about does it need memory.
    asks = cues.is_question or cues.is_request
    if not (asks and (cues.first_person or cues.second_person)):
        matches.pop("calendar", None)
    if not asks:
        matches.pop("preference", None)
    return matches


def lexical_decision(cues: Cues) -> GateDecision | None:
    """The decision the lexical rules and known entities make, or None when silent."""
    matches = _rule_matches(cues)
    for label, section, prefix in RULES:
        found = matches.get(label)
        if found is None:
            continue
        if label == "recall" and "preference_word" in matches:
            return GateDecision("pinned", f"recall request about preferences: '{found}'")
        return GateDecision(section, f"{prefix}: '{found}'")
    if cues.possessive is not None and (cues.is_question or cues.is_request):
        return GateDecision("pinned", f"possessive: '{cues.possessive}'")
    if cues.entity is not None:
        return GateDecision("episode", f"known entity: '{cues.entity}'")
    return None


class HeuristicGate:
    """Lexical rules first; for a question they miss, a retrieval probe.

    probe_threshold: the probe strength (best cosine similarity among the top hybrid
    results) from which memory is injected. It depends on the embedder: the default
    `gate_probe_threshold` setting was calibrated for wordllama on LoCoMo questions
    against general-knowledge prompts (see README, Evaluation).
    probe_timeout: seconds the probe may take before the gate gives up and injects
    nothing, so that a slow store never holds up a chat.
    """

    def __init__(
        self,
        probe_threshold: float = Settings.gate_probe_threshold,
        probe_timeout: float = 0.5,
    ):
        if not 0.0 <= probe_threshold <= 1.0:
            raise SettingError(f"probe_threshold must be within [0, 1], got {probe_threshold}")
        self.probe_threshold = probe_threshold
        self.probe_timeout = probe_timeout

    def lexical(self, message: str, context: GateContext) -> GateDecision | None:
        return lexical_decision(shared_scanner().scan(message, context.known_entities))

    async def decide(self, message: str, context: GateContext) -> GateDecision:
        cues = shared_scanner().scan(message, context.known_entities)
        decision = lexical_decision(cues)
        if decision is not None:
            return decision
        # Questions about people and events ("When did Caroline move?") deserve memory as
        # much as first-person ones when the store holds strong evidence for them.
        if context.probe is not None and cues.is_question:
            return await self._probe(scan_window(message), context.probe)
        return NO_CUE

    async def _probe(self, text: str, probe: Probe) -> GateDecision:
        try:
            async with asyncio.timeout(self.probe_timeout):
                strength = await probe(text)
        except Exception as exc:  # a failing probe must not fail the chat
            log.warning("relevance probe failed, injecting nothing: %r", exc)
            return GateDecision("none", f"probe failed: {type(exc).__name__}")
        if strength >= self.probe_threshold:
            return GateDecision("episode", f"probe: strong evidence {strength:.2f}")
        return GateDecision("none", f"probe: weak evidence {strength:.2f}")


class AlwaysGate:
    """Mode "off": every request gets memory; the lexical rules still choose which part,
    episodes when they are silent."""

    def __init__(self, heuristic: HeuristicGate | None = None):
        self._heuristic = heuristic or HeuristicGate()

    async def decide(self, message: str, context: GateContext) -> GateDecision:
        decision = self._heuristic.lexical(message, context)
        if decision is None:
            return GateDecision("episode", "gate off: always inject")
        return GateDecision(decision.section, f"gate off: {decision.reason}")


def make_gate(
    mode: str,
    *,
    core: CoreModel | None = None,
    probe_threshold: float = Settings.gate_probe_threshold,
) -> Gate:
    """The gate for the `relevance_gate_mode` setting."""
    if mode == "off":
        return AlwaysGate()
    if mode == "heuristic":
        return HeuristicGate(probe_threshold)
    if mode == "llm":
        if core is None:
            raise SettingError(
                "relevance_gate_mode 'llm' needs the core model client; pass core=..., "
                "or set relevance_gate_mode to 'heuristic'"
            )
        return LLMGate(core, HeuristicGate(probe_threshold))
    raise SettingError(
        f"unknown relevance_gate_mode {mode!r}: use one of off, heuristic, llm",
        param="relevance_gate_mode",
    )

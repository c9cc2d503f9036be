"""The relevance gate: from the latest user message, which memory is worth injecting.

Injecting memory into an unrelated prompt is noise the model may act on; missing memory
the user plainly refers to is a wrong answer. Three modes:

    off        AlwaysGate     always inject; the lexical rules only pick the section
    heuristic  HeuristicGate  cues in the message, weighed with retrieval evidence
    llm        LLMGate        the heuristic, with the core model arbitrating its unsure blocks

    relevance/
    ├── types.py      the contract: decision, context, evidence
    ├── cues.py       spaCy token patterns and word lists
    ├── personal.py   does a message speak of the user's own life, or set a task?
    ├── scan.py       runs both over a message
    ├── heuristic.py  the heuristic gate (and mode off)
    ├── reference.py  requests anyone might send: the evidence's yardstick
    ├── asking.py     does a message only ask (nothing of the user's own in it)?
    ├── thread.py     does a follow-up point back into its own conversation?
    └── llm.py        the LLM gate (an arbiter over the heuristic)

The latest user message's text is what is read (the caller extracts it from multimodal
parts), with the conversation before it as context (GateContext.thread); long messages
are scanned at the head and tail only (see relevance/scan.py).
"""

from __future__ import annotations

from mnemoproxy.errors import SettingError
from mnemoproxy.gate.relevance.heuristic import AlwaysGate, HeuristicGate, lexical_decision
from mnemoproxy.gate.relevance.llm import LLMGate
from mnemoproxy.gate.relevance.reference import (
    REFERENCE_LANGUAGES,
    REFERENCE_PROMPTS,
    reference_prompts,
)
from mnemoproxy.gate.relevance.types import (
    SECTIONS,
    Confidence,
    CoreModel,
    Evidence,
    Gate,
    GateContext,
    GateDecision,
    Probe,
    Section,
)

__all__ = [
    "REFERENCE_LANGUAGES",
    "REFERENCE_PROMPTS",
    "SECTIONS",
    "AlwaysGate",
    "Confidence",
    "CoreModel",
    "Evidence",
    "Gate",
    "GateContext",
    "GateDecision",
    "HeuristicGate",
    "LLMGate",
    "Probe",
    "Section",
    "lexical_decision",
    "make_gate",
    "reference_prompts",
]


def make_gate(mode: str, *, core: CoreModel | None = None, read_deadline: float = 2.0) -> Gate:
    """The gate for the `relevance_gate_mode` setting, within a read of `read_deadline`
    seconds: the retrieval probe may take a quarter of it and mode llm's call to the core
    model half, so that the search and the block still fit after either."""
    probe = HeuristicGate(probe_timeout=read_deadline / 4)
    if mode == "off":
        return AlwaysGate()
    if mode == "heuristic":
        return probe
    if mode == "llm":
        if core is None:
            raise SettingError(
                "relevance_gate_mode 'llm' needs the core model client; pass core=..., "
                "or set relevance_gate_mode to 'heuristic'"
            )
        return LLMGate(core, probe, timeout=read_deadline / 2)
    raise SettingError(
        f"unknown relevance_gate_mode {mode!r}: use one of off, heuristic, llm",
        param="relevance_gate_mode",
    )

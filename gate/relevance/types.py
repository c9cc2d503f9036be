"""The relevance gate's contract: what it is asked, what it answers.

Kept apart from the gates themselves so the heuristic, the LLM gate and their callers
share one vocabulary without importing each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from mnemoproxy.memory import CoreModel, Kind

__all__ = ["SECTIONS", "CoreModel", "Gate", "GateContext", "GateDecision", "Probe", "Section"]

# A section is the kind of memory a message needs, or none.
Section = Literal[Kind, "none"]
SECTIONS: tuple[Section, ...] = get_args(Section)

Probe = Callable[[str], Awaitable[float]]


@dataclass(frozen=True)
class GateDecision:
    """Which part of memory to inject, and a short human-readable why (for logs and the
    X-Memory-Section header's debugging)."""

    section: Section
    reason: str

    @property
    def inject(self) -> bool:
        return self.section != "none"


@dataclass
class GateContext:
    """What the gate may use besides the message.

    known_entities: names the agent's memory knows (people, pets, projects); a mention
    is a memory cue. probe: a cheap retrieval returning the best normalised hybrid score
    in [0, 1] for a text; None when the caller has no store to ask.
    """

    known_entities: Sequence[str] = ()
    probe: Probe | None = None


class Gate(Protocol):
    async def decide(self, message: str, context: GateContext) -> GateDecision: ...

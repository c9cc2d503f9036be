"""Plain data that crosses module boundaries inside memory/ and up to gate/."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

# The kinds of memory: one vocabulary for search, the gate's sections and the block.
Kind = Literal["identity", "pinned", "episode", "transcript", "document"]
KINDS: tuple[Kind, ...] = get_args(Kind)
FactKind = Literal["pinned", "identity"]
# The words the HTTP API's `scope` accepts, and the kinds each one searches: "pinned" is
# every fact (identity facts included), "episodes" the plural the API has always taken.
SCOPES: dict[str, tuple[Kind, ...]] = {
    "pinned": ("identity", "pinned"),
    "identity": ("identity",),
    "episodes": ("episode",),
    "episode": ("episode",),
    "transcript": ("transcript",),
    "documents": ("document",),
}
# What storing something sent again did (a conversation ingested, a document uploaded):
# stored as new, added to or replacing what memory held ("updated"), or nothing at all.
Change = Literal["new", "updated", "unchanged"]


@dataclass(frozen=True)
class Turn:
    """One exchange: the user's text and the assistant's reply, with when it happened.
    `restates_memory`: the user only asked, and memory was injected to answer: the turn
    says again what memory holds, and is not served as memory itself."""

    user: str
    assistant: str
    at: datetime | None = None
    restates_memory: bool = False


# The index of a turn stored after whatever its session already holds (a client that sends
# one message at a time carries no history to number its turns by).
NEXT_TURN = -1


@dataclass
class ProcedureDraft:
    """A way of doing something the session showed: the user teaching it, or the assistant
    carrying it out. `name` is what it does ("deploy the app"), `applies_when` when it is
    the way to go, `steps` in order."""

    name: str
    steps: list[str]
    applies_when: str = ""


@dataclass
class EpisodeDraft:
    summary: str
    topics: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    action_items: list[str] = field(default_factory=list)
    salience: float = 0.5
    # The procedures the session taught: stored in their own table (not part of the
    # episode's text), written in the distillation's transaction. An episode with an empty
    # summary carries procedures alone.
    procedures: list[ProcedureDraft] = field(default_factory=list)


@dataclass
class FactDraft:
    """A fact a distiller proposes. `slot` names what the fact is about ("identity:location",
    "preference:drink"); a new fact in an occupied slot with other content supersedes the
    old one, while the same content merges into it."""

    content: str
    kind: FactKind = "pinned"
    salience: float = 0.5
    tags: list[str] = field(default_factory=list)
    slot: str | None = None
    # Where the session said it: positions in the distilled SessionInput's turns (0 is the
    # first). Empty when the distiller did not say.
    source_turns: tuple[int, ...] = ()


@dataclass
class Distillation:
    episode: EpisodeDraft | None = None
    pinned: list[FactDraft] = field(default_factory=list)
    identity: list[FactDraft] = field(default_factory=list)
    # Facts the distiller proposed that the user's words did not support (dropped).
    ungrounded: int = 0
    # Why another distiller than the configured one wrote this (the core model was capped).
    fallback: str | None = None

    @property
    def empty(self) -> bool:
        return self.episode is None and not self.pinned and not self.identity

    @property
    def procedures(self) -> list[ProcedureDraft]:
        return self.episode.procedures if self.episode is not None else []


@dataclass
class SessionInput:
    """What a distiller sees: one session's turns plus the agent's context for continuity."""

    agent_id: str
    session_id: str
    turns: list[Turn]
    session_date: datetime | None = None
    known_identity: list[str] = field(default_factory=list)
    recent_episodes: list[str] = field(default_factory=list)

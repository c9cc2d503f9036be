"""Deciding what a newly distilled fact does to the facts already known.

- the same fact again (same words, or nearly)  -> merge: source_count + 1
- another value in the same slot ("User lives in Paris" after "... Berlin") -> supersede
- anything else -> insert

Pure functions: the store applies the actions in one write transaction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from mnemoproxy.memory.models import FactDraft

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Restatements of one fact differ by a word or two ("User likes green tea" / "User really
# likes green tea"); distinct facts rarely share this many of their words.
NEAR_DUPLICATE_JACCARD = 0.8


@dataclass(frozen=True)
class KnownFact:
    id: int
    kind: str
    slot: str | None
    content: str
    since: float = 0.0  # when the statement it records was made (valid_from)


@dataclass(frozen=True)
class FactAction:
    action: Literal["insert", "merge", "supersede"]
    draft: FactDraft
    existing_id: int | None = None


def normalise(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _jaccard(a: str, b: str) -> float:
    left, right = set(a.split()), set(b.split())
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def plan_fact_updates(
    drafts: Sequence[FactDraft],
    known: Sequence[KnownFact],
    slot_of: Callable[[str], str | None] | None = None,
) -> list[FactAction]:
    """One action per distinct draft. `slot_of` fills in the slot of drafts that came
    without one (the LLM distiller's), so supersession works for every distiller."""
    current = list(known)
    actions: list[FactAction | None] = []
    seen: set[str] = set()
    for draft in drafts:
        norm = normalise(draft.content)
        if not norm or norm in seen:
            continue
        seen.add(norm)
        if draft.slot is None and slot_of is not None:
            draft.slot = slot_of(draft.content)
        action = _decide(draft, norm, current)
        target = action.existing_id
        if target is not None and target < 0:
            # The match is a fact proposed earlier in this same batch: a restatement adds
            # nothing, and a change of mind within one session keeps only the last word.
            if action.action == "merge":
                continue
            earlier = actions[-target - 1]
            assert earlier is not None
            actions[-target - 1] = None
            current = [f for f in current if f.id != target]
            action = FactAction(earlier.action, draft, earlier.existing_id)
        actions.append(action)
        local_id = -len(actions)
        if action.action == "supersede":
            current = [f for f in current if f.id != target]
        if action.action in ("insert", "supersede"):
            current.append(KnownFact(local_id, draft.kind, draft.slot, draft.content))
    return [a for a in actions if a is not None]


def _decide(draft: FactDraft, norm: str, current: Sequence[KnownFact]) -> FactAction:
    same_kind = [f for f in current if f.kind == draft.kind]
    for fact in same_kind:
        other = normalise(fact.content)
        if other == norm or _jaccard(other, norm) >= NEAR_DUPLICATE_JACCARD:
            return FactAction("merge", draft, fact.id)
    if draft.slot:
        for fact in same_kind:
            if fact.slot == draft.slot:
                return FactAction("supersede", draft, fact.id)
    return FactAction("insert", draft)

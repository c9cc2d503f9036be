"""The offline distiller: when no core model is configured, sessions are distilled by
spaCy patterns over a blank English pipeline, so memory still works without a model.

Only the user's words yield facts about the user; the assistant's replies feed the
episode's topics. Procedures (rules/procedures.py) come from either side: the user teaching
one, or the assistant's steps in answer to a how-to question. Public surface:

- `RuleDistiller().distill(session)`: the Distiller protocol (`start()` readies its
  process ahead of the first session).
- `extract_facts(text, when=...)`: the facts stated in one user message.
- `slot_of(statement)`: the slot a fact statement occupies, whichever distiller wrote it,
  so the store can tell a restatement (same slot, same content) from a contradiction.
- `assign_slots(drafts)`: `slot_of` for every draft without a slot, in the helper process.

spaCy's pipeline and matchers are not thread-safe, and a 50-turn session takes tens of
milliseconds: the proxy's rule work (sessions, slots of the core model's drafts) runs in
the helper process (memory/background/helper_process.py), one call at a time, beside the proxy
rather than under its GIL and never on the event loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

from mnemoproxy.memory.background.helper_process import HELPER_PROCESS
from mnemoproxy.memory.distill.rules.episode import build_episode
from mnemoproxy.memory.distill.rules.facts import FoundFact, find_facts, slot_for_statement
from mnemoproxy.memory.distill.rules.procedures import find_procedures
from mnemoproxy.memory.models import Distillation, EpisodeDraft, FactDraft, SessionInput, Turn
from mnemoproxy.memory.text.parsing import parse


def _day(moment: datetime | None) -> date | None:
    return moment.date() if moment is not None else None


def extract_facts(text: str, *, when: datetime | None = None) -> list[FactDraft]:
    """The facts the user states in `text`; relative dates in commitments and decisions
    are resolved against `when` (left as said when it is None)."""
    return [found.fact for found in find_facts(parse(text), _day(when))]


def slot_of(fact_text: str) -> str | None:
    """The slot of a statement such as "User lives in Paris" or "I live in Paris"
    ("identity:location"); None when it names no slot the rules know."""
    return slot_for_statement(fact_text)


def slots_of(statements: Sequence[str]) -> list[str | None]:
    return [slot_for_statement(statement) for statement in statements]


def _latest_per_slot(found: list[FoundFact]) -> list[FactDraft]:
    """One fact per slot (the last said wins, as the store would supersede), and one per
    content for facts without a slot."""
    kept: dict[str, FactDraft] = {}
    for fact in (f.fact for f in found):
        key = f"slot:{fact.slot}" if fact.slot else f"content:{fact.content}"
        kept.pop(key, None)
        kept[key] = fact
    return list(kept.values())


def distill_session(session: SessionInput) -> Distillation:
    user_docs, assistant_docs, found = [], [], []
    for position, turn in enumerate(session.turns):
        user_doc = parse(turn.user)
        user_docs.append(user_doc)
        assistant_docs.append(parse(turn.assistant))
        said = find_facts(user_doc, _day(turn.at or session.session_date))
        for f in said:
            f.fact.source_turns = (position,)
        found.extend(said)
    facts = _latest_per_slot(found)
    episode = build_episode(user_docs, assistant_docs, found)
    procedures = find_procedures(session.turns)
    if procedures:
        episode = episode or EpisodeDraft("")
        episode.procedures = procedures
    return Distillation(
        episode=episode,
        pinned=[f for f in facts if f.kind == "pinned"],
        identity=[f for f in facts if f.kind == "identity"],
    )


_WARM_UP = SessionInput("", "", [Turn("I live in Paris and I love tea.", "Noted.")])


class RuleDistiller:
    """A Distiller that needs no model: spaCy rules over the session's words, applied in
    the helper process."""

    def start(self) -> None:
        """Get the rules ready in the helper process now (a second of work: spaCy's
        pipeline and the matchers), so the first session does not wait for it."""
        HELPER_PROCESS.prepare(distill_session, _WARM_UP)

    async def distill(self, session: SessionInput) -> Distillation:
        return await HELPER_PROCESS.run(distill_session, session)


async def assign_slots(drafts: Sequence[FactDraft]) -> None:
    """Fill in the slot of every draft that came without one (the LLM distiller's)."""
    missing = [d for d in drafts if d.slot is None]
    if not missing:
        return
    slots = await HELPER_PROCESS.run(slots_of, [d.content for d in missing])
    for draft, slot in zip(missing, slots, strict=True):
        draft.slot = slot

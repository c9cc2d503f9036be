"""Store SQL for applying one session's distillation: all of it in one write transaction.

The episode, its entities, every fact merged, superseded or added, the identity cap, the
session's signals marked done and the log entry are committed together or not at all: a
crash half-way leaves the signals pending, and the session is distilled again from
scratch, never twice over (a duplicate episode, facts counted twice).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from mnemoproxy.memory.models import EpisodeDraft, FactDraft
from mnemoproxy.memory.store.conversations.sessions import log_event_row, mark_session_distilled_row
from mnemoproxy.memory.store.conversations.turns import set_signal_status_rows
from mnemoproxy.memory.store.db import require_agent
from mnemoproxy.memory.store.knowledge.items import (
    ItemQueries,
    add_fact_source_rows,
    current_fact_rows,
    delete_fact_row,
    insert_episode_row,
    insert_fact_row,
    merge_fact_row,
    supersede_fact_row,
    upsert_entity_rows,
)
from mnemoproxy.memory.store.knowledge.procedures import upsert_procedure_rows
from mnemoproxy.memory.write.facts import FactAction, KnownFact

# Decides, against the agent's current facts, what each new fact does (memory/write/facts.py).
FactPlanner = Callable[[Sequence[FactDraft], Sequence[KnownFact]], list[FactAction]]
DISTILLED_EVENT = "distilled"


@dataclass
class SessionDistillation:
    """What one distillation writes: the session, the signals it consumed, when the session
    happened, its episode and its facts (slots already assigned)."""

    session_id: int
    signal_ids: list[int]
    started_at: float
    ended_at: float
    episode: EpisodeDraft | None
    facts: list[FactDraft]
    # The session turn index of each distilled turn, by its position: a fact's
    # source_turns are positions.
    turn_indexes: list[int] = field(default_factory=list)

    def source_turns(self, fact: FactDraft) -> list[int]:
        return [self.turn_indexes[p] for p in fact.source_turns
                if 0 <= p < len(self.turn_indexes)]


@dataclass
class AppliedDistillation:
    episode_id: int | None = None
    facts_added: int = 0
    facts_merged: int = 0
    facts_superseded: int = 0
    facts_historical: int = 0  # older than the current value they contradict: kept as history
    identity_facts: int = 0


class DistillationQueries(ItemQueries):
    async def apply_distillation(
        self,
        agent_id: str,
        distillation: SessionDistillation,
        *,
        plan_facts: FactPlanner,
        identity_max: int,
        log_detail: dict[str, Any] | None = None,
    ) -> AppliedDistillation | None:
        """Write `distillation` in one transaction and log it (with `log_detail`); the
        facts are planned against the current facts read inside that transaction, so no
        write in between can be missed. None, and nothing written, when its signals are no
        longer all pending: another distillation of them (another process's) got there
        first, or the session was forgotten meanwhile."""
        require_agent(agent_id)
        d = distillation
        now = time.time()

        def write(db: sqlite3.Connection) -> AppliedDistillation | None:
            if not _all_pending(db, agent_id, d.signal_ids):
                return None
            applied = AppliedDistillation()
            if d.episode is not None and d.episode.summary.strip():
                applied.episode_id = insert_episode_row(
                    db, agent_id, d.episode, d.session_id, d.started_at, d.ended_at, now
                )
                upsert_entity_rows(db, agent_id, d.episode.entities, d.ended_at)
            # The procedures it taught (an episode without a summary may carry them alone).
            procedures = upsert_procedure_rows(
                db, agent_id, d.episode.procedures if d.episode else [], d.session_id,
                d.ended_at)
            known = [
                KnownFact(f.id, f.kind, f.slot, f.content, f.valid_from)
                for f in current_fact_rows(db, agent_id)
            ]
            since = {fact.id: fact.since for fact in known}
            for action in plan_facts(d.facts, known):
                existing = action.existing_id
                stored: int
                if action.action == "merge" and existing is not None:
                    salience = action.draft.salience
                    if merge_fact_row(db, agent_id, existing, salience, d.ended_at):
                        applied.facts_merged += 1
                        add_fact_source_rows(db, agent_id, existing, d.session_id,
                                             d.source_turns(action.draft))
                        continue
                    existing = None  # gone meanwhile: the restatement revives it
                if action.action == "supersede" and existing is not None:
                    if d.ended_at < since.get(existing, 0.0):
                        # An older statement ("I live in Berlin" from a session before the
                        # one that said Lisbon) is history, never the current value.
                        stored = insert_fact_row(
                            db, agent_id, action.draft, d.session_id, d.ended_at,
                            valid_to=since[existing], superseded_by=existing,
                        )
                        applied.facts_historical += 1
                    else:
                        stored = supersede_fact_row(
                            db, agent_id, existing, action.draft, d.session_id, d.ended_at
                        )
                        applied.facts_superseded += 1
                else:
                    stored = insert_fact_row(db, agent_id, action.draft, d.session_id,
                                             d.ended_at)
                    applied.facts_added += 1
                add_fact_source_rows(db, agent_id, stored, d.session_id,
                                     d.source_turns(action.draft))
            # At most identity_max identity facts: the most salient, then the newest.
            identity = current_fact_rows(db, agent_id, "identity")
            for fact in identity[identity_max:]:
                delete_fact_row(db, agent_id, fact.id, now)
            applied.identity_facts = min(len(identity), identity_max)
            set_signal_status_rows(db, agent_id, d.signal_ids, "done", None)
            mark_session_distilled_row(db, agent_id, d.session_id, now)
            log_event_row(
                db, agent_id, DISTILLED_EVENT,
                {**{k: v for k, v in asdict(applied).items() if v is not None},
                 **({"procedures": procedures} if procedures else {}), **(log_detail or {})},
                d.session_id, now,
            )
            return applied

        # Planned and written on the writer's thread: one hop, however many facts.
        applied = await self._write_in_one_hop(write)
        if applied is None:
            return None
        if applied.episode_id is not None or applied.facts_added or applied.facts_superseded:
            self.content_changed.set()
        self._entity_cache.pop(agent_id, None)
        return applied


def _all_pending(db: sqlite3.Connection, agent_id: str, signal_ids: Sequence[int]) -> bool:
    wanted = set(signal_ids)
    if not wanted:
        return True
    cursor = db.execute(
        f"SELECT COUNT(*) FROM pending_signals WHERE agent_id = ? AND status = 'pending' "
        f"AND id IN ({', '.join('?' * len(wanted))})",
        (agent_id, *wanted),
    )
    row = cursor.fetchone()
    return row is not None and row[0] == len(wanted)

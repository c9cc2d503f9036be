"""Store SQL for distilled memory: facts (pinned and identity), episodes, entities.

Facts are never rewritten in place by a contradiction: the old row is closed (valid_to,
superseded_by) and a new one inserted, so history stays queryable while every read here
returns only current facts.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import Any

from mnemoproxy.bounded import LruDict
from mnemoproxy.memory.models import EpisodeDraft, FactDraft
from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.records import Episode, Fact

_CURRENT = "valid_to IS NULL AND deleted_at IS NULL"
# Agents whose entity names are kept in memory (the ones read lately): any id a client
# sends is read, so an entry per id ever seen would grow without end.
ENTITY_CACHE_AGENTS = 4096
# Tables whose rows carry use_count/last_used, by item type.
_USE_TABLES = {"fact": "facts", "episode": "episodes"}


class ItemQueries(Database):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._entity_cache: LruDict[str, list[str]] = LruDict(ENTITY_CACHE_AGENTS)

    # -- facts --------------------------------------------------------------------------

    async def current_facts(
        self, agent_id: str, kind: str | None = None, slot: str | None = None
    ) -> list[Fact]:
        """The agent's live facts (not superseded, not deleted), most salient first."""
        sql, params = _current_facts_query(require_agent(agent_id), kind, slot)
        return [Fact.from_row(r) for r in await self._fetchall(sql, params)]

    async def fact(self, agent_id: str, fact_id: int) -> Fact | None:
        """One fact by id, current or superseded (history), unless deleted."""
        row = await self._fetchone(
            "SELECT * FROM facts WHERE agent_id = ? AND id = ? AND deleted_at IS NULL",
            (require_agent(agent_id), fact_id),
        )
        return None if row is None else Fact.from_row(row)

    async def insert_fact(
        self,
        agent_id: str,
        draft: FactDraft,
        *,
        source_session_id: int | None = None,
        at: float | None = None,
        stored_at: float | None = None,
    ) -> int:
        """A fact stated at `at` (default now), stored at `stored_at` (default now)."""
        require_agent(agent_id)
        stated_at = time.time() if at is None else at
        new_id = await self._write_in_one_hop(
            lambda db: insert_fact_row(
                db, agent_id, draft, source_session_id, stated_at, stored_at=stored_at
            )
        )
        self.content_changed.set()
        return new_id

    async def merge_fact(
        self, agent_id: str, fact_id: int, *, salience: float, at: float | None = None
    ) -> bool:
        """A restatement of a current fact: one more source, the higher salience.
        False when the fact is not current (superseded or deleted meanwhile)."""
        require_agent(agent_id)
        restated_at = time.time() if at is None else at
        return await self._write_in_one_hop(
            lambda db: merge_fact_row(db, agent_id, fact_id, salience, restated_at)
        )

    async def supersede_fact(
        self,
        agent_id: str,
        old_fact_id: int,
        draft: FactDraft,
        *,
        source_session_id: int | None = None,
        at: float | None = None,
    ) -> int:
        """Insert `draft` as the fact replacing `old_fact_id`, closing the old row, in one
        transaction. Returns the new fact's id."""
        require_agent(agent_id)
        stated_at = time.time() if at is None else at
        new_id = await self._write_in_one_hop(
            lambda db: supersede_fact_row(
                db, agent_id, old_fact_id, draft, source_session_id, stated_at
            )
        )
        self.content_changed.set()
        return new_id

    async def delete_fact(self, agent_id: str, fact_id: int, at: float | None = None) -> bool:
        """Soft-delete: the row stays for history, reads no longer see it."""
        require_agent(agent_id)
        deleted_at = time.time() if at is None else at
        return await self._write_in_one_hop(
            lambda db: delete_fact_row(db, agent_id, fact_id, deleted_at)
        )

    async def list_facts(
        self,
        agent_id: str,
        *,
        kind: str | None = None,
        status: str = "current",
        text: str | None = None,
        limit: int = 100,
        after_id: int = 0,
    ) -> list[tuple[Fact, str | None]]:
        """The agent's facts in the order they were stored, from after `after_id` (a page
        of `limit`), each with the conversation it was distilled from. status: current,
        superseded (history) or all; deleted facts are never listed. `text` filters by a
        case-insensitive substring of the content."""
        sql = (
            "SELECT f.*, s.session_key FROM facts f LEFT JOIN sessions s"
            " ON s.id = f.source_session_id"
            " WHERE f.agent_id = ? AND f.deleted_at IS NULL AND f.id > ?"
        )
        params: list[object] = [require_agent(agent_id), after_id]
        if status == "current":
            sql += " AND f.valid_to IS NULL"
        elif status == "superseded":
            sql += " AND f.valid_to IS NOT NULL"
        if kind is not None:
            sql += " AND f.kind = ?"
            params.append(kind)
        if text:
            sql += r" AND f.content LIKE ? ESCAPE '\'"
            escaped = text.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_")
            params.append(f"%{escaped}%")
        rows = await self._fetchall(sql + " ORDER BY f.id LIMIT ?", (*params, limit))
        return [(Fact.from_row(row), row["session_key"]) for row in rows]

    # -- episodes -----------------------------------------------------------------------

    async def add_episode(
        self,
        agent_id: str,
        draft: EpisodeDraft,
        *,
        session_id: int | None = None,
        started_at: float | None = None,
        ended_at: float | None = None,
        at: float | None = None,
    ) -> int:
        require_agent(agent_id)
        stored_at = time.time() if at is None else at
        episode_id = await self._write_in_one_hop(
            lambda db: insert_episode_row(
                db, agent_id, draft, session_id, started_at, ended_at, stored_at
            )
        )
        self.content_changed.set()
        return episode_id

    async def recent_episodes(self, agent_id: str, limit: int = 5) -> list[Episode]:
        rows = await self._fetchall(
            "SELECT * FROM episodes WHERE agent_id = ? AND deleted_at IS NULL "
            "ORDER BY COALESCE(ended_at, created_at) DESC, id DESC LIMIT ?",
            (require_agent(agent_id), limit),
        )
        return [Episode.from_row(r) for r in rows]

    # -- use counts and entities ----------------------------------------------------------

    async def bump_use(
        self, agent_id: str, items: Iterable[tuple[str, int]], at: float | None = None
    ) -> None:
        """Count that these items were surfaced; transcript messages keep no counts."""
        require_agent(agent_id)
        at = time.time() if at is None else at
        by_table: dict[str, list[int]] = {}
        for item_type, item_id in items:
            if item_type in _USE_TABLES:
                by_table.setdefault(_USE_TABLES[item_type], []).append(item_id)
        if not by_table:
            return
        async with self._write() as db:
            for table, ids in by_table.items():
                await db.execute(
                    f"UPDATE {table} SET use_count = use_count + 1, last_used = ? "
                    f"WHERE agent_id = ? AND id IN ({', '.join('?' * len(ids))})",
                    (at, agent_id, *ids),
                )

    async def upsert_entities(
        self, agent_id: str, names: Sequence[str], at: float | None = None
    ) -> None:
        """Count a mention of each name; names match case-insensitively, first spelling kept."""
        require_agent(agent_id)
        seen_at = time.time() if at is None else at
        if not any(name and name.strip() for name in names):
            return
        await self._write_in_one_hop(lambda db: upsert_entity_rows(db, agent_id, names, seen_at))
        self._entity_cache.pop(agent_id, None)  # the next read fetches the new names

    def drop_cached_entities(self, agent_id: str) -> None:
        """The agent's entity names are read again (after a forget or an import)."""
        self._entity_cache.pop(agent_id, None)

    async def entity_names(self, agent_id: str) -> list[str]:
        """The agent's known entity names, most mentioned first. Asked on every chat
        request, so kept in memory; this store is the only writer, so it knows when the
        copy goes stale."""
        cached = self._entity_cache.get(agent_id)
        if cached is not None:
            return cached
        rows = await self._fetchall(
            "SELECT name FROM entities WHERE agent_id = ? ORDER BY mention_count DESC, name",
            (require_agent(agent_id),),
        )
        names = self._entity_cache[agent_id] = [r[0] for r in rows]
        return names


# -- one statement's worth of SQL on an open write transaction (plain sqlite3 calls, run on
#    the writer's thread by `_write_in_one_hop`), shared by the methods above and by the
#    distillation that applies many of them at once (store/distillations.py)


def insert_fact_row(
    db: sqlite3.Connection,
    agent_id: str,
    draft: FactDraft,
    source_session_id: int | None,
    at: float,
    *,
    stored_at: float | None = None,
    valid_to: float | None = None,
    superseded_by: int | None = None,
) -> int:
    """A fact stated at `at` (valid_from and its last reinforcement), stored at `stored_at`
    (created_at; default now). With `valid_to` it is inserted as history straight away."""
    cursor = db.execute(
        "INSERT INTO facts (agent_id, kind, slot, content, tags_json, salience, valid_from, "
        "valid_to, superseded_by, source_session_id, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            agent_id, draft.kind, draft.slot, draft.content, json.dumps(draft.tags),
            draft.salience, at, valid_to, superseded_by, source_session_id,
            time.time() if stored_at is None else stored_at, at,
        ),
    )
    row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def add_fact_source_rows(
    db: sqlite3.Connection, agent_id: str, fact_id: int, session_id: int,
    turn_indexes: Sequence[int],
) -> None:
    """Record the turns of `session_id` that stated the fact."""
    db.executemany(
        "INSERT OR IGNORE INTO fact_sources (agent_id, fact_id, session_id, turn_index) "
        "VALUES (?, ?, ?, ?)",
        [(agent_id, fact_id, session_id, turn) for turn in dict.fromkeys(turn_indexes)],
    )


def merge_fact_row(
    db: sqlite3.Connection, agent_id: str, fact_id: int, salience: float, at: float
) -> bool:
    """One more source for a fact; its last reinforcement (updated_at) only moves forward,
    so a restatement from an older session never ages the fact."""
    cursor = db.execute(
        "UPDATE facts SET source_count = source_count + 1, "
        f"salience = MAX(salience, ?), updated_at = MAX(updated_at, ?) "
        f"WHERE agent_id = ? AND id = ? AND {_CURRENT}",
        (salience, at, agent_id, fact_id),
    )
    return cursor.rowcount == 1


def supersede_fact_row(
    db: sqlite3.Connection,
    agent_id: str,
    old_fact_id: int,
    draft: FactDraft,
    source_session_id: int | None,
    at: float,
) -> int:
    new_id = insert_fact_row(db, agent_id, draft, source_session_id, at)
    db.execute(
        f"UPDATE facts SET valid_to = ?, superseded_by = ?, updated_at = ? "
        f"WHERE agent_id = ? AND id = ? AND {_CURRENT}",
        (at, new_id, at, agent_id, old_fact_id),
    )
    return new_id


def delete_fact_row(db: sqlite3.Connection, agent_id: str, fact_id: int, at: float) -> bool:
    cursor = db.execute(
        "UPDATE facts SET deleted_at = ? WHERE agent_id = ? AND id = ? AND deleted_at IS NULL",
        (at, agent_id, fact_id),
    )
    return cursor.rowcount == 1


def current_fact_rows(
    db: sqlite3.Connection, agent_id: str, kind: str | None = None
) -> list[Fact]:
    cursor = db.execute(*_current_facts_query(agent_id, kind, None))
    return [Fact.from_row(row) for row in cursor.fetchall()]


def _current_facts_query(
    agent_id: str, kind: str | None, slot: str | None
) -> tuple[str, list[object]]:
    sql = f"SELECT * FROM facts WHERE agent_id = ? AND {_CURRENT}"
    params: list[object] = [agent_id]
    if kind is not None:
        sql += " AND kind = ?"
        params.append(kind)
    if slot is not None:
        sql += " AND slot = ?"
        params.append(slot)
    return sql + " ORDER BY salience DESC, updated_at DESC, id", params


def insert_episode_row(
    db: sqlite3.Connection,
    agent_id: str,
    draft: EpisodeDraft,
    session_id: int | None,
    started_at: float | None,
    ended_at: float | None,
    at: float,
) -> int:
    cursor = db.execute(
        "INSERT INTO episodes (agent_id, session_id, summary, topics_json, entities_json,"
        " decisions_json, action_items_json, salience, started_at, ended_at, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            agent_id, session_id, draft.summary, json.dumps(draft.topics),
            json.dumps(draft.entities), json.dumps(draft.decisions),
            json.dumps(draft.action_items), draft.salience, started_at, ended_at, at,
        ),
    )
    row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def upsert_entity_rows(
    db: sqlite3.Connection, agent_id: str, names: Sequence[str], at: float
) -> None:
    """Count a mention of each name; names match case-insensitively, first spelling kept."""
    cleaned = [name.strip() for name in names if name and name.strip()]
    if cleaned:
        db.executemany(
            "INSERT INTO entities (agent_id, name, mention_count, first_seen, last_seen) "
            "VALUES (?, ?, 1, ?, ?) ON CONFLICT (agent_id, name) DO UPDATE SET "
            "mention_count = entities.mention_count + 1, "
            "last_seen = MAX(entities.last_seen, excluded.last_seen)",
            [(agent_id, name, at, at) for name in cleaned],
        )

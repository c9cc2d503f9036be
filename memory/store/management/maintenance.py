"""Store SQL for consolidation: promoting, evicting and merging facts and episodes.

The rules (thresholds, the decay curve, which episodes are near-duplicates) live in
memory/background/consolidate.py; each method here applies one of them to one agent's rows in one
write transaction. Removal is a soft delete (deleted_at) like every delete of the store:
FTS rows and vectors stay, and every read filters deleted rows out.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from mnemoproxy.memory.store.db import Database, Writer, require_agent

# (kind, stored salience, base time, source_count, use_count) -> salience as of now.
SalienceNow = Callable[[str, float, float, int, int], float]

_CURRENT_PINNED = "kind = 'pinned' AND valid_to IS NULL AND deleted_at IS NULL"
# A fact ages from its latest sign of life: stored (created_at), restated (updated_at) or
# surfaced (last_used). Storage counts because an imported old history is new to memory.
_BASE_TIME = "MAX(updated_at, created_at, COALESCE(last_used, updated_at))"
# Columns of an episode that a merge combines.
_MERGED = (
    "id, salience, use_count, last_used, started_at, ended_at, "
    "topics_json, entities_json, decisions_json, action_items_json"
)


class MaintenanceQueries(Database):
    async def agent_ids(self) -> list[str]:
        """Every agent that has memory: facts and episodes written without a session (as
        the store allows) create no agents row, so their owners are counted too."""
        rows = await self._fetchall(
            "SELECT id FROM agents UNION SELECT agent_id FROM facts "
            "UNION SELECT agent_id FROM episodes"
        )
        return [r[0] for r in rows]

    async def promote_confirmed_facts(
        self, agent_id: str, *, min_sources: int, boost: float, at: float
    ) -> list[int]:
        """Raise by `boost` (capped at 1) the salience of current pinned facts stated in at
        least `min_sources` sessions, once per fact. Returns the ids promoted now."""
        async with self._write() as db:
            cursor = await db.execute(
                "UPDATE facts SET salience = MIN(1.0, salience + ?), promoted_at = ? "
                f"WHERE agent_id = ? AND {_CURRENT_PINNED} AND source_count >= ? "
                "AND promoted_at IS NULL RETURNING id",
                (boost, at, require_agent(agent_id), min_sources),
            )
            return sorted(r[0] for r in await cursor.fetchall())

    async def evict_faded_facts(
        self, agent_id: str, *, salience_now: SalienceNow, floor: float, at: float
    ) -> list[dict[str, Any]]:
        """Soft-delete the current pinned facts whose `salience_now` is below `floor`.

        The check and the delete are one write transaction, so a fact restated or surfaced
        while the pass runs is judged on its fresh base time. Returns {id, content,
        salience} of each evicted fact, salience being the decayed value that condemned it."""
        require_agent(agent_id)

        def evict(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute(
                f"SELECT id, content, kind, salience, {_BASE_TIME}, source_count, use_count "
                f"FROM facts WHERE agent_id = ? AND {_CURRENT_PINNED} AND pinned_at IS NULL",
                (agent_id,),
            ).fetchall()
            faded = []
            for row in rows:
                decayed = salience_now(row[2], row[3], row[4], row[5], row[6])
                if decayed < floor:
                    faded.append({"id": row[0], "content": row[1], "salience": round(decayed, 4)})
            db.executemany("UPDATE facts SET deleted_at = ? WHERE id = ?",
                           [(at, fact["id"]) for fact in faded])
            return faded

        faded = await self._write_in_one_hop(evict)
        return sorted(faded, key=lambda fact: fact["id"])

    async def prune_episodes(self, agent_id: str, *, ended_before: float, at: float) -> list[int]:
        """Soft-delete the live episodes whose session ended, whose storage and whose last
        use are all before `ended_before`: an old conversation imported today, or one still
        being recalled, is kept."""
        async with self._write() as db:
            cursor = await db.execute(
                "UPDATE episodes SET deleted_at = ? WHERE agent_id = ? AND deleted_at IS NULL "
                "AND MAX(COALESCE(ended_at, created_at), created_at, COALESCE(last_used, 0)) < ? "
                "RETURNING id",
                (at, require_agent(agent_id), ended_before),
            )
            return sorted(r[0] for r in await cursor.fetchall())

    async def episode_summaries(self, agent_id: str) -> list[tuple[int, str]]:
        """(id, summary) of the agent's live episodes, in the order they happened."""
        rows = await self._fetchall(
            "SELECT id, summary FROM episodes WHERE agent_id = ? AND deleted_at IS NULL "
            "ORDER BY COALESCE(started_at, created_at), id",
            (require_agent(agent_id),),
        )
        return [(r[0], r[1]) for r in rows]

    async def merge_episodes(
        self, agent_id: str, groups: Mapping[int, Sequence[int]], *, at: float
    ) -> dict[int, list[int]]:
        """Fold each group's duplicates into its kept episode and soft-delete them.

        The kept episode takes the union of the lists (topics, entities, decisions, action
        items; first spelling kept), the highest salience, the summed use counts and the
        widest time span. A group whose kept episode is gone meanwhile is skipped; a
        duplicate gone meanwhile is left out. Returns {kept id: merged ids} of what merged."""
        require_agent(agent_id)
        merged: dict[int, list[int]] = {}
        async with self._write() as db:
            for kept_id, duplicate_ids in groups.items():
                kept = await _live_episode(db, agent_id, kept_id)
                if kept is None or not duplicate_ids:
                    continue
                cursor = await db.execute(
                    "UPDATE episodes SET deleted_at = ? WHERE agent_id = ? AND deleted_at IS NULL"
                    f" AND id IN ({', '.join('?' * len(duplicate_ids))}) RETURNING {_MERGED}",
                    (at, agent_id, *duplicate_ids),
                )
                duplicates = list(await cursor.fetchall())
                if not duplicates:
                    continue
                changes = _combined(kept, duplicates)
                await db.execute(
                    f"UPDATE episodes SET {', '.join(f'{c} = ?' for c in changes)} WHERE id = ?",
                    (*changes.values(), kept_id),
                )
                merged[kept_id] = sorted(d["id"] for d in duplicates)
        if merged:
            # Changed topics or entities dropped the kept episode's vector: re-embed it.
            self.content_changed.set()
        return merged


async def _live_episode(
    db: Writer[Any], agent_id: str, episode_id: int
) -> sqlite3.Row | None:
    cursor = await db.execute(
        f"SELECT {_MERGED} FROM episodes WHERE agent_id = ? AND id = ? AND deleted_at IS NULL",
        (agent_id, episode_id),
    )
    row: sqlite3.Row | None = await cursor.fetchone()
    return row


def _combined(kept: sqlite3.Row, duplicates: Sequence[sqlite3.Row]) -> dict[str, Any]:
    """The kept episode's new column values. Topics and entities are only set when they
    change: the FTS trigger fires on any write to them and drops the episode's vector."""
    rows = [kept, *duplicates]
    changes: dict[str, Any] = {
        "salience": max(r["salience"] for r in rows),
        "use_count": sum(r["use_count"] for r in rows),
        "last_used": _extreme(max, (r["last_used"] for r in rows)),
        "started_at": _extreme(min, (r["started_at"] for r in rows)),
        "ended_at": _extreme(max, (r["ended_at"] for r in rows)),
        "decisions_json": _union(r["decisions_json"] for r in rows),
        "action_items_json": _union(r["action_items_json"] for r in rows),
    }
    for column in ("topics_json", "entities_json"):
        combined = _union(r[column] for r in rows)
        if json.loads(combined) != json.loads(kept[column]):
            changes[column] = combined
    return changes


def _extreme(
    pick: Callable[[list[float]], float], values: Iterable[float | None]
) -> float | None:
    present = [v for v in values if v is not None]
    return pick(present) if present else None


def _union(json_lists: Iterable[str]) -> str:
    """One JSON list of every distinct value, compared case-insensitively, in first-seen order."""
    seen: set[str] = set()
    union: list[Any] = []
    for raw in json_lists:
        for value in json.loads(raw):
            key = str(value).casefold()
            if key not in seen:
                seen.add(key)
                union.append(value)
    return json.dumps(union)

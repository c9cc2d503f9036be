"""Store SQL for looking through an agent's memory and fixing it by hand: its sessions and
episodes a page at a time, and the small edits the management API makes."""

from __future__ import annotations

import time
from typing import Any

from mnemoproxy.memory.store.conversations.sessions import upsert_agent
from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.records import Episode


class BrowseQueries(Database):
    async def sessions_page(
        self, agent_id: str, *, limit: int, after_id: int = 0
    ) -> list[dict[str, Any]]:
        """The agent's sessions in the order they began, from after `after_id`."""
        rows = await self._fetchall(
            "SELECT s.id, s.session_key, s.started_at, s.last_turn_at, s.distilled_at, "
            "(SELECT COUNT(*) FROM transcript t WHERE t.agent_id = s.agent_id "
            " AND t.session_id = s.id) FROM sessions s WHERE s.agent_id = ? AND s.id > ? "
            "ORDER BY s.id LIMIT ?",
            (require_agent(agent_id), after_id, limit),
        )
        return [{"id": r[0], "conversation_id": r[1], "started_at": r[2],
                 "last_turn_at": r[3], "distilled_at": r[4], "messages": r[5]} for r in rows]

    async def episodes_page(
        self, agent_id: str, *, limit: int, after_id: int = 0
    ) -> list[Episode]:
        """The agent's live episodes in the order they were stored, from after `after_id`."""
        rows = await self._fetchall(
            "SELECT * FROM episodes WHERE agent_id = ? AND deleted_at IS NULL AND id > ? "
            "ORDER BY id LIMIT ?",
            (require_agent(agent_id), after_id, limit),
        )
        return [Episode.from_row(r) for r in rows]

    async def ensure_agent(self, agent_id: str) -> None:
        """The agent exists from now on (a fact added by hand may be its first memory)."""
        require_agent(agent_id)
        now = time.time()
        await self._write_in_one_hop(lambda db: upsert_agent(db, agent_id, now))

    async def set_fact_salience(self, agent_id: str, fact_id: int, salience: float) -> bool:
        """Set a current fact's salience; False when there is no such current fact."""
        async with self._write() as db:
            cursor = await db.execute(
                "UPDATE facts SET salience = ?, updated_at = ? WHERE agent_id = ? AND id = ? "
                "AND valid_to IS NULL AND deleted_at IS NULL",
                (salience, time.time(), require_agent(agent_id), fact_id),
            )
            return cursor.rowcount > 0

    async def delete_episode(self, agent_id: str, episode_id: int) -> bool:
        """Soft-delete an episode: reads no longer see it. False when there is none."""
        async with self._write() as db:
            cursor = await db.execute(
                "UPDATE episodes SET deleted_at = ? WHERE agent_id = ? AND id = ? "
                "AND deleted_at IS NULL", (time.time(), require_agent(agent_id), episode_id))
            return cursor.rowcount > 0

    async def fact_history(self, agent_id: str, fact_id: int) -> list[int]:
        """The ids of the facts this one replaced, oldest first, and of those that replaced
        it, newest last: its whole line of values, itself included."""
        def read(conn: Any) -> list[int]:
            before: list[int] = []
            current = fact_id
            while len(before) < 1000:
                row = conn.execute("SELECT id FROM facts WHERE agent_id = ? AND "
                                   "superseded_by = ?", (agent_id, current)).fetchone()
                if row is None:
                    break
                before.insert(0, current := row[0])
            after: list[int] = []
            current = fact_id
            while len(after) < 1000:
                row = conn.execute("SELECT superseded_by FROM facts WHERE agent_id = ? AND "
                                   "id = ?", (agent_id, current)).fetchone()
                if row is None or row[0] is None:
                    break
                after.append(current := row[0])
            return [*before, fact_id, *after]

        return await self._read(read)

    async def set_fact_pinned(self, agent_id: str, fact_id: int, pinned: bool) -> bool:
        """Pin a current fact (consolidation keeps it) or unpin it; False when there is no
        such current fact."""
        async with self._write() as db:
            cursor = await db.execute(
                "UPDATE facts SET pinned_at = ? WHERE agent_id = ? AND id = ? "
                "AND valid_to IS NULL AND deleted_at IS NULL",
                (time.time() if pinned else None, require_agent(agent_id), fact_id),
            )
            return cursor.rowcount > 0

"""Store SQL for looking through an agent's memory and fixing it by hand: its sessions and
episodes a page at a time, and the small edits the management API makes."""

from __future__ import annotations

import time
from typing import Any

from mnemoproxy.memory.store.conversations.sessions import upsert_agent
from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.records import Episode, Fact

# A session as listed: its key, title (an imported conversation's), times, message count
# and the start of its first user message, which names it where it has no title.
FIRST_LINE_CHARS = 200
_SESSION_SELECT = (
    "SELECT s.id, s.session_key, s.title, s.started_at, s.last_turn_at, s.distilled_at, "
    "(SELECT COUNT(*) FROM transcript t WHERE t.agent_id = s.agent_id "
    " AND t.session_id = s.id), "
    f"(SELECT substr(t.content, 1, {FIRST_LINE_CHARS}) FROM transcript t "
    " WHERE t.agent_id = s.agent_id AND t.session_id = s.id AND t.role = 'user' "
    " ORDER BY t.turn_index LIMIT 1) "
    "FROM sessions s "
)


# What a fact's old value keeps when an edit moves it to a history row.
_FACT_COLUMNS = (
    "agent_id, kind, slot, content, tags_json, salience, source_count, use_count, last_used, "
    "valid_from, source_session_id, created_at, promoted_at, pinned_at"
)


def _session_of(row: Any) -> dict[str, Any]:
    return {"id": row[0], "conversation_id": row[1], "title": row[2], "started_at": row[3],
            "last_turn_at": row[4], "distilled_at": row[5], "messages": row[6],
            "first_message": row[7] or ""}


class BrowseQueries(Database):
    async def sessions_page(
        self, agent_id: str, *, limit: int, after_id: int = 0
    ) -> list[dict[str, Any]]:
        """The agent's sessions in the order they began, from after `after_id`."""
        rows = await self._fetchall(
            _SESSION_SELECT + "WHERE s.agent_id = ? AND s.id > ? ORDER BY s.id LIMIT ?",
            (require_agent(agent_id), after_id, limit),
        )
        return [_session_of(r) for r in rows]

    async def agent_counts(self, agent_id: str) -> dict[str, int]:
        """How much of each the agent holds: current identity and pinned facts, live
        episodes, sessions, messages, documents, procedures."""
        require_agent(agent_id)
        current = "valid_to IS NULL AND deleted_at IS NULL"
        row = await self._fetchone(
            f"SELECT (SELECT COUNT(*) FROM facts WHERE agent_id = ? AND kind = 'identity' "
            f"AND {current}), (SELECT COUNT(*) FROM facts WHERE agent_id = ? "
            f"AND kind = 'pinned' AND {current}), "
            "(SELECT COUNT(*) FROM episodes WHERE agent_id = ? AND deleted_at IS NULL), "
            "(SELECT COUNT(*) FROM sessions WHERE agent_id = ?), "
            "(SELECT COUNT(*) FROM transcript WHERE agent_id = ?), "
            "(SELECT COUNT(*) FROM documents WHERE agent_id = ?), "
            "(SELECT COUNT(*) FROM procedures WHERE agent_id = ?)", (agent_id,) * 7)
        assert row is not None
        names = ("identity", "pinned", "episodes", "sessions", "messages", "documents",
                 "procedures")
        return dict(zip(names, (int(n) for n in row), strict=True))

    async def session_summary(self, agent_id: str, session_id: int) -> dict[str, Any] | None:
        """One session as `sessions_page` lists it; None when the agent has no such one."""
        row = await self._fetchone(
            _SESSION_SELECT + "WHERE s.agent_id = ? AND s.id = ?",
            (require_agent(agent_id), session_id))
        return None if row is None else _session_of(row)

    async def name_session(self, agent_id: str, session_id: int, title: str) -> None:
        """Give a session the title its source calls it by (an imported conversation's)."""
        require_agent(agent_id)

        def write(db: Any) -> None:
            db.execute("UPDATE sessions SET title = ? WHERE agent_id = ? AND id = ?",
                       (title, agent_id, session_id))

        await self._write_in_one_hop(write)

    async def distilled_from_session(
        self, agent_id: str, session_id: int
    ) -> tuple[list[Episode], list[Fact]]:
        """What memory drew from one session: its live episodes, and the facts (current or
        superseded, not deleted) whose source it is."""
        require_agent(agent_id)

        def read(conn: Any) -> tuple[list[Episode], list[Fact]]:
            episodes = conn.execute(
                "SELECT * FROM episodes WHERE agent_id = ? AND session_id = ? "
                "AND deleted_at IS NULL ORDER BY id", (agent_id, session_id)).fetchall()
            facts = conn.execute(
                "SELECT * FROM facts WHERE agent_id = ? AND source_session_id = ? "
                "AND deleted_at IS NULL ORDER BY id", (agent_id, session_id)).fetchall()
            return [Episode.from_row(e) for e in episodes], [Fact.from_row(f) for f in facts]

        return await self._read(read)

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

    async def rewrite_fact(
        self, agent_id: str, fact_id: int, content: str, salience: float
    ) -> bool:
        """New content for a current fact, in place: the fact keeps its id (so whatever
        names it, a client or a later delete, still names it) and its old value becomes a
        history row superseded by it, the last of its line of values. False when there is
        no such current fact."""
        require_agent(agent_id)
        now = time.time()

        def write(db: Any) -> bool:
            cursor = db.execute(
                f"INSERT INTO facts ({_FACT_COLUMNS}, valid_to, superseded_by, updated_at) "
                f"SELECT {_FACT_COLUMNS}, ?, id, ? FROM facts WHERE agent_id = ? AND id = ? "
                "AND valid_to IS NULL AND deleted_at IS NULL RETURNING id",
                (now, now, agent_id, fact_id))
            row = cursor.fetchone()
            if row is None:
                return False
            # The value this one replaced (if any) now leads to the old value, not past it.
            db.execute("UPDATE facts SET superseded_by = ? WHERE agent_id = ? "
                       "AND superseded_by = ? AND id <> ?", (row[0], agent_id, fact_id, row[0]))
            db.execute("UPDATE facts SET content = ?, salience = ?, source_count = 1, "
                       "valid_from = ?, updated_at = ? WHERE agent_id = ? AND id = ?",
                       (content, salience, now, now, agent_id, fact_id))
            return True

        rewritten = bool(await self._write_in_one_hop(write))
        if rewritten:
            self.content_changed.set()
        return rewritten

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

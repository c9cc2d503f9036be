"""Store SQL for agents, their sessions and the processing log (what happened, when)."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from mnemoproxy.memory.store.db import Database, require_agent


class SessionQueries(Database):
    async def session(
        self, agent_id: str, session_key: str, at: float | None = None
    ) -> int:
        """The session's id for this key, creating it (and the agent) on first sight."""
        require_agent(agent_id)
        started_at = time.time() if at is None else at
        return await self._write_in_one_hop(
            lambda db: upsert_session(db, agent_id, session_key, started_at, None)
        )

    async def session_progress(self, agent_id: str, session_key: str) -> tuple[int | None, int]:
        """(the session's id, None when new; the index its next turn gets) in one read, so
        that what is already stored is skipped before any work is spent on it."""
        row = await self._fetchone(
            "SELECT s.id, (SELECT COALESCE(MAX(t.turn_index) + 1, 0) FROM transcript t "
            "WHERE t.agent_id = s.agent_id AND t.session_id = s.id) "
            "FROM sessions s WHERE s.agent_id = ? AND s.session_key = ?",
            (require_agent(agent_id), session_key),
        )
        return (None, 0) if row is None else (int(row[0]), int(row[1]))

    async def recent_session_key(self, agent_id: str, prefix: str, since: float) -> str | None:
        """The key of the agent's latest session whose key starts with `prefix` and whose
        last turn came at or after `since`; None when there is none."""
        row = await self._fetchone(
            "SELECT session_key FROM sessions WHERE agent_id = ? AND session_key LIKE ? "
            "AND COALESCE(last_turn_at, started_at) >= ? "
            "ORDER BY COALESCE(last_turn_at, started_at) DESC, id DESC LIMIT 1",
            (require_agent(agent_id), prefix.replace("%", "").replace("_", "") + "%", since),
        )
        return None if row is None else str(row[0])

    async def move_last_turn(
        self, agent_id: str, from_key: str, to_key: str, user_text: str
    ) -> bool:
        """Move the last turn of session `from_key` to a new session `to_key` (the whole
        session, renamed, when that turn is all it holds), provided the turn's user message
        is `user_text` and `to_key` is not taken. Its messages, pending distillation and
        the facts' record of where they were said go with it. True when it moved."""
        require_agent(agent_id)

        def write(db: sqlite3.Connection) -> bool:
            if db.execute("SELECT 1 FROM sessions WHERE agent_id = ? AND session_key = ?",
                          (agent_id, to_key)).fetchone() is not None:
                return False
            found = db.execute(
                "SELECT s.id, t.turn_index, t.content, t.at, (SELECT COUNT(*) FROM transcript "
                "u WHERE u.agent_id = s.agent_id AND u.session_id = s.id AND u.role = 'user') "
                "FROM sessions s JOIN transcript t ON t.agent_id = s.agent_id "
                "AND t.session_id = s.id AND t.role = 'user' "
                "WHERE s.agent_id = ? AND s.session_key = ? "
                "ORDER BY t.turn_index DESC LIMIT 1", (agent_id, from_key)).fetchone()
            if found is None or found[2] != user_text:
                return False
            session_id, turn, _, at, turns = found
            if turns == 1:
                db.execute("UPDATE sessions SET session_key = ? WHERE id = ?",
                           (to_key, session_id))
                db.execute("UPDATE transcript SET turn_index = 0 WHERE session_id = ?",
                           (session_id,))
                db.execute("UPDATE pending_signals SET turn_index = 0 WHERE session_id = ?",
                           (session_id,))
                db.execute("UPDATE fact_sources SET turn_index = 0 WHERE session_id = ?",
                           (session_id,))
                return True
            moved = upsert_session(db, agent_id, to_key, at, at)
            for table in ("transcript", "pending_signals", "fact_sources"):
                db.execute(f"UPDATE {table} SET session_id = ?, turn_index = 0 "
                           "WHERE agent_id = ? AND session_id = ? AND turn_index = ?",
                           (moved, agent_id, session_id, turn))
            db.execute(
                "UPDATE sessions SET last_turn_at = (SELECT MAX(at) FROM transcript "
                "WHERE agent_id = ? AND session_id = ?) WHERE id = ?",
                (agent_id, session_id, session_id))
            return True

        moved = bool(await self._write_in_one_hop(write))
        if moved:
            self.content_changed.set()
        return moved

    async def latest_session(self, agent_id: str) -> tuple[int, str] | None:
        """The (id, key) of the agent's most recently active session, if any."""
        row = await self._fetchone(
            "SELECT id, session_key FROM sessions WHERE agent_id = ? "
            "ORDER BY COALESCE(last_turn_at, started_at) DESC, id DESC LIMIT 1",
            (require_agent(agent_id),),
        )
        return None if row is None else (row[0], row[1])

    # -- processing log ---------------------------------------------------------------------

    async def log_event(
        self,
        agent_id: str,
        event: str,
        detail: dict[str, Any] | None = None,
        session_id: int | None = None,
        at: float | None = None,
    ) -> None:
        require_agent(agent_id)
        logged_at = time.time() if at is None else at
        await self._write_in_one_hop(
            lambda db: log_event_row(db, agent_id, event, detail, session_id, logged_at)
        )

    async def processing_log(self, agent_id: str, limit: int = 100) -> list[dict[str, Any]]:
        rows = await self._fetchall(
            "SELECT session_id, event, detail_json, at FROM processing_log WHERE agent_id = ? "
            "ORDER BY id DESC LIMIT ?",
            (require_agent(agent_id), limit),
        )
        return [
            {"session_id": r[0], "event": r[1], "detail": json.loads(r[2]), "at": r[3]}
            for r in rows
        ]


def upsert_agent(db: sqlite3.Connection, agent_id: str, at: float) -> None:
    db.execute(
        "INSERT INTO agents (id, created_at, last_active) VALUES (?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET last_active = MAX(agents.last_active, "
        "excluded.last_active)",
        (agent_id, at, at),
    )


def upsert_session(
    db: sqlite3.Connection,
    agent_id: str,
    session_key: str,
    started_at: float,
    last_turn_at: float | None,
) -> int:
    """The session's id, creating it (and the agent) on first sight; its last turn time
    moves forward to `last_turn_at` (None: unchanged). One statement for the hot path."""
    upsert_agent(db, agent_id, started_at if last_turn_at is None else last_turn_at)
    cursor = db.execute(
        "INSERT INTO sessions (agent_id, session_key, started_at, last_turn_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (agent_id, session_key) DO UPDATE SET "
        # SQLite's MAX of several values is NULL when one is: the COALESCE keeps the other.
        "last_turn_at = COALESCE(MAX(sessions.last_turn_at, excluded.last_turn_at), "
        "sessions.last_turn_at, "
        "excluded.last_turn_at) RETURNING id",
        (agent_id, session_key, started_at, last_turn_at),
    )
    row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def touch_session(
    db: sqlite3.Connection, agent_id: str, session_id: int, at: float
) -> None:
    db.execute(
        "UPDATE sessions SET last_turn_at = MAX(COALESCE(last_turn_at, 0), ?) "
        "WHERE agent_id = ? AND id = ?",
        (at, agent_id, session_id),
    )
    upsert_agent(db, agent_id, at)


def mark_session_distilled_row(
    db: sqlite3.Connection, agent_id: str, session_id: int, at: float
) -> None:
    db.execute(
        "UPDATE sessions SET distilled_at = ? WHERE agent_id = ? AND id = ?",
        (at, agent_id, session_id),
    )


def log_event_row(
    db: sqlite3.Connection,
    agent_id: str,
    event: str,
    detail: dict[str, Any] | None,
    session_id: int | None,
    at: float,
) -> None:
    db.execute(
        "INSERT INTO processing_log (agent_id, session_id, event, detail_json, at) "
        "VALUES (?, ?, ?, ?, ?)",
        (agent_id, session_id, event, json.dumps(detail or {}), at),
    )

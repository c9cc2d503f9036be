"""Store SQL for agents, their sessions and the processing log (what happened, when)."""

from __future__ import annotations

import json
import time
from typing import Any

import aiosqlite

from mnemoproxy.memory.store.db import Database, require_agent


class SessionQueries(Database):
    async def session(
        self, agent_id: str, session_key: str, at: float | None = None
    ) -> tuple[int, bool]:
        """The session's id for this key, creating it (and the agent) on first sight.

        Returns (session_id, created)."""
        require_agent(agent_id)
        at = time.time() if at is None else at
        async with self._write() as db:
            await upsert_agent(db, agent_id, at)
            cursor = await db.execute(
                "INSERT INTO sessions (agent_id, session_key, started_at) VALUES (?, ?, ?) "
                "ON CONFLICT (agent_id, session_key) DO NOTHING RETURNING id",
                (agent_id, session_key, at),
            )
            row = await cursor.fetchone()
            if row is not None:
                return row[0], True
            cursor = await db.execute(
                "SELECT id FROM sessions WHERE agent_id = ? AND session_key = ?",
                (agent_id, session_key),
            )
            existing = await cursor.fetchone()
            assert existing is not None
            return existing[0], False

    async def latest_session(self, agent_id: str) -> tuple[int, str] | None:
        """The (id, key) of the agent's most recently active session, if any."""
        row = await self._fetchone(
            "SELECT id, session_key FROM sessions WHERE agent_id = ? "
            "ORDER BY COALESCE(last_turn_at, started_at) DESC, id DESC LIMIT 1",
            (require_agent(agent_id),),
        )
        return None if row is None else (row[0], row[1])

    async def mark_session_distilled(
        self, agent_id: str, session_id: int, at: float | None = None
    ) -> None:
        require_agent(agent_id)
        async with self._write() as db:
            await mark_session_distilled_row(
                db, agent_id, session_id, time.time() if at is None else at
            )

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
        async with self._write() as db:
            await log_event_row(
                db, agent_id, event, detail, session_id, time.time() if at is None else at
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


async def upsert_agent(db: aiosqlite.Connection, agent_id: str, at: float) -> None:
    await db.execute(
        "INSERT INTO agents (id, created_at, last_active) VALUES (?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET last_active = MAX(last_active, excluded.last_active)",
        (agent_id, at, at),
    )


async def touch_session(
    db: aiosqlite.Connection, agent_id: str, session_id: int, at: float
) -> None:
    await db.execute(
        "UPDATE sessions SET last_turn_at = MAX(COALESCE(last_turn_at, 0), ?) "
        "WHERE agent_id = ? AND id = ?",
        (at, agent_id, session_id),
    )
    await upsert_agent(db, agent_id, at)


async def mark_session_distilled_row(
    db: aiosqlite.Connection, agent_id: str, session_id: int, at: float
) -> None:
    await db.execute(
        "UPDATE sessions SET distilled_at = ? WHERE agent_id = ? AND id = ?",
        (at, agent_id, session_id),
    )


async def log_event_row(
    db: aiosqlite.Connection,
    agent_id: str,
    event: str,
    detail: dict[str, Any] | None,
    session_id: int | None,
    at: float,
) -> None:
    await db.execute(
        "INSERT INTO processing_log (agent_id, session_id, event, detail_json, at) "
        "VALUES (?, ?, ?, ?, ?)",
        (agent_id, session_id, event, json.dumps(detail or {}), at),
    )

"""The memory store: every SQL statement of mnemoproxy lives here and in its mixins.

    store/
    ├── __init__.py     Store: open/close, agents, sessions, processing log, health
    ├── db.py           the writer and reader connections
    ├── schema.py       the migrations
    ├── records.py      the rows handed back
    ├── turns.py        transcript messages, pending signals
    ├── items.py        facts, episodes, entities, use counts
    ├── retrieval.py    full-text candidates, item fetches, embedding rows
    └── maintenance.py  consolidation's promotions, evictions, merges

Every method takes the agent id and never touches another agent's rows. Writes go
through the one writer connection; reads through the reader connection.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.items import ItemQueries
from mnemoproxy.memory.store.maintenance import MaintenanceQueries
from mnemoproxy.memory.store.retrieval import RetrievalQueries
from mnemoproxy.memory.store.schema import MIGRATIONS, Migration
from mnemoproxy.memory.store.turns import TurnQueries, upsert_agent


class Store(TurnQueries, ItemQueries, RetrievalQueries, MaintenanceQueries):
    @classmethod
    async def open(
        cls, data_dir: str | Path, *, migrations: Sequence[Migration] = MIGRATIONS
    ) -> Store:
        """Open (creating and migrating as needed) `<data_dir>/memory.db`."""
        path, writer, reader = await Database.connect(data_dir, migrations)
        return cls(path, writer, reader)

    async def close(self) -> None:
        await self.close_connections()

    # -- agents and sessions -------------------------------------------------------------

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
        async with self._write() as db:
            await db.execute(
                "UPDATE sessions SET distilled_at = ? WHERE agent_id = ? AND id = ?",
                (time.time() if at is None else at, require_agent(agent_id), session_id),
            )

    # -- processing log, summaries, health -----------------------------------------------

    async def log_event(
        self,
        agent_id: str,
        event: str,
        detail: dict[str, Any] | None = None,
        session_id: int | None = None,
        at: float | None = None,
    ) -> None:
        async with self._write() as db:
            await db.execute(
                "INSERT INTO processing_log (agent_id, session_id, event, detail_json, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (require_agent(agent_id), session_id, event, json.dumps(detail or {}),
                 time.time() if at is None else at),
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

    async def agents_summary(self) -> list[dict[str, Any]]:
        """One entry per agent for GET /agents: current facts, live episodes, messages."""
        rows = await self._fetchall(
            "SELECT a.id, a.last_active, "
            "(SELECT COUNT(*) FROM facts f WHERE f.agent_id = a.id "
            " AND f.valid_to IS NULL AND f.deleted_at IS NULL), "
            "(SELECT COUNT(*) FROM episodes e WHERE e.agent_id = a.id AND e.deleted_at IS NULL), "
            "(SELECT COUNT(*) FROM transcript t WHERE t.agent_id = a.id) "
            "FROM agents a ORDER BY a.last_active DESC"
        )
        return [
            {"id": r[0], "facts": r[2], "episodes": r[3], "turns": r[4], "last_active": r[1]}
            for r in rows
        ]

    async def status(self, embedding_model: str) -> dict[str, Any]:
        row = await self._fetchone(
            "SELECT (SELECT COUNT(*) FROM agents), (SELECT COUNT(*) FROM transcript), "
            "(SELECT COUNT(*) FROM facts WHERE valid_to IS NULL AND deleted_at IS NULL), "
            "(SELECT COUNT(*) FROM episodes WHERE deleted_at IS NULL), "
            "(SELECT COUNT(*) FROM pending_signals WHERE status = 'pending'), "
            "(SELECT COUNT(*) FROM pending_signals WHERE status = 'dead'), "
            "(SELECT COUNT(*) FROM embeddings WHERE model = ?)",
            (embedding_model,),
        )
        assert row is not None
        return {
            "db_path": str(self.path),
            "agents": row[0],
            "transcript_messages": row[1],
            "facts": row[2],
            "episodes": row[3],
            "pending_signals": row[4],
            "dead_signals": row[5],
            "embedded_items": row[6],
            "embedding_model": embedding_model,
        }

"""Store SQL for several processes sharing one data_dir (workers > 1,
memory/background/ownership.py):
what the owner of the background work polls for, and what every process reads to keep its
own vector indexes in step with the embeddings table (migration m011)."""

from __future__ import annotations

import sqlite3

from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.records import ItemType

# (seq, item_type, item_id, float32 LE vector blob)
VectorChange = tuple[int, ItemType, int, bytes]


class SharedQueries(Database):
    async def pending_session_marks(self) -> list[tuple[str, int, int, int]]:
        """(agent_id, session_id, highest signal id, signals) of every session with turns
        pending, oldest last turn first: a session whose mark changed has new turns, from
        whichever process recorded them."""
        rows = await self._fetchall(
            "SELECT agent_id, session_id, MAX(id), COUNT(*) FROM pending_signals "
            "WHERE status = 'pending' GROUP BY agent_id, session_id ORDER BY MAX(at)"
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    async def vector_position(self, agent_key: str) -> tuple[int, int]:
        """(forgets of the agent so far, the sequence number of the latest stored vector),
        read together: an index built from the rows read after this holds every vector up
        to that number."""

        def read(conn: sqlite3.Connection) -> tuple[int, int]:
            return _resets(conn, agent_key), _last_seq(conn)

        return await self._read(read)

    async def vector_changes(
        self, agent_id: str, agent_key: str, model: str, after: int, limit: int
    ) -> tuple[int, list[VectorChange]]:
        """(forgets of the agent so far, the agent's `model` vectors stored after sequence
        number `after`, oldest first, at most `limit`), from one snapshot."""
        require_agent(agent_id)

        def read(conn: sqlite3.Connection) -> tuple[int, list[VectorChange]]:
            cursor = conn.cursor()
            cursor.row_factory = None
            rows = cursor.execute(
                "SELECT v.seq, v.item_type, v.item_id, e.vector FROM vector_versions v "
                "JOIN embeddings e ON e.item_type = v.item_type AND e.item_id = v.item_id "
                "AND e.model = v.model WHERE v.agent_id = ? AND v.seq > ? AND v.model = ? "
                "ORDER BY v.seq LIMIT ?",
                (agent_id, after, model, limit),
            ).fetchall()
            return _resets(conn, agent_key), rows

        return await self._read(read)

    async def vector_keys(
        self, agent_id: str, model: str
    ) -> tuple[int, list[tuple[ItemType, int]]]:
        """(the sequence number of the latest stored vector, the items the agent has a
        `model` vector for), from one snapshot."""
        require_agent(agent_id)

        def read(conn: sqlite3.Connection) -> tuple[int, list[tuple[ItemType, int]]]:
            cursor = conn.cursor()
            cursor.row_factory = None
            rows = cursor.execute(
                "SELECT item_type, item_id FROM embeddings WHERE agent_id = ? AND model = ?",
                (agent_id, model),
            ).fetchall()
            return _last_seq(conn), rows

        return await self._read(read)

    async def mark_vectors_reset(self, agent_key: str) -> None:
        """Count a forget of the agent: every process drops its copy of the agent's index."""
        async with self._write() as db:
            await db.execute(
                "INSERT INTO vector_resets (agent_key, resets) VALUES (?, 1) "
                "ON CONFLICT (agent_key) DO UPDATE SET resets = vector_resets.resets + 1",
                (agent_key,),
            )


def _resets(conn: sqlite3.Connection, agent_key: str) -> int:
    row = conn.execute(
        "SELECT resets FROM vector_resets WHERE agent_key = ?", (agent_key,)
    ).fetchone()
    return int(row[0]) if row else 0


def _last_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT last FROM embedding_sequence").fetchone()
    return int(row[0]) if row else 0

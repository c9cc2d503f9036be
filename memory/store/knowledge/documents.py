"""Store SQL for documents: an agent's knowledge base, one row per document and one per
chunk (migration m010). Chunks are searchable items of type "document": their FTS rows and
embedding queue entries are kept by triggers, as for every other item, and deleting a
chunk takes its FTS entry and vectors along.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass

from mnemoproxy.memory.store.conversations.sessions import upsert_agent
from mnemoproxy.memory.store.db import Database, require_agent


@dataclass(frozen=True)
class StoredDocument:
    """A document as listed: its title, where it came from, its size and chunks."""

    id: int
    title: str
    source: str
    media_type: str
    size_bytes: int
    chunks: int
    created_at: float

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> StoredDocument:
        return cls(row["id"], row["title"], row["source"], row["media_type"],
                   row["size_bytes"], row["chunk_count"], row["created_at"])


@dataclass(frozen=True)
class StoredChunk:
    """One chunk of a document: its place in it (position, heading path, PDF page)."""

    id: int
    position: int
    heading: str
    page: int | None
    content: str


# (position, heading path, page or None, text)
ChunkRow = tuple[int, str, int | None, str]


class DocumentQueries(Database):
    async def add_document(
        self,
        agent_id: str,
        *,
        title: str,
        source: str,
        media_type: str,
        size_bytes: int,
        chunks: Sequence[ChunkRow],
        at: float | None = None,
    ) -> int:
        """Store a document and its chunks in one transaction (the agent is created when
        new); returns the document's id. The chunks are queued for vectors."""
        require_agent(agent_id)
        stored_at = time.time() if at is None else at

        def write(db: sqlite3.Connection) -> int:
            upsert_agent(db, agent_id, stored_at)
            cursor = db.execute(
                "INSERT INTO documents (agent_id, title, source, media_type, size_bytes, "
                "chunk_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (agent_id, title, source, media_type, size_bytes, len(chunks), stored_at),
            )
            document_id = int(cursor.fetchone()[0])
            db.executemany(
                "INSERT INTO document_chunks (agent_id, document_id, position, title, heading, "
                "page, content, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(agent_id, document_id, position, title, heading, page, text, stored_at)
                 for position, heading, page, text in chunks],
            )
            return document_id

        document_id = await self._write_in_one_hop(write)
        self.content_changed.set()
        return int(document_id)

    async def documents_page(
        self, agent_id: str, *, limit: int, after_id: int = 0
    ) -> list[StoredDocument]:
        """The agent's documents in the order they were stored, after `after_id`."""
        rows = await self._fetchall(
            "SELECT * FROM documents WHERE agent_id = ? AND id > ? ORDER BY id LIMIT ?",
            (require_agent(agent_id), after_id, limit),
        )
        return [StoredDocument.from_row(row) for row in rows]

    async def document(
        self, agent_id: str, document_id: int
    ) -> tuple[StoredDocument, list[StoredChunk]] | None:
        """One document with its chunks in order; None when the agent has no such one."""
        require_agent(agent_id)

        def read(conn: sqlite3.Connection) -> tuple[StoredDocument, list[StoredChunk]] | None:
            row = conn.execute("SELECT * FROM documents WHERE agent_id = ? AND id = ?",
                               (agent_id, document_id)).fetchone()
            if row is None:
                return None
            chunks = [
                StoredChunk(c["id"], c["position"], c["heading"], c["page"], c["content"])
                for c in conn.execute(
                    "SELECT id, position, heading, page, content FROM document_chunks "
                    "WHERE document_id = ? AND agent_id = ? ORDER BY position",
                    (document_id, agent_id))
            ]
            return StoredDocument.from_row(row), chunks

        return await self._read(read)

    async def delete_document(self, agent_id: str, document_id: int) -> int | None:
        """Delete a document for good: its chunks, their FTS entries, vectors and queue
        entries (the chunks' triggers). Returns how many chunks went; None: no such one."""
        require_agent(agent_id)
        async with self._write() as db:
            cursor = await db.execute(
                "SELECT 1 FROM documents WHERE agent_id = ? AND id = ?", (agent_id, document_id))
            if await cursor.fetchone() is None:
                return None
            cursor = await db.execute(
                "DELETE FROM document_chunks WHERE agent_id = ? AND document_id = ?",
                (agent_id, document_id))
            deleted = max(cursor.rowcount, 0)
            await db.execute("DELETE FROM documents WHERE agent_id = ? AND id = ?",
                             (agent_id, document_id))
        return deleted

    async def has_documents(self, agent_id: str) -> bool:
        row = await self._fetchone(
            "SELECT 1 FROM documents WHERE agent_id = ? LIMIT 1", (require_agent(agent_id),))
        return row is not None

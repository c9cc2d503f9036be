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

from mnemoproxy.memory.models import Change
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
        content_hash: str = "",
        at: float | None = None,
    ) -> tuple[int, Change]:
        """Store a document and its chunks in one transaction (the agent is created when
        new); returns the document's id and what happened. A document the agent already
        holds with the same `content_hash` is kept as it is ("unchanged"); one from the
        same `source` (file name) with other content is replaced ("updated"), chunks,
        search entries and vectors included. The chunks are queued for vectors."""
        require_agent(agent_id)
        stored_at = time.time() if at is None else at

        def write(db: sqlite3.Connection) -> tuple[int, Change]:
            if content_hash:
                same = db.execute(
                    "SELECT id FROM documents WHERE agent_id = ? AND content_hash = ? "
                    "ORDER BY id LIMIT 1", (agent_id, content_hash)).fetchone()
                if same is not None:
                    return int(same[0]), "unchanged"
            change: Change = "new"
            if source:
                for (older,) in db.execute(
                        "SELECT id FROM documents WHERE agent_id = ? AND source = ?",
                        (agent_id, source)).fetchall():
                    delete_document_rows(db, agent_id, older)
                    change = "updated"
            upsert_agent(db, agent_id, stored_at)
            cursor = db.execute(
                "INSERT INTO documents (agent_id, title, source, media_type, size_bytes, "
                "chunk_count, created_at, content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "RETURNING id",
                (agent_id, title, source, media_type, size_bytes, len(chunks), stored_at,
                 content_hash),
            )
            document_id = int(cursor.fetchone()[0])
            db.executemany(
                "INSERT INTO document_chunks (agent_id, document_id, position, title, heading, "
                "page, content, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(agent_id, document_id, position, title, heading, page, text, stored_at)
                 for position, heading, page, text in chunks],
            )
            return document_id, change

        document_id, change = await self._write_in_one_hop(write)
        if change != "unchanged":
            self.content_changed.set()
        return int(document_id), change

    async def document_with_content(
        self, agent_id: str, content_hash: str
    ) -> StoredDocument | None:
        """The agent's document read from these very bytes, if it holds one."""
        row = await self._fetchone(
            "SELECT * FROM documents WHERE agent_id = ? AND content_hash = ? ORDER BY id "
            "LIMIT 1", (require_agent(agent_id), content_hash))
        return None if row is None else StoredDocument.from_row(row)

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
        return await self._write_in_one_hop(
            lambda db: delete_document_rows(db, agent_id, document_id))

    async def has_documents(self, agent_id: str) -> bool:
        row = await self._fetchone(
            "SELECT 1 FROM documents WHERE agent_id = ? LIMIT 1", (require_agent(agent_id),))
        return row is not None


def delete_document_rows(db: sqlite3.Connection, agent_id: str, document_id: int) -> int | None:
    """The document's chunks (their triggers take FTS entries and vectors) and its row;
    how many chunks went, None when the agent has no such document."""
    found = db.execute("SELECT 1 FROM documents WHERE agent_id = ? AND id = ?",
                       (agent_id, document_id)).fetchone()
    if found is None:
        return None
    cursor = db.execute("DELETE FROM document_chunks WHERE agent_id = ? AND document_id = ?",
                        (agent_id, document_id))
    deleted = max(cursor.rowcount, 0)
    db.execute("DELETE FROM documents WHERE agent_id = ? AND id = ?", (agent_id, document_id))
    return deleted

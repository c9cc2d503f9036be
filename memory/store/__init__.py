"""The memory store: every SQL statement of mnemoproxy lives here and in its mixins.

    store/
    ├── __init__.py      Store: open/close, summaries, health
    ├── db.py            the writer and reader connections
    ├── cipher.py        SQLCipher encryption at rest
    ├── schema.py        SQLite's migrations
    ├── records.py       the rows handed back
    ├── claims.py        which process distils a session now (leases)
    ├── shared.py        several processes on one store: polls, vector sequence
    ├── conversations/   turns, sessions, distillations, long threads' summaries
    ├── knowledge/       facts, episodes, entities, retrieval, documents, procedures
    ├── management/      browsing and fixing by hand, forgetting, export/import, consolidation
    └── postgres/        PostgreSQL (store_url): connections, dialect, schema, full-text ranking

Every method takes the agent id and never touches another agent's rows. Writes go
through the one writer connection; reads through the reader connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemoproxy.config.urls import without_credentials
from mnemoproxy.errors import InvalidArgument, MemoryFailure, SettingError
from mnemoproxy.memory.store.cipher import Cipher
from mnemoproxy.memory.store.claims import ClaimQueries
from mnemoproxy.memory.store.conversations.distillations import DistillationQueries
from mnemoproxy.memory.store.conversations.sessions import SessionQueries
from mnemoproxy.memory.store.conversations.threads import ThreadQueries
from mnemoproxy.memory.store.conversations.turns import TurnQueries
from mnemoproxy.memory.store.db import PLAIN, Database, private_folder
from mnemoproxy.memory.store.knowledge.documents import DocumentQueries
from mnemoproxy.memory.store.knowledge.items import ItemQueries
from mnemoproxy.memory.store.knowledge.procedures import ProcedureQueries
from mnemoproxy.memory.store.knowledge.retrieval import RetrievalQueries
from mnemoproxy.memory.store.management.browse import BrowseQueries
from mnemoproxy.memory.store.management.forget import ForgetQueries
from mnemoproxy.memory.store.management.maintenance import MaintenanceQueries
from mnemoproxy.memory.store.management.portable import PortableQueries
from mnemoproxy.memory.store.management.retract import RetractQueries
from mnemoproxy.memory.store.postgres import connections as postgres
from mnemoproxy.memory.store.postgres.schema import PG_MIGRATIONS
from mnemoproxy.memory.store.schema import MIGRATIONS, Migration
from mnemoproxy.memory.store.shared import SharedQueries


class Store(
    BrowseQueries,
    RetractQueries,
    ForgetQueries,
    PortableQueries,
    SessionQueries,
    TurnQueries,
    DistillationQueries,
    ItemQueries,
    RetrievalQueries,
    MaintenanceQueries,
    ThreadQueries,
    DocumentQueries,
    ProcedureQueries,
    SharedQueries,
    ClaimQueries,
):
    @classmethod
    async def open(
        cls,
        data_dir: str | Path,
        *,
        migrations: Sequence[Migration] | None = None,
        cipher: Cipher = PLAIN,
        store_url: str = "",
    ) -> Store:
        """Open (creating and migrating as needed) `<data_dir>/memory.db`, encrypted with
        `cipher`'s key when it has one; or, given a `postgresql://` `store_url`, that
        database (data_dir then keeps only what each process derives: vector indexes)."""
        if store_url:
            if cipher.key is not None:
                raise SettingError(
                    "encryption_key_file encrypts the SQLite database in data_dir; with "
                    "store_url, memory lives in PostgreSQL: encrypt the server's storage "
                    "instead and leave encryption_key_file empty", param="encryption_key_file")
            if not postgres.is_postgres_url(store_url):
                raise InvalidArgument(
                    f"store_url must be a postgresql:// URL (or empty for SQLite in data_dir), "
                    f"not {store_url.split(':', 1)[0]!r}", param="store_url")
            try:  # data_dir still holds the vector indexes
                private_folder(Path(data_dir))
            except OSError as exc:
                raise MemoryFailure(f"cannot use {data_dir} as data_dir: {exc}") from exc
            pg_writer, pg_reader = await postgres.connect(
                store_url, PG_MIGRATIONS if migrations is None else migrations)
            return cls(without_credentials(store_url), pg_writer, pg_reader, "postgres")
        path, writer, reader = await Database.connect(
            data_dir, MIGRATIONS if migrations is None else migrations, cipher)
        return cls(path, writer, reader)

    async def close(self) -> None:
        await self.close_connections()

    # -- summaries and health -------------------------------------------------------------

    async def has_agent(self, agent_id: str) -> bool:
        row = await self._fetchone("SELECT 1 FROM agents WHERE id = ?", (agent_id,))
        return row is not None

    async def agents_summary(self) -> list[dict[str, Any]]:
        """One entry per agent for GET /agents: current facts, live episodes, turns (one user
        message and its reply, as ingest counts them) and the messages they hold."""
        rows = await self._fetchall(
            "SELECT a.id, a.last_active, "
            "(SELECT COUNT(*) FROM facts f WHERE f.agent_id = a.id "
            " AND f.valid_to IS NULL AND f.deleted_at IS NULL), "
            "(SELECT COUNT(*) FROM episodes e WHERE e.agent_id = a.id AND e.deleted_at IS NULL), "
            "(SELECT COUNT(*) FROM transcript t WHERE t.agent_id = a.id AND t.role = 'user'), "
            "(SELECT COUNT(*) FROM transcript t WHERE t.agent_id = a.id) "
            "FROM agents a ORDER BY a.last_active DESC"
        )
        return [
            {
                "id": r[0],
                "facts": r[2],
                "episodes": r[3],
                "turns": r[4],
                "messages": r[5],
                "last_active": r[1],
            }
            for r in rows
        ]

    async def status(self, embedding_model: str) -> dict[str, Any]:
        row = await self._fetchone(
            "SELECT (SELECT COUNT(*) FROM agents), (SELECT COUNT(*) FROM transcript), "
            "(SELECT COUNT(*) FROM facts WHERE valid_to IS NULL AND deleted_at IS NULL), "
            "(SELECT COUNT(*) FROM episodes WHERE deleted_at IS NULL), "
            "(SELECT COUNT(*) FROM pending_signals WHERE status = 'pending'), "
            "(SELECT COUNT(*) FROM pending_signals WHERE status = 'dead'), "
            "(SELECT COUNT(*) FROM embeddings WHERE model = ?), "
            "(SELECT COUNT(*) FROM embedding_failures WHERE model = ?)",
            (embedding_model, embedding_model),
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
            "embedding_failures": row[7],
            "embedding_model": embedding_model,
        }

"""The memory store: every SQL statement of mnemoproxy lives here and in its mixins.

    store/
    ├── __init__.py     Store: open/close, summaries, health
    ├── db.py           the writer and reader connections
    ├── schema.py       the migrations
    ├── records.py      the rows handed back
    ├── turns.py        transcript messages, pending signals
    ├── sessions.py     agents, sessions, the processing log
    ├── items.py        facts, episodes, entities, use counts
    ├── distillations.py  one session's distillation, in one transaction
    ├── retrieval.py    full-text candidates, item fetches, embedding rows
    ├── threads.py      long threads: each session's running summary
    ├── documents.py    documents (knowledge base) and their chunks
    ├── procedures.py   procedures: the how-tos sessions taught
    ├── claims.py       which process distils a session now (leases)
    ├── shared.py       several processes on one data_dir: polls, vector sequence
    ├── maintenance.py  consolidation's promotions, evictions, merges
    ├── postgres.py     PostgreSQL (store_url): its connections, SQLite's dialect carried over
    ├── pg_schema.py    PostgreSQL's migrations
    └── pg_search.py    PostgreSQL's full-text ranking

Every method takes the agent id and never touches another agent's rows. Writes go
through the one writer connection; reads through the reader connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemoproxy.errors import InvalidArgument, MemoryFailure, SettingError
from mnemoproxy.memory.store import postgres
from mnemoproxy.memory.store.browse import BrowseQueries
from mnemoproxy.memory.store.cipher import Cipher
from mnemoproxy.memory.store.claims import ClaimQueries
from mnemoproxy.memory.store.db import PLAIN, Database, private_folder
from mnemoproxy.memory.store.distillations import DistillationQueries
from mnemoproxy.memory.store.documents import DocumentQueries
from mnemoproxy.memory.store.forget import ForgetQueries
from mnemoproxy.memory.store.items import ItemQueries
from mnemoproxy.memory.store.maintenance import MaintenanceQueries
from mnemoproxy.memory.store.pg_schema import PG_MIGRATIONS
from mnemoproxy.memory.store.portable import PortableQueries
from mnemoproxy.memory.store.procedures import ProcedureQueries
from mnemoproxy.memory.store.retrieval import RetrievalQueries
from mnemoproxy.memory.store.schema import MIGRATIONS, Migration
from mnemoproxy.memory.store.sessions import SessionQueries
from mnemoproxy.memory.store.shared import SharedQueries
from mnemoproxy.memory.store.threads import ThreadQueries
from mnemoproxy.memory.store.turns import TurnQueries


class Store(
    BrowseQueries,
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
            return cls(postgres.without_password(store_url), pg_writer, pg_reader, "postgres")
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

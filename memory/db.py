"""The two SQLite connections every store method goes through.

One writer connection serialises all writes behind an asyncio.Lock (SQLite allows one
writer at a time; queuing in-process avoids busy errors), and a separate read-only
connection serves reads, which WAL lets run while a write is in progress.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from config.errors import InvalidRequest, MemoryFailure
from memory.schema import MIGRATIONS, Migration, migrate

DB_FILE = "memory.db"
BUSY_TIMEOUT_MS = 5000


async def _connect(path: Path, *, read_only: bool) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    await conn.execute("PRAGMA foreign_keys = ON")
    await conn.execute("PRAGMA synchronous = NORMAL")
    if read_only:
        await conn.execute("PRAGMA query_only = ON")
    else:
        await conn.execute("PRAGMA journal_mode = WAL")
    return conn


def require_agent(agent_id: str) -> str:
    """Every read and write names its agent; a blank one is the caller's mistake."""
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise InvalidRequest("agent_id is required: pass the agent's id (X-Agent-Id)",
                             param="agent_id")
    return agent_id


class Database:
    """Owns the connections; store mixins build their SQL on `_write()` and `_fetch*()`."""

    def __init__(self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection):
        self.path = path
        self._writer = writer
        self._reader = reader
        self._write_lock = asyncio.Lock()
        # Set whenever content that needs a vector is written; the embedding worker waits on it.
        self.content_changed = asyncio.Event()

    @classmethod
    async def connect(
        cls, data_dir: str | Path, migrations: Sequence[Migration] = MIGRATIONS
    ) -> tuple[Path, aiosqlite.Connection, aiosqlite.Connection]:
        folder = Path(data_dir)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / DB_FILE
            writer = await _connect(path, read_only=False)
            await migrate(writer, migrations)
            reader = await _connect(path, read_only=True)
        except (OSError, sqlite3.Error) as exc:
            raise MemoryFailure(
                f"cannot open the memory database in {folder}: {exc}; "
                "check that data_dir is a writable folder"
            ) from exc
        return path, writer, reader

    async def close_connections(self) -> None:
        async with self._write_lock:
            await self._writer.close()
        await self._reader.close()

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction on the single writer connection."""
        async with self._write_lock:
            await self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield self._writer
            except BaseException:
                await self._writer.rollback()
                raise
            await self._writer.commit()

    async def _fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        # One hop to the reader thread (execute + fetch + close together).
        return list(await self._reader.execute_fetchall(sql, tuple(params)))

    async def _fetchone(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None

    async def _scalar(self, sql: str, params: Iterable[Any] = ()) -> Any:
        row = await self._fetchone(sql, params)
        return None if row is None else row[0]

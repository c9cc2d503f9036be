"""The two SQLite connections every store method goes through.

One writer connection serialises all writes behind an asyncio.Lock (SQLite allows one
writer at a time; queuing in-process avoids busy errors), and a separate read-only
connection serves reads, which WAL lets run while a write is in progress.

The reader is a plain sqlite3 connection owned by one thread, so that a read made of
several statements (a search's term statistics and ranking, a fetch across item types)
runs them all in one hop to that thread: under load each hop costs more than the
statements themselves. Writes do the same with `_write_in_one_hop()`: a transaction of
several statements, planned in Python between them, is one function on the writer's
thread, and the write lock is held for one hop instead of one per statement.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Generic, Protocol, Self, TypeVar

from mnemoproxy.bounded import LruDict
from mnemoproxy.errors import InvalidArgument, MemoryFailure
from mnemoproxy.memory.store.cipher import Cipher
from mnemoproxy.memory.store.schema import MIGRATIONS, Migration, migrate

log = logging.getLogger(__name__)

DB_FILE = "memory.db"
BUSY_TIMEOUT_MS = 5000
# The writer waits this long for another process's write transaction (workers > 1, or a
# command run on data_dir beside the proxy) before failing: a turn must wait for a long
# write (a large import, a forget) rather than be lost.
WRITER_BUSY_TIMEOUT_MS = 120_000
# Held while a process opens and migrates the database, so that processes starting
# together (workers > 1) never apply the same migration twice.
OPEN_LOCK_FILE = "open.lock"
# Reads go through a memory map of the database file instead of SQLite's own page cache
# (2 MB by default): at 100k items the file is ~170 MB, and a search that looks up a
# thousand rows paid a system call per evicted page, more than the query itself.
# Address space, not memory: the kernel's page cache
# backs the map and can drop it under pressure.
MMAP_BYTES = 1 << 30
# Retrieval's per-agent row counts kept (agent, item type): a few bytes each.
ROWS_COUNTED_KEPT = 8192
PLAIN = Cipher()
T = TypeVar("T")


def _lock_exclusively(path: Path) -> int:
    """A descriptor of `path` holding an exclusive flock (waited for); closing it unlocks."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def private_folder(folder: Path) -> None:
    """Memory is for its owner's eyes: data_dir 0700, whatever it holds."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)


def private(folder: Path, database: Path) -> None:
    """Memory is for its owner's eyes: the folder 0700, the database 0600 (created so
    before SQLite opens it; SQLite gives its -wal and -shm files the database's mode)."""
    private_folder(folder)
    os.close(os.open(database, os.O_WRONLY | os.O_CREAT, 0o600))
    for file in (database, *(database.with_name(database.name + s) for s in ("-wal", "-shm"))):
        if file.exists():
            os.chmod(file, 0o600)


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class ConnectionThread(Generic[C]):
    """A connection and the one thread that uses it: work given to it is one hop there."""

    def __init__(self, executor: ThreadPoolExecutor, conn: C) -> None:
        self._executor = executor
        self._conn = conn
        self._closed = False

    @classmethod
    async def started(cls, thread_name: str, connect: Callable[[], C], *extra: Any) -> Self:
        """A new thread named `thread_name` with the connection `connect()` opens on it."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)
        try:
            conn = await asyncio.get_running_loop().run_in_executor(executor, connect)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(executor, conn, *extra)

    def _attempt(self, work: Callable[[C], T]) -> T:
        """`work(connection)`, on the connection's thread."""
        return work(self._conn)

    async def run(self, work: Callable[[C], T]) -> T:
        """`work(connection)` on the connection's thread: any number of statements, one hop."""
        if self._closed:
            raise MemoryFailure("the memory store is closed")
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, self._attempt, work)

    async def close(self) -> None:
        if self._closed:
            return
        try:
            await self.run(lambda conn: conn.close())
        finally:
            self._closed = True
            self._executor.shutdown(wait=False)


def _sqlite(path: Path, cipher: Cipher, *pragmas: str) -> Callable[[], sqlite3.Connection]:
    """Opens the database with these PRAGMAs set (on the thread that will use it)."""

    def connect() -> sqlite3.Connection:
        conn: sqlite3.Connection = cipher.connect(path)
        for pragma in pragmas:
            conn.execute(f"PRAGMA {pragma}")
        return conn

    return connect


class Reader(ConnectionThread[sqlite3.Connection]):
    """The read-only connection and the one thread that uses it."""

    @classmethod
    async def open(cls, path: Path, cipher: Cipher) -> Reader:
        return await cls.started("mnemo-sqlite-reader", _sqlite(
            path, cipher, f"busy_timeout = {BUSY_TIMEOUT_MS}", f"mmap_size = {MMAP_BYTES}",
            "query_only = ON"))


class Fetched:
    """What a writer's `execute` gives back: the statement's rows, fetched on the
    connection's thread, and how many rows it changed (a cursor's part the store uses)."""

    def __init__(self, cursor: Any) -> None:
        # Every row first: SQLite counts the rows a RETURNING statement changed as they
        # are fetched.
        self.rows: list[Any] = cursor.fetchall()
        self.rowcount: int = cursor.rowcount

    async def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    async def fetchall(self) -> list[Any]:
        return self.rows


class Statements(Closable, Protocol):
    """What a writer's connection answers (sqlite3's, or PostgreSQL's in SQLite's manner)."""

    def execute(self, sql: str, parameters: Any = (), /) -> Any: ...
    def executemany(self, sql: str, parameters: Any, /) -> Any: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...


S = TypeVar("S", bound=Statements)


class Writer(ConnectionThread[S]):
    """The one writer connection: whole transactions go to its thread in one hop (`run`),
    and a transaction spoken statement by statement from the event loop (`Database._write`)
    uses these calls."""

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> Fetched:
        values = tuple(params)
        return await self.run(lambda conn: Fetched(conn.execute(sql, values)))

    async def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> Fetched:
        listed = [tuple(row) for row in rows]
        return await self.run(lambda conn: Fetched(conn.executemany(sql, listed)))

    async def commit(self) -> None:
        await self.run(lambda conn: conn.commit())

    async def rollback(self) -> None:
        await self.run(lambda conn: conn.rollback())


class SqliteWriter(Writer[sqlite3.Connection]):
    """SQLite's writer connection and the one thread that uses it."""

    @classmethod
    async def open(cls, path: Path, cipher: Cipher) -> SqliteWriter:
        # secure_delete: what is deleted is overwritten with zeros in the same write, so
        # forgotten text leaves the file without rewriting the file (a VACUUM); the pages
        # it frees go back to the file system by incremental vacuum (auto_vacuum).
        return await cls.started("mnemo-sqlite-writer", _sqlite(
            path, cipher, f"busy_timeout = {WRITER_BUSY_TIMEOUT_MS}", "foreign_keys = ON",
            "synchronous = NORMAL", f"mmap_size = {MMAP_BYTES}", "secure_delete = ON",
            "auto_vacuum = INCREMENTAL", "journal_mode = WAL"))


def _reclaimable(conn: sqlite3.Connection) -> None:
    """A database made before auto_vacuum was set (it takes effect on a new file's first
    table) is rewritten once, at start-up, so that freed pages can leave it later without
    another rewrite."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0:
        log.info("memory.db: rewritten once so that forgetting can free space "
                 "(auto_vacuum = incremental)")
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")


def require_agent(agent_id: str) -> str:
    """Every read and write names its agent; a blank one is the caller's mistake."""
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise InvalidArgument(
            "agent_id is required: every memory read and write names its agent",
            param="agent_id",
        )
    return agent_id


class Database:
    """Owns the connections; store mixins build their SQL on `_write()`, `_read()` (several
    statements, one hop) and `_fetch*()`.

    The statements are SQLite's; on PostgreSQL (`dialect` "postgres",
    memory/store/postgres/connections.py)
    the same calls run them translated, and the few that cannot be (full-text search,
    functions written in Python, the file itself) are written per dialect."""

    dialect: str = "sqlite"

    def __init__(self, path: Path | str, writer: Any, reader: Any, dialect: str = "sqlite"):
        # The database file (SQLite) or its URL without the password (PostgreSQL).
        self.path = path
        self.dialect = dialect
        self._writer = writer
        self._reader = reader
        self._write_lock = asyncio.Lock()
        # Set whenever content that needs a vector is written; the embedding worker waits on it.
        self.content_changed = asyncio.Event()
        # (agent, item type) -> ((the agent's rows, all rows), when counted): retrieval's,
        # for the agents read lately (any id a client sends is read).
        self._agent_rows_counted: LruDict[tuple[str, str], tuple[tuple[int, int], float]] = (
            LruDict(ROWS_COUNTED_KEPT))

    @classmethod
    async def connect(
        cls,
        data_dir: str | Path,
        migrations: Sequence[Migration] = MIGRATIONS,
        cipher: Cipher = PLAIN,
    ) -> tuple[Path, SqliteWriter, Reader]:
        folder = Path(data_dir)
        failures: tuple[type[BaseException], ...] = (OSError, *cipher.errors)
        try:
            path = folder / DB_FILE
            private(folder, path)
            opening = await asyncio.to_thread(_lock_exclusively, folder / OPEN_LOCK_FILE)
            try:
                writer = await SqliteWriter.open(path, cipher)
                await writer.run(lambda conn: migrate(conn, migrations))
                await writer.run(_reclaimable)
            finally:
                os.close(opening)  # releases the lock
            reader = await Reader.open(path, cipher)
        except failures as exc:
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
    async def _write(self) -> AsyncIterator[Writer[Any]]:
        """One write transaction on the single writer connection."""
        async with self._write_lock:
            await self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield self._writer
            except BaseException:
                await self._writer.rollback()
                raise
            await self._writer.commit()

    async def _write_in_one_hop(self, write: Callable[[sqlite3.Connection], T]) -> T:
        """Run `write(connection)`, plain synchronous sqlite3 calls, as one write
        transaction on the writer's thread (BEGIN IMMEDIATE, COMMIT; ROLLBACK when it
        raises): the same transaction as `_write()`, in one hop instead of one per
        statement, so that writers wait for each other's statements, not for the event loop.

        Once queued the transaction runs to its end (commit or rollback) even if the caller
        is cancelled meanwhile, and the write lock is held until it has: no other write can
        interleave with it, and a turn handed over is recorded or fails, never half-way."""

        def in_one_transaction(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = write(conn)
                conn.commit()
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            return result

        async with self._write_lock:
            done = asyncio.ensure_future(self._writer.run(in_one_transaction))
            try:
                return await asyncio.shield(done)
            except asyncio.CancelledError:
                if not done.done():
                    await asyncio.wait([done])  # the lock stays held until it is over
                if not done.cancelled():
                    done.exception()  # its failure, if any, rolled back: the caller has gone
                raise

    async def _read(self, read: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read of several statements on the reader connection in one hop, all of
        them on one snapshot (a write committed meanwhile is seen by none or all)."""

        def in_one_snapshot(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN")
            try:
                return read(conn)
            finally:
                conn.execute("COMMIT")

        return await self._reader.run(in_one_snapshot)

    async def _fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        values = tuple(params)
        return await self._reader.run(lambda conn: conn.execute(sql, values).fetchall())

    async def _fetchone(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None

    async def _scalar(self, sql: str, params: Iterable[Any] = ()) -> Any:
        row = await self._fetchone(sql, params)
        return None if row is None else row[0]

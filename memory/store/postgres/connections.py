"""The store on PostgreSQL: the connections, and SQLite's dialect carried over.

The store's statements are written once, in SQLite's dialect, and run on PostgreSQL through
connections that look like the SQLite ones the store methods are handed: a synchronous
connection per thread (one writer, one reader, as db.py keeps them: a read or write of
several statements is one hop to its thread), whose `execute` translates each statement once
(`translate`, cached) and whose rows answer by position and by column name, as sqlite3.Row
does. What does not translate (full-text search, SQL functions written in Python, the file
itself) the store methods do per dialect (`Database.dialect`).

Writes keep SQLite's one writer at a time across every process and machine on the
database: each write transaction first takes one transaction-scoped advisory lock, so what
the store checks before it writes (a distillation's turns all still pending, a fact's
current value) still holds when it writes, whichever replica writes. Reads see one snapshot
(REPEATABLE READ), as a SQLite read transaction does.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Self, TypeVar

import psycopg
from psycopg import pq
from psycopg.rows import tuple_row

from mnemoproxy.config.urls import without_credentials
from mnemoproxy.errors import InvalidArgument, MemoryFailure
from mnemoproxy.memory.store.db import ConnectionThread, Writer
from mnemoproxy.memory.store.postgres.schema import PRIMARY_KEYS
from mnemoproxy.memory.store.schema import Migration

T = TypeVar("T")
log = logging.getLogger(__name__)
# The advisory lock every write transaction holds (an arbitrary constant of this project),
# the one held while a process migrates, and the background work's owner's.
WRITE_LOCK = 0x6D6E656D6F
MIGRATE_LOCK = WRITE_LOCK + 1
OWNER_LOCK = WRITE_LOCK + 2
# The owner's connection says so to pg_stat_activity, with its process id.
OWNER_APPLICATION = "mnemoproxy owner"
CONNECT_SECONDS = 10
# A server (or machine) gone without closing the connection is noticed within ~25 s.
KEEPALIVES: dict[str, Any] = {
    "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


# -- translation ---------------------------------------------------------------------------

_SCALAR = {"MAX": "GREATEST", "MIN": "LEAST"}
_FUNCTION = re.compile(r"\b(MAX|MIN|group_concat)\(", re.IGNORECASE)


def _outside_quotes(text: str, depth: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, parenthesis depth after it) of each character of `text` outside
    quoted text, starting at `depth`."""
    quote = ""
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
            continue
        if char in "'\"":
            quote = char
            continue
        depth += (char == "(") - (char == ")")
        yield index, char, depth


def _closing(sql: str, start: int) -> int:
    """The index of the parenthesis closing the one before `start`."""
    for index, char, depth in _outside_quotes(sql[start:], 1):
        if char == ")" and depth == 0:
            return start + index
    raise ValueError(f"unbalanced parentheses in {sql!r}")


def _has_top_level_comma(text: str) -> bool:
    return any(char == "," and depth == 0 for _, char, depth in _outside_quotes(text))


def _functions(sql: str) -> str:
    """SQLite's scalar MAX/MIN of several arguments are GREATEST/LEAST; group_concat is
    string_agg."""
    out: list[str] = []
    position = 0
    unquoted = {index for index, _, _ in _outside_quotes(sql)}
    for match in _FUNCTION.finditer(sql):
        if match.start() < position or match.start() not in unquoted:
            continue
        name = match.group(1)
        end = _closing(sql, match.end())
        inner = _functions(sql[match.end():end])
        if name.lower() == "group_concat":
            replacement = f"string_agg({inner})"
        elif _has_top_level_comma(inner):
            replacement = f"{_SCALAR[name.upper()]}({inner})"
        else:
            replacement = f"{name}({inner})"
        out.append(sql[position:match.start()] + replacement)
        position = end + 1
    out.append(sql[position:])
    return "".join(out)


def _placeholders(sql: str) -> str:
    """`?` -> `%s`, and a literal `%` doubled, outside quoted text."""
    out: list[str] = []
    quote = ""
    for char in sql:
        if quote:
            if char == quote:
                quote = ""
            out.append("%%" if char == "%" else char)
        elif char in "'\"":
            quote = char
            out.append(char)
        elif char == "?":
            out.append("%s")
        elif char == "%":
            out.append("%%")
        else:
            out.append(char)
    return "".join(out)


_INSERT_OR = re.compile(r"^\s*INSERT OR (IGNORE|REPLACE) INTO\s+(\w+)\s*(\(([^)]*)\))?",
                        re.IGNORECASE)
_RETURNING = re.compile(r"\sRETURNING\s", re.IGNORECASE)


def _conflicts(sql: str) -> str:
    """INSERT OR IGNORE / OR REPLACE as INSERT ... ON CONFLICT."""
    match = _INSERT_OR.match(sql)
    if match is None:
        return sql
    action, table, columns = match.group(1).upper(), match.group(2), match.group(4)
    sql = sql[:match.start()] + "INSERT INTO " + sql[match.start(2):]
    if action == "IGNORE":
        clause = " ON CONFLICT DO NOTHING"
    else:
        if table not in PRIMARY_KEYS or columns is None:
            raise ValueError(f"no conflict target known for INSERT OR REPLACE INTO {table}")
        keys = PRIMARY_KEYS[table]
        names = [c.strip() for c in columns.split(",")]
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in names if c not in keys)
        clause = (f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}" if updates
                  else f" ON CONFLICT ({', '.join(keys)}) DO NOTHING")
    returning = _RETURNING.search(sql)
    if returning:
        return sql[:returning.start()] + clause + sql[returning.start():]
    return sql.rstrip().rstrip(";") + clause


_REWRITES = (
    (re.compile(r"\bIS NOT \?", re.IGNORECASE), "IS DISTINCT FROM ?"),
    (re.compile(r"\bIS \?", re.IGNORECASE), "IS NOT DISTINCT FROM ?"),
    # SQLite's LIKE ignores ASCII case.
    (re.compile(r"\bLIKE\b", re.IGNORECASE), "ILIKE"),
    # SQLite's unary plus keeps its planner off a column's index (`+agent_id = ?` beside
    # `id IN (...)`: the ids, not the agent's every row); an expression does it here.
    (re.compile(r"\b(WHERE|AND|OR|ON)\s+\+([a-z_]+\.)?agent_id\b", re.IGNORECASE),
     r"\1 (\2agent_id || '')"),
)


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    """A statement in SQLite's dialect, as PostgreSQL (psycopg) takes it."""
    sql = _conflicts(sql)
    sql = _functions(sql)
    for pattern, replacement in _REWRITES:
        sql = pattern.sub(replacement, sql)
    return _placeholders(sql)


# -- rows and cursors ----------------------------------------------------------------------


class Row(tuple):
    """A row by position or by column name, as sqlite3.Row."""

    _names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: psycopg.Cursor[Any]) -> Callable[[Sequence[Any]], Row]:
    names = {column.name: index for index, column in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> Row:
        row = Row(values)
        row._names = names
        return row

    return make


def _storable(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """PostgreSQL's text cannot hold the NUL character: refused with a clear error (SQLite
    stores it) instead of a driver failure."""
    for value in values:
        if isinstance(value, str) and "\x00" in value:
            raise InvalidArgument(
                "PostgreSQL text cannot hold the NUL character (U+0000): remove it from the "
                "agent id, session or text")
    return values


class Cursor:
    """The part of sqlite3.Cursor the store uses. Setting `row_factory` (sqlite3 callers
    set None for plain tuples, the cheapest rows) gives plain tuples here too."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor

    @property
    def row_factory(self) -> Any:
        return None

    @row_factory.setter
    def row_factory(self, _factory: Any) -> None:
        self._cursor.row_factory = tuple_row

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Cursor:
        self._cursor.execute(translate(sql), _storable(tuple(params)))
        return self

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def fetchone(self) -> Any:
        return self._cursor.fetchone() if self._cursor.description else None

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall() if self._cursor.description else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class Connection:
    """A psycopg connection with sqlite3.Connection's calls, statements translated."""

    def __init__(self, conn: psycopg.Connection[Any], *, writer: bool) -> None:
        self._conn = conn
        self._writer = writer

    @classmethod
    def open(cls, url: str, *, writer: bool) -> Connection:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_SECONDS,
                               **KEEPALIVES)
        conn.row_factory = _row_factory
        return cls(conn, writer=writer)

    @property
    def broken(self) -> bool:
        return self._conn.closed or self._conn.broken

    @property
    def in_transaction(self) -> bool:
        return self._conn.info.transaction_status != pq.TransactionStatus.IDLE

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Cursor:
        head = sql.lstrip()[:16].upper()
        if head.startswith("BEGIN"):
            self.begin()
            return Cursor(self._conn.cursor())
        if head.rstrip().rstrip(";") == "COMMIT":
            self.commit()
            return Cursor(self._conn.cursor())
        values = _storable(tuple(params))
        cursor = self._conn.cursor()
        try:
            cursor.execute(translate(sql), values)
        except psycopg.IntegrityError as exc:
            # The store catches a broken constraint as sqlite3 raises it (a name taken).
            raise sqlite3.IntegrityError(str(exc)) from exc
        return Cursor(cursor)

    def cursor(self) -> Cursor:
        return Cursor(self._conn.cursor())

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> Cursor:
        cursor = self._conn.cursor()
        cursor.executemany(translate(sql), [_storable(tuple(row)) for row in rows])
        return Cursor(cursor)

    def begin(self) -> None:
        """A write transaction holds the cluster-wide write lock; a read sees one snapshot."""
        if self._writer:
            self._conn.execute("BEGIN")
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        else:
            self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def commit(self) -> None:
        if self.in_transaction:
            self._conn.execute("COMMIT")

    def rollback(self) -> None:
        """Nothing to undo on a connection the server dropped: it never committed."""
        if self.in_transaction and not self.broken:
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        self._conn.close()


# -- the threads that own them -------------------------------------------------------------


class Worker(ConnectionThread[Connection]):
    """One connection and the one thread that uses it. A connection the server dropped
    (a restart, a failover) fails the work in hand and is opened again for the next."""

    def __init__(
        self, executor: ThreadPoolExecutor, conn: Connection, url: str, writer: bool
    ) -> None:
        super().__init__(executor, conn)
        self._url = url
        self._writer = writer

    @classmethod
    async def open(cls, url: str, *, writer: bool) -> Self:
        name = "mnemo-pg-writer" if writer else "mnemo-pg-reader"
        return await cls.started(name, lambda: Connection.open(url, writer=writer), url, writer)

    def _attempt(self, work: Callable[[Connection], T]) -> T:
        """`work(connection)`; once more on a new connection when the server dropped this
        one under work that began outside any transaction (a whole read or write, which
        then either never reached the server or never committed: nothing half-done)."""
        if self._conn.broken:
            self._conn = Connection.open(self._url, writer=self._writer)
        idle = not self._conn.in_transaction
        try:
            return work(self._conn)
        except psycopg.OperationalError:
            if not (idle and self._conn.broken):
                raise
            log.warning("the memory database dropped its connection; trying once more")
            self._conn = Connection.open(self._url, writer=self._writer)
            return work(self._conn)


class AsyncWriter(Worker, Writer[Connection]):
    """The writer, also spoken to statement by statement from the event loop (the calls
    db.Database makes on its writer)."""

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction


# -- the owner of the background work --------------------------------------------------------


class DatabaseOwnerLock:
    """The owner lock of the replicas on one database (memory/background/ownership.py's file lock,
    across machines): a session advisory lock held by a connection of its own. The server
    releases it when that connection ends, however the process ends (kill -9 closes its
    socket; TCP keepalives notice a vanished machine)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = without_credentials(url)
        self._conn: psycopg.Connection[Any] | None = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    def try_acquire(self) -> bool:
        if self._conn is not None:
            return True
        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_SECONDS,
                               application_name=f"{OWNER_APPLICATION} {os.getpid()}",
                               **KEEPALIVES)
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (OWNER_LOCK,)).fetchone()
        except BaseException:
            conn.close()
            raise
        if not row or not row[0]:
            conn.close()
            return False
        self._conn = conn
        return True

    def release(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()  # the session's advisory locks end with it


def owner_pid(url: str) -> int | None:
    """The pid of the process holding the owner lock of the database at `url` (on its
    machine), named by its connection."""
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_SECONDS) as conn:
        row = conn.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a "
            "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
            "AND l.classid = %s AND l.objid = %s AND l.objsubid = 1",
            (OWNER_LOCK >> 32, OWNER_LOCK & 0xFFFFFFFF)).fetchone()
    name = str(row[0]) if row else ""
    pid = name.removeprefix(OWNER_APPLICATION).strip()
    return int(pid) if pid.isdigit() else None


# -- opening -------------------------------------------------------------------------------


def _migrate(conn: psycopg.Connection[Any], migrations: Sequence[Migration]) -> list[str]:
    """Apply the steps not yet recorded, each in its own transaction, under a lock that
    processes starting together (replicas) wait on."""
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS _migrations "
                     "(name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)")
    for name, sql in migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            done = conn.execute("SELECT 1 FROM _migrations WHERE name = %s", (name,)).fetchone()
            if done:
                continue
            conn.execute(sql.encode())  # a script of several statements, no parameters
            conn.execute("INSERT INTO _migrations VALUES (%s, extract(epoch from now()))",
                         (name,))
        applied.append(name)
    return applied


async def connect(url: str, migrations: Sequence[Migration]) -> tuple[AsyncWriter, Worker]:
    """The writer and the reader of the database at `url`, migrated."""
    try:
        def migrated() -> None:
            with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_SECONDS) as conn:
                _migrate(conn, migrations)

        await asyncio.to_thread(migrated)
        writer = await AsyncWriter.open(url, writer=True)
        try:
            reader = await Worker.open(url, writer=False)
        except BaseException:
            await writer.close()
            raise
    except psycopg.Error as exc:
        raise MemoryFailure(f"cannot open the memory database at {without_credentials(url)}: "
                            f"{exc}".strip()) from exc
    return writer, reader


"""A second, independent connection to a store's database, as another process (or a DBA)
would have: sqlite3 on the file, or, on PostgreSQL, a connection that takes the same
SQLite-dialect statements (memory/store/postgres/). Each statement commits by itself."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from mnemoproxy.memory.store import Store, postgres
from mnemoproxy.memory.store.cipher import with_text_functions
from tests.support.servers.backends import database_url, store_url_for

DB_FILE = "memory.db"


@contextmanager
def raw(where: Store | Path | str) -> Iterator[Any]:
    """A connection to the database of `where`: an open store, a PostgreSQL URL, or the
    data_dir a test's settings name (its database on this run's backend)."""
    if isinstance(where, str) and postgres.is_postgres_url(where):
        url, file = where, Path()
    elif isinstance(where, Store):
        url = database_url(str(where.path)) if where.dialect == "postgres" else ""
        file = Path(where.path)
    else:
        url = store_url_for(str(where))
        file = Path(where) / DB_FILE
    if url:
        with closing(postgres.Connection.open(url, writer=True)) as conn:
            yield conn
        return
    with closing(with_text_functions(
            sqlite3.connect(file, isolation_level=None, timeout=30))) as conn:
        yield conn


def rows(where: Store | Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """All rows of one statement, on a connection of its own."""
    with raw(where) as db:
        return [tuple(row) for row in db.execute(sql, params).fetchall()]


def database_text(data_dir: Path | str) -> bytes:
    """On PostgreSQL, every row of every table of the data_dir's database as text (the
    server's files are its own); on SQLite nothing: the file is in data_dir."""
    url = store_url_for(str(data_dir))
    if not url:
        return b""
    with raw(data_dir) as db:
        tables = [row[0] for row in db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()]
        return b"".join(str(row[0]).encode() for table in tables
                        for row in db.execute(f"SELECT t::text FROM {table} t").fetchall())


def stored_bytes(data_dir: Path | str) -> bytes:
    """Everything memory wrote: the data_dir's files, and on PostgreSQL its database's rows."""
    files = b"".join(p.read_bytes() for p in Path(data_dir).rglob("*") if p.is_file())
    return files + database_text(data_dir)

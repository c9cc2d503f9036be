"""Encryption at rest: with `encryption_key_file` set, the database is opened through
SQLCipher (the `sqlcipher3` module, same DB-API as sqlite3) and every page of it, its WAL
and its temporary files included, is encrypted with AES-256. Without a key this is plain
sqlite3.

The key file holds either a passphrase (SQLCipher derives the key with PBKDF2) or 64 hex
digits (used as the raw key). It is read once at start-up, never logged or stored.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemoproxy.errors import SettingError
from mnemoproxy.memory.text.segments import SQL_FUNCTION, spaced

HEX_KEY_LENGTH = 64


@dataclass(frozen=True)
class Cipher:
    """How the store's connections are opened: plain, or keyed."""

    key: str | None = field(default=None, repr=False)  # never in a log or a traceback

    @classmethod
    def from_file(cls, key_file: str) -> Cipher:
        if not key_file:
            return cls(None)
        try:
            key = Path(key_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingError(
                f"cannot read encryption_key_file {key_file}: {exc}",
                param="encryption_key_file",
            ) from exc
        if len(key) < 8:
            raise SettingError(
                f"encryption_key_file {key_file} holds fewer than 8 characters; put a long "
                "passphrase or 64 hex digits in it", param="encryption_key_file",
            )
        return cls(key)

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """The database errors the driver in use raises."""
        if self.key is None:
            return (sqlite3.Error,)
        from sqlcipher3 import dbapi2

        return (sqlite3.Error, dbapi2.Error)

    def connect(self, path: Path) -> Any:
        """A connection (autocommit mode, rows by name) to the database at `path`."""
        if self.key is None:
            conn = sqlite3.connect(path, isolation_level=None)
            conn.row_factory = sqlite3.Row
            return with_text_functions(conn)
        from sqlcipher3 import dbapi2

        conn = dbapi2.connect(str(path), isolation_level=None)
        conn.row_factory = dbapi2.Row
        raw = len(self.key) == HEX_KEY_LENGTH and all(
            c in "0123456789abcdefABCDEF" for c in self.key)
        literal = f"\"x'{self.key}'\"" if raw else "'" + self.key.replace("'", "''") + "'"
        conn.execute(f"PRAGMA key = {literal}")
        # Sorts and temporary tables stay in memory, never in a file beside the database.
        conn.execute("PRAGMA temp_store = MEMORY")
        with_text_functions(conn)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except dbapi2.DatabaseError as exc:
            conn.close()
            raise SettingError(
                f"the memory database {path} cannot be opened with the key in "
                "encryption_key_file: wrong key, or a database written without encryption "
                "(start with a new data_dir to encrypt)", param="encryption_key_file",
            ) from exc
        return conn


def with_text_functions(conn: Any) -> Any:
    """`conn`, knowing the functions the schema's triggers call: the full-text mirrors cut
    unspaced scripts with mnemo_spaced (migration m015). Any connection that writes the
    store must know it."""
    conn.create_function(SQL_FUNCTION, 1, spaced, deterministic=True)
    return conn

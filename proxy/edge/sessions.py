"""The inspector's sign-in sessions: what a browser keeps in its cookie for /ui.

A key typed into the sign-in form becomes a token, never the key itself (a browser sends
cookies to every port of the host, and the key also opens the JSON routes):

    s1.<key id>.<nonce>.<expires>.<MAC of the rest>

The MAC is keyed by a secret of the server's own, 32 random bytes in data_dir
(`inspector.secret`, readable by its owner only, made on the first sign-in): someone who
can read keys.json cannot make a session from it. A token lasts SESSION_SECONDS (its
cookie as long), and only while its key is active and reaches memory. Signing out records
the token's nonce in data_dir (`inspector-signed-out.json`) until the token would have
expired, so a copy of the cookie kept elsewhere opens nothing any more, after a restart
and in every worker process as well.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from pathlib import Path

from mnemoproxy.proxy.edge.keys import Key, KeyFile

SESSION_SECONDS = 12 * 3600
SECRET_NAME = "inspector.secret"
SIGNED_OUT_NAME = "inspector-signed-out.json"
_VERSION = "s1"


class InspectorSessions:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._secret: bytes | None = None
        self._signed_out: dict[str, float] = {}
        self._stamp: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def issue(self, key: Key, *, now: float | None = None) -> str:
        """A new session's token for `key`."""
        expires = int((time.time() if now is None else now) + SESSION_SECONDS)
        body = f"{_VERSION}.{key.id}.{secrets.token_urlsafe(16)}.{expires}"
        return f"{body}.{self._mac(body, create=True)}"

    def find(self, token: str, keys: KeyFile) -> Key | None:
        """The active key a token is a live session of, or None."""
        parts = self._checked(token)
        if parts is None:
            return None
        key_id, nonce, expires = parts
        if expires <= time.time() or nonce in self._signed_out_now():
            return None
        return next((k for k in keys.active if k.id == key_id), None)

    def sign_out(self, token: str) -> None:
        """End the session for good (a token that is not one of ours is ignored)."""
        parts = self._checked(token)
        if parts is None:
            return
        _, nonce, expires = parts
        with self._lock:
            signed_out = {n: at for n, at in self._read_signed_out().items()
                          if at > time.time()}
            signed_out[nonce] = expires
            self._write_signed_out(signed_out)

    # -- the token ---------------------------------------------------------------------

    def _checked(self, token: str) -> tuple[str, str, float] | None:
        """(key id, nonce, expiry) of a token whose MAC holds."""
        body, _, mac = token.rpartition(".")
        fields = body.split(".")
        if len(fields) != 4 or fields[0] != _VERSION or not fields[3].isdigit():
            return None
        expected = self._mac(body, create=False)
        if expected is None or not hmac.compare_digest(expected, mac):
            return None
        return fields[1], fields[2], float(fields[3])

    def _mac(self, body: str, *, create: bool) -> str | None:
        secret = self._read_secret(create)
        if secret is None:
            return None
        return hmac.new(secret, body.encode("utf-8"), hashlib.sha256).hexdigest()

    def _read_secret(self, create: bool) -> bytes | None:
        if self._secret is not None:
            return self._secret
        path = self.folder / SECRET_NAME
        with self._lock:
            if not path.exists() and create:
                self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                try:  # several workers may sign someone in at once: the first file wins
                    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                except FileExistsError:
                    pass
                else:
                    with os.fdopen(descriptor, "wb") as out:
                        out.write(secrets.token_bytes(32).hex().encode())
            try:
                secret = path.read_bytes().strip()
            except FileNotFoundError:
                return None
            if len(secret) < 32:
                return None  # being written by another process: no session this instant
            self._secret = secret
        return secret

    # -- signed-out sessions -------------------------------------------------------------

    def _signed_out_now(self) -> dict[str, float]:
        with self._lock:
            path = self.folder / SIGNED_OUT_NAME
            try:
                stat = path.stat()
            except FileNotFoundError:
                self._signed_out, self._stamp = {}, None
                return self._signed_out
            stamp = (stat.st_mtime_ns, stat.st_size)
            if stamp != self._stamp:
                self._signed_out, self._stamp = self._read_signed_out(), stamp
            return self._signed_out

    def _read_signed_out(self) -> dict[str, float]:
        try:
            loaded = json.loads((self.folder / SIGNED_OUT_NAME).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return {str(n): float(at) for n, at in loaded.items()} if isinstance(loaded, dict) else {}

    def _write_signed_out(self, signed_out: dict[str, float]) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.folder / SIGNED_OUT_NAME
        partial = path.with_suffix(".tmp")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(signed_out, out)
        os.replace(partial, path)
        self._signed_out, self._stamp = signed_out, None

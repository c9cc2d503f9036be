"""Client and admin keys: created once, kept only as hashes in `keys_file`.

A key is 32 random bytes, so a plain SHA-256 of it cannot be reversed or guessed; the file
holds its id, hash, the agents whose memory it reaches and whether it may use the admin
routes. Lookups compare hashes in constant time. The file is re-read when it changes, so
`mnemoproxy keys add` or `revoke` takes effect on a running proxy within a second.

A key reaches memory only through an explicit agent list: `("alice", "bob")`, or `("*",)`
for every agent. A key without one (`agents` null in the file, as every key made before
lists existed had) relays chats and reads and writes no memory; an admin key reaches
every agent whatever its list.

Once a key has existed the proxy stays closed without one: `once_had_keys` holds while
the file lists any key (revoked ones too) or the marker file in data_dir (`keys.required`,
written whenever active keys are seen) exists, so neither revoking every key nor removing
the file opens it. `reset` (`mnemoproxy keys reset`) removes both.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mnemoproxy.errors import SettingError

KEY_PREFIX = "mp-"
EVERY_AGENT = "*"
MARKER_NAME = "keys.required"
RELOAD_SECONDS = 1.0


@dataclass(frozen=True)
class Key:
    id: str
    hash: str
    agents: tuple[str, ...] | None = None  # None or empty: no agent's memory
    admin: bool = False
    created_at: float = field(default_factory=time.time)
    revoked_at: float | None = None

    @property
    def reaches_memory(self) -> bool:
        """Whether the key reaches any agent's memory (else it only relays chats)."""
        return self.admin or bool(self.agents)

    def may_use(self, agent_id: str) -> bool:
        """Whether its agent list names `agent_id` (or every agent)."""
        agents = self.agents or ()
        return EVERY_AGENT in agents or agent_id in agents

    def as_dict(self) -> dict[str, object]:
        """What `keys list` shows: everything but the hash."""
        row = asdict(self)
        del row["hash"]
        return row


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def keys_path(keys_file: str, data_dir: str) -> Path:
    """Where the keys live: `keys_file`, or keys.json under data_dir."""
    return Path(keys_file) if keys_file else Path(data_dir) / "keys.json"


class KeyFile:
    def __init__(self, path: Path, *, marker: Path | None = None) -> None:
        self.path = path
        # Where "this proxy has had keys" is kept apart from the keys (None: nowhere).
        self.marker = marker
        self._keys: list[Key] = []
        self._stamp: tuple[int, int] | None = None
        self._checked = 0.0
        self._load()

    # -- reading -----------------------------------------------------------------------

    @property
    def all(self) -> list[Key]:
        """Every key, revoked ones included."""
        self._refresh()
        return list(self._keys)

    @classmethod
    def of(cls, keys_file: str, data_dir: str) -> KeyFile:
        """The keys a proxy with these settings uses, its marker in data_dir."""
        return cls(keys_path(keys_file, data_dir), marker=Path(data_dir) / MARKER_NAME)

    @property
    def active(self) -> list[Key]:
        self._refresh()
        return [k for k in self._keys if k.revoked_at is None]

    @property
    def once_had_keys(self) -> bool:
        """Whether keys have existed here: the file lists one (revoked or not), or the
        marker says so."""
        self._refresh()
        return bool(self._keys) or (self.marker is not None and self.marker.exists())

    def reset(self) -> int:
        """Remove every key and the marker: the proxy serves loopback without keys again.
        Returns how many active keys were removed."""
        active = len(self.active)
        for path in (self.path, self.marker):
            if path is not None:
                path.unlink(missing_ok=True)
        self._keys, self._stamp = [], None
        return active
    def find(self, secret: str) -> Key | None:
        """The active key with this secret, compared in constant time against each."""
        presented = _hash(secret)
        found = None
        for key in self.active:
            if hmac.compare_digest(presented, key.hash):
                found = key
        return found

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._checked >= RELOAD_SECONDS:
            self._checked = now
            self._load()

    def _load(self) -> None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._keys, self._stamp = [], None
            return
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp:
            return
        try:
            rows = json.loads(self.path.read_text(encoding="utf-8"))["keys"]
            keys = [
                Key(r["id"], r["hash"], None if r.get("agents") is None else tuple(r["agents"]),
                    bool(r.get("admin")), float(r["created_at"]), r.get("revoked_at"))
                for r in rows
            ]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SettingError(
                f"cannot read the keys file {self.path}: {exc}; fix or remove it and add keys "
                "again with `mnemoproxy keys add`", param="keys_file"
            ) from exc
        self._keys, self._stamp = keys, stamp
        if any(k.revoked_at is None for k in keys):
            self._mark()

    def _mark(self) -> None:
        """Keep, apart from the keys, that there have been keys: in data_dir when that
        folder exists (or holds the keys file), never by making a folder elsewhere."""
        marker = self.marker
        if marker is None or marker.exists():
            return
        if not (marker.parent.is_dir() or marker.parent == self.path.parent):
            return
        try:
            marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                out.write("keys were configured here; `mnemoproxy keys reset` removes this\n")
        except OSError:  # a read-only data_dir: the keys file alone remembers
            pass

    # -- changing ----------------------------------------------------------------------

    def add(self, *, agents: tuple[str, ...] | None, admin: bool) -> tuple[Key, str]:
        """A new key; returns it and its secret, which is shown once and stored nowhere."""
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        key = Key(f"key_{secrets.token_hex(4)}", _hash(secret), agents, admin)
        self._keys.append(key)
        self._save()
        return key, secret

    def revoke(self, key_id: str) -> Key | None:
        for i, key in enumerate(self._keys):
            if key.id == key_id and key.revoked_at is None:
                self._keys[i] = Key(key.id, key.hash, key.agents, key.admin, key.created_at,
                                    time.time())
                self._save()
                return self._keys[i]
        return None

    def _save(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = self.path.with_suffix(".tmp")
        rows = [asdict(k) for k in self._keys]
        # Written whole to a file only its owner can read, then moved over the old one.
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump({"keys": rows}, out, indent=1)
        os.replace(partial, self.path)
        self._stamp = None
        self._load()

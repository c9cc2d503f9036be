"""Several processes on one memory (`workers > 1`, or replicas on one PostgreSQL database):
which of them does the background work.

Every process records turns (one SQLite write transaction each; SQLite lets one writer in
at a time and the others wait, `busy_timeout`) and serves reads. Distilling sessions,
embedding and consolidating belong to one of them, the owner: the process holding an
exclusive `flock` on `<data_dir>/owner.lock` (the file holds its pid). The others try
for it every RETRY_SECONDS; the kernel releases it when its holder exits, however it
exits (kill -9 included), so another process takes over and, as a restarted proxy does,
distils whatever was left pending. Replicas sharing a PostgreSQL database (`store_url`),
on one machine or many, hold a database lock instead (memory/store/postgres.DatabaseOwnerLock):
the server releases it when its holder's connection ends, kill -9 included. There the owner
embeds and consolidates only: every replica distils, each session claimed by one of them
at a time (memory/store/claims.py).

The owner learns of other processes' work through the database: pending turns
(`WritePath.notice_pending`, every PENDING_POLL_SECONDS) and texts queued for a vector
(the embedding worker looks every QUEUE_POLL_SECONDS). A distillation is written only
while its turns are all still pending (`Store.apply_distillation`), so a session is never
distilled twice, even by an ingest in another process. Vectors reach every process's
indexes from SQLite (memory/search/vectors.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from mnemoproxy.memory.store.postgres import connections as postgres

log = logging.getLogger(__name__)

OWNER_FILE = "owner.lock"
RETRY_SECONDS = 2.0
PENDING_POLL_SECONDS = 1.0
QUEUE_POLL_SECONDS = 0.5


class Lock(Protocol):
    """What an owner lock does: taken by one process at a time, released by `release` or
    by the holder's end (this file lock; on PostgreSQL, store/postgres.DatabaseOwnerLock)."""

    where: str

    @property
    def held(self) -> bool: ...

    def try_acquire(self) -> bool: ...

    def release(self) -> None: ...


class OwnerLock:
    """An exclusive, non-blocking flock on a file: held by one process (one open file, in
    fact) at a time, released by `release` or by the holder's exit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path.parent)
        self._descriptor: int | None = None

    @property
    def held(self) -> bool:
        return self._descriptor is not None

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it; True when this holds it now."""
        if self._descriptor is not None:
            return True
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return False
        except BaseException:
            os.close(descriptor)
            raise
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        self._descriptor = descriptor
        return True

    def release(self) -> None:
        if self._descriptor is not None:
            descriptor, self._descriptor = self._descriptor, None
            with contextlib.suppress(OSError):
                os.ftruncate(descriptor, 0)
            os.close(descriptor)  # closing the last descriptor of the open file unlocks


def owner_pid(data_dir: str | Path, store_url: str = "") -> int | None:
    """The pid written by the process that holds (or last held) data_dir's owner lock; on
    PostgreSQL (`store_url`), of the process whose connection holds the database's."""
    if store_url:
        return postgres.owner_pid(store_url)
    try:
        text = (Path(data_dir) / OWNER_FILE).read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class Ownership:
    """Tries for the owner lock now and every `retry_seconds` until it wins, then runs
    `become_owner` once and, while it holds the lock, `poll` every `poll_seconds`."""

    def __init__(
        self,
        lock: Lock,
        become_owner: Callable[[], Awaitable[None]],
        poll: Callable[[], Awaitable[object]],
        *,
        retry_seconds: float = RETRY_SECONDS,
        poll_seconds: float = PENDING_POLL_SECONDS,
    ) -> None:
        self.lock = lock
        self._become_owner = become_owner
        self._poll = poll
        self.retry_seconds = retry_seconds
        self.poll_seconds = poll_seconds
        self._task: asyncio.Task[None] | None = None
        self.is_owner = False

    async def start(self) -> None:
        """Try once now (so a lone process starts as the owner), then keep trying."""
        await self._try()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="memory-owner")

    async def stop(self) -> None:
        """No more tries and no more polls (the lock is kept until `release`)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def release(self) -> None:
        self.lock.release()
        self.is_owner = False

    async def _try(self) -> bool:
        if self.is_owner:
            return True
        # A database lock is a round trip to the server: off the event loop.
        if not await asyncio.to_thread(self.lock.try_acquire):
            return False
        log.info("process %d owns the background work of %s", os.getpid(), self.lock.where)
        try:
            await self._become_owner()
        except Exception:
            # Let another process have it rather than hold it with nothing running.
            log.exception("starting memory's background work failed; releasing ownership")
            self.lock.release()
            return False
        self.is_owner = True
        return True

    async def _run(self) -> None:
        while True:
            if not self.is_owner:
                await asyncio.sleep(self.retry_seconds)
                try:
                    await self._try()
                except Exception:  # e.g. the lock file unreadable for a moment: try again
                    log.exception("trying for the ownership of memory's background work failed")
                continue
            await asyncio.sleep(self.poll_seconds)
            try:
                await self._poll()
            except Exception:  # the next look tries again; the turns wait in SQLite
                log.exception("looking for other processes' pending work failed")

"""After forgets, the store's scrub: the full-text indexes merged and free pages handed
back (memory/store/management/forget.py), in the background and at most once a minute.

A forget deletes and zeroes its rows at once; the words FTS5 keeps in its index segments
go when the segments are merged, which costs about the size of the indexes. So that a
tenant forgetting in a loop cannot make every forget pay that (nor run it back to back),
the merge runs SCRUB_AFTER_SECONDS after a forget, then no sooner than SCRUB_EVERY_SECONDS
after the previous one; forgets in between are covered by the next. A scrub still due at
shutdown runs before the store closes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

SCRUB_AFTER_SECONDS = 5.0
SCRUB_EVERY_SECONDS = 60.0


class ScrubSchedule:
    def __init__(self, scrub: Callable[[], Awaitable[None]]) -> None:
        self._scrub = scrub
        self._due = False
        self._last = -float("inf")
        self._task: asyncio.Task[None] | None = None
        self._running: asyncio.Future[None] | None = None

    def after_forget(self) -> None:
        """A forget happened: a scrub is due."""
        self._due = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._when_due(), name="memory-scrub")

    async def _when_due(self) -> None:
        while self._due:
            wait = max(SCRUB_AFTER_SECONDS, self._last + SCRUB_EVERY_SECONDS - time.monotonic())
            await asyncio.sleep(wait)
            await self._run()

    async def _run(self) -> None:
        self._due = False
        self._last = time.monotonic()
        # Shielded: a shutdown stops the wait before a scrub, never a scrub halfway.
        self._running = asyncio.ensure_future(self._scrub())
        try:
            await asyncio.shield(self._running)
        except Exception:  # the next forget (or shutdown) tries again
            self._due = True
            log.exception("merging the full-text indexes after a forget failed")

    async def close(self) -> None:
        """Stop waiting; let a scrub under way finish; one still due runs now."""
        if self._task is not None:
            self._task.cancel()
        if self._running is not None and not self._running.done():
            await asyncio.wait([self._running])
        if self._due:
            await self._run()

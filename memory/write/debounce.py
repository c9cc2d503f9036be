"""When sessions get distilled: `delay` seconds after their last turn, at once when their
agent moves on to another session, on demand (ingest), and at shutdown.

The scheduler only decides *when*; the distillation itself is the `run` coroutine it is
given. At most one run per session is in flight; a session touched again while it runs
is simply re-armed and distilled again later with whatever arrived meanwhile.

On standby (a process that shares data_dir with the owner of the background work, see
memory/background/ownership.py) nothing is armed or started: the turns wait in SQLite for the owner,
and only `run_now` (an ingest awaiting its own distillation) runs here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from mnemoproxy.bounded import LruDict

log = logging.getLogger(__name__)

SessionKey = tuple[str, int]  # (agent_id, session_id)
# Agents whose latest session is remembered (to distil the previous one at once when they
# move on): the most recently active ones. A forgotten one's previous session is still
# distilled, when its own timer fires.
ACTIVE_SESSIONS_KEPT = 10_000
RunSession = Callable[[str, int], Awaitable[None]]


class DebounceScheduler:
    def __init__(self, delay: float, run: RunSession) -> None:
        self.delay = delay
        self._run = run
        self._timers: dict[SessionKey, asyncio.TimerHandle] = {}
        self._locks: dict[SessionKey, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._active_session: LruDict[str, int] = LruDict(ACTIVE_SESSIONS_KEPT)
        self._closed = False
        self.standby = False

    def touch(self, agent_id: str, session_id: int) -> None:
        """A turn arrived: (re)arm the session's timer; an agent that switched sessions has
        its previous session distilled now."""
        if self.standby:
            return
        previous = self._active_session.get(agent_id)
        self._active_session[agent_id] = session_id
        if previous is not None and previous != session_id and (agent_id, previous) in self._timers:
            self.fire_now(agent_id, previous)
        self.arm(agent_id, session_id, self.delay)

    def arm(self, agent_id: str, session_id: int, delay: float) -> None:
        if self._closed or self.standby:
            return
        key = (agent_id, session_id)
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(delay, self._start, key)

    def fire_now(self, agent_id: str, session_id: int) -> None:
        if self.standby:
            return
        key = (agent_id, session_id)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._start(key)

    async def run_now(self, agent_id: str, session_id: int, run: RunSession | None = None) -> None:
        """Distil the session and wait for it (after any run already in flight); `run`
        replaces the scheduler's own coroutine for a caller that wants the outcome."""
        key = (agent_id, session_id)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        await self._guarded(key, run)

    def forget(self, agent_id: str) -> None:
        """Disarm every session of the agent (it is being forgotten)."""
        for key in [k for k in self._timers if k[0] == agent_id]:
            self._timers.pop(key).cancel()
        self._active_session.pop(agent_id, None)

    @property
    def armed(self) -> int:
        return len(self._timers)

    async def flush(self, timeout: float) -> None:
        """Distil every armed session now and wait, at most `timeout` seconds, for all runs."""
        for key in list(self._timers):
            self.fire_now(*key)
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
            if pending:
                log.warning(
                    "%d distillations still running at shutdown; their signals stay pending "
                    "and are distilled at the next start",
                    len(pending),
                )

    async def close(self, timeout: float) -> None:
        await self.flush(timeout)
        self._closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in self._tasks:
            task.cancel()

    def _start(self, key: SessionKey) -> None:
        self._timers.pop(key, None)
        task = asyncio.get_running_loop().create_task(self._guarded(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, key: SessionKey, run: RunSession | None = None) -> None:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            try:
                await (run or self._run)(*key)
            except Exception:  # the run logs its own failures; this keeps the loop alive
                log.exception("distilling session %s of agent %s failed", key[1], key[0])
        if not lock.locked() and key not in self._timers:
            self._locks.pop(key, None)

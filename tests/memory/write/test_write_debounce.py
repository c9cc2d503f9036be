"""The debounce scheduler's timing decisions, with a fast delay."""

from __future__ import annotations

import asyncio

from mnemoproxy.memory.write.debounce import DebounceScheduler


class Runs:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, agent_id: str, session_id: int) -> None:
        self.calls.append((agent_id, session_id))


async def test_distils_once_after_quiet_period():
    runs = Runs()
    scheduler = DebounceScheduler(0.05, runs)
    for _ in range(5):
        scheduler.touch("a", 1)
        await asyncio.sleep(0.01)
    assert runs.calls == []
    await asyncio.sleep(0.1)
    assert runs.calls == [("a", 1)]


async def test_new_session_distils_previous_at_once():
    runs = Runs()
    scheduler = DebounceScheduler(10, runs)
    scheduler.touch("a", 1)
    scheduler.touch("b", 7)  # another agent does not count
    scheduler.touch("a", 2)
    await asyncio.sleep(0.01)
    assert runs.calls == [("a", 1)]
    await scheduler.close(timeout=1)
    assert sorted(runs.calls) == [("a", 1), ("a", 2), ("b", 7)]


async def test_run_now_waits_and_failures_do_not_escape():
    calls = []

    async def flaky(agent_id: str, session_id: int) -> None:
        calls.append(session_id)
        if session_id == 1:
            raise RuntimeError("boom")

    scheduler = DebounceScheduler(10, flaky)
    await scheduler.run_now("a", 1)
    await scheduler.run_now("a", 2)
    assert calls == [1, 2]


async def test_one_run_per_session_at_a_time():
    active = 0
    peak = 0

    async def slow(agent_id: str, session_id: int) -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.05)
        active -= 1

    scheduler = DebounceScheduler(10, slow)
    scheduler.fire_now("a", 1)
    scheduler.fire_now("a", 1)
    await scheduler.run_now("a", 1)
    await scheduler.flush(timeout=1)
    assert peak == 1

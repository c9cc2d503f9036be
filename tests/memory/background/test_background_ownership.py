"""Several processes on one data_dir (workers > 1), tested in one process: the owner lock,
and two shared Memory objects (each its own store, indexes and owner-lock descriptor, as
two workers have) dividing the background work. tests/proxy/cli/test_cli_workers.py serves
real ones."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from mnemoproxy.memory import Memory, Turn
from mnemoproxy.memory.background.ownership import OWNER_FILE, RETRY_SECONDS, OwnerLock, owner_pid
from mnemoproxy.memory.embedders import HashingEmbedder
from mnemoproxy.memory.search.hybrid import Fusion
from mnemoproxy.memory.search.vectors import REFRESH_SECONDS
from tests.support.servers.proxy_server import make_settings
from tests.support.servers.raw_store import raw, rows

VECTORS_ONLY = Fusion(vector_weight=1.0)


def test_the_owner_lock_has_one_holder_at_a_time(tmp_path: Path) -> None:
    first, second = OwnerLock(tmp_path / OWNER_FILE), OwnerLock(tmp_path / OWNER_FILE)
    assert first.try_acquire() and first.try_acquire()  # holding it, asking again is a yes
    assert not second.try_acquire()
    assert owner_pid(tmp_path) == os.getpid()
    first.release()
    assert second.try_acquire() and not first.try_acquire()
    second.release()


def test_the_lock_of_a_killed_holder_is_free_at_once(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from mnemoproxy.memory.background.ownership import OwnerLock; "
         f"assert OwnerLock(__import__('pathlib').Path({str(tmp_path / OWNER_FILE)!r}))"
         ".try_acquire(); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        lock = OwnerLock(tmp_path / OWNER_FILE)
        assert not lock.try_acquire()
        assert owner_pid(tmp_path) == holder.pid
        holder.kill()  # kill -9: no clean-up of its own
        holder.wait(10)
        assert lock.try_acquire()
        assert owner_pid(tmp_path) == os.getpid()
        lock.release()
    finally:
        holder.kill()
        holder.wait(10)


async def _shared(data_dir: Path, **overrides: object) -> Memory:
    values: dict[str, object] = {
        "enabled": True, "data_dir": str(data_dir), "embedding_backend": "hashing",
        "summary_debounce_seconds": 1, "workers": 2, **overrides,
    }
    return await Memory.open(make_settings(**values), embedder=HashingEmbedder())


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[Memory, Memory]]:
    """(the owner, another process's memory) on one data_dir."""
    owner = await _shared(tmp_path / "data")
    other = await _shared(tmp_path / "data")
    try:
        yield owner, other
    finally:
        await other.close()
        await owner.close()


def _owns(memory: Memory) -> bool:
    return memory._ownership is not None and memory._ownership.is_owner


async def _eventually(check: Callable[[], Awaitable[bool]], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "not within the time allowed"
        await asyncio.sleep(0.1)


def _rows(data_dir: Path, sql: str) -> list[tuple[object, ...]]:
    return rows(data_dir, sql)


async def _found_by_vectors(memory: Memory, agent: str, query: str, word: str) -> bool:
    results = await memory.search(agent, query, fusion=VECTORS_ONLY)
    return any(word in r.text for r in results)


async def _counted(*memories: Memory) -> bool:
    return sum(m._writer.outcomes["distilled"] for m in memories) > 0


async def test_turns_recorded_elsewhere_are_distilled_once_by_the_owner_and_found_by_both(
    pair: tuple[Memory, Memory], tmp_path: Path
) -> None:
    owner, other = pair
    assert _owns(owner) and not _owns(other)
    await other.record("agent", "trip", [(0, Turn("I adopted a rescue dog named Biscuit.",
                                                  "What a lovely name!"))])
    await other.record("agent", "trip", [(1, Turn("Biscuit loves the beach in Porto.",
                                                  "Sounds like fun."))])
    # Workers on SQLite: the other process never distils. Replicas on PostgreSQL all do,
    # each session claimed by one at a time (memory/store/claims.py).
    distils_everywhere = other.store.dialect == "postgres"
    assert other._writer.scheduler.armed == (1 if distils_everywhere else 0)

    data = tmp_path / "data"

    async def distilled() -> bool:
        return _rows(data, "SELECT COUNT(*) FROM pending_signals WHERE status = 'pending'"
                     ) == [(0,)]

    await _eventually(distilled)
    assert _rows(data, "SELECT COUNT(*) FROM processing_log WHERE event = 'distilled'"
                 ) == [(1,)]
    # The process counts its outcome once the distillation's rows are committed.
    await _eventually(lambda: _counted(owner, other))
    distillations = [m._writer.outcomes["distilled"] for m in (owner, other)]
    assert sum(distillations) == 1
    assert distils_everywhere or (distillations == [1, 0] and not other._writer.outcomes)
    for memory in (owner, other):  # by its words at once, by its vector once embedded
        assert any("Biscuit" in r.text for r in await memory.search("agent", "Biscuit"))
        await _eventually(lambda m=memory: _found_by_vectors(  # type: ignore[misc]
            m, "agent", "adopted a rescue dog named Biscuit", "rescue dog"))


async def test_two_processes_distilling_one_session_write_it_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    owner = await _shared(data, summary_debounce_seconds=60)
    other = await _shared(data, summary_debounce_seconds=60)
    try:
        await other.record("agent", "s", [(i, Turn(
            f"On day {i} I went hiking with my sister Maria in Lisbon; it was exhausting "
            "but fun.", "Nice.")) for i in range(3)])
        session = _rows(data, "SELECT id FROM sessions")[0][0]
        assert isinstance(session, int)
        outcomes = await asyncio.gather(
            owner._writer.distil_session("agent", session),
            other._writer.distil_session("agent", session),
        )
        assert sorted(o.status for o in outcomes) == ["distilled", "nothing_pending"]
        assert _rows(data, "SELECT COUNT(*) FROM processing_log WHERE event = 'distilled'"
                     ) == [(1,)]
        assert _rows(data, "SELECT COUNT(*) FROM episodes") == [(1,)]
        # An ingest in the other process distils its own conversation, once.
        result = await other.ingest("agent", "seeded", [Turn("My sister Ana lives in Oslo.",
                                                             "Noted.")])
        assert result.distillation.status == "distilled"
        await asyncio.sleep(1.5)  # the owner notices the session, finds nothing left
        assert _rows(data, "SELECT COUNT(*) FROM processing_log WHERE event = 'distilled'"
                     ) == [(2,)]
        # Vectors included: the other process found them in its own index right away.
        assert await _found_by_vectors(other, "agent", "sister Ana lives in Oslo", "Oslo")
    finally:
        await other.close()
        await owner.close()


async def test_forgetting_in_one_process_empties_the_others_index(
    pair: tuple[Memory, Memory], tmp_path: Path
) -> None:
    owner, other = pair
    await owner.ingest("agent", "c", [Turn("My locker code word is periwinkle.", "Got it.")])
    await owner.ingest("keeper", "c", [Turn("I collect periwinkle shells.", "Nice.")])
    for memory in (owner, other):
        await _eventually(lambda m=memory: _found_by_vectors(  # type: ignore[misc]
            m, "agent", "locker code word periwinkle", "periwinkle"))
    assert await owner._vectors.size("agent") > 0

    assert await other.forget_agent("agent") is not None
    await asyncio.sleep(REFRESH_SECONDS + 0.1)
    for memory in (owner, other):
        assert await memory.search("agent", "periwinkle locker code word") == []
        assert await memory.search("agent", "locker code periwinkle", fusion=VECTORS_ONLY) == []
        assert await memory._vectors.size("agent") == 0
    await owner._vectors.flush()  # the owner writes index files: none of the forgotten one
    assert not any(path.exists() for path in owner._vectors.paths("agent"))
    assert await _found_by_vectors(owner, "keeper", "collect periwinkle shells", "shells")


async def test_another_process_takes_over_when_the_owner_closes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    owner = await _shared(data)
    other = await _shared(data)
    try:
        await owner.close()
        await _eventually(lambda: asyncio.sleep(0, _owns(other)), RETRY_SECONDS + 3)
        await other.record("agent", "later", [(0, Turn("I started learning the cello.",
                                                        "Wonderful."))])

        async def distilled() -> bool:
            return _rows(data, "SELECT COUNT(*) FROM processing_log "
                         "WHERE event = 'distilled'") == [(1,)]

        await _eventually(distilled)
    finally:
        await other.close()


async def test_a_stale_index_file_is_brought_up_to_date_not_rebuilt(tmp_path: Path) -> None:
    data = tmp_path / "data"
    alone = await _shared(data, workers=1)  # one process: its file has no sequence number
    await alone.ingest("agent", "one", [Turn("I keep bees on the roof of my flat.", "Nice!")])
    # (On PostgreSQL every process shares memory: the index is loaded by a search.)
    assert await _found_by_vectors(alone, "agent", "keep bees on the roof", "bees")
    await alone.close()
    shared = await _shared(data)
    try:
        await shared.ingest("agent", "two", [Turn("My tortoise is called Gustav.", "Cute.")])
        assert await _found_by_vectors(shared, "agent", "tortoise called Gustav", "Gustav")
        assert await _found_by_vectors(shared, "agent", "keep bees on the roof", "bees")
        assert shared._vectors.rebuilds == 0
        await shared._vectors.flush()  # the owner's file records its sequence number
    finally:
        await shared.close()
    with raw(data) as db:  # a message deleted behind its back
        db.execute("DELETE FROM transcript WHERE content LIKE '%Gustav%'")
    again = await _shared(data)
    try:
        assert await again._vectors.size("agent") == _rows(
            data, "SELECT COUNT(*) FROM embeddings WHERE agent_id = 'agent'")[0][0]
        assert again._vectors.rebuilds == 0
    finally:
        await again.close()

"""The helper process: the same drafts as the rules run in place and the same vectors as
the proxy's own model, a child that dies is replaced, a call that kills it twice fails,
and the child never outlives its parent (kill -9 included) nor stops before it is told, and
is replaced when it has grown past its memory limit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import asdict

import numpy as np
import pytest

from mnemoproxy.memory.background.helper_process import (
    HELPER_PROCESS,
    HelperProcess,
    HelperProcessDied,
)
from mnemoproxy.memory.distill.rules import RuleDistiller, distill_session, slot_of, slots_of
from mnemoproxy.memory.embedders import WordLlamaEmbedder
from mnemoproxy.memory.embedders.offloaded import EMBEDDING_HELPER, OffloadedEmbedder
from mnemoproxy.memory.models import SessionInput, Turn

SESSION = SessionInput("alice", "1", [
    Turn("Hi, I'm Alice. I live in Berlin and work at Acme as a data engineer.", "Hello!"),
    Turn("I'm allergic to peanuts. Remind me to call mom tomorrow.", "Noted."),
    Turn("How do I reset my router?", "1. Unplug it. 2. Wait ten seconds. 3. Plug it in."),
])


@pytest.fixture
def helper() -> Iterator[HelperProcess]:
    process = HelperProcess()
    yield process
    process.stop()


def _gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


async def test_a_session_distilled_in_the_child_matches_the_rules_run_in_place() -> None:
    assert asdict(await RuleDistiller().distill(SESSION)) == asdict(distill_session(SESSION))


async def test_batches_embedded_in_the_child_are_the_proxys_vectors_bit_for_bit() -> None:
    local = WordLlamaEmbedder()
    offloaded = OffloadedEmbedder(local, "wordllama")
    texts = ["I live in Berlin.", "", "x" * 20_000, "naïve café 😀", "How do I reset it?"]
    vectors = await offloaded.embed(texts)
    # A child of its own, not the rules' one.
    assert EMBEDDING_HELPER.pid not in (None, os.getpid(), HELPER_PROCESS.pid)
    assert (offloaded.name, offloaded.dim) == (local.name, local.dim)
    assert vectors.dtype == np.float32
    assert vectors.tobytes() == (await local.embed(texts)).tobytes()


async def test_slots_are_named_in_the_child_as_in_place(helper: HelperProcess) -> None:
    statements = ["User lives in Lisbon", "The sky is blue", "I moved to Oslo"]
    assert await helper.run(slots_of, statements) == [slot_of(s) for s in statements]
    assert helper.pid is not None and helper.pid != os.getpid()


async def test_a_killed_child_is_replaced_and_the_next_call_succeeds(helper: HelperProcess) -> None:
    await helper.run(distill_session, SESSION)
    first = helper.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert asdict(await helper.run(distill_session, SESSION)) == asdict(distill_session(SESSION))
    assert helper.pid not in (None, first)


async def test_a_call_that_kills_the_child_twice_raises_and_the_next_call_works(
    helper: HelperProcess,
) -> None:
    with pytest.raises(HelperProcessDied):
        await helper.run(os._exit, 3)
    assert await helper.run(slots_of, ["I live in Paris"]) == ["identity:location"]


async def test_an_exception_in_the_child_is_raised_in_the_parent(helper: HelperProcess) -> None:
    with pytest.raises(ValueError):
        await helper.run(int, "not a number")
    pid = helper.pid
    assert await helper.run(int, "7") == 7
    assert helper.pid == pid  # the child lived on


async def test_the_child_ignores_stop_signals_and_ends_when_stopped(helper: HelperProcess) -> None:
    await helper.run(int, "1")
    pid = helper.pid
    assert pid is not None
    for stop in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C, the service manager: the parent decides
        os.kill(pid, stop)
    assert not _gone(pid, 0.5)
    assert await helper.run(int, "2") == 2 and helper.pid == pid
    helper.stop()
    assert helper.pid is None and _gone(pid, 10)


def test_the_child_exits_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import asyncio, time
            from mnemoproxy.memory.background.helper_process import HelperProcess
            helper = HelperProcess()
            asyncio.run(helper.run(int, "1"))
            print(helper.pid, flush=True)
            time.sleep(60)
        """)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        parent.kill()  # kill -9: no clean-up of its own
        parent.wait()
        assert _gone(child, 10)
    finally:
        parent.kill()


async def test_an_idle_child_is_ended_and_the_next_call_starts_another(
    helper: HelperProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mnemoproxy.memory.background.helper_process as module

    monkeypatch.setattr(module, "IDLE_SECONDS", 0.5)
    assert await helper.run(os.getpid) == helper.pid
    first = helper.pid
    assert first is not None
    for _ in range(3):  # calls keep it alive past the idle time
        time.sleep(0.3)
        assert await helper.run(os.getpid) == first
    assert _gone(first, 5) and helper.pid is None
    assert await helper.run(os.getpid) not in (None, first)


async def test_a_child_grown_past_the_memory_limit_is_replaced_after_its_call(
    helper: HelperProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mnemoproxy.memory.background.helper_process as module

    assert await helper.run(os.getpid) == helper.pid
    first = helper.pid
    assert first is not None
    assert await helper.run(os.getpid) == first  # under the limit: kept
    monkeypatch.setattr(module, "MEMORY_LIMIT_MIB", 1.0)
    monkeypatch.setattr(module, "MEMORY_CHECK_SECONDS", 0.0)  # looked at after every call
    # The call is answered by the grown child, which is then ended; the next gets another.
    assert await helper.run(os.getpid) == first
    assert _gone(first, 10) and helper.pid is None
    second = await helper.run(distill_session, SESSION)
    assert asdict(second) == asdict(distill_session(SESSION))

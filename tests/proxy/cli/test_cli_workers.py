"""`mnemoproxy serve --workers 2`: two real worker processes on one port and one data_dir.

Chats for several agents and sessions go out over separate connections, so both workers
take some (the X-Mnemo-Worker header, added on request by MNEMOPROXY_WORKER_HEADER, names
the pid that answered). Then: every session is distilled exactly once, every turn is found
by its words and by its vector through both workers, forgetting an agent through one
worker leaves nothing to find through the other, and after a kill -9 of the worker that
owns the background work another takes over and distils what was pending.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from mnemoproxy.memory.background.ownership import owner_pid
from mnemoproxy.proxy.cli.workers import WORKER_HEADER_ENV
from tests.support.servers.backends import store_url_for
from tests.support.servers.processes import fake_upstream_process, running_proxy
from tests.support.servers.raw_store import rows

pytestmark = pytest.mark.slow

DEBOUNCE_SECONDS = 3
AGENTS = ("ada", "bo", "cy")
SESSIONS = 3
TURNS = 4
PLACES = ("Lisbon", "Oslo", "Kyoto", "Lima")


@dataclass
class Served:
    root: str
    data_dir: Path
    parent: int  # uvicorn's supervisor


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data_dir = tmp_path_factory.mktemp("workers") / "data"
    previous = os.environ.get(WORKER_HEADER_ENV)
    os.environ[WORKER_HEADER_ENV] = "1"
    try:
        with fake_upstream_process() as upstream, running_proxy(
            upstream, data_dir, "--workers", "2", "--embedding-backend", "hashing",
            "--summary-debounce-seconds", str(DEBOUNCE_SECONDS),
        ) as (root, proc):
            served = Served(root, data_dir, proc.pid)
            _until(lambda: len(_pids_answering(served)) == 2, 60, "both workers serving")
            yield served
    finally:
        if previous is None:
            os.environ.pop(WORKER_HEADER_ENV, None)
        else:
            os.environ[WORKER_HEADER_ENV] = previous


def _until(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.2)


def _pids_answering(served: Served, tries: int = 20) -> set[int]:
    pids = set()
    for _ in range(tries):
        try:
            response = httpx.get(served.root + "/health", timeout=5)  # a new connection each
        except httpx.HTTPError:
            continue
        pids.add(int(response.headers["x-mnemo-worker"]))
    return pids


def _rows(served: Served, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return rows(served.data_dir, sql, params)


def _user_text(agent: str, session: int, turn: int) -> str:
    # Words the rule distiller makes an episode of, and one found nowhere else.
    return (f"On day {turn} I went hiking with my sister Maria in {PLACES[turn]}; it was "
            f"exhausting but fun. Codeword {_codeword(agent, session, turn)}.")


def _codeword(agent: str, session: int, turn: int) -> str:
    return f"zq{agent}s{session}t{turn}x"


def _chat(served: Served, agent: str, session: str, history: list[dict[str, str]]) -> int:
    """One chat over a new connection; the pid of the worker that answered."""
    response = httpx.post(
        served.root + "/v1/chat/completions",
        json={"model": "fake-model", "messages": history},
        headers={"X-Agent-Id": agent, "X-Session-Id": session},
        timeout=60,
    )
    response.raise_for_status()
    history.append({"role": "assistant",
                    "content": response.json()["choices"][0]["message"]["content"]})
    return int(response.headers["x-mnemo-worker"])


def _converse(served: Served, agents: tuple[str, ...], sessions: int, turns: int) -> set[int]:
    """Each agent's sessions one after another (an agent that starts a session has its
    previous one distilled), the agents at once, every turn a request over a new
    connection; the pids that answered."""

    def agent_talks(agent: str) -> set[int]:
        answered = set()
        for session in range(sessions):
            history: list[dict[str, str]] = []
            for turn in range(turns):
                history.append({"role": "user", "content": _user_text(agent, session, turn)})
                answered.add(_chat(served, agent, f"session-{session}", history))
        return answered

    with ThreadPoolExecutor(max_workers=len(agents)) as pool:
        return set().union(*pool.map(agent_talks, agents))


def _search(served: Served, agent: str, query: str) -> tuple[int, list[dict[str, Any]]]:
    response = httpx.post(served.root + "/memory/search",
                          json={"agent_id": agent, "query": query, "top_k": 5}, timeout=30)
    response.raise_for_status()
    return int(response.headers["x-mnemo-worker"]), response.json()["results"]


def _from_every_worker(served: Served, check: Callable[[], tuple[int, bool]],
                       what: str, seconds: float = 30) -> None:
    """`check()` -> (pid, ok), over new connections, until the latest answer of each of the
    two workers was ok."""
    ok: set[int] = set()
    deadline = time.monotonic() + seconds
    while len(ok) < 2:
        assert time.monotonic() < deadline, f"not within {seconds} s: {what} ({ok} ok)"
        pid, good = check()
        if good:
            ok.add(pid)
        else:
            ok.discard(pid)
            time.sleep(0.1)


def _pending(served: Served) -> int:
    return int(_rows(served, "SELECT COUNT(*) FROM pending_signals WHERE status = 'pending'"
                     )[0][0])


def _distillations_per_session(served: Served, agent: str) -> list[int]:
    return [row[0] for row in _rows(
        served, "SELECT (SELECT COUNT(*) FROM processing_log p WHERE p.agent_id = s.agent_id "
        "AND p.session_id = s.id AND p.event = 'distilled') FROM sessions s "
        "WHERE s.agent_id = ? ORDER BY s.id", (agent,))]


def test_sessions_recorded_by_both_workers_are_distilled_exactly_once(served: Served) -> None:
    answered = _converse(served, AGENTS, SESSIONS, TURNS)
    assert len(answered) == 2, "both workers answered chats"
    assert _rows(served, "SELECT COUNT(*) FROM transcript")[0][0] == (
        len(AGENTS) * SESSIONS * TURNS * 2)
    _until(lambda: _pending(served) == 0, 60, "every session distilled")
    for agent in AGENTS:
        assert _distillations_per_session(served, agent) == [1] * SESSIONS
        assert [row[0] for row in _rows(
            served, "SELECT COUNT(*) FROM episodes WHERE agent_id = ? GROUP BY session_id",
            (agent,))] == [1] * SESSIONS
    assert _rows(served, "SELECT COUNT(*), SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END) "
                         "FROM pending_signals") == [
        (len(AGENTS) * SESSIONS * TURNS,) * 2]


def test_every_turn_is_found_by_words_and_by_vector_through_every_worker(
    served: Served,
) -> None:
    _converse(served, ("dee",), 2, 2)
    for session in range(2):
        for turn in range(2):
            word = _codeword("dee", session, turn)

            def by_words(word: str = word) -> tuple[int, bool]:
                pid, results = _search(served, "dee", word)
                return pid, any(word in r["text"] for r in results)

            def by_vector(session: int = session, turn: int = turn) -> tuple[int, bool]:
                text = _user_text("dee", session, turn)
                pid, results = _search(served, "dee", text)
                return pid, any(_codeword("dee", session, turn) in r["text"]
                                and r["components"].get("vector", 0) > 0.5 for r in results)

            _from_every_worker(served, by_words, f"{word} by its words")
            _from_every_worker(served, by_vector, f"{word} by its vector")


def test_an_agent_forgotten_through_one_worker_is_gone_from_the_other(served: Served) -> None:
    _converse(served, ("eve",), 1, 2)
    word = _codeword("eve", 0, 1)
    text = _user_text("eve", 0, 1)

    def found(query: str) -> Callable[[], tuple[int, bool]]:
        def check() -> tuple[int, bool]:
            pid, results = _search(served, "eve", query)
            return pid, any(word in r["text"] for r in results)
        return check

    _from_every_worker(served, found(text), "the agent's turn found by both workers")
    response = httpx.delete(served.root + "/agents/eve", timeout=60)
    assert response.status_code == 200, response.text

    def nothing() -> tuple[int, bool]:  # hybrid: neither its words nor its vector
        pid, results = _search(served, "eve", text)
        return pid, not results

    _from_every_worker(served, nothing, "nothing of the agent found by either worker")
    assert _rows(served, "SELECT COUNT(*) FROM transcript WHERE agent_id = 'eve'") == [(0,)]


def test_after_a_kill_9_of_the_owner_another_worker_distils_what_was_pending(
    served: Served,
) -> None:
    store_url = store_url_for(str(served.data_dir))
    owner = owner_pid(served.data_dir, store_url)
    assert owner is not None and owner in _pids_answering(served)
    _converse(served, ("fay",), 2, 2)
    os.kill(owner, signal.SIGKILL)  # before the sessions' debounce is over
    assert _pending(served) > 0
    _until(lambda: owner_pid(served.data_dir, store_url) not in (None, owner), 30, "a new owner")
    _until(lambda: _pending(served) == 0, 60, "the pending sessions distilled")
    assert _distillations_per_session(served, "fay") == [1, 1]
    # uvicorn started a worker in place of the killed one: two serve again.
    _until(lambda: len(_pids_answering(served)) == 2 and owner not in _pids_answering(served),
           60, "two workers serving again")

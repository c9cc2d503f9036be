"""Two proxy replicas on one PostgreSQL database: separate processes, each with a data_dir
of its own (as on two machines), sharing nothing but the database.

Turns go through both; every session is distilled exactly once, by one replica or the
other (each claims a session before distilling it); a turn recorded through one
is found through the other, by its words and by its vector, within a second; forgetting an
agent through one leaves nothing of it in the other; after a kill -9 of the replica that
owns the background work, the other takes it over and distils what was pending. The
cluster is the tests' throwaway one (tests/support/servers/postgres_cluster.py); they run
in the suite's PostgreSQL run.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import pytest

from mnemoproxy.memory.store.postgres import connections as postgres
from tests.support.servers.fake_upstream import ChatCall, FakeUpstream, JsonReply, Reply
from tests.support.servers.postgres_cluster import Cluster, running_cluster
from tests.support.servers.processes import fake_upstream_process, running_proxy
from tests.support.servers.raw_store import raw

# Run by `make test`'s PostgreSQL run (tests/conftest.py), whatever backend the rest uses.
pytestmark = [pytest.mark.slow, pytest.mark.postgres]

DEBOUNCE_SECONDS = 2


@dataclass
class Replica:
    root: str
    pid: int
    data_dir: Path


@dataclass
class Replicas:
    url: str
    members: list[Replica]

    def owner(self) -> Replica:
        pid = postgres.owner_pid(self.url)
        return next(r for r in self.members if r.pid == pid)


@pytest.fixture
def replicas(postgres_cluster: Cluster, tmp_path: Path) -> Iterator[Replicas]:
    url = postgres_cluster.new_database()
    with ExitStack() as stack:
        upstream = stack.enter_context(fake_upstream_process())
        members = []
        for name in ("a", "b"):
            data_dir = tmp_path / name
            root, proc = stack.enter_context(running_proxy(
                upstream, data_dir, "--store-url", url, "--embedding-backend", "hashing",
                "--summary-debounce-seconds", str(DEBOUNCE_SECONDS)))
            members.append(Replica(root, proc.pid, data_dir))
        group = Replicas(url, members)
        _until(lambda: postgres.owner_pid(url) in {r.pid for r in members}, 30, "an owner")
        yield group


def _until(check: Callable[[], bool], seconds: float, what: str) -> float:
    """Seconds until `check()` held."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < seconds, f"not within {seconds} s: {what}"
        time.sleep(0.05)
    return time.monotonic() - start


def _chat(replica: Replica, agent: str, session: str, text: str,
          history: list[dict[str, str]] | None = None) -> None:
    """One turn of a session through `replica` (`history`: the session's earlier turns,
    extended with this one)."""
    history = [] if history is None else history
    history.append({"role": "user", "content": text})
    response = httpx.post(replica.root + "/v1/chat/completions", json={
        "model": "fake-model", "messages": history},
        headers={"X-Agent-Id": agent, "X-Session-Id": session}, timeout=60)
    response.raise_for_status()
    history.append({"role": "assistant",
                    "content": response.json()["choices"][0]["message"]["content"]})


def _found(replica: Replica, agent: str, query: str, word: str, *, vector: bool) -> bool:
    """Whether a search through `replica` finds the text holding `word` (by its vector:
    the hit's vector similarity high, not its words alone)."""
    results = httpx.post(replica.root + "/memory/search", json={
        "agent_id": agent, "query": query}, timeout=30).json()["results"]
    return any(word in r["text"] and (not vector or r["components"].get("vector", 0) > 0.5)
               for r in results)


def _sql(url: str, sql: str) -> list[tuple[object, ...]]:
    with raw(url) as db:
        return [tuple(row) for row in db.execute(sql).fetchall()]


def _text(session: int, turn: int) -> str:
    return (f"On day {turn} I went hiking with my sister Maria in Lisbon; it was exhausting "
            f"but fun. Codeword zqs{session}t{turn}x.")


def _pending(url: str) -> int:
    return int(_sql(url, "SELECT COUNT(*) FROM pending_signals WHERE status = 'pending'")[0][0])


def _distillations_per_session(url: str) -> list[int]:
    return [int(r[0]) for r in _sql(
        url, "SELECT COUNT(*) FROM episodes GROUP BY session_id ORDER BY session_id")]


def test_sessions_through_both_replicas_are_distilled_exactly_once(replicas: Replicas) -> None:
    a, b = replicas.members
    for session in range(4):
        history: list[dict[str, str]] = []
        for turn in range(2):  # each session's turns through both replicas
            _chat((a, b)[(session + turn) % 2], "ada", f"s{session}", _text(session, turn),
                  history)
    _until(lambda: _pending(replicas.url) == 0, 60, "every session distilled")
    assert _distillations_per_session(replicas.url) == [1, 1, 1, 1]
    assert _sql(replicas.url, "SELECT COUNT(*) FROM transcript")[0][0] == 16
    # Both distil: a session is claimed by whichever replica's debounce ends first, mostly
    # the one its last turn went through (half of them each here).
    distilled = [httpx.get(r.root + "/health").json()["memory"]["distillations"].get(
        "distilled", 0) for r in (a, b)]
    assert sum(distilled) == 4 and min(distilled) >= 1, distilled


def test_a_turn_recorded_on_one_is_found_on_the_other_within_a_second(
    replicas: Replicas,
) -> None:
    a, b = replicas.members
    for writer, reader in ((a, b), (b, a)):
        word = f"zq{writer.data_dir.name}word"
        text = f"My lucky charm is called {word}, a brass owl."
        _chat(writer, "bo", writer.data_dir.name, text)
        by_words = partial(_found, reader, "bo", word, word, vector=False)
        by_vector = partial(_found, reader, "bo", text, word, vector=True)
        assert _until(by_words, 1.0, "by its words") < 1.0
        assert _until(by_vector, 1.0, "by its vector") < 1.0


def test_an_agent_forgotten_through_one_replica_is_gone_from_the_other(
    replicas: Replicas,
) -> None:
    a, b = replicas.members
    _chat(a, "cy", "s", "My tortoise is called Gustavo and he loves strawberries.")
    text = "My tortoise is called Gustavo and he loves strawberries."
    _until(lambda: _found(b, "cy", text, "Gustavo", vector=True), 5,
           "found by vector through the other replica")
    assert httpx.delete(a.root + "/agents/cy", timeout=60).status_code == 200
    for replica in (a, b):
        results = httpx.post(replica.root + "/memory/search", json={
            "agent_id": "cy", "query": "tortoise Gustavo strawberries"}).json()["results"]
        assert results == []
    assert _sql(replicas.url, "SELECT COUNT(*) FROM transcript WHERE agent_id = 'cy'") == [(0,)]


def test_after_a_kill_9_of_the_owner_the_other_replica_distils_what_was_pending(
    replicas: Replicas,
) -> None:
    owner = replicas.owner()
    other = next(r for r in replicas.members if r is not owner)
    for session in range(2):
        history: list[dict[str, str]] = []
        for turn in range(2):
            _chat((owner, other)[turn], "dee", f"s{session}", _text(session, turn), history)
    os.kill(owner.pid, signal.SIGKILL)  # before the sessions' debounce is over
    assert _pending(replicas.url) > 0
    _until(lambda: postgres.owner_pid(replicas.url) == other.pid, 30, "the other owns the work")
    _until(lambda: _pending(replicas.url) == 0, 60, "the pending sessions distilled")
    assert _distillations_per_session(replicas.url) == [1, 1]


def test_after_a_database_restart_memory_is_read_and_written_again(tmp_path: Path) -> None:
    """The server restarts under a running proxy (a failover would look the same): the
    connections it dropped are opened again, and the first turn after it is stored (a
    whole read or write that met a dropped connection is tried once more)."""
    with running_cluster() as cluster, fake_upstream_process() as upstream, running_proxy(
        upstream, tmp_path / "data", "--store-url", cluster.new_database(),
        "--embedding-backend", "hashing",
    ) as (root, _):
        replica = Replica(root, 0, tmp_path / "data")
        _chat(replica, "eve", "before", "My bicycle is called Rocinante.")
        _until(lambda: _found(replica, "eve", "Rocinante", "Rocinante", vector=False), 5,
               "the first turn stored")
        cluster.restart()
        _chat(replica, "eve", "after", "My kayak is called Nautilus.")
        _until(lambda: _found(replica, "eve", "Nautilus", "Nautilus", vector=False), 5,
               "a turn after the restart stored")
        assert _found(replica, "eve", "Rocinante", "Rocinante", vector=False)


CORE_MODEL = "fake-core-model"
DISTILLATION = {
    "episode": {"summary": "Ivy talked about her cat Miso.", "topics": ["pets"],
                "entities": ["Ivy", "Miso"], "decisions": [], "action_items": [],
                "salience": 0.7},
    "pinned_candidates": [{"content": "User's cat is named Miso", "salience": 0.6, "tags": []}],
    "identity_facts": ["User's name is Ivy"],
}


class SlowFirstCore:
    """The core model's first answer takes `seconds`, later ones come at once; any other
    request (a chat) is echoed."""

    def __init__(self, calls: list[float], seconds: float) -> None:
        self.calls, self.seconds = calls, seconds

    async def respond(self, call: ChatCall) -> object:
        if call.model != CORE_MODEL:
            return await Reply().respond(call)
        self.calls.append(time.monotonic())
        if len(self.calls) == 1:
            await asyncio.sleep(self.seconds)
        message = {"role": "assistant", "content": json.dumps(DISTILLATION)}
        return await JsonReply({"choices": [
            {"index": 0, "message": message, "finish_reason": "stop"}]}).respond(call)


def test_a_replica_killed_mid_distillation_leaves_the_session_to_the_other(
    postgres_cluster: Cluster, fake_upstream: FakeUpstream, tmp_path: Path,
) -> None:
    """The replica distilling a session dies inside its call to the core model: its claim
    is not renewed, and once it runs out the other replica distils the session, once."""
    url = postgres_cluster.new_database()
    calls: list[float] = []
    for _ in range(40):
        fake_upstream.enqueue(SlowFirstCore(calls, 60.0))
    with ExitStack() as stack:
        members = []
        for name in ("a", "b"):
            root, proc = stack.enter_context(running_proxy(
                fake_upstream.base_url, tmp_path / name, "--store-url", url,
                "--embedding-backend", "hashing", "--core-model", CORE_MODEL,
                "--summary-debounce-seconds", "1"))
            members.append(Replica(root, proc.pid, tmp_path / name))
        _chat(members[0], "ivy", "s", "I'm Ivy and my cat is Miso.")
        _until(lambda: len(calls) == 1, 30, "a replica calling the core model")
        holder = _sql(url, "SELECT holder FROM distillation_claims")[0][0]
        dying = next(r for r in members if str(holder).endswith(f":{r.pid}"))
        os.kill(dying.pid, signal.SIGKILL)
        waited = _until(lambda: _pending(url) == 0, 60, "the other replica distils it")
        assert len(calls) == 2 and waited > 5  # after the dead holder's lease ran out
        assert _distillations_per_session(url) == [1]

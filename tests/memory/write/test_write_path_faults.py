"""The write path under faults: a crash with signals pending, and a core model that
answers well, fenced, with garbage, or too slowly."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai

from tests.support.memory_client import memory_settings, post, search, wait_for
from tests.support.servers.backends import store_url_for
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.ports import free_port
from tests.support.servers.proxy_server import ProxyServer

ROOT = Path(__file__).resolve().parents[3]

GOOD = {
    "episode": {
        "summary": "Ivy introduced herself and talked about her cat Miso.",
        "topics": ["introductions", "pets"],
        "entities": ["Ivy", "Miso"],
        "decisions": [],
        "action_items": [],
        "salience": 0.7,
    },
    "pinned_candidates": [{"content": "User's cat is named Miso", "salience": 0.6, "tags": []}],
    "identity_facts": ["User's name is Ivy"],
}
TURNS = [{"user": "I'm Ivy and my cat is Miso.", "assistant": "Hi Ivy!"}]


def ingest(server: ProxyServer, conversation: str, turns: list[dict] = TURNS) -> dict:
    response = post(
        server,
        "/memory/ingest",
        {"agent_id": "ivy", "conversation_id": conversation, "turns": turns},
    )
    assert response.status_code == 200, response.text
    return response.json()["distillation"]


def llm_proxy(fake: FakeUpstream, tmp_path, **overrides) -> ProxyServer:
    settings = memory_settings(fake, tmp_path, core_model="fake-core-model", **overrides)
    return ProxyServer(settings)


def test_llm_distiller_good_and_fenced_answers(fake_upstream, tmp_path):
    with llm_proxy(fake_upstream, tmp_path) as server:
        fake_upstream.reply(json.dumps(GOOD), stream=False)
        outcome = ingest(server, "c1")
        assert outcome["status"] == "distilled", outcome
        assert outcome["facts_added"] == 2 and outcome["episode_id"]
        call = fake_upstream.requests[-1].json
        assert call["model"] == "fake-core-model"
        assert call["response_format"]["type"] == "json_schema"

        fenced = dict(GOOD, identity_facts=["User's name is Ivy", "User lives in Lisbon"])
        fake_upstream.reply("Here you go:\n```json\n" + json.dumps(fenced) + "\n```", stream=False)
        lisbon = [{"user": "I'm Ivy, I live in Lisbon now.", "assistant": "Nice!"}]
        outcome = ingest(server, "c2", lisbon)
        assert outcome["status"] == "distilled", outcome
        assert outcome["facts_merged"] >= 1 and outcome["facts_added"] >= 1
        found = search(server, "ivy", "Lisbon", scope="pinned")
        assert any("Lisbon" in r["text"] for r in found)


def test_garbage_is_retried_then_dead_lettered_never_dropped(fake_upstream, tmp_path):
    with llm_proxy(fake_upstream, tmp_path, distill_max_attempts=2) as server:
        fake_upstream.reply("I'd rather not answer in JSON.", stream=False)
        outcome = ingest(server, "c1")
        assert outcome["status"] == "failed" and outcome["reason"]
        assert outcome["retry_in_seconds"] > 0
        health = httpx.get(server.url + "/health").json()
        assert health["memory"]["pending_signals"] == 1
        fake_upstream.reply("still not json", stream=False)
        # A further turn of the same conversation: the session's second attempt, which
        # dead-letters both its turns with the reason.
        outcome = ingest(server, "c1", [{"user": "I also keep bees.", "assistant": "Oh!"}])
        assert outcome["status"] == "dead_lettered"
        assert "JSON" in outcome["reason"]
        health = httpx.get(server.url + "/health").json()
        assert health["memory"]["dead_signals"] == 2
        assert health["memory"]["pending_signals"] == 0


def test_slow_core_model_times_out_and_proxy_keeps_serving(fake_upstream, tmp_path):
    with llm_proxy(fake_upstream, tmp_path, core_timeout_seconds=1) as server:
        fake_upstream.stall(4)
        started = time.monotonic()
        outcome = ingest(server, "c1")
        assert time.monotonic() - started < 3.5
        assert outcome["status"] == "failed"
        assert "time" in outcome["reason"].lower()
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "still there?"}]
        )
        assert reply.choices[0].message.content == "echo: still there?"


def _serve(fake: FakeUpstream, data_dir: Path, port: int, debounce: int) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mnemoproxy.proxy.cli.main",
            "serve",
            "--port",
            str(port),
            "--upstream-url",
            fake.base_url,
            "--data-dir",
            str(data_dir),
            "--store-url",
            store_url_for(str(data_dir)),
            "--embedding-backend",
            "hashing",
            "--summary-debounce-seconds",
            str(debounce),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_signals_pending_at_a_crash_are_distilled_after_restart(fake_upstream, tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data_dir = tmp_path / "data"

    def up() -> bool:
        try:
            return httpx.get(url + "/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    proc = _serve(fake_upstream, data_dir, port, debounce=3600)
    try:
        wait_for(up, timeout=30)
        client = openai.OpenAI(
            base_url=url + "/v1",
            api_key="x",
            max_retries=0,
            default_headers={"X-Agent-Id": "jo", "X-Session-Id": "s"},
        )
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "My name is Jo and I live in Oslo."}]
        )
        wait_for(lambda: httpx.get(url + "/health").json()["memory"]["pending_signals"] == 1)
    finally:
        proc.send_signal(signal.SIGKILL)  # a crash: no shutdown flush
        proc.wait(10)

    proc = _serve(fake_upstream, data_dir, port, debounce=3600)
    try:
        wait_for(up, timeout=30)
        memory = wait_for(
            lambda: (m := httpx.get(url + "/health").json()["memory"])["pending_signals"] == 0 and m
        )
        assert memory["facts"] >= 2
        found = httpx.post(
            url + "/memory/search", json={"agent_id": "jo", "query": "Oslo", "scope": "pinned"}
        ).json()["results"]
        assert any("Oslo" in r["text"] for r in found)
    finally:
        proc.terminate()
        proc.wait(20)


async def test_a_distillation_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    from mnemoproxy.memory import Memory, Turn
    from mnemoproxy.memory.embedders import HashingEmbedder
    from mnemoproxy.memory.store.conversations import distillations
    from tests.support.servers.proxy_server import make_settings

    settings = make_settings(data_dir=str(tmp_path), embedding_backend="hashing")

    async def opened(background: bool) -> Memory:
        return await Memory.open(settings, embedder=HashingEmbedder(), background=background)

    async def state(memory: Memory, session_key: str) -> tuple[int, dict[str, int], int]:
        session_id = await memory.store.session("ivy", session_key)
        episodes = [e for e in await memory.store.recent_episodes("ivy", 10)
                    if e.session_id == session_id]
        counts = {f.content: f.source_count for f in await memory.store.current_facts("ivy")}
        pending = len(await memory.store.pending_signals("ivy", session_id))
        return len(episodes), counts, pending

    memory = await opened(background=False)
    first = await memory.ingest("ivy", "c1", [Turn("My name is Ivy and I live in Berlin.", "Hi")])
    assert first.distillation.status == "distilled"
    _, facts_before, _ = await state(memory, "c1")
    assert facts_before and set(facts_before.values()) == {1}

    # The power goes out after the episode, the entities and the facts are written, just
    # before the session's signals would be marked done.
    def power_cut(*args, **kwargs):
        raise RuntimeError("power cut")

    monkeypatch.setattr(distillations, "set_signal_status_rows", power_cut)
    restated = [Turn("My name is Ivy and I live in Berlin. My cat is called Miso.", "Nice")]
    crashed = await memory.ingest("ivy", "c2", restated)
    assert crashed.distillation.status == "failed"
    assert await state(memory, "c2") == (0, facts_before, 1)  # nothing of it was kept
    await memory.close()  # its retry at shutdown fails the same way
    monkeypatch.undo()

    memory = await opened(background=True)  # the restart re-arms the pending session
    try:
        deadline = time.monotonic() + 10
        while (await state(memory, "c2"))[2] and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        episodes, facts_after, pending = await state(memory, "c2")
        assert (episodes, pending) == (1, 0)
        assert all(facts_after[content] == 2 for content in facts_before)  # merged once
        distilled = [e for e in await memory.store.processing_log("ivy")
                     if e["event"] == "distilled"]
        assert len(distilled) == 2  # c1 and c2, each once
    finally:
        await memory.close()


class SlowCore:
    """Answers the core model slowly (counting how many of its calls overlap) and anything
    else at once, with an echo."""

    def __init__(self, shared: dict, seconds: float):
        self.shared, self.seconds = shared, seconds

    async def respond(self, call):
        import asyncio as aio

        from tests.support.servers.fake_upstream import JsonReply, Reply

        if call.model != "fake-core-model":
            return await Reply().respond(call)
        self.shared["now"] += 1
        self.shared["most"] = max(self.shared["most"], self.shared["now"])
        await aio.sleep(self.seconds)
        self.shared["now"] -= 1
        message = {"role": "assistant", "content": json.dumps(GOOD)}
        body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        return await JsonReply(body).respond(call)


def test_core_calls_are_bounded_one_at_a_time_and_never_hold_up_chat(fake_upstream, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    shared = {"now": 0, "most": 0}
    # A core call takes longer than a chat may: a chat queued behind one would show it,
    # with room to spare for a busy machine.
    for _ in range(6):
        fake_upstream.enqueue(SlowCore(shared, 1.5))
    with llm_proxy(fake_upstream, tmp_path) as server, ThreadPoolExecutor(3) as pool:
        ingests = [pool.submit(ingest, server, f"c{n}") for n in range(2)]
        time.sleep(0.2)  # the first distillation is with the core model now
        started = time.monotonic()
        chat = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert time.monotonic() - started < 1.0  # not queued behind the distillation
        assert all(f.result()["status"] == "distilled" for f in ingests)
    assert shared["most"] == 1
    call = next(r.json for r in fake_upstream.requests if r.json["model"] == "fake-core-model")
    assert call["max_tokens"] == 1024 and call["temperature"] == 0.2
    assert call["frequency_penalty"] == 0.3
    schema = call["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["pinned_candidates"]["maxItems"] == 8

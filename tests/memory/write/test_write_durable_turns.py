"""A chat turn is stored before its reply completes: once the client has the whole answer,
the turn survives anything, kill -9 included."""

from __future__ import annotations

import asyncio
import signal
import threading
import time

import httpx
import pytest

from mnemoproxy.memory import Turn, service
from tests.support.memory_client import memory_settings, sdk
from tests.support.servers.fake_upstream import FakeUpstream, Reply
from tests.support.servers.ports import free_port
from tests.support.servers.proxy_server import ProxyServer, serve_process


def turns_of(url: str, agent: str) -> int:
    agents = httpx.get(url + "/agents", timeout=10).json()["agents"]
    return next((a["turns"] for a in agents if a["id"] == agent), 0)


@pytest.mark.parametrize("stream,chunked", [(False, False), (True, False), (False, True)])
def test_the_turn_is_stored_when_the_client_has_the_reply(
    fake_upstream: FakeUpstream, tmp_path, stream: bool, chunked: bool
):
    # chunked: a whole JSON body without a length (Go servers such as Ollama send one past
    # 2 KB); it streams through the proxy and must be remembered all the same.
    fake_upstream.enqueue(Reply("Noted: locker 12. " * (300 if chunked else 1), chunked=chunked))
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as server:
        client = sdk(server, "dana", "s1")
        messages = [{"role": "user", "content": "My locker is number 12."}]
        if stream:
            for _ in client.chat.completions.create(model="m", messages=messages, stream=True):
                pass
        else:
            client.chat.completions.create(model="m", messages=messages)
        assert turns_of(server.url, "dana") == 1  # no waiting: stored before the reply ended


def test_no_acknowledged_turn_is_lost_to_kill_9_under_load(fake_upstream: FakeUpstream, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = serve_process(port, fake_upstream.base_url, data_dir, tmp_path / "proxy.log")
    acknowledged = {f"client-{i}": 0 for i in range(6)}
    stop = threading.Event()

    def client(agent: str) -> None:
        with httpx.Client(base_url=url + "/v1", timeout=10) as http:
            number = 0
            while not stop.is_set():
                number += 1
                try:
                    response = http.post("/chat/completions", headers={
                        "X-Agent-Id": agent, "X-Session-Id": f"{agent}-{number}",
                    }, json={"model": "m", "messages": [
                        {"role": "user", "content": f"Note {number} from {agent}."}]})
                except httpx.HTTPError:
                    return  # the server is gone
                if response.status_code == 200:
                    acknowledged[agent] += 1

    threads = [threading.Thread(target=client, args=(agent,)) for agent in acknowledged]
    for thread in threads:
        thread.start()
    time.sleep(3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stop.set()
    for thread in threads:
        thread.join(15)
    assert sum(acknowledged.values()) > 30  # the load was real

    restarted = serve_process(port, fake_upstream.base_url, data_dir, tmp_path / "proxy.log")
    try:
        for agent, count in acknowledged.items():
            # A request whose reply was cut by the kill may be stored too: never fewer.
            assert turns_of(url, agent) >= count, agent
    finally:
        restarted.terminate()
        restarted.wait(30)


async def test_a_slow_store_slows_replies_rather_than_growing_a_backlog(memory, monkeypatch):
    monkeypatch.setattr(service, "MAX_BACKGROUND_RECORDS", 8)
    slow = memory.record

    async def slow_record(*args):
        await asyncio.sleep(0.3)
        return await slow(*args)

    monkeypatch.setattr(memory, "record", slow_record)
    turns = [(0, Turn("I keep bees.", "Nice."))]
    in_time = await asyncio.gather(*(
        memory.record_within("dana", f"s{i}", turns, 0.01) for i in range(20)))
    # 8 replies went out before their turn was stored; the other 12 waited for theirs.
    assert in_time.count(False) == 8 and in_time.count(True) == 12
    assert (await memory.health())["records_waited_out"] == 12
    await asyncio.sleep(0.5)
    assert (await memory.health())["records_in_flight"] == 0
    assert len(await memory.agents()) == 1 and (await memory.agents())[0]["turns"] == 20

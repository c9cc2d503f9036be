"""An exact code (an order number, a booking reference, an error code) is found by its own
text, however many look-alikes memory holds and however it was recorded: ingested, or one
chat per session. Through a real proxy and its public API."""

from __future__ import annotations

import random
import string

import httpx
import pytest

from tests.support.memory_client import memory_settings, post, sdk, wait_for
from tests.support.servers.proxy_server import ProxyServer

_rnd = random.Random(11)
_ALPHABET = string.ascii_uppercase + string.digits


def _code(prefix: str) -> str:
    return prefix + "".join(_rnd.choice(_ALPHABET) for _ in range(2))


# Ten families of codes that differ in their last two characters only.
CODES = list(dict.fromkeys(
    _code("".join(_rnd.choice(_ALPHABET) for _ in range(6))) for _ in range(6) for _ in range(10)
))


@pytest.fixture
def proxy(fake_upstream, tmp_path):
    # The embedder the proxy ships with: its vectors rank look-alike codes close together.
    settings = memory_settings(fake_upstream, tmp_path, embedding_backend="wordllama")
    with ProxyServer(settings) as server:
        filler = [{"user": f"We talked about order history and notes, item {i}.",
                   "assistant": "ok"} for i in range(300)]
        post(server, "/memory/ingest", {"agent_id": "ops", "conversation_id": "filler",
                                        "turns": filler, "skip_extraction": True})
        yield server


def found(server: ProxyServer, code: str) -> bool:
    results = post(server, "/memory/search", {"agent_id": "ops", "query": code,
                                              "top_k": 5}).json()["results"]
    return any(code in r["text"] for r in results)


def test_each_code_is_found_by_its_own_text_when_ingested(proxy):
    for n, code in enumerate(CODES):
        post(proxy, "/memory/ingest", {
            "agent_id": "ops", "conversation_id": f"order-{n}", "skip_extraction": True,
            "turns": [{"user": f"Note order {code} please.", "assistant": "Noted."}]})
    missed = [code for code in CODES if not found(proxy, code)]
    assert missed == []


def test_each_code_is_found_when_every_chat_was_its_own_session(proxy, fake_upstream):
    for n, code in enumerate(CODES):
        client = sdk(proxy, "ops", session=f"chat-{n}")
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"Note order {code} please."}])
    # Each chat is recorded once its reply has gone out.
    wait_for(lambda: httpx.get(f"{proxy.url}/agents/ops").json()["messages"]
             >= 600 + 2 * len(CODES))
    missed = [code for code in CODES if not found(proxy, code)]
    assert missed == []

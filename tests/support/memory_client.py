"""Helpers for tests that drive a memory-enabled proxy over HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai

from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.proxy_server import ProxyServer, make_settings


def memory_settings(fake: FakeUpstream, tmp_path, **overrides: Any):
    values: dict[str, Any] = {
        "enabled": True,
        "upstream_url": fake.base_url,
        "data_dir": str(tmp_path / "data"),
        "embedding_backend": "hashing",
        "summary_debounce_seconds": 1,
    }
    values.update(overrides)
    return make_settings(**values)


def sdk(server: ProxyServer, agent: str | None, session: str | None = None) -> openai.OpenAI:
    headers = {}
    if agent:
        headers["X-Agent-Id"] = agent
    if session:
        headers["X-Session-Id"] = session
    return openai.OpenAI(
        base_url=server.base_url, api_key="sk-test", max_retries=0, default_headers=headers
    )


def post(server: ProxyServer, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=30)


def search(server: ProxyServer, agent: str, query: str, **extra: Any) -> list[dict[str, Any]]:
    response = post(server, "/memory/search", {"agent_id": agent, "query": query, **extra})
    assert response.status_code == 200, response.text
    return response.json()["results"]


def wait_for(predicate, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def user_text_seen_upstream(fake: FakeUpstream) -> str:
    content = fake.requests[-1].json["messages"][-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


@contextmanager
def serving_histories(
    fake: FakeUpstream, data: Path, histories: dict[str, list[tuple[str, str]]],
    **overrides: Any,
) -> Iterator[ProxyServer]:
    """A proxy on `data` (settings `overrides`) whose agents hold `histories`, embedded."""
    with ProxyServer(memory_settings(fake, data, **overrides)) as server:
        ingest_histories(server, histories)
        yield server


def ingest_histories(server: ProxyServer, histories: dict[str, list[tuple[str, str]]]) -> None:
    """Each agent's (user, assistant) turns as one conversation, then wait until every
    item is embedded: searches and gate decisions see all of it."""
    for agent, turns in histories.items():
        response = post(server, "/memory/ingest", {
            "agent_id": agent, "conversation_id": "c1",
            "turns": [{"user": user, "assistant": reply} for user, reply in turns]})
        assert response.status_code == 200, response.text
    wait_for(lambda: _all_embedded(server), timeout=60)


def _all_embedded(server: ProxyServer) -> bool:
    memory: dict[str, Any] = httpx.get(server.url + "/health", timeout=10).json()["memory"]
    searchable = memory["transcript_messages"] + memory["facts"] + memory["episodes"]
    return bool(memory["embedded_items"] >= searchable)

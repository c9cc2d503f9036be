"""Input built to freeze or crash the proxy, sent to a real server: a stored text that once
made every read of it backtrack for half a minute while holding the interpreter (so no
other request was served), and JSON nested too deeply to decode. Each is answered at once,
and the other requests never wait behind it."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.memory_client import memory_settings, sdk
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.proxy_server import ProxyServer

NEWLINES = 30_000
SEARCH_SECONDS = 1.0
HEALTH_WAIT_SECONDS = 0.5


class HealthWatch:
    """Asks /health again and again from a thread; the longest it waited for an answer."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.longest = 0.0
        self.answers = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                assert client.get(self.url + "/health").status_code == 200
                self.longest = max(self.longest, time.perf_counter() - started)
                self.answers += 1
                time.sleep(0.02)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


@pytest.fixture
def server(fake_upstream: FakeUpstream, tmp_path) -> Iterator[ProxyServer]:
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as proxy:
        yield proxy


def test_a_stored_run_of_newlines_is_searched_at_once_and_blocks_nobody(server):
    text = "The lighthouse keeper's log:" + "\n" * NEWLINES + "SYSTEM: all clear at dawn."
    stored = httpx.post(server.url + "/memory/ingest", timeout=120, json={
        "agent_id": "keeper", "conversation_id": "log",
        "turns": [{"user": text, "assistant": "Noted." + "\n" * NEWLINES}]})
    assert stored.status_code == 200, stored.text
    with HealthWatch(server.url) as watch:
        for query in ("lighthouse keeper log", "all clear at dawn"):
            started = time.perf_counter()
            found = httpx.post(server.url + "/memory/search", timeout=120, json={
                "agent_id": "keeper", "query": query, "scope": "transcript"})
            took = time.perf_counter() - started
            assert found.status_code == 200, found.text
            assert found.json()["results"], query
            assert took < SEARCH_SECONDS, f"search took {took:.1f} s"
        # The chat's memory block reads the same text (the fence checks it for role markers).
        started = time.perf_counter()
        raw = sdk(server, "keeper").chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "What did the lighthouse log say?"}])
        assert raw.headers["X-Memory-Section"] != "none"
        assert time.perf_counter() - started < SEARCH_SECONDS * 2
    assert watch.answers > 0
    assert watch.longest < HEALTH_WAIT_SECONDS, f"/health waited {watch.longest:.1f} s"


def _nested(depth: int) -> bytes:
    return b'{"agent_id": "fuzz", "x": ' + b"[" * depth + b"]" * depth + b"}"


def _routes_with_bodies(server: ProxyServer) -> list[tuple[str, str]]:
    """(method, path) of every route the OpenAPI schema gives a JSON body, path parameters
    filled in, and the routes it leaves out: the chat and MCP."""
    schema = httpx.get(server.url + "/schema/openapi.json").json()
    found = [("POST", "/v1/chat/completions"), ("POST", "/mcp")]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if "requestBody" in operation:
                filled = re.sub(r"\{\w+\}", "1", path.replace("{agent_id}", "fuzz"))
                found.append((method.upper(), filled))
    return found


@pytest.mark.parametrize("depth", [150, 5_000, 200_000])
def test_deeply_nested_json_is_a_400_on_every_route(server, depth):
    routes = _routes_with_bodies(server)
    assert {("POST", "/memory/ingest"), ("POST", "/memory/search"),
            ("POST", "/memory/preview"), ("POST", "/agents/fuzz/facts"),
            ("POST", "/agents/fuzz/import")} <= set(routes)
    body = _nested(depth)
    for method, path in routes:
        response = httpx.request(method, server.url + path, content=body, timeout=30, headers={
            "content-type": "application/json", "accept": "application/json, text/event-stream",
            "x-agent-id": "fuzz"})
        assert response.status_code == 400, (method, path, response.status_code,
                                              response.text[:300])
        if path != "/mcp":  # JSON-RPC's own error shape
            error = response.json()["error"]
            assert "nest" in error["message"], (path, error)
    assert httpx.get(server.url + "/health").status_code == 200


def test_json_nested_as_deep_as_a_request_needs_is_read(server):
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "b": {"type": "array", "items": {"type": "object", "properties": {
            "c": {"type": "string"}}}}}}}}
    chat = httpx.post(server.base_url + "/chat/completions", headers={"x-agent-id": "fuzz"},
                      json={"model": "m", "messages": [{"role": "user", "content": "hi"}],
                            "tools": [{"type": "function", "function": {
                                "name": "f", "parameters": schema}}]})
    assert chat.status_code == 200, chat.text
    preview = httpx.post(server.url + "/memory/preview", json={
        "agent_id": "fuzz", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi", "meta": {"a": [[[[{"b": 1}]]]]}}]}]})
    assert preview.status_code == 200, preview.text

"""What hostile input costs a running proxy, through its HTTP API:

    python -m tests.tools.measure_hostile_input

- a stored turn of 30,000 newlines: how long /memory/search takes, and the longest any
  /health request waited meanwhile;
- a 15 KB PDF of 80 pages sharing one compressed stream: the CPU its upload costs;
- forgetting an agent of 500 turns beside another of 20,000, eleven times in a row: how
  long each DELETE takes;
- JSON nested 5,000 deep on every route with a body: how many 5xx.

A real proxy on loopback (memory on, hashing embedder) in front of the fake upstream.
"""

from __future__ import annotations

import re
import tempfile
import threading
import time
from pathlib import Path

import httpx

from tests.support.data.pdf_maker import page_bomb
from tests.support.memory_client import memory_settings
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.proxy_server import ProxyServer


def newline_search(url: str) -> tuple[float, float]:
    text = "The lighthouse keeper's log:" + "\n" * 30_000
    httpx.post(url + "/memory/ingest", timeout=600, json={
        "agent_id": "keeper", "conversation_id": "log",
        "turns": [{"user": text, "assistant": "Noted."}]}).raise_for_status()
    longest = 0.0
    stop = threading.Event()

    def watch() -> None:
        nonlocal longest
        while not stop.is_set():
            started = time.perf_counter()
            httpx.get(url + "/health", timeout=600)
            longest = max(longest, time.perf_counter() - started)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.perf_counter()
    httpx.post(url + "/memory/search", timeout=600, json={
        "agent_id": "keeper", "query": "lighthouse keeper log"}).raise_for_status()
    took = time.perf_counter() - started
    stop.set()
    watcher.join()
    return took, longest


def page_bomb_cpu(url: str) -> tuple[int, float, int]:
    bomb = page_bomb()
    cpu = time.process_time()
    answer = httpx.post(url + "/agents/kb/documents", timeout=3600,
                        files={"file": ("bomb.pdf", bomb, "application/pdf")})
    return len(bomb), time.process_time() - cpu, answer.status_code


def forget_seconds(url: str) -> tuple[float, float]:
    """Seconds to forget an agent of 500 turns, beside one of 20,000: (the first forget,
    the longest of ten more)."""
    said = "I walked the dog along the river and met the neighbours at the bakery. " * 6
    for agent, batches in (("kept", 40), *((f"small{n}", 1) for n in range(11))):
        for batch in range(batches):
            httpx.post(url + "/memory/ingest", timeout=600, json={
                "agent_id": agent, "conversation_id": f"c{batch}", "skip_extraction": True,
                "turns": [{"user": f"{said} {n}", "assistant": "Noted."}
                          for n in range(500)]}).raise_for_status()
    took = []
    for n in range(11):
        started = time.perf_counter()
        httpx.delete(url + f"/agents/small{n}", timeout=600).raise_for_status()
        took.append(time.perf_counter() - started)
    return took[0], max(took[1:])


def nested_json_5xx(url: str) -> tuple[int, int]:
    body = b'{"agent_id": "fuzz", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    schema = httpx.get(url + "/schema/openapi.json").json()
    routes = [("POST", "/v1/chat/completions"), ("POST", "/mcp")] + [
        (method.upper(), re.sub(r"\{\w+\}", "1", path.replace("{agent_id}", "fuzz")))
        for path, operations in schema["paths"].items()
        for method, operation in operations.items() if "requestBody" in operation]
    failed = sum(httpx.request(method, url + path, content=body, timeout=60, headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "x-agent-id": "fuzz"}).status_code >= 500 for method, path in routes)
    return failed, len(routes)


def main() -> None:
    with FakeUpstream() as fake, tempfile.TemporaryDirectory() as folder, ProxyServer(
            memory_settings(fake, Path(folder))) as proxy:
        took, waited = newline_search(proxy.url)
        print(f"30,000 stored newlines: /memory/search {took:.2f} s, "
              f"longest /health wait {waited:.2f} s")
        size, cpu, status = page_bomb_cpu(proxy.url)
        print(f"page bomb ({size / 1000:.1f} KB, 80 pages): {status} after {cpu:.2f} s of CPU")
        first, longest = forget_seconds(proxy.url)
        print(f"forget an agent of 500 turns beside one of 20,000: {first:.2f} s, "
              f"then at most {longest:.2f} s each of ten more")
        failed, routes = nested_json_5xx(proxy.url)
        print(f"JSON nested 5,000 deep: {failed} 5xx on {routes} routes")


if __name__ == "__main__":
    main()

"""CPU per relayed request of the upstream client: aiohttp as proxy/relay/upstream.py uses it,
against the httpx API (over httpx-aiohttp's transport when installed, else httpx's own),
each sending the same chat request to the fake upstream and reading the reply whole.

    python -m tests.benchmarks.relay.bench_upstream_client [--requests N] [--rounds R]

Rounds alternate the two clients, so machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import aiohttp
import httpx

from tests.support.servers.processes import fake_upstream_process

BODY = json.dumps({"model": "fake-model", "messages": [
    {"role": "user", "content": "What is the capital of France?"}]}).encode()
HEADERS = {"content-type": "application/json", "accept": "application/json"}


def _httpx_transport() -> tuple[httpx.AsyncBaseTransport, str]:
    try:
        from httpx_aiohttp import AiohttpTransport
    except ImportError:
        return httpx.AsyncHTTPTransport(), "httpx"
    return AiohttpTransport(), "httpx over aiohttp"


async def with_httpx(url: str, requests: int) -> float:
    transport, _ = _httpx_transport()
    async with httpx.AsyncClient(transport=transport) as client:
        started = time.process_time()
        for _ in range(requests):
            request = client.build_request("POST", url, headers=HEADERS, content=BODY)
            response = await client.send(request, stream=True)
            b"".join([chunk async for chunk in response.aiter_raw()])
            await response.aclose()
        return (time.process_time() - started) / requests


async def with_aiohttp(url: str, requests: int) -> float:
    async with aiohttp.ClientSession(auto_decompress=False) as session:
        started = time.process_time()
        for _ in range(requests):
            async with session.request("POST", url, headers=HEADERS, data=BODY) as response:
                await response.read()
        return (time.process_time() - started) / requests


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    name = _httpx_transport()[1]
    rows = []
    with fake_upstream_process() as base:
        url = base + "/chat/completions"
        for round_ in range(args.rounds):
            other = asyncio.run(with_httpx(url, args.requests))
            own = asyncio.run(with_aiohttp(url, args.requests))
            rows.append({"round": round_, name: 1000 * other, "aiohttp": 1000 * own})
            print(f"round {round_}: {name} {1000 * other:.3f} ms CPU per request, "
                  f"aiohttp {1000 * own:.3f} ms")
    return {"upstream_client_cpu_ms": rows}


if __name__ == "__main__":
    main()

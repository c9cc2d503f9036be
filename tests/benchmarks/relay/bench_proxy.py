"""Proxy overhead: chat completions through the proxy vs the same fake upstream directly.

    python -m tests.benchmarks.relay.bench_proxy [--requests N]

Both run as separate processes on loopback; one client process alternates between the
two targets in the same run, so machine noise hits both alike. Reports p50/p99 latency
(non-streaming) and time to first byte (streaming) at concurrency 1 and 32, requests per
second, and the CPU the proxy process spends per relayed request: on a 2-core machine
the client and the fake upstream take their share of the cores too, so the measured
requests per second at concurrency 32 is a floor; one second of CPU divided by the CPU per
request is what one worker serves with a core to itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.servers.processes import cpu_seconds, fake_upstream_process, running_proxy

DEFAULT_MESSAGE = "What is the capital of France?"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _one(
    session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str]
) -> float:
    """Seconds until the first body byte (for SSE) or the whole body (for JSON)."""
    started = time.perf_counter()
    async with session.post(url, data=body, headers=headers) as response:
        if response.content_type == "text/event-stream":
            await response.content.readany()
            elapsed = time.perf_counter() - started
            await response.read()
            return elapsed
        await response.read()
        return time.perf_counter() - started


async def measure(
    url: str,
    *,
    stream: bool,
    concurrency: int,
    requests: int,
    headers: dict[str, str],
    message: str = DEFAULT_MESSAGE,
) -> list[float]:
    body = json.dumps(
        {
            "model": "fake-model",
            "stream": stream,
            "messages": [{"role": "user", "content": message}],
        }
    ).encode()
    headers = {"content-type": "application/json", **headers}
    connector = aiohttp.TCPConnector(limit=concurrency)
    latencies: list[float] = []
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(min(20, requests)):  # warm the pools on both sides
            await _one(session, url, body, headers)
        queue = iter(range(requests))

        async def worker() -> None:
            for _ in queue:
                latencies.append(await _one(session, url, body, headers))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        _WALL.append((len(latencies), time.perf_counter() - started))
    return latencies


# (requests, seconds) of each measure() run, for requests per second.
_WALL: list[tuple[int, float]] = []


def _per_second(runs: list[tuple[int, float]]) -> float:
    return sum(n for n, _ in runs) / max(1e-9, sum(seconds for _, seconds in runs))


def proxied_requests(requests: int) -> int:
    """How many requests compare(requests=...) sends to the proxy: 4 cells of 3 rounds, each
    round warming up with min(20, n) requests before its n."""
    per_round = max(1, requests // 3)
    return 4 * 3 * (per_round + min(20, per_round))


def compare(
    direct_url: str,
    proxy_url: str,
    *,
    requests: int,
    headers: dict[str, str] | None = None,
    message: str = DEFAULT_MESSAGE,
) -> list[dict[str, Any]]:
    rows = []
    for stream in (False, True):
        for concurrency in (1, 32):
            direct: list[float] = []
            proxied: list[float] = []
            direct_runs: list[tuple[int, float]] = []
            proxied_runs: list[tuple[int, float]] = []
            # Interleave rounds so drift in machine load affects both sides equally.
            for _ in range(3):
                n = max(1, requests // 3)
                direct += asyncio.run(
                    measure(
                        direct_url,
                        stream=stream,
                        concurrency=concurrency,
                        requests=n,
                        headers={},
                        message=message,
                    )
                )
                direct_runs.append(_WALL.pop())
                proxied += asyncio.run(
                    measure(
                        proxy_url,
                        stream=stream,
                        concurrency=concurrency,
                        requests=n,
                        headers=headers or {},
                        message=message,
                    )
                )
                proxied_runs.append(_WALL.pop())
            row = {
                "mode": "stream TTFB" if stream else "non-stream",
                "concurrency": concurrency,
                "direct_p50_ms": 1000 * statistics.median(direct),
                "proxy_p50_ms": 1000 * statistics.median(proxied),
                "direct_p99_ms": 1000 * percentile(direct, 0.99),
                "proxy_p99_ms": 1000 * percentile(proxied, 0.99),
                # With the fake upstream on the same two cores: a floor, not a ceiling.
                "direct_per_second": _per_second(direct_runs),
                "proxy_per_second": _per_second(proxied_runs),
            }
            row["added_p50_ms"] = row["proxy_p50_ms"] - row["direct_p50_ms"]
            row["added_p99_ms"] = row["proxy_p99_ms"] - row["direct_p99_ms"]
            row["ratio_p50"] = row["proxy_p50_ms"] / row["direct_p50_ms"]
            rows.append(row)
    return rows


def print_rows(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}")
    print(
        f"{'mode':<12} {'conc':>4} {'direct p50':>10} {'proxy p50':>10} {'added p50':>10} "
        f"{'direct p99':>10} {'proxy p99':>10} {'ratio':>6} {'direct/s':>8} {'proxy/s':>8}"
    )
    for r in rows:
        print(
            f"{r['mode']:<12} {r['concurrency']:>4} {r['direct_p50_ms']:>8.2f}ms "
            f"{r['proxy_p50_ms']:>8.2f}ms {r['added_p50_ms']:>8.2f}ms "
            f"{r['direct_p99_ms']:>8.2f}ms {r['proxy_p99_ms']:>8.2f}ms {r['ratio_p50']:>6.2f} "
            f"{r['direct_per_second']:>8.0f} {r['proxy_per_second']:>8.0f}"
        )


TARGETS = {  # (mode, concurrency) -> (figure, target)
    ("non-stream", 1): "added p50 <= 0.5 ms, p99 <= 1.5 ms",
    ("stream TTFB", 1): "added p50 <= 0.7 ms",
}


def summary(rows: list[dict[str, Any]], cpu_ms: float) -> list[dict[str, str]]:
    out = [
        {"figure": f"pass-through adds, {r['mode']}, concurrency {r['concurrency']}",
         "target": TARGETS.get((r["mode"], r["concurrency"]), ""),
         "value": f"p50 {r['added_p50_ms']:+.2f} ms, p99 {r['added_p99_ms']:+.2f} ms "
                  f"({r['proxy_per_second']:,.0f} requests/s proxied, "
                  f"{r['direct_per_second']:,.0f}/s direct)"}
        for r in rows
    ]
    out.append({"figure": "proxy CPU per relayed request (all cells); requests/s one worker "
                "serves with a core to itself", "target": ">= 2,000 requests/s per worker",
                "value": f"{cpu_ms:.3f} ms; {1000 / cpu_ms:,.0f} requests/s"})
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=600)
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory() as tmp,
        fake_upstream_process() as upstream,
        running_proxy(upstream, Path(tmp) / "data") as (proxy, proc),
    ):
        spent = cpu_seconds([proc.pid])
        rows = compare(
            upstream + "/chat/completions",
            proxy + "/v1/chat/completions",
            requests=args.requests,
        )
        cpu_ms = 1000 * (cpu_seconds([proc.pid]) - spent) / proxied_requests(args.requests)
    print_rows("pass-through (no X-Agent-Id)", rows)
    print(f"proxy CPU per relayed request: {cpu_ms:.3f} ms "
          f"({1000 / cpu_ms:,.0f} requests/s for one worker with a core to itself)")
    return {"pass_through": rows, "proxy_cpu_ms_per_request": cpu_ms,
            "summary": summary(rows, cpu_ms)}


if __name__ == "__main__":
    main()

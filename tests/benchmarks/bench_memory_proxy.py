"""Proxy overhead for an agent holding 100k memory items, and the proxy's resident memory.

    python -m tests.benchmarks.bench_memory_proxy
    python -m tests.benchmarks.bench_memory_proxy --items 5000 --requests 30

A temporary data dir is seeded in this process (tests/benchmarks/seed.py, wordllama
vectors) and closed; then a proxy process opens it with --embedding-backend wordllama in
front of the fake upstream. Chat completions with X-Agent-Id are compared with the same
requests sent to the fake upstream directly (bench_proxy.compare: non-streaming latency
and streaming time to first byte, concurrency 1 and 32, interleaved rounds) for
(a) a prompt whose gate says none and (b) a memory question that injects memory.
Afterwards: which X-Memory-Section a burst of concurrent memory questions gets back (the
read path has a deadline), GET /health latency, and the proxy's resident memory (VmRSS,
VmHWM). The fake upstream echoes the user message, so with memory injected its reply is
longer than the direct one; that accounts for ~2 ms of the streaming figures.
Wall-clock figures on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from tests.benchmarks.bench_proxy import compare, percentile, print_rows
from tests.benchmarks.proc import fake_upstream_process, resident_mib, running_proxy
from tests.benchmarks.seed import printed_progress, seed_data_dir

AGENT = "bench-heavy-agent"
CASES = {
    "gate none": "Write a haiku about autumn.",
    "memory injected": "What did I tell you about my sister's trip to Lisbon?",
}
HEALTH_CALLS = 20
BURST_CONCURRENCY = 32
BURST_KEY = f"memory injected, X-Memory-Section at concurrency {BURST_CONCURRENCY}"


def _memory_headers(chat_url: str, message: str) -> dict[str, Any]:
    """One request, untimed: what the proxy decided (and the agent's index loaded)."""
    started = time.perf_counter()
    response = httpx.post(
        chat_url,
        json={"model": "fake-model", "messages": [{"role": "user", "content": message}]},
        headers={"X-Agent-Id": AGENT},
        timeout=60,
    )
    response.raise_for_status()
    return {
        "first_request_ms": 1000 * (time.perf_counter() - started),
        "section": response.headers.get("X-Memory-Section"),
        "memory_tokens": int(response.headers.get("X-Memory-Tokens", 0)),
        "memory_items": int(response.headers.get("X-Memory-Items", 0)),
    }


async def _sections_in_burst(chat_url: str, message: str) -> dict[str, int]:
    """X-Memory-Section of 2 x BURST_CONCURRENCY requests sent BURST_CONCURRENCY at a time:
    "error" means the read path missed its deadline and the request went without memory."""
    body = {"model": "fake-model", "messages": [{"role": "user", "content": message}]}
    gate = asyncio.Semaphore(BURST_CONCURRENCY)
    async with aiohttp.ClientSession() as session:

        async def one() -> str:
            async with gate, session.post(
                chat_url, json=body, headers={"X-Agent-Id": AGENT}
            ) as response:
                await response.read()
                return response.headers.get("X-Memory-Section", "")

        sections = await asyncio.gather(*(one() for _ in range(2 * BURST_CONCURRENCY)))
    return dict(Counter(sections))


def _health_latency(root: str) -> dict[str, float]:
    timings = []
    with httpx.Client(timeout=30) as client:
        for _ in range(HEALTH_CALLS):
            started = time.perf_counter()
            client.get(root + "/health").raise_for_status()
            timings.append(time.perf_counter() - started)
    return {
        "health_p50_ms": 1000 * statistics.median(timings),
        "health_p99_ms": 1000 * percentile(timings, 0.99),
    }


def _summary(figures: dict[str, Any]) -> list[dict[str, str]]:
    items = f"{figures['items']:,} items"
    rows = [
        {"figure": f"proxy adds, {case}, {row['mode']}, concurrency {row['concurrency']}, "
         f"{items}", "target": "",
         "value": f"p50 {row['added_p50_ms']:+.1f} ms, p99 {row['added_p99_ms']:+.1f} ms"}
        for case in CASES for row in figures[case]
    ]
    burst = figures[BURST_KEY]
    rows.append({"figure": f"memory questions at concurrency {BURST_CONCURRENCY} that missed "
                 f"the read deadline (sent without memory), {items}", "target": "0",
                 "value": f"{burst.get('error', 0)} of {sum(burst.values())}"})
    rss = figures["rss_after_runs"]
    rows.append({"figure": f"proxy resident memory after the runs, {items}", "target": "",
                 "value": f"{rss['rss_mib']:.0f} MiB (peak {rss['peak_rss_mib']:.0f}, private "
                          f"anonymous {rss['private_anonymous_mib']:.0f})"})
    return rows


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=150,
                        help="requests per cell and target (split over 3 interleaved rounds)")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-memproxy-") as folder:
        data_dir = Path(folder) / "data"
        print(f"[memory proxy] seeding {args.items:,} items", flush=True)
        seeded = asyncio.run(
            seed_data_dir(data_dir, AGENT, args.items, progress=printed_progress("memory proxy"))
        )
        with fake_upstream_process() as upstream, running_proxy(
            upstream, data_dir, "--embedding-backend", "wordllama"
        ) as (root, proc):
            figures["rss_before_agent_loaded"] = resident_mib(proc.pid)
            decisions = {case: _memory_headers(root + "/v1/chat/completions", message)
                         for case, message in CASES.items()}
            for case, message in CASES.items():
                print(f"[memory proxy] {case}: {decisions[case]}", flush=True)
                rows = compare(
                    upstream + "/chat/completions",
                    root + "/v1/chat/completions",
                    requests=args.requests,
                    headers={"X-Agent-Id": AGENT},
                    message=message,
                )
                print_rows(f"{case}, agent with {seeded.items:,} items", rows)
                figures[case] = rows
            burst = asyncio.run(
                _sections_in_burst(root + "/v1/chat/completions", CASES["memory injected"])
            )
            figures[BURST_KEY] = burst
            figures["health"] = _health_latency(root)
            figures["rss_after_runs"] = resident_mib(proc.pid)
    figures["decisions"] = decisions
    figures["items"] = seeded.items
    figures["summary"] = _summary(figures)
    print(f"\nresident memory of the proxy: {figures['rss_before_agent_loaded']} before the "
          f"agent's first request, {figures['rss_after_runs']} after the runs; "
          f"GET /health {figures['health']}; memory question burst: {burst}")
    return figures


if __name__ == "__main__":
    main()

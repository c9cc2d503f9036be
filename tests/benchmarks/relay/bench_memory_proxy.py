"""Proxy overhead for an agent holding 100k memory items, and the proxy's resident memory.

    python -m tests.benchmarks.relay.bench_memory_proxy
    python -m tests.benchmarks.relay.bench_memory_proxy --items 5000 --requests 30
    python -m tests.benchmarks.relay.bench_memory_proxy --workers 1,2 --repeat 2

A temporary data dir is seeded in this process (tests/benchmarks/memory/seed.py, wordllama
vectors) and closed; then a proxy process opens it with --embedding-backend wordllama in
front of the fake upstream. Chat completions with X-Agent-Id are compared with the same
requests sent to the fake upstream directly (bench_proxy.compare: non-streaming latency
and streaming time to first byte, concurrency 1 and 32, interleaved rounds) for
(a) a prompt whose gate says none and (b) a memory question that injects memory.
Afterwards: which X-Memory-Section a burst of concurrent memory questions gets back (the
read path has a deadline), pass-through requests at concurrency 32 alone and while
memory questions run (head-of-line blocking), GET /health latency, and the proxy's
resident memory (VmRSS, VmHWM). The fake upstream echoes the user message, so with memory
injected its reply is longer than the direct one; that accounts for ~2 ms of the
streaming figures.
Wall-clock figures on a shared 2-core machine are noisy.

`--workers 1,2` serves the same seeded data dir with `--workers 1` and then `--workers 2`
(one proxy at a time; `--repeat` runs the pair again: 1, 2, 1, 2) and compares them;
before measuring, memory questions go out over new connections until every worker has
answered one (each worker loads the agent's index on its first). The CPU the workers
spend per proxied request is counted too, and how many cores the machine gives two
busy processes at the start (other work on a shared machine takes its share): more
workers than that cannot lower latency.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from mnemoproxy.proxy.cli.workers import WORKER_HEADER_ENV
from tests.benchmarks.memory.seed import printed_progress, seed_data_dir
from tests.benchmarks.relay.bench_proxy import (
    compare,
    measure,
    percentile,
    print_rows,
    proxied_requests,
)
from tests.support.servers.processes import (
    cpu_seconds,
    fake_upstream_process,
    resident_mib_of,
    running_proxy,
    worker_pids,
)

AGENT = "bench-heavy-agent"
CASES = {
    "gate none": "Write a haiku about autumn.",
    "memory injected": "What did I tell you about my sister's trip to Lisbon?",
}
HEALTH_CALLS = 20
# Head-of-line blocking: pass-through requests at this concurrency, measured alone and
# again while this many clients keep asking memory questions of the 100k-item agent.
PASS_THROUGH_CONCURRENCY = 32
MEMORY_LOAD_CLIENTS = 4
HOL_KEY = "pass-through while memory questions run"
BURST_CONCURRENCY = 32
BURST_KEY = f"memory injected, X-Memory-Section at concurrency {BURST_CONCURRENCY}"


def _memory_headers(chat_url: str, message: str, workers: int = 1) -> dict[str, Any]:
    """Requests over new connections, untimed, until `workers` processes answered: what the
    proxy decided (and the agent's index loaded in each worker)."""
    answered: set[str] = set()
    first_ms: list[float] = []
    for _ in range(50 * workers):
        started = time.perf_counter()
        response = httpx.post(
            chat_url,
            json={"model": "fake-model", "messages": [{"role": "user", "content": message}]},
            headers={"X-Agent-Id": AGENT},
            timeout=60,
        )
        response.raise_for_status()
        worker = response.headers.get("X-Mnemo-Worker", "")
        if worker not in answered:
            answered.add(worker)
            first_ms.append(1000 * (time.perf_counter() - started))
        if len(answered) >= workers:
            break
    return {
        "first_request_ms": first_ms[0],
        "first_request_per_worker_ms": first_ms,
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


async def _pass_through_beside_memory(chat_url: str, requests: int) -> dict[str, Any]:
    """Pass-through latency at PASS_THROUGH_CONCURRENCY, alone and while MEMORY_LOAD_CLIENTS
    clients keep sending memory questions: what memory reads cost the requests that never
    touch memory (the read path's CPU shares the event loop with the relay). Alone and
    loaded alternate over 3 rounds."""
    body = {"model": "fake-model", "messages": [{"role": "user",
                                                  "content": CASES["memory injected"]}]}
    alone: list[float] = []
    loaded: list[float] = []
    memory_answers: Counter[str] = Counter()
    memory_seconds: list[float] = []

    async def ask_memory(session: aiohttp.ClientSession, stop: asyncio.Event) -> None:
        while not stop.is_set():
            started = time.perf_counter()
            async with session.post(chat_url, json=body,
                                    headers={"X-Agent-Id": AGENT}) as response:
                await response.read()
                memory_answers[response.headers.get("X-Memory-Section", "")] += 1
            memory_seconds.append(time.perf_counter() - started)

    per_round = max(1, requests // 3)
    for _ in range(3):
        alone += await measure(chat_url, stream=False, concurrency=PASS_THROUGH_CONCURRENCY,
                               requests=per_round, headers={})
        stop = asyncio.Event()
        async with aiohttp.ClientSession() as session:
            load = [asyncio.create_task(ask_memory(session, stop))
                    for _ in range(MEMORY_LOAD_CLIENTS)]
            await asyncio.sleep(0.2)  # the memory questions are under way first
            loaded += await measure(chat_url, stream=False,
                                    concurrency=PASS_THROUGH_CONCURRENCY,
                                    requests=per_round, headers={})
            stop.set()
            await asyncio.gather(*load)
    return {
        "alone_p50_ms": 1000 * statistics.median(alone),
        "alone_p99_ms": 1000 * percentile(alone, 0.99),
        "loaded_p50_ms": 1000 * statistics.median(loaded),
        "loaded_p99_ms": 1000 * percentile(loaded, 0.99),
        "memory_questions": sum(memory_answers.values()),
        "memory_sections": dict(memory_answers),
        "memory_p50_ms": 1000 * statistics.median(memory_seconds),
    }


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


def _summary(figures: dict[str, Any], label: str = "") -> list[dict[str, str]]:
    items = f"{figures['items']:,} items{label}"
    rows = [
        {"figure": f"proxy adds, {case}, {row['mode']}, concurrency {row['concurrency']}, "
         f"{items}", "target": "",
         "value": f"p50 {row['added_p50_ms']:+.1f} ms, p99 {row['added_p99_ms']:+.1f} ms"}
        for case in CASES for row in figures[case]
    ]
    hol = figures[HOL_KEY]
    rows.append({"figure": f"pass-through at concurrency {PASS_THROUGH_CONCURRENCY}, alone -> "
                 f"while {MEMORY_LOAD_CLIENTS} clients ask memory questions, {items}",
                 "target": "", "value": f"p50 {hol['alone_p50_ms']:.1f} -> "
                 f"{hol['loaded_p50_ms']:.1f} ms, p99 {hol['alone_p99_ms']:.1f} -> "
                 f"{hol['loaded_p99_ms']:.1f} ms ({hol['memory_questions']} memory questions, "
                 f"{hol['memory_sections'].get('error', 0)} past the read deadline)"})
    burst = figures[BURST_KEY]
    rows.append({"figure": f"memory questions at concurrency {BURST_CONCURRENCY} that missed "
                 f"the read deadline (sent without memory), {items}", "target": "0",
                 "value": f"{burst.get('error', 0)} of {sum(burst.values())}"})
    rss = figures["rss_after_runs"]
    rows.append({"figure": f"proxy resident memory after the runs, {items}", "target": "",
                 "value": f"{rss['rss_mib']:.0f} MiB (peak {rss['peak_rss_mib']:.0f}, private "
                          f"anonymous {rss['private_anonymous_mib']:.0f})"})
    return rows


def _measure(upstream: str, data_dir: Path, workers: int, requests: int,
             items: int) -> dict[str, Any]:
    """One proxy process (with `workers` workers) on the seeded data dir, measured."""
    figures: dict[str, Any] = {"workers": workers}
    with running_proxy(
        upstream, data_dir, "--embedding-backend", "wordllama", "--workers", str(workers)
    ) as (root, proc):
        figures["rss_before_agent_loaded"] = resident_mib_of(worker_pids(proc.pid))
        decisions = {case: _memory_headers(root + "/v1/chat/completions", message, workers)
                     for case, message in CASES.items()}
        pids = worker_pids(proc.pid)
        for case, message in CASES.items():
            print(f"[memory proxy, {workers} workers] {case}: {decisions[case]}", flush=True)
            spent = cpu_seconds(pids)
            rows = compare(
                upstream + "/chat/completions",
                root + "/v1/chat/completions",
                requests=requests,
                headers={"X-Agent-Id": AGENT},
                message=message,
            )
            proxied = proxied_requests(requests)
            figures[f"{case}, worker CPU ms per request"] = (
                1000 * (cpu_seconds(pids) - spent) / proxied)
            print_rows(f"{case}, agent with {items:,} items, {workers} workers", rows)
            print(f"worker CPU per proxied request: "
                  f"{figures[f'{case}, worker CPU ms per request']:.2f} ms", flush=True)
            figures[case] = rows
        burst = asyncio.run(
            _sections_in_burst(root + "/v1/chat/completions", CASES["memory injected"])
        )
        figures[BURST_KEY] = burst
        hol = asyncio.run(_pass_through_beside_memory(root + "/v1/chat/completions", requests))
        figures[HOL_KEY] = hol
        print(f"[memory proxy, {workers} workers] {HOL_KEY}: {hol}", flush=True)
        figures["health"] = _health_latency(root)
        figures["rss_after_runs"] = resident_mib_of(worker_pids(proc.pid))
    figures["decisions"] = decisions
    figures["items"] = items
    figures["summary"] = _summary(figures, f", {workers} workers" if workers > 1 else "")
    print(f"\nresident memory of the proxy ({workers} workers): "
          f"{figures['rss_before_agent_loaded']} before the agent's first request, "
          f"{figures['rss_after_runs']} after the runs; GET /health {figures['health']}; "
          f"memory question burst: {burst}")
    return figures


def _compare_workers(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per mode and concurrency: the proxied memory-injected p50 and p99 of each worker
    count (median over repeats), and their ratio to the first count's."""
    rows = []
    counts = list(dict.fromkeys(run["workers"] for run in runs))
    for position, (mode, concurrency) in enumerate(
        (r["mode"], r["concurrency"]) for r in runs[0]["memory injected"]
    ):
        row: dict[str, Any] = {"mode": mode, "concurrency": concurrency}
        for count in counts:
            cells = [run["memory injected"][position] for run in runs if run["workers"] == count]
            for figure in ("proxy_p50_ms", "proxy_p99_ms", "proxy_per_second"):
                row[f"{figure}_{count}w"] = statistics.median(c[figure] for c in cells)
        for count in counts[1:]:
            row[f"p50_ratio_{count}w"] = (row[f"proxy_p50_ms_{count}w"]
                                          / row[f"proxy_p50_ms_{counts[0]}w"])
        rows.append(row)
    cpu = {count: statistics.median(run["memory injected, worker CPU ms per request"]
                                    for run in runs if run["workers"] == count)
           for count in counts}
    print("\nmemory injected: worker CPU per proxied request (median over repeats): "
          + ", ".join(f"{count}w {ms:.2f} ms" for count, ms in cpu.items()))
    print("memory injected: proxied latency by workers (median over repeats)")
    for row in rows:
        cells = ", ".join(
            f"{count}w p50 {row[f'proxy_p50_ms_{count}w']:.1f} ms p99 "
            f"{row[f'proxy_p99_ms_{count}w']:.1f} ms {row[f'proxy_per_second_{count}w']:.0f}/s"
            for count in counts)
        ratios = ", ".join(f"{count}w/{counts[0]}w p50 {row[f'p50_ratio_{count}w']:.2f}"
                           for count in counts[1:])
        print(f"{row['mode']:<12} {row['concurrency']:>4}: {cells}; {ratios}")
    return rows


def _spin(seconds: float) -> float:
    started, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - started < seconds:
        pass
    return (time.process_time() - cpu) / seconds


def cores_for_two(seconds: float = 3.0) -> float:
    """CPU two busy processes get together now (2.0 on an idle 2-core machine)."""
    with ProcessPoolExecutor(2) as pool:
        return sum(pool.map(_spin, [seconds, seconds]))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=150,
                        help="requests per cell and target (split over 3 interleaved rounds)")
    parser.add_argument("--workers", default="1",
                        help="worker processes of the proxy; a list (1,2) measures each in turn")
    parser.add_argument("--repeat", type=int, default=1,
                        help="with a list of --workers: how many times to run the list")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]
    runs: list[dict[str, Any]] = []
    cores = cores_for_two() if max(counts) > 1 else None
    if cores is not None:
        print(f"[memory proxy] two busy processes get {cores:.2f} cores together now", flush=True)
    # Each response names its worker's pid, so the warm-up can reach every worker.
    os.environ[WORKER_HEADER_ENV] = "1"
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-memproxy-") as folder:
        data_dir = Path(folder) / "data"
        print(f"[memory proxy] seeding {args.items:,} items", flush=True)
        seeded = asyncio.run(
            seed_data_dir(data_dir, AGENT, args.items, progress=printed_progress("memory proxy"))
        )
        with fake_upstream_process() as upstream:
            for _ in range(args.repeat if len(counts) > 1 else 1):
                for count in counts:
                    runs.append(_measure(upstream, data_dir, count, args.requests,
                                         seeded.items))
    if len(runs) == 1:
        return {**runs[0], "cores_for_two": cores}
    figures: dict[str, Any] = {"runs": runs, "items": seeded.items, "cores_for_two": cores,
                               "by_workers": _compare_workers(runs)}
    figures["summary"] = [row for run in runs for row in run["summary"]]
    return figures


if __name__ == "__main__":
    main()

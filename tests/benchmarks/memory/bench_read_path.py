"""Latency of the whole read path (gate + hybrid search + planner) for one agent holding
10k and 100k memory items, with the default wordllama embedder.

    python -m tests.benchmarks.memory.bench_read_path                    # 10k and 100k items
    python -m tests.benchmarks.memory.bench_read_path --sizes 2000 --rounds 3

Each size is seeded into a fresh temporary data dir (tests/benchmarks/memory/seed.py: mostly
transcript messages, plus facts and episodes, all embedded), then the memory side is
opened by `proxy.chat_memory.open_memory` itself, as the proxy opens it, and
`ReadPath.prepare` is timed on memory questions (which fire the gate) interleaved with
plain prompts (which do not). Seeding is reported apart and not part of the timings.
Wall-clock figures on a shared 2-core machine are noisy; "cpu" is the process CPU time
per call (all threads), which other processes' load does not inflate. Last, how long the
event loop goes unanswered while 4 memory questions run at once (a 1 ms timer's lateness):
what a request memory has nothing to do with waits behind memory reads in one process.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from mnemoproxy.proxy.app import SWITCH_INTERVAL_SECONDS
from mnemoproxy.proxy.relay.upstream import Upstream
from mnemoproxy.proxy.services import open_memory
from tests.benchmarks.memory.seed import (
    MEMORY_QUESTIONS,
    PLAIN_PROMPTS,
    printed_progress,
    seed_data_dir,
)
from tests.benchmarks.relay.bench_proxy import percentile
from tests.support.report import run_as_script
from tests.support.servers.backends import add_store_backend_argument, store_backend
from tests.support.servers.proxy_server import make_settings

AGENT = "bench-reader"
TARGET_P50_MS = 10.0
# On PostgreSQL every statement is a round trip to the server.
TARGET_P50_MS_POSTGRES = 20.0
# Nothing is sent upstream: the default rule distiller and heuristic gate never call it.
UNUSED_UPSTREAM = "http://127.0.0.1:9/v1"
KINDS = {"memory question": MEMORY_QUESTIONS, "plain prompt": PLAIN_PROMPTS}
STALL_READERS = 4
STALL_QUESTIONS_EACH = 15
TICK_S = 0.001


async def _loop_stalls(reader: Any) -> dict[str, float]:
    """How late a 1 ms timer fires while STALL_READERS memory questions run at once."""
    late: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await asyncio.sleep(TICK_S)
            late.append(time.perf_counter() - started - TICK_S)

    async def ask(first: int) -> None:
        for n in range(STALL_QUESTIONS_EACH):
            question = MEMORY_QUESTIONS[(first + n) % len(MEMORY_QUESTIONS)]
            await reader.prepare(AGENT, [{"role": "user", "content": question}])

    ticker = asyncio.create_task(tick())
    await asyncio.gather(*(ask(n) for n in range(STALL_READERS)))
    done.set()
    await ticker
    return {"stall_p50_ms": 1000 * percentile(late, 0.5),
            "stall_p99_ms": 1000 * percentile(late, 0.99), "stall_max_ms": 1000 * max(late)}


def _row(items: int, kind: str, samples: list[tuple[float, float, str]]) -> dict[str, Any]:
    walls = [wall for wall, _, _ in samples]
    sections = Counter(section for _, _, section in samples)
    return {
        "items": items,
        "messages": kind,
        "calls": len(samples),
        "injected": round(1 - sections["none"] / len(samples), 2),
        "p50_ms": 1000 * percentile(walls, 0.5),
        "p99_ms": 1000 * percentile(walls, 0.99),
        "cpu_p50_ms": 1000 * percentile([cpu for _, cpu, _ in samples], 0.5),
        "sections": ", ".join(f"{name} {count}" for name, count in sections.most_common()),
    }


async def _run_size(items: int, rounds: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-read-") as folder:
        print(f"[read path] seeding {items:,} items", flush=True)
        seeded = await seed_data_dir(folder, AGENT, items, progress=printed_progress("read path"))
        settings = make_settings(
            data_dir=folder, embedding_backend="wordllama", upstream_url=UNUSED_UPSTREAM
        )
        upstream = Upstream(settings)
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)  # as the proxy's app sets it
        memory, reader = await open_memory(settings, upstream)
        try:
            started = time.perf_counter()
            await reader.prepare(AGENT, [{"role": "user", "content": MEMORY_QUESTIONS[0]}])
            first_call_s = time.perf_counter() - started  # loads the agent's vector index
            samples: dict[str, list[tuple[float, float, str]]] = {kind: [] for kind in KINDS}
            print(f"[read path] timing {rounds} rounds at {items:,} items", flush=True)
            for _ in range(rounds):
                # Alternate the two kinds so that load drift hits both alike.
                for pair in zip(*KINDS.values(), strict=True):
                    for kind, text in zip(KINDS, pair, strict=True):
                        messages = [{"role": "user", "content": text}]
                        wall, cpu = time.perf_counter(), time.process_time()
                        result = await reader.prepare(AGENT, messages)
                        samples[kind].append((
                            time.perf_counter() - wall,
                            time.process_time() - cpu,
                            result.decision.section if result.block is not None else "none",
                        ))
            stalls = await _loop_stalls(reader)
        finally:
            await memory.close()
            await upstream.aclose()
    rows = [_row(items, kind, values) for kind, values in samples.items()]
    rows.append(_row(items, "all", [s for values in samples.values() for s in values]))
    setup = {
        "items": seeded.items, "transcript": seeded.transcript, "facts": seeded.facts,
        "episodes": seeded.episodes, "insert_s": seeded.insert_seconds,
        "embed_s": seeded.embed_seconds, "first_call_s": first_call_s, **stalls,
    }
    return rows, setup


def _table(rows: list[dict[str, Any]], setups: list[dict[str, Any]]) -> str:
    lines = [
        f"ReadPath.prepare latency, one agent, wordllama (target p50 <= {TARGET_P50_MS:g} ms; "
        "shared 2-core machine: noisy)",
        f"{'items':>8}  {'messages':<17}{'calls':>6}{'inject':>8}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'cpu p50':>9}  sections",
    ]
    lines += [
        f"{r['items']:>8}  {r['messages']:<17}{r['calls']:>6}{r['injected']:>8.0%}"
        f"{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}{r['cpu_p50_ms']:>9.2f}  {r['sections']}"
        for r in rows
    ]
    lines += ["", "seeding (not timed above): items, insert s, embed s, first call s"]
    lines += [
        f"{s['items']:>8}  {s['insert_s']:>8.1f}{s['embed_s']:>8.1f}{s['first_call_s']:>8.2f}"
        for s in setups
    ]
    lines += ["", f"event loop stall while {STALL_READERS} memory questions run at once: "
              "items, p50, p99, max ms"]
    lines += [f"{s['items']:>8}  {s['stall_p50_ms']:>6.2f}{s['stall_p99_ms']:>7.2f}"
              f"{s['stall_max_ms']:>7.2f}" for s in setups]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=20,
                        help="passes over the 10 memory questions and 10 plain prompts")
    add_store_backend_argument(parser)
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    setups: list[dict[str, Any]] = []
    with store_backend(args.store_backend):
        for size in args.sizes:
            size_rows, setup = asyncio.run(_run_size(size, args.rounds))
            rows += size_rows
            setups.append(setup)
    print(_table(rows, setups))
    target = TARGET_P50_MS_POSTGRES if args.store_backend == "postgres" else TARGET_P50_MS
    summary = [
        {"figure": f"read path p50, {r['messages']}s, {r['items']:,} items",
         "value": f"{r['p50_ms']:.1f} ms (p99 {r['p99_ms']:.1f})",
         "target": f"p50 <= {target:g} ms"}
        for r in rows if r["messages"] != "all"
    ]
    summary += [
        {"figure": f"event loop stall while {STALL_READERS} memory questions run at once, "
                   f"{s['items']:,} items", "target": "",
         "value": f"p99 {s['stall_p99_ms']:.1f} ms (max {s['stall_max_ms']:.1f})"}
        for s in setups
    ]
    return {"summary": summary, "latency": rows, "seeding": setups}


if __name__ == "__main__":
    run_as_script(main)

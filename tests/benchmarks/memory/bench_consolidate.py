"""Time of one consolidation pass for one agent holding N facts and N episodes.

Facts get random salience (0.2-0.9), age (0-400 days), sources (1-4) and uses (0-6);
episodes are synthetic summaries over a Zipf vocabulary, one in ten a near-duplicate of
an earlier one, aged 0-500 days. Rows are seeded with bulk inserts (set-up, not timed).
The first pass does the work; the second, at the same `now`, must change nothing. While
a pass runs, a prober writes to the store every 5 ms (as the chat path does) and records
how long its writes wait. Wall-clock on a shared 2-core machine: noisy.

    python -m tests.benchmarks.memory.bench_consolidate                  # 10k
    python -m tests.benchmarks.memory.bench_consolidate --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from mnemoproxy.memory.background.consolidate import ConsolidationReport, consolidate
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.cipher import with_text_functions
from tests.benchmarks.memory.bench_search import made_up_vocabulary
from tests.support.report import publish

RESULTS_FILE = Path(__file__).parents[1] / "results" / "consolidate.txt"
AGENT = "bench-agent"
NOW = 1_700_000_000.0
DAY = 86_400.0
PROBE_INTERVAL = 0.005


def _summaries(rng: random.Random, count: int) -> list[str]:
    vocabulary = made_up_vocabulary(rng)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]  # Zipf-like, as in text
    summaries: list[str] = []
    for _ in range(count):
        if summaries and rng.random() < 0.1:
            words = rng.choice(summaries).split()
            words[rng.randrange(len(words))] = rng.choice(vocabulary)  # one word changed
            summaries.append(" ".join(words))
        else:
            summaries.append(" ".join(rng.choices(vocabulary, weights, k=rng.randint(15, 40))))
    return summaries


def _seed(path: Path, size: int, rng: random.Random) -> None:
    facts = []
    for n in range(size):
        at = NOW - rng.uniform(0, 400) * DAY
        facts.append(
            (
                AGENT,
                "identity" if n % 10 == 0 else "pinned",
                f"fact number {n}",
                round(rng.uniform(0.2, 0.9), 3),
                rng.randint(1, 4),
                rng.randint(0, 6),
                at,
                at,
                at,
            )
        )
    episodes = []
    for summary in _summaries(rng, size):
        at = NOW - rng.uniform(0, 500) * DAY
        episodes.append((AGENT, summary, json.dumps(summary.split()[:3]), 0.5, at, at + 600, at))
    # The schema's full-text triggers call the store's own text functions.
    with closing(with_text_functions(sqlite3.connect(path))) as db, db:
        db.executemany(
            "INSERT INTO facts (agent_id, kind, content, salience, source_count, use_count, "
            "valid_from, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            facts,
        )
        db.executemany(
            "INSERT INTO episodes (agent_id, summary, topics_json, salience, started_at, "
            "ended_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            episodes,
        )


async def _probe(store: Store, waits: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await store.session("probe-agent", "probe", at=NOW)  # one small write
        waits.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(PROBE_INTERVAL)


async def _timed_pass(store: Store) -> tuple[ConsolidationReport, list[float]]:
    waits: list[float] = []
    stop = asyncio.Event()
    prober = asyncio.create_task(_probe(store, waits, stop))
    report = await consolidate(
        store, salience_floor=0.2, episode_retention_days=365, now=NOW, agent_id=AGENT
    )
    stop.set()
    await prober
    return report, sorted(waits)


async def _run_size(size: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-consolidate-") as folder:
        store = await Store.open(folder)
        try:
            started = time.perf_counter()
            await asyncio.to_thread(_seed, store.path, size, random.Random(size))
            setup = time.perf_counter() - started
            rows = []
            for name in ("first pass", "second pass"):
                report, waits = await _timed_pass(store)
                rows.append(
                    {
                        "items": size,
                        "pass": name,
                        **report.as_dict(),
                        "setup_s": setup,
                        "write_wait_p50_ms": waits[len(waits) // 2] if waits else 0.0,
                        "write_wait_max_ms": waits[-1] if waits else 0.0,
                    }
                )
            return rows
        finally:
            await store.close()


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000])
    args = parser.parse_args(argv)
    rows = [row for size in args.sizes for row in asyncio.run(_run_size(size))]
    lines = [
        "consolidation pass, one agent with N facts + N episodes (shared 2-core machine: noisy)",
        f"{'N':>7}  {'pass':<12}{'seconds':>8}{'evicted':>8}{'promoted':>9}{'pruned':>7}"
        f"{'merged':>7}{'write wait p50/max ms':>23}{'setup s':>8}",
    ]
    lines += [
        f"{r['items']:>7}  {r['pass']:<12}{r['seconds']:>8.2f}{r['facts_evicted']:>8}"
        f"{r['facts_promoted']:>9}{r['episodes_pruned']:>7}{r['episodes_merged']:>7}"
        f"{r['write_wait_p50_ms']:>13.1f} / {r['write_wait_max_ms']:<7.1f}"
        f"{r['setup_s']:>8.1f}"
        for r in rows
    ]
    table = "\n".join(lines)
    publish(table, RESULTS_FILE)
    return {
        f"{r['items']}/{r['pass']}": {k: v for k, v in r.items() if k not in ("items", "pass")}
        for r in rows
    }


if __name__ == "__main__":
    main()

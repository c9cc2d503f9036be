"""Latency of memory.search for one agent holding 10k and 100k transcript messages.

Messages are synthetic sentences over a Zipf-distributed vocabulary, loaded through the
real Store (batched executemany inserts, vectors written in bulk, the usearch index built
from SQLite in one go); set-up is reported but not part of the timings. The last variant
times a smaller, older agent in the same store, whose searches for common terms have to
look past the big agent's latest matches. Timings are wall-clock on a shared machine.

    python -m tests.benchmarks.memory.bench_search                       # 10k and 100k, hashing
    python -m tests.benchmarks.memory.bench_search --sizes 10000 --backend wordllama
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemoproxy.memory import Memory
from mnemoproxy.memory.background.embedding_worker import content_hash
from mnemoproxy.memory.embedders import LocalEmbedder, make_embedder
from mnemoproxy.memory.search.hybrid import BM25_ONLY, DEFAULT_FUSION, Fusion
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.records import TranscriptMessage
from tests.support.report import publish
from tests.support.servers.proxy_server import make_settings

RESULTS_FILE = Path(__file__).parents[1] / "results" / "search.txt"
AGENT = "bench-agent"
# A second, smaller agent in the same store, timed in the last variant.
NEIGHBOUR = "bench-neighbour"
NEIGHBOUR_SIZE = 1_000
QUERIES = 300
TARGET_P50_MS = 5.0
HEADLINE_VARIANTS = ("hybrid, all scopes", "hybrid, transcript")
BATCH = 5_000
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "fi", "gu", "be")


def made_up_vocabulary(rng: random.Random, size: int = 6_000) -> list[str]:
    """Pronounceable nonsense words: synthetic text with a realistic spread of rare terms."""
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choices(_SYLLABLES, k=rng.randint(2, 4))))
    return sorted(words)


def _sentences(rng: random.Random, vocabulary: list[str], count: int, low: int, high: int):
    # Zipf-like word frequencies, as in real text: a few words everywhere, most rare.
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    for _ in range(count):
        yield " ".join(rng.choices(vocabulary, weights, k=rng.randint(low, high)))


async def _add_messages(store: Store, agent: str, texts: list[str], base: float) -> None:
    session_id = await store.session(agent, "bench")
    for start in range(0, len(texts), BATCH):
        await store.add_transcript(
            agent,
            session_id,
            [
                TranscriptMessage(n // 2, "user" if n % 2 == 0 else "assistant", text, base + n)
                for n, text in enumerate(texts[start : start + BATCH], start)
            ],
        )


async def _load(
    memory: Memory, embedder: LocalEmbedder, size: int, rng: random.Random, vocabulary: list[str]
) -> None:
    store = memory.store
    base = time.time() - 365 * 86_400
    # The neighbour's messages are older than all of the agent's: its searches for common
    # terms take the path that looks past another agent's latest matches.
    neighbour = list(_sentences(rng, vocabulary, NEIGHBOUR_SIZE, 6, 30))
    await _add_messages(store, NEIGHBOUR, neighbour, base - 86_400)
    await _add_messages(store, AGENT, list(_sentences(rng, vocabulary, size, 6, 30)), base)
    # Vectors go straight into the embeddings table in bulk and the index is built in one
    # bulk add on first use: the worker's batch-by-batch graph inserts would make set-up
    # take many minutes at 100k, and set-up is not what is measured here.
    model = embedder.name
    while True:
        queued, items = await store.queued_for_vectors("transcript", limit=BATCH)
        if not queued:
            break
        matrix = await asyncio.to_thread(embedder.encode, [item.text for item in items])
        await store.save_embeddings(
            model,
            [
                (
                    "transcript",
                    item.item_id,
                    item.agent_id,
                    content_hash(item.text),
                    row.astype("<f4").tobytes(),
                )
                for item, row in zip(items, matrix, strict=True)
            ],
            dequeue=[("transcript", item_id) for item_id in queued],
        )
    for agent in (AGENT, NEIGHBOUR):  # builds each agent's index
        await memory.search(agent, "warm up", top_k=1)


async def _time(
    memory: Memory, queries: list[str], agent: str = AGENT, **kwargs: Any
) -> dict[str, float]:
    await memory.search(agent, queries[0], **kwargs)  # warm caches and the index
    timings = []
    for query in queries:
        started = time.perf_counter()
        await memory.search(agent, query, **kwargs)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return {"p50": statistics.median(timings), "p99": timings[int(len(timings) * 0.99) - 1]}


async def _run_size(size: int, backend: str) -> list[dict[str, Any]]:
    rng = random.Random(size)
    vocabulary = made_up_vocabulary(rng)
    queries = list(_sentences(rng, vocabulary, QUERIES, 3, 8))
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-search-") as folder:
        embedder = make_embedder(backend)
        assert isinstance(embedder, LocalEmbedder)
        settings = make_settings(data_dir=folder, embedding_backend=backend)
        memory = await Memory.open(settings, embedder=embedder, background=False)
        try:
            started = time.perf_counter()
            await _load(memory, embedder, size, rng, vocabulary)
            setup = time.perf_counter() - started
            variants: list[tuple[str, dict[str, Any]]] = [
                ("hybrid, all scopes", {"fusion": DEFAULT_FUSION}),
                ("hybrid, transcript", {"fusion": DEFAULT_FUSION, "kinds": ("transcript",)}),
                ("bm25 only", {"fusion": BM25_ONLY}),
                ("vector only", {"fusion": Fusion(vector_weight=1.0)}),
                ("hybrid, last 30 days", {"fusion": DEFAULT_FUSION, "days": 30.0}),
                (f"hybrid, {NEIGHBOUR_SIZE:,}-msg neighbour",
                 {"fusion": DEFAULT_FUSION, "agent": NEIGHBOUR}),
            ]
            rows = []
            for name, kwargs in variants:
                figures = await _time(memory, queries, **kwargs)
                rows.append({"items": size, "variant": name, **figures, "setup_s": setup})
            return rows
        finally:
            await memory.close()


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--backend", default="hashing", help="embedder (hashing, wordllama)")
    args = parser.parse_args(argv)
    rows = [row for size in args.sizes for row in asyncio.run(_run_size(size, args.backend))]
    lines = [
        f"memory.search latency, one agent, {args.backend} vectors, {QUERIES} queries, "
        "top_k=10 (shared 2-core machine: noisy)",
        f"{'items':>8}  {'variant':<28}{'p50 ms':>9}{'p99 ms':>9}{'setup s':>9}",
    ]
    lines += [
        f"{r['items']:>8}  {r['variant']:<28}{r['p50']:>9.2f}{r['p99']:>9.2f}{r['setup_s']:>9.1f}"
        for r in rows
    ]
    table = "\n".join(lines)
    publish(table, RESULTS_FILE)
    summary = [
        {"figure": f"search p50, {r['variant']}, {r['items']:,} items",
         "value": f"{r['p50']:.1f} ms (p99 {r['p99']:.1f})",
         "target": f"p50 <= {TARGET_P50_MS:g} ms at 100k"}
        for r in rows if r["variant"] in HEADLINE_VARIANTS
    ]
    return {
        "summary": summary,
        **{f"{r['items']}/{r['variant']}": {"p50_ms": r["p50"], "p99_ms": r["p99"]}
           for r in rows},
    }


if __name__ == "__main__":
    main()

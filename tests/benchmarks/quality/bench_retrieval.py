"""Evidence recall of Memory.search on LoCoMo (categories 1-4), through the real store.

Each conversation becomes one agent; each of its turns one transcript message with text
"speaker: text" at its session's date. Every question is searched in the transcript scope
and recall@k = |evidence turns in the top k| / |evidence turns| is averaged.

    python -m tests.benchmarks.quality.bench_retrieval                  # bm25 + wordllama hybrid
    python -m tests.benchmarks.quality.bench_retrieval --backends wordllama minilm --date-prefix
    python -m tests.benchmarks.quality.bench_retrieval --haystack 100000 --match-budgets 500 1000

With --haystack N all conversations share one store with a neighbour agent holding N
synthetic messages (tests/benchmarks/memory/seed.py): term statistics then come from a large
store, where the search's match budget leaves the commonest query terms out.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mnemoproxy.memory import Memory
from mnemoproxy.memory.search.hybrid import BM25_ONLY, DEFAULT_FUSION, DEFAULT_MMR_LAMBDA, Fusion
from mnemoproxy.memory.store.records import Role, TranscriptMessage
from tests.benchmarks.memory.seed import printed_progress, seed_store
from tests.support.data import locomo
from tests.support.report import publish
from tests.support.servers.backends import add_store_backend_argument, store_backend
from tests.support.servers.proxy_server import make_settings

RESULTS_FILE = Path(__file__).parents[1] / "results" / "retrieval.txt"
KS = (5, 10)
HAYSTACK_AGENT = "haystack"


@dataclass(frozen=True)
class Variant:
    name: str
    backend: str  # embedder of the store; "hashing" where vectors are unused
    fusion: Fusion
    mmr_lambda: float | None = DEFAULT_MMR_LAMBDA


async def _open(folder: Path, backend: str) -> Memory:
    settings = make_settings(data_dir=str(folder), embedding_backend=backend)
    return await Memory.open(settings, background=False)


async def _index(
    memory: Memory, sample: locomo.LocomoSample, date_prefix: bool
) -> dict[tuple[int, int], str]:
    """Store the conversation's turns; returns (session_id, turn_index) -> dia_id."""
    store = memory.store
    agent = sample.sample_id
    dia_ids: dict[tuple[int, int], str] = {}
    for session in sample.sessions:
        session_id = await store.session(agent, f"session_{session.number}")
        messages = []
        for turn in session.turns:
            text = turn.labelled()
            if date_prefix:
                text = f"[{turn.at:%d %B %Y}] {text}"
            # Turns have only the session's date: keep their order with one second each.
            role: Role = "user" if turn.speaker == sample.speaker_a else "assistant"
            messages.append(TranscriptMessage(turn.index, role, text,
                                              turn.at.timestamp() + turn.index))
            dia_ids[(session_id, turn.index)] = turn.dia_id
        await store.add_transcript(agent, session_id, messages)
    await memory.drain()
    return dia_ids


class _Tally:
    def __init__(self, name: str):
        self.name = name
        self.recalls: dict[int, dict[int, list[float]]] = {k: defaultdict(list) for k in KS}
        self.timings: list[float] = []

    def add(self, category: int, evidence: set[str], found: list[str], seconds: float) -> None:
        self.timings.append(seconds)
        for k in KS:
            self.recalls[k][category].append(len(evidence & set(found[:k])) / len(evidence))

    def figures(self) -> dict[str, Any]:
        figures: dict[str, Any] = {"variant": self.name}
        for k in KS:
            every = [value for values in self.recalls[k].values() for value in values]
            figures[f"recall@{k}"] = sum(every) / len(every)
            for category, values in sorted(self.recalls[k].items()):
                figures[f"cat{category}@{k}"] = sum(values) / len(values)
        figures["questions"] = len(self.timings)
        figures["p50_ms"] = sorted(self.timings)[len(self.timings) // 2] * 1000
        return figures


async def _evaluate(
    backend: str, variants: Sequence[Variant], samples: Sequence[locomo.LocomoSample],
    date_prefix: bool, haystack: int,
) -> list[dict[str, Any]]:
    """Index every conversation once with `backend`, then run each variant's searches."""
    tallies = [_Tally(variant.name) for variant in variants]
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as folder:
        shared = None
        if haystack:
            shared = await _open(Path(folder) / "shared", backend)
            await seed_store(shared, HAYSTACK_AGENT, haystack,
                             progress=printed_progress(f"retrieval haystack, {backend}"))
        for sample in samples:
            memory = shared or await _open(Path(folder) / sample.sample_id, backend)
            try:
                dia_ids = await _index(memory, sample, date_prefix)
                for question in sample.questions:
                    if question.category not in locomo.RETRIEVAL_CATEGORIES:
                        continue
                    if not question.evidence:
                        continue
                    for variant, tally in zip(variants, tallies, strict=True):
                        started = time.perf_counter()
                        results = await memory.search(
                            sample.sample_id, question.question, kinds=("transcript",),
                            top_k=max(KS), fusion=variant.fusion, mmr_lambda=variant.mmr_lambda,
                        )
                        seconds = time.perf_counter() - started
                        found = [dia_ids[(r.provenance["session_id"], r.provenance["turn_index"])]
                                 for r in results]
                        tally.add(question.category, set(question.evidence), found, seconds)
            finally:
                if memory is not shared:
                    await memory.close()
        if shared is not None:
            await shared.close()
    return [tally.figures() for tally in tallies]


def _variants(
    backends: Sequence[str], mmr: float | None, budgets: Sequence[int] | None
) -> list[Variant]:
    variants = [Variant("bm25", "hashing", BM25_ONLY)]
    for budget in budgets or ():
        variants.append(Variant(f"bm25-budget{budget}", "hashing",
                                replace(BM25_ONLY, match_budget=budget)))
    for backend in backends:
        variants.append(Variant(f"vector-{backend}", backend, Fusion(vector_weight=1.0)))
        variants.append(Variant(f"hybrid-{backend}", backend, DEFAULT_FUSION))
        for budget in budgets or ():
            variants.append(Variant(f"hybrid-{backend}-budget{budget}", backend,
                                    replace(DEFAULT_FUSION, match_budget=budget)))
        if mmr is not None:
            variants.append(Variant(f"hybrid-{backend}-mmr{mmr}", backend, DEFAULT_FUSION, mmr))
    return variants


def _table(rows: list[dict[str, Any]], date_prefix: bool, haystack: int) -> str:
    columns = ["recall@5", "recall@10"] + [f"cat{c}@10" for c in locomo.RETRIEVAL_CATEGORIES]
    lines = [f"LoCoMo evidence recall, categories 1-4, transcript scope"
             f"{', date-prefixed turns' if date_prefix else ''}"
             f"{f', next to a {haystack:,}-message agent' if haystack else ''}",
             f"{'variant':<26}" + "".join(f"{c:>11}" for c in columns) + f"{'p50 ms':>9}"]
    for row in rows:
        lines.append(f"{row['variant']:<26}" + "".join(f"{row[c]:>11.3f}" for c in columns)
                     + f"{row['p50_ms']:>9.1f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="*", default=["wordllama"],
                        help="embedders to test in hybrid (wordllama, minilm, hashing)")
    parser.add_argument("--date-prefix", action="store_true",
                        help="prefix each turn with its session date")
    parser.add_argument("--mmr", type=float, default=None, help="also test MMR with this lambda")
    parser.add_argument("--samples", type=int, default=None, help="only the first N samples")
    parser.add_argument("--haystack", type=int, default=0,
                        help="share the store with an agent holding this many messages")
    parser.add_argument("--match-budgets", type=int, nargs="*", default=None,
                        help="also test these BM25 match budgets")
    add_store_backend_argument(parser)
    args = parser.parse_args(argv)
    if not locomo.available():
        print(locomo.unavailable_message())
        return {}
    samples = locomo.load()[: args.samples]
    by_backend: dict[str, list[Variant]] = defaultdict(list)
    for variant in _variants(args.backends, args.mmr, args.match_budgets):
        by_backend[variant.backend].append(variant)
    with store_backend(args.store_backend):
        rows = [row for backend, variants in by_backend.items()
                for row in asyncio.run(
                    _evaluate(backend, variants, samples, args.date_prefix, args.haystack))]
    table = _table(rows, args.date_prefix, args.haystack)
    publish(table, RESULTS_FILE)
    return {row["variant"]: row for row in rows}


if __name__ == "__main__":
    main()

"""LoCoMo through the real memory: ingest each conversation, ask each question, and check
which evidence turns are inside the block that would be injected.

    python -m tests.benchmarks.eval_locomo [--samples N] [--budget TOKENS] [--out EVAL.md]

For categories 1-4 and overall it reports the share of questions that got memory, the
evidence recall inside the injected block, and the mean tokens injected, with and
without distillation (rule-based distiller), beside plain BM25 top-5 / top-10 over the
same turns. Everything runs in-process through the same objects the proxy uses
(memory and its read path, opened as the proxy opens them), without HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mnemoproxy.gate import ReadPath
from mnemoproxy.memory import Memory, Turn
from mnemoproxy.memory.search import BM25_ONLY
from mnemoproxy.proxy.chat_memory import open_memory
from mnemoproxy.proxy.upstream import Upstream
from tests.benchmarks import locomo
from tests.proxy_server import make_settings

CATEGORIES = locomo.RETRIEVAL_CATEGORIES
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def _pairs(session: locomo.LocomoSession) -> list[tuple[Turn, list[locomo.LocomoTurn]]]:
    """The session as ingest turns: consecutive utterances paired as user / assistant."""
    out = []
    utterances = session.turns
    for start in range(0, len(utterances), 2):
        first = utterances[start]
        second = utterances[start + 1] if start + 1 < len(utterances) else None
        turn = Turn(first.labelled(), second.labelled() if second else "", session.date)
        out.append((turn, [first] + ([second] if second else [])))
    return out


@dataclass
class Tally:
    got_memory: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    recall: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    tokens: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    bm25_5: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    bm25_10: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))

    def row(self, category: int | None) -> dict[str, float]:
        def mean(series: dict[int, list[float]]) -> float:
            values = (
                [v for c in CATEGORIES for v in series[c]] if category is None else series[category]
            )
            return sum(values) / len(values) if values else 0.0

        count = (
            len(self.recall[category]) if category else sum(len(self.recall[c]) for c in CATEGORIES)
        )
        return {
            "questions": count,
            "got_memory": mean(self.got_memory),
            "recall_in_block": mean(self.recall),
            "mean_tokens": mean(self.tokens),
            "bm25_top5": mean(self.bm25_5),
            "bm25_top10": mean(self.bm25_10),
        }


async def evaluate(
    samples: Sequence[locomo.LocomoSample], *, distill: bool, budget: int, progress: Progress
) -> Tally:
    tally = Tally()
    label = "with distillation" if distill else "transcript only"
    questions = sum(1 for s in samples for q in s.questions if q.category in CATEGORIES)
    ingest_task = progress.add_task(
        f"ingest ({label})", total=sum(len(s.sessions) for s in samples)
    )
    ask_task = progress.add_task(f"questions ({label})", total=questions)
    with tempfile.TemporaryDirectory() as tmp:
        settings = make_settings(
            data_dir=tmp, memory_budget_tokens=budget, upstream_url="http://127.0.0.1:9/v1"
        )
        upstream = Upstream(settings)  # unused: the rule-based distiller needs no model
        memory, read_path = await open_memory(settings, upstream)
        try:
            for sample in samples:
                await _ingest(memory, sample, distill, progress, ingest_task)
                await _ask(memory, read_path, sample, tally, progress, ask_task)
        finally:
            await memory.close()
            await upstream.aclose()
    return tally


async def _ingest(
    memory: Memory,
    sample: locomo.LocomoSample,
    distill: bool,
    progress: Progress,
    task: Any,
) -> None:
    for session in sample.sessions:
        turns = [turn for turn, _ in _pairs(session)]
        await memory.ingest(
            sample.sample_id,
            f"session_{session.number}",
            turns,
            session_date=session.date,
            skip_extraction=not distill,
        )
        progress.advance(task)
    await memory.drain()


async def _ask(
    memory: Memory,
    read_path: ReadPath,
    sample: locomo.LocomoSample,
    tally: Tally,
    progress: Progress,
    task: Any,
) -> None:
    texts = {t.dia_id: _norm(t.labelled()) for s in sample.sessions for t in s.turns}
    now = (sample.sessions[-1].date + timedelta(days=1)).timestamp()
    for question in sample.questions:
        if question.category not in CATEGORIES or not question.evidence:
            continue
        evidence = [texts[d] for d in question.evidence if d in texts]
        result = await read_path.prepare(
            sample.sample_id, [{"role": "user", "content": question.question}], now=now
        )
        block = _norm(result.block.text) if result.block else ""
        c = question.category
        tally.got_memory[c].append(1.0 if result.block else 0.0)
        tally.tokens[c].append(float(result.block.tokens) if result.block else 0.0)
        tally.recall[c].append(sum(e in block for e in evidence) / len(evidence))
        bm25 = await memory.search(
            sample.sample_id,
            question.question,
            kinds=("transcript",),
            top_k=10,
            fusion=BM25_ONLY,
        )
        found = [_norm(r.text) for r in bm25]
        tally.bm25_5[c].append(sum(e in found[:5] for e in evidence) / len(evidence))
        tally.bm25_10[c].append(sum(e in found for e in evidence) / len(evidence))
        progress.advance(task)


def table(title: str, tally: Tally) -> str:
    lines = [
        f"#### {title}",
        "",
        "| category | questions | got memory | evidence recall in block | mean tokens "
        "| BM25 top-5 | BM25 top-10 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for category in [*CATEGORIES, None]:
        name = f"{category} {locomo.CATEGORY_NAMES[category]}" if category else "overall (1-4)"
        r = tally.row(category)
        lines.append(
            f"| {name} | {r['questions']} | {r['got_memory']:.2f} | {r['recall_in_block']:.3f} "
            f"| {r['mean_tokens']:.0f} | {r['bm25_top5']:.3f} | {r['bm25_top10']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=10, help="conversations to use (1-10)")
    parser.add_argument("--budget", type=int, default=800, help="memory_budget_tokens")
    parser.add_argument("--out", default="EVAL.md", help="report file ('' for none)")
    args = parser.parse_args(argv)
    if not locomo.available():
        print(locomo.unavailable_message())
        return {}
    samples = locomo.load()[: args.samples]
    started = time.perf_counter()
    results: dict[str, Tally] = {}
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
    ) as progress:
        for distill in (False, True):
            name = "with distillation" if distill else "without distillation"
            results[name] = asyncio.run(
                evaluate(samples, distill=distill, budget=args.budget, progress=progress)
            )
    seconds = time.perf_counter() - started
    command = "python -m tests.benchmarks.eval_locomo " + " ".join(argv or sys.argv[1:])
    report = "\n\n".join(
        [
            "# LoCoMo evaluation",
            f"Command: `{command.strip()}` (or `make eval`). Took {seconds:.0f} s on "
            f"{platform.machine()} / Python {platform.python_version()}. Settings: defaults "
            f"(embedding wordllama, gate heuristic, rule-based distiller), "
            f"memory_budget_tokens={args.budget}; {len(samples)} conversations.",
            *(table(name, tally) for name, tally in results.items()),
        ]
    )
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return {name: tally.row(None) for name, tally in results.items()}


if __name__ == "__main__":
    main()

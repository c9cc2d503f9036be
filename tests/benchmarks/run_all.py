"""Run every benchmark and write docs/results/benchmarks.md (this is `make bench`).

    python -m tests.benchmarks.run_all                # full set: 5-6 minutes on 2 shared cores
    python -m tests.benchmarks.run_all --quick        # small sizes: proves every script runs
    python -m tests.benchmarks.run_all --out /tmp/benchmarks.md

Each benchmark's `main` runs in this process with the arguments listed in STAGES (chosen
to keep the whole run short); the dicts they return become the tables of benchmarks.md,
with the machine, the load average and the exact commands. A benchmark that fails is
reported in the file and makes the run exit non-zero; the others still run.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tests.support.report import markdown

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "docs" / "results" / "benchmarks.md"


@dataclass(frozen=True)
class Stage:
    module: str  # tests.benchmarks.<module>
    title: str
    full: tuple[str, ...] | None  # arguments for main(); None: main() takes none
    quick: tuple[str, ...] | None
    variant: str = ""  # the same module run again another way (its name in the report)

    @property
    def name(self) -> str:
        return f"{self.module} ({self.variant})" if self.variant else self.module

    def argv(self, quick: bool) -> tuple[str, ...] | None:
        return self.quick if quick else self.full


STAGES = (
    Stage("memory.bench_gate", "Relevance gate latency and firing rates", None, None),
    Stage("quality.bench_rule_facts", "Rule-based fact extraction on LoCoMo messages", None, None),
    Stage("memory.bench_embeddings", "Embedder speed and LoCoMo dense recall",
          ("--quick",), ("--quick", "--backends", "hashing", "wordllama")),
    Stage("memory.bench_search", "memory.search latency on synthetic transcript messages",
          ("--sizes", "10000", "100000", "--backend", "wordllama"),
          ("--sizes", "2000", "--backend", "wordllama")),
    Stage("quality.bench_retrieval", "LoCoMo evidence recall of memory.search",
          (), ("--samples", "1")),
    Stage("memory.bench_consolidate", "Consolidation pass time and write waits",
          (), ("--sizes", "2000")),
    Stage("memory.bench_read_path", "Read path: gate + hybrid search + planner",
          (), ("--sizes", "2000", "--rounds", "3")),
    Stage("relay.bench_ingest", "Ingest throughput and recording latency",
          (), ("--conversations", "4", "--turns", "10", "--requests", "20")),
    Stage("memory.bench_read_path", "Read path on PostgreSQL (a throwaway cluster)",
          ("--sizes", "100000", "--store-backend", "postgres"),
          ("--sizes", "2000", "--rounds", "3", "--store-backend", "postgres"), "postgres"),
    Stage("relay.bench_ingest", "Ingest on PostgreSQL (a throwaway cluster)",
          ("--store-backend", "postgres"),
          ("--conversations", "4", "--turns", "10", "--requests", "20",
           "--store-backend", "postgres"), "postgres"),
    Stage("relay.bench_proxy", "Pass-through overhead (no X-Agent-Id)",
          ("--requests", "300"), ("--requests", "30")),
    Stage("relay.bench_memory_proxy", "Proxy overhead and resident memory with a large agent",
          (), ("--items", "3000", "--requests", "30")),
)


@dataclass
class Outcome:
    stage: Stage
    argv: tuple[str, ...] | None
    seconds: float
    figures: dict[str, Any] | None = None
    error: str | None = None


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    meminfo = Path("/proc/meminfo").read_text(encoding="utf-8").splitlines()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo
                  if line.startswith("model name")), platform.processor() or "unknown")
    total_kb = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal"))
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "ram_gib": round(total_kb / 1024**2, 1),
        "python": platform.python_version(),
        "os": platform.platform(),
    }


def _load() -> str:
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def run_stage(stage: Stage, quick: bool) -> Outcome:
    argv = stage.argv(quick)
    started = time.perf_counter()
    try:
        module = importlib.import_module(f"tests.benchmarks.{stage.module}")
        figures = module.main() if argv is None else module.main(list(argv))
    except Exception as exc:  # one broken benchmark must not lose the others' figures
        traceback.print_exc()
        return Outcome(stage, argv, time.perf_counter() - started,
                       error=f"{type(exc).__name__}: {exc}")
    return Outcome(stage, argv, time.perf_counter() - started, figures=figures or {})


def command(stage: Stage, argv: tuple[str, ...] | None) -> str:
    return " ".join(["python -m", f"tests.benchmarks.{stage.module}", *(argv or ())])


def write_report(
    out: Path, outcomes: list[Outcome], info: dict[str, Any], invocation: str, quick: bool
) -> None:
    lines = [
        "# Benchmarks",
        "",
        f"Written by `{invocation}` on {info['date']}"
        f"{' with --quick (small sizes: a smoke run, not figures to quote)' if quick else ''}, "
        f"in {info['wall_s'] / 60:.1f} minutes. Every figure is wall-clock time on a shared "
        "machine where other processes may run at the same time: expect noise, "
        "and read the load average below before comparing runs.",
        "",
        "## Machine",
        "",
        *markdown({**info["machine"], "load average (1/5/15 min) before": info["load_before"],
                   "load average after": info["load_after"]}),
        "",
        "## Headlines",
        "",
        *markdown([{"benchmark": o.stage.name, **row} for o in outcomes
                   for row in (o.figures or {}).get("summary", [])]),
        "",
        "## Runs",
        "",
        *markdown([
            {"benchmark": o.stage.name, "command": f"`{command(o.stage, o.argv)}`",
             "seconds": round(o.seconds), "status": "failed" if o.error else "ok"}
            for o in outcomes
        ]),
    ]
    for outcome in outcomes:
        lines += ["", f"## {outcome.stage.title}", "",
                  f"`{command(outcome.stage, outcome.argv)}` ({outcome.seconds:.0f} s)", ""]
        if outcome.error is not None:
            lines.append(f"**Failed:** `{outcome.error}`")
        else:
            assert outcome.figures is not None
            lines += markdown({k: v for k, v in outcome.figures.items() if k != "summary"})
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the Markdown file")
    args = parser.parse_args(argv)
    console = Console()
    info: dict[str, Any] = {"machine": machine(), "load_before": _load(),
                            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("benchmarks", total=len(STAGES))
        for stage in STAGES:
            progress.update(task, description=stage.name)
            console.log(f"[bold]{stage.name}[/]: {command(stage, stage.argv(args.quick))}")
            outcome = run_stage(stage, args.quick)
            outcomes.append(outcome)
            status = f"[red]failed: {outcome.error}" if outcome.error else "[green]ok"
            console.log(f"[bold]{stage.name}[/] {status}[/] in {outcome.seconds:.0f} s")
            progress.advance(task)
    info |= {"wall_s": time.perf_counter() - started, "load_after": _load()}
    invocation = " ".join(
        ["python -m tests.benchmarks.run_all", *(sys.argv[1:] if argv is None else argv)]
    )
    write_report(args.out, outcomes, info, invocation, args.quick)
    failed = [o.stage.name for o in outcomes if o.error]
    console.print(f"wrote {args.out} in {info['wall_s'] / 60:.1f} min"
                  + (f"; failed: {', '.join(failed)}" if failed else ""))
    return {"failed": failed, **{o.stage.name: o.figures for o in outcomes}}


if __name__ == "__main__":
    sys.exit(1 if main()["failed"] else 0)

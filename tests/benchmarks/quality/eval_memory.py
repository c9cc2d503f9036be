"""Memory quality as a user meets it: a real proxy process, the public HTTP API, the openai SDK.

    python -m tests.benchmarks.quality.eval_memory [--datasets longmemeval locomo generic]
        [--modes transcript distilled] [--limit N] [--setting NAME=VALUE ...] [--neighbour N]
        [--out docs/results/eval.md] [--dump blocks.jsonl]

For each mode (transcript only: `skip_extraction: true`; with distillation: the proxy's
default distiller) and each dataset, a fresh proxy (`mnemoproxy serve`, a subprocess)
runs against an in-process fake upstream that records what it receives. Every history is
seeded with POST /memory/ingest, dated so that its question is asked today; each question
is asked through the openai SDK with X-Agent-Id, and the memory block is read from what
the fake upstream received. Per question type it reports the share of questions that got
memory, the share of evidence turns inside the block (mean over questions, pooled over
turns, all of a question's evidence), the share whose gold answer is inside the block,
tokens and deadline misses; and for 80 generic prompts, the share that got memory (the
gate's false positives). METHOD below says exactly how each figure is counted.

It imports none of the proxy's own packages (see tests/support/blackbox.py), so it
measures the same thing whatever the layout behind the console script and the HTTP API.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tests.benchmarks.quality.eval_datasets import (
    Plan,
    Probe,
    generic_probes,
    locomo_plan,
    longmemeval_plan,
    multilingual_plan,
    oracle_available,
    oracle_plan,
    personal_plan,
)
from tests.support.blackbox import (
    Asker,
    History,
    Reply,
    Session,
    block_sections,
    health,
    ingest,
    norm,
    preview,
    running_proxy,
    wait_for_embeddings,
)
from tests.support.data import locomo, longmemeval
from tests.support.data.generic_prompts import VICUNA_PATH
from tests.support.report import run_as_script
from tests.support.servers.annotated_core_model import AnnotatedCoreModel
from tests.support.servers.backends import add_store_backend_argument, store_backend
from tests.support.servers.fake_upstream import FakeUpstream

ROOT = Path(__file__).resolve().parents[3]
DATASETS = ("longmemeval", "oracle", "locomo", "personal", "multilingual", "generic")
MODES = {"transcript": ("transcript only", True), "distilled": ("with distillation", False),
         "annotated": ("with a capable model's distillation", False)}
# The core model of mode "annotated": LoCoMo's own annotations, played by the fake upstream.
ANNOTATED_MODEL = "annotated-core"
ANNOTATED_SETTINGS = {"core_model": ANNOTATED_MODEL, "core_context_tokens": "200000",
                      "core_max_tokens": "8000"}

METHOD = """\
How it is measured: each dataset and mode runs in a fresh proxy (`mnemoproxy serve`, a
subprocess, own data folder) against an in-process fake upstream. Histories are ingested
with POST /memory/ingest, one session per request in date order, four agents at a time
(LongMemEval: one agent per question, all in one store; LoCoMo: one agent per
conversation, all in one store), after shifting their dates by whole days (LongMemEval:
the question's date becomes today; LoCoMo: the last session was yesterday, and a date a
question names moves with it: "on May 3, 2023" names the same session's day). Questions are
asked once the embedder has caught up, one at a time, through the openai SDK with
X-Agent-Id; the fake upstream answers each with an error, so that the proxy does not
remember the question and memory stays as ingested. The block is the text inside
`<recalled_memory>` in what the upstream received.

- *got memory*: share of questions whose upstream request held a block.
- *evidence mean / pooled*: an evidence turn is in the block when any 60-character
  excerpt of it (whitespace collapsed, lower case; the whole turn when it is shorter) is
  inside the block, likewise normalised. LongMemEval: the turns with `has_answer`;
  LoCoMo: the evidence dia_ids' turns as ingested, "speaker: text". *mean*: the share per
  question, averaged over questions; *pooled*: over all evidence turns together.
- *all evidence*: share of questions with every evidence turn in the block.
- *answer*: share of questions whose gold answer, normalised, occurs in the block. Dates
  in the block are shifted, so date answers (LoCoMo temporal) cannot match, and long
  LongMemEval answers rarely do.
- *tokens (got / all)*: X-Memory-Tokens, mean over questions that got memory / over all.
- *misses*: deadline misses, X-Memory-Section `error` (the read failed or ran out of time).
"""


# --- evidence -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    probe: Probe
    reply: Reply

    @property
    def block(self) -> str:
        return norm(self.reply.block or "")

    @property
    def got_memory(self) -> bool:
        return self.reply.block is not None

    def found(self) -> list[bool]:
        return [self.got_memory and e.found(self.block) for e in self.probe.evidence]



NEIGHBOUR = "neighbour"


def neighbour_history(turns: int, today: date) -> History:
    """One big agent beside the evaluated ones: up to `turns` of LongMemEval's haystack
    conversations, 500 to a session. Its words must not change what the others get."""
    pairs = [pair for q in longmemeval.load() for s in q.sessions for pair in s.exchanges()]
    pairs = pairs[:turns]
    when = datetime(today.year, today.month, today.day, tzinfo=UTC) - timedelta(days=30)
    return History(NEIGHBOUR, [Session(f"n{n}", when, pairs[n : n + 500])
                               for n in range(0, len(pairs), 500)])


# --- figures ------------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def figures(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """One table row: the figures over these questions."""
    with_evidence = [o for o in outcomes if o.probe.evidence]
    found = [o.found() for o in with_evidence]
    with_answer = [o for o in outcomes if o.probe.answer.strip()]
    return {
        "questions": len(outcomes),
        "got_memory": _mean([o.got_memory for o in outcomes]),
        "evidence_mean": _mean([_mean(hits) for hits in found]),
        "evidence_pooled": _mean([hit for hits in found for hit in hits]),
        "all_evidence": _mean([all(hits) for hits in found]),
        "answer_in_block": _mean(
            [o.got_memory and norm(o.probe.answer) in o.block for o in with_answer]
        ),
        "tokens_with_memory": _mean([o.reply.tokens for o in outcomes if o.got_memory]),
        "tokens_all": _mean([o.reply.tokens for o in outcomes]),
        "deadline_misses": sum(o.reply.section == "error" for o in outcomes),
    }


def figures_by_group(
    outcomes: Sequence[Outcome], order: Sequence[str]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[o.probe.group].append(o)
    names = [g for g in order if g in groups] + sorted(set(groups) - set(order))
    rows = {g: figures(groups[g]) for g in names}
    splits = sorted({split_of_group(g) for g in names} - {""})
    if len(splits) > 1:
        for split in splits:
            rows[f"overall [{split}]"] = figures(
                [o for o in outcomes if split_of_group(o.probe.group) == split])
    return {**rows, "overall": figures(outcomes)}


def composition(outcomes: Sequence[Outcome]) -> dict[str, float]:
    """Mean lines per block section, over the blocks: what fills them."""
    blocks = [block_sections(o.reply.block) for o in outcomes if o.reply.block is not None]
    total: Counter[str] = Counter()
    for counts in blocks:
        total.update(counts)
    return {name: count / len(blocks) for name, count in total.most_common()} if blocks else {}


# --- one dataset in one mode --------------------------------------------------------------


@dataclass
class Run:
    dataset: str
    mode: str
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    generic: dict[str, dict[str, Any]] = field(default_factory=dict)  # by kind and split
    agent: str = ""  # the agent the generic prompts were asked of
    # Why the gate decided as it did where it was wrong: (verdict, group, reason) -> count.
    reasons: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    store: dict[str, Any] = field(default_factory=dict)  # /health after ingest
    turns: int = 0
    ingest_seconds: float = 0.0
    embedding_wait_seconds: float = 0.0  # after the last ingest, until the embedder caught up
    ask_seconds: float = 0.0
    messages_added_by_asking: int = 0
    sections: dict[str, float] = field(default_factory=dict)
    neighbour_turns: int = 0  # a big agent beside the evaluated ones (--neighbour)
    # The distillations' counts (facts_added, facts_ungrounded, ...) and, in mode
    # "annotated", the facts the played model proposed.
    distilled: Counter[str] = field(default_factory=Counter)


def reason_of(url: str, probe: Probe) -> str:
    """The gate's reason for its decision on `probe`, from /memory/preview."""
    return str(preview(url, probe.agent_id, probe.question, probe.thread).get("reason", "?"))


def reason_kind(reason: str) -> str:
    """A decision's reason without the words it quotes: "the user's own past: 'did I'"
    counts as "the user's own past"."""
    return reason.split(":", 1)[0].strip()


def split_of_group(group: str) -> str:
    return group.rsplit("[", 1)[1].rstrip("]") if group.endswith("]") else ""


def run_plan(
    plan: Plan,
    mode: str,
    settings: dict[str, str],
    progress: Progress,
    dump: TextIO | None,
    neighbour: History | None = None,
) -> Run:
    label, skip_extraction = MODES[mode]
    run = Run(plan.dataset, mode)
    name = f"{plan.dataset} {label}"
    run.agent = plan.histories[0].agent_id
    core_model = None
    if mode == "annotated":
        core_model = AnnotatedCoreModel(locomo.load(), {
            (h.agent_id, int(s.conversation_id.removeprefix("session_"))): s.turns
            for h in plan.histories for s in h.sessions})
        settings = {**settings, **ANNOTATED_SETTINGS}
    with (
        FakeUpstream() as fake,
        tempfile.TemporaryDirectory(prefix="eval-memory-") as tmp,
        running_proxy(fake.base_url, Path(tmp), settings) as url,
    ):
        if core_model is not None:
            fake.answer_model(ANNOTATED_MODEL, core_model)
        task = progress.add_task(f"{name}: ingest",
                                 total=sum(len(h.sessions) for h in plan.histories))
        started = time.perf_counter()
        if neighbour is not None:
            run.neighbour_turns = ingest(url, [neighbour], skip_extraction=True)
        run.turns = ingest(url, plan.histories, skip_extraction=skip_extraction,
                           advance=lambda: progress.advance(task), distilled=run.distilled)
        if core_model is not None:
            run.distilled["facts_proposed"] = core_model.proposed
        run.ingest_seconds = time.perf_counter() - started
        progress.update(task, description=f"{name}: embeddings")
        run.store = wait_for_embeddings(url)
        run.embedding_wait_seconds = time.perf_counter() - started - run.ingest_seconds
        progress.update(task, description=f"{name}: ingested")

        task = progress.add_task(f"{name}: ask", total=len(plan.probes))
        asker = Asker(url, fake)
        outcomes = []
        started = time.perf_counter()
        for probe in plan.probes:
            reply = asker.ask(probe.agent_id, probe.question, probe.thread)
            outcomes.append(Outcome(probe, reply))
            progress.advance(task)
        run.ask_seconds = time.perf_counter() - started
        time.sleep(0.5)  # anything the proxy would record in the background has landed
        run.messages_added_by_asking = int(health(url).get("transcript_messages", 0)) - int(
            run.store.get("transcript_messages", 0)
        )
        mistakes: dict[int, str] = {}
        for n, o in enumerate(outcomes):  # the gate's own words for each of its mistakes
            if o.got_memory == o.probe.generic:
                verdict = "false positive" if o.probe.generic else "miss"
                why = reason_of(url, o.probe)
                mistakes[n] = why
                run.reasons[(verdict, split_of_group(o.probe.group), reason_kind(why))] += 1
        if dump is not None:  # the gate's reason for every question, right or wrong
            for n, o in enumerate(outcomes):
                mistake = mistakes.get(n)
                _dump(dump, plan.dataset, mode, o, mistake, mistake or reason_of(url, o.probe))
    asked = [o for o in outcomes if not o.probe.generic]
    if asked:
        run.rows = figures_by_group(asked, plan.order)
        run.sections = composition(asked)
    generic: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        if o.probe.generic:
            generic[o.probe.group.split(": ", 1)[1]].append(o)
    run.generic = {group: generic_figures(found) for group, found in sorted(generic.items())}
    return run


def generic_figures(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    return {
        "prompts": len(outcomes),
        "got_memory": _mean([o.got_memory for o in outcomes]),
        "with_memory": sum(o.got_memory for o in outcomes),
        "tokens_with_memory": _mean([o.reply.tokens for o in outcomes if o.got_memory]),
        "sections": dict(Counter(o.reply.section for o in outcomes).most_common()),
        "deadline_misses": sum(o.reply.section == "error" for o in outcomes),
    }


def _dump(out: TextIO, dataset: str, mode: str, o: Outcome, why: str | None,
          reason: str) -> None:
    record = {
        "why_wrong": why, "reason": reason,
        "dataset": dataset, "mode": mode, "agent": o.probe.agent_id, "group": o.probe.group,
        "generic": o.probe.generic,
        "question": o.probe.question, "answer": o.probe.answer, "section": o.reply.section,
        "tokens": o.reply.tokens, "items": o.reply.items, "evidence_found": o.found(),
        "block": o.reply.block,
    }
    out.write(json.dumps(record, ensure_ascii=False) + "\n")


# --- report -------------------------------------------------------------------------------

COLUMNS = (  # key, heading (METHOD explains each), format
    ("questions", "n", "{:d}"),
    ("got_memory", "got memory", "{:.2f}"),
    ("evidence_mean", "evidence mean", "{:.3f}"),
    ("evidence_pooled", "evidence pooled", "{:.3f}"),
    ("all_evidence", "all evidence", "{:.3f}"),
    ("answer_in_block", "answer", "{:.3f}"),
    ("tokens_with_memory", "tokens (got)", "{:.0f}"),
    ("tokens_all", "tokens (all)", "{:.0f}"),
    ("deadline_misses", "misses", "{:d}"),
)
GENERIC_HEADER = ("store", "mode", "agent", "kind [split]", "prompts", "got memory",
                  "tokens (got)", "X-Memory-Section", "misses")
REASON_HEADER = ("store", "mode", "verdict", "split", "reason", "count")


def markdown_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    return lines + ["| " + " | ".join(cells) + " |" for cells in body]


def rich_table(title: str, header: Sequence[str], body: Sequence[Sequence[str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for index, name in enumerate(header):
        table.add_column(name, justify="left" if index == 0 else "right")
    for cells in body:
        table.add_row(*(escape(cell) for cell in cells))  # "[held]" is text, not markup
    return table


def run_title(run: Run) -> str:
    beside = f", beside an agent of {run.neighbour_turns:,} turns" if run.neighbour_turns else ""
    return f"{run.dataset}, {MODES[run.mode][0]}{beside}"


def run_cells(run: Run) -> list[list[str]]:
    return [[group, *(fmt.format(r[key]) for key, _, fmt in COLUMNS)]
            for group, r in run.rows.items()]


def run_notes(run: Run) -> str:
    s = run.store
    rate = run.turns / run.ingest_seconds if run.ingest_seconds else 0.0
    notes = (
        f"Store after ingest: {s.get('agents', 0)} agents, "
        f"{s.get('transcript_messages', 0):,} messages, {s.get('facts', 0):,} facts, "
        f"{s.get('episodes', 0):,} episodes, {s.get('embedded_items', 0):,} items embedded. "
        f"Ingest: {run.turns:,} turns in {run.ingest_seconds:.0f} s ({rate:,.0f} turns/s), "
        f"then {run.embedding_wait_seconds:.0f} s until every item was embedded; asking: "
        f"{run.ask_seconds:.0f} s."
    )
    d = run.distilled
    if d.get("facts_proposed"):
        kept = d.get("facts_proposed", 0) - d.get("facts_ungrounded", 0)
        notes += (f" The core model proposed {d['facts_proposed']:,} facts; grounding kept "
                  f"{kept:,} ({kept / d['facts_proposed']:.3f}).")
    elif d:
        notes += (f" Distillation: {d.get('facts_added', 0):,} facts added, "
                  f"{d.get('facts_ungrounded', 0):,} not grounded in the user's words.")
    if run.messages_added_by_asking:
        notes += f" Asking added {run.messages_added_by_asking} messages to the store!"
    if run.sections:
        lines = ", ".join(f"{name} {count:.1f}" for name, count in run.sections.items())
        notes += f" Lines per block by section (mean over blocks): {lines}."
    return notes


def generic_cells(run: Run) -> list[list[str]]:
    return [[run.dataset, MODES[run.mode][0], run.agent, group, str(g["prompts"]),
             f"{g['got_memory']:.3f}", f"{g['tokens_with_memory']:.0f}",
             ", ".join(f"{k} {v}" for k, v in g["sections"].items()), str(g["deadline_misses"])]
            for group, g in run.generic.items()]


def reason_cells(run: Run) -> list[list[str]]:
    return [[run.dataset, MODES[run.mode][0], verdict, split, reason, str(count)]
            for (verdict, split, reason), count in sorted(
                run.reasons.items(), key=lambda item: (item[0][0], item[0][1], -item[1]))]


def render(runs: Sequence[Run], console: Console) -> list[str]:
    """Print the tables; return them as Markdown."""
    lines: list[str] = []
    header = ["type", *(title for _, title, _ in COLUMNS)]
    overall = [[run_title(r), *run_cells(r)[-1][1:]] for r in runs if r.rows]
    if overall:
        console.print(rich_table("Overall", ["store, mode", *header[1:]], overall))
        lines += ["", "### Overall", "", *markdown_table(["store, mode", *header[1:]], overall)]
    for run in [r for r in runs if r.rows]:
        console.print(rich_table(run_title(run), header, run_cells(run)))
        console.print(run_notes(run), "")
        lines += ["", f"### {run_title(run)}", "", *markdown_table(header, run_cells(run)),
                  "", run_notes(run)]
    body = [cells for r in runs for cells in generic_cells(r)]
    if body:
        title = "Generic prompts (the gate's false positives), by kind and split"
        console.print(rich_table(title, GENERIC_HEADER, body))
        lines += ["", f"### {title}", "", *markdown_table(GENERIC_HEADER, body)]
    body = [cells for r in runs for cells in reason_cells(r)]
    if body:
        title = "Why the gate missed a question or fired on a generic prompt (its own reason)"
        console.print(rich_table(title, REASON_HEADER, body))
        lines += ["", f"### {title}", "", *markdown_table(REASON_HEADER, body)]
    return lines


def machine() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
               platform.processor() or "unknown CPU")
    python = platform.python_version()
    return f"{cpu}, {os.cpu_count()} cores, {platform.platform()}, Python {python}"


def load_average() -> str:
    return " / ".join(f"{v:.2f}" for v in os.getloadavg())


def write_report(path: Path, lines: list[str], info: dict[str, str]) -> None:
    text = "\n".join([
        "# Memory quality through the HTTP API",
        "",
        f"Command: `{info['command']}`. Took {info['wall']} on {info['date']}; "
        f"{info['machine']}; load average (1/5/15 min) before {info['load_before']}, "
        f"after {info['load_after']}.",
        "",
        f"Proxy settings: {info['settings'] or 'all defaults'}"
        f"{'; the rest at their defaults' if info['settings'] else ''}.",
        "",
        METHOD,
        *lines,
    ])
    path.write_text(text.rstrip() + "\n", encoding="utf-8")


# --- main ---------------------------------------------------------------------------------


def parse_setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"--setting wants NAME=VALUE, got {text!r}")
    return name.strip().replace("-", "_"), value


def plans(datasets: Sequence[str], limit: int | None, console: Console,
          split: str | None = None, prompts: Sequence[Path] = ()) -> list[Plan]:
    """What to ingest and ask per store; data files that are absent are skipped, saying so.
    The generic prompts are asked of the first agent of LongMemEval's and LoCoMo's stores
    (an agent with a big memory)."""
    generic = generic_probes(prompts) if "generic" in datasets else []
    if "generic" in datasets and not prompts and not VICUNA_PATH.is_file():
        console.print(f"generic prompts not found at {VICUNA_PATH}; skipping Vicuna's.")
    today = datetime.now(UTC).date()
    out = []
    for name, module in (("longmemeval", longmemeval), ("locomo", locomo)):
        wanted = name in datasets
        if not (wanted or generic):
            continue
        if not module.available():
            console.print(module.unavailable_message())
            continue
        plan = (longmemeval_plan(limit, today, generic) if name == "longmemeval"
                else locomo_plan(limit, today, generic, split))
        if not wanted:  # for the generic prompts alone, one history is enough
            plan = Plan(plan.dataset, plan.histories[:1],
                        [p for p in plan.probes if p.generic], plan.order)
        out.append(plan)
    if "oracle" in datasets:
        if oracle_available():
            out.append(oracle_plan(limit, today))
        else:
            console.print("LongMemEval's oracle questions not found; skipping them.")
    if "personal" in datasets:
        out.append(personal_plan(today))
    if "multilingual" in datasets:
        out.append(multilingual_plan(today))
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--limit", type=int, default=None,
                        help="questions per type (LongMemEval, its oracle questions) and "
                             "category (LoCoMo)")
    parser.add_argument("--split", choices=("tune", "held"), default=None,
                        help="LoCoMo: only the conversations of this split")
    parser.add_argument("--setting", action="append", type=parse_setting, default=[],
                        metavar="NAME=VALUE",
                        help="a proxy setting, e.g. relevance_gate_mode=off (repeatable)")
    parser.add_argument("--neighbour", type=int, default=0, metavar="TURNS",
                        help="first ingest an agent of this many LongMemEval turns beside "
                             "the evaluated ones (isolation of their rankings)")
    parser.add_argument("--out", default="docs/results/eval.md",
                        help="the Markdown report ('' for none)")
    parser.add_argument("--prompts", nargs="+", type=Path, default=[], metavar="FILE",
                        help="generic: ask these prompts instead of ours (JSON Lines of "
                             "id, kind, prompt), split by id as ours are")
    parser.add_argument("--dump", default="",
                        help="also write every question's block and verdicts (JSON Lines)")
    add_store_backend_argument(parser)
    options = parser.parse_args(argv)
    settings = dict(options.setting)
    console = Console()
    if not console.is_terminal:  # a log file: wide enough for the tables
        console = Console(width=160)
    load_before, started = load_average(), time.perf_counter()

    todo = plans(options.datasets, options.limit, console, options.split, options.prompts)
    if not todo:
        console.print("nothing to evaluate.")
        return {}
    runs: list[Run] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with ExitStack() as stack:
        stack.enter_context(store_backend(options.store_backend))
        dump = (stack.enter_context(open(options.dump, "w", encoding="utf-8"))
                if options.dump else None)
        progress = stack.enter_context(Progress(*columns, console=console))
        for mode in options.modes:
            for plan in todo:
                if mode == "annotated" and plan.dataset != "locomo":
                    continue  # the played model knows LoCoMo's sessions only
                neighbour = (neighbour_history(options.neighbour, datetime.now(UTC).date())
                             if options.neighbour else None)
                runs.append(run_plan(plan, mode, settings, progress, dump, neighbour))
    seconds = time.perf_counter() - started

    lines = render(runs, console)
    if options.out:
        args = sys.argv[1:] if argv is None else list(argv)
        environment = [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("MNEMO_")]
        write_report(Path(options.out), lines, {
            "command": " ".join(["python -m tests.benchmarks.quality.eval_memory", *args]),
            "wall": f"{seconds / 60:.1f} min",
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
            "load_before": load_before,
            "load_after": load_average(),
            "settings": ", ".join(f"`{s}`" for s in
                                  [*(f"{k}={v}" for k, v in settings.items()), *environment]),
        })
        console.print(f"wrote {options.out} in {seconds / 60:.1f} min")
    return {
        "summary": [{"dataset": r.dataset, "mode": r.mode, **r.rows["overall"]}
                    for r in runs if r.rows],
        "by_type": {f"{r.dataset} / {r.mode}": r.rows for r in runs if r.rows},
        "generic": [{"dataset": r.dataset, "mode": r.mode, "group": group, **g}
                    for r in runs for group, g in r.generic.items()],
        "reasons": [{"dataset": r.dataset, "mode": r.mode, "verdict": v, "split": sp,
                     "reason": why, "count": n} for r in runs
                    for (v, sp, why), n in r.reasons.items()],
        "runs": [{"dataset": r.dataset, "mode": r.mode, "turns": r.turns,
                  "ingest_s": r.ingest_seconds, "embedding_wait_s": r.embedding_wait_seconds,
                  "ask_s": r.ask_seconds,
                  "messages_added_by_asking": r.messages_added_by_asking,
                  "distilled": dict(r.distilled), **r.store}
                 for r in runs],
        "seconds": seconds,
    }


if __name__ == "__main__":
    run_as_script(main)

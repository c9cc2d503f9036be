"""Memory quality as a user meets it: a real proxy process, the public HTTP API, the openai SDK.

    python -m tests.benchmarks.eval_memory [--datasets longmemeval locomo generic]
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
import re
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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tests.support import locomo, longmemeval
from tests.support.backends import add_store_backend_argument, store_backend
from tests.support.blackbox import (
    Asker,
    Evidence,
    History,
    Reply,
    Session,
    block_sections,
    health,
    ingest,
    norm,
    running_proxy,
    wait_for_embeddings,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.generic_prompts import VICUNA_PATH, vicuna_prompts
from tests.support.report import run_as_script

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ("longmemeval", "locomo", "generic")
MODES = {"transcript": ("transcript only", True), "distilled": ("with distillation", False)}

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
class Probe:
    agent_id: str
    group: str  # question type / category: the row of the table
    question: str
    evidence: tuple[Evidence, ...] = ()
    answer: str = ""


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



# --- the data, dated and shaped for the API -----------------------------------------------


def shift_to(day: date, target: date) -> timedelta:
    """Whole days, so that calendar dates keep their distances ("3 days ago" stays true) and
    times of day stay as the data has them. Naive dates are taken as UTC."""
    return timedelta(days=(target - day).days)


def shifted(moment: datetime, shift: timedelta) -> datetime:
    return (moment + shift).replace(tzinfo=UTC)


_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")
_MONTH = "|".join(_MONTH_NAMES)
_DATE_IN_TEXT = re.compile(
    rf"\b(?:(?P<m1>{_MONTH}) (?P<d1>\d{{1,2}})(?:st|nd|rd|th)?,? (?P<y1>\d{{4}})"
    rf"|(?P<d2>\d{{1,2}}) (?P<m2>{_MONTH}),? (?P<y2>\d{{4}})"
    rf"|(?P<m3>{_MONTH}),? (?P<y3>\d{{4}})"
    rf"|(?P<y4>(?:19|20)\d\d))\b"
)


def dates_shifted(text: str, shift: timedelta) -> str:
    """`text` with the dates it names ("May 3, 2023", "27 March, 2022", "July 2023",
    "2023") moved as the history they ask about was moved, so a question still names the
    days its answer was said on."""

    def moved(match: re.Match[str]) -> str:
        g = match.groupdict()
        if g["y1"] or g["y2"]:
            month, day, year = (g["m1"], g["d1"], g["y1"]) if g["y1"] else (
                g["m2"], g["d2"], g["y2"])
            new = datetime(int(year), _MONTH_NAMES.index(month) + 1, int(day)) + shift
            name = _MONTH_NAMES[new.month - 1]
            return f"{name} {new.day}, {new.year}" if g["y1"] else f"{new.day} {name}, {new.year}"
        if g["y3"]:
            middle = datetime(int(g["y3"]), _MONTH_NAMES.index(g["m3"]) + 1, 15) + shift
            return f"{_MONTH_NAMES[middle.month - 1]} {middle.year}"
        return str(int(g["y4"]) + round(shift.days / 365.25))

    return _DATE_IN_TEXT.sub(moved, text)


def longmemeval_data(
    questions: Sequence[longmemeval.LmeQuestion], today: date
) -> tuple[list[History], list[Probe]]:
    """One agent per question (agent id = question id); its question falls on today."""
    histories: list[History] = []
    probes: list[Probe] = []
    for q in questions:
        shift = shift_to(q.date.date(), today)
        sessions = [
            # The position keeps conversation ids unique even if a session id repeats.
            Session(f"s{n:02d}-{s.session_id}", shifted(s.date, shift), s.exchanges())
            for n, s in enumerate(q.sessions)
        ]
        histories.append(History(q.question_id, [s for s in sessions if s.turns]))
        evidence = tuple(Evidence(norm(t.content)) for t in q.evidence)
        probes.append(Probe(q.question_id, q.question_type, q.question, evidence, q.answer))
    return histories, probes


NEIGHBOUR = "neighbour"


def neighbour_history(turns: int, today: date) -> History:
    """One big agent beside the evaluated ones: up to `turns` of LongMemEval's haystack
    conversations, 500 to a session. Its words must not change what the others get."""
    pairs = [pair for q in longmemeval.load() for s in q.sessions for pair in s.exchanges()]
    pairs = pairs[:turns]
    when = datetime(today.year, today.month, today.day, tzinfo=UTC) - timedelta(days=30)
    return History(NEIGHBOUR, [Session(f"n{n}", when, pairs[n : n + 500])
                               for n in range(0, len(pairs), 500)])


def locomo_pairs(session: locomo.LocomoSession) -> list[tuple[str, str]]:
    """Consecutive utterances as (user, assistant), each "speaker: text" (the form the
    benchmark's own BM25 indexes)."""
    texts = [turn.labelled() for turn in session.turns]
    return [(texts[i], texts[i + 1] if i + 1 < len(texts) else "")
            for i in range(0, len(texts), 2)]


def locomo_data(
    samples: Sequence[locomo.LocomoSample], limit: int | None, today: date
) -> tuple[list[History], list[Probe]]:
    """One agent per conversation (agent id = sample id); its last session was yesterday.
    Categories 1-4, questions with evidence; with `limit`, the first so many per category
    and only the conversations they need (and the first, for the generic prompts)."""
    histories: list[History] = []
    probes: list[Probe] = []
    per_category: Counter[int] = Counter()
    for sample in samples:
        shift = shift_to(sample.sessions[-1].date.date(), today - timedelta(days=1))
        turns = {t.dia_id: t for t in sample.turns}
        asked = []
        for q in sample.questions:
            if q.category not in locomo.RETRIEVAL_CATEGORIES or not q.evidence:
                continue
            if limit is not None and per_category[q.category] >= limit:
                continue
            per_category[q.category] += 1
            evidence = tuple(Evidence(norm(turns[d].labelled())) for d in q.evidence)
            asked.append(Probe(sample.sample_id, category_name(q.category),
                               dates_shifted(q.question, shift), evidence, q.answer))
        if asked or not histories:
            sessions = [Session(f"session_{s.number}", shifted(s.date, shift), locomo_pairs(s))
                        for s in sample.sessions]
            histories.append(History(sample.sample_id, sessions))
        probes += asked
    return histories, probes


def category_name(category: int) -> str:
    return f"{category} {locomo.CATEGORY_NAMES[category]}"


def limited(
    questions: Sequence[longmemeval.LmeQuestion], limit: int | None
) -> list[longmemeval.LmeQuestion]:
    """The first `limit` questions of each type (all of them without a limit)."""
    taken: Counter[str] = Counter()
    chosen = []
    for q in questions:
        if limit is None or taken[q.question_type] < limit:
            taken[q.question_type] += 1
            chosen.append(q)
    return chosen


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
    return {**{g: figures(groups[g]) for g in names}, "overall": figures(outcomes)}


def composition(outcomes: Sequence[Outcome]) -> dict[str, float]:
    """Mean lines per block section, over the blocks: what fills them."""
    blocks = [block_sections(o.reply.block) for o in outcomes if o.reply.block is not None]
    total: Counter[str] = Counter()
    for counts in blocks:
        total.update(counts)
    return {name: count / len(blocks) for name, count in total.most_common()} if blocks else {}


# --- one dataset in one mode --------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    dataset: str
    histories: list[History]
    probes: list[Probe]
    generic: list[str]
    order: Sequence[str]  # the table's rows


@dataclass
class Run:
    dataset: str
    mode: str
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    generic: dict[str, Any] | None = None
    store: dict[str, Any] = field(default_factory=dict)  # /health after ingest
    turns: int = 0
    ingest_seconds: float = 0.0
    embedding_wait_seconds: float = 0.0  # after the last ingest, until the embedder caught up
    ask_seconds: float = 0.0
    messages_added_by_asking: int = 0
    sections: dict[str, float] = field(default_factory=dict)
    neighbour_turns: int = 0  # a big agent beside the evaluated ones (--neighbour)


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
    generic_agent = plan.histories[0].agent_id
    probes = [*plan.probes, *(Probe(generic_agent, "generic", p) for p in plan.generic)]
    with (
        FakeUpstream() as fake,
        tempfile.TemporaryDirectory(prefix="eval-memory-") as tmp,
        running_proxy(fake.base_url, Path(tmp), settings) as url,
    ):
        task = progress.add_task(f"{name}: ingest",
                                 total=sum(len(h.sessions) for h in plan.histories))
        started = time.perf_counter()
        if neighbour is not None:
            run.neighbour_turns = ingest(url, [neighbour], skip_extraction=True)
        run.turns = ingest(url, plan.histories, skip_extraction=skip_extraction,
                           advance=lambda: progress.advance(task))
        run.ingest_seconds = time.perf_counter() - started
        progress.update(task, description=f"{name}: embeddings")
        run.store = wait_for_embeddings(url)
        run.embedding_wait_seconds = time.perf_counter() - started - run.ingest_seconds
        progress.update(task, description=f"{name}: ingested")

        task = progress.add_task(f"{name}: ask", total=len(probes))
        asker = Asker(url, fake)
        outcomes = []
        started = time.perf_counter()
        for probe in probes:
            outcomes.append(Outcome(probe, asker.ask(probe.agent_id, probe.question)))
            progress.advance(task)
        run.ask_seconds = time.perf_counter() - started
        time.sleep(0.5)  # anything the proxy would record in the background has landed
        run.messages_added_by_asking = int(health(url).get("transcript_messages", 0)) - int(
            run.store.get("transcript_messages", 0)
        )
    if dump is not None:
        for o in outcomes:
            _dump(dump, plan.dataset, mode, o)
    asked = [o for o in outcomes if o.probe.group != "generic"]
    if asked:
        run.rows = figures_by_group(asked, plan.order)
        run.sections = composition(asked)
    generic = [o for o in outcomes if o.probe.group == "generic"]
    if generic:
        run.generic = {
            "agent": generic_agent,
            "prompts": len(generic),
            "got_memory": _mean([o.got_memory for o in generic]),
            "tokens_with_memory": _mean([o.reply.tokens for o in generic if o.got_memory]),
            "sections": dict(Counter(o.reply.section for o in generic).most_common()),
            "deadline_misses": sum(o.reply.section == "error" for o in generic),
        }
    return run


def _dump(out: TextIO, dataset: str, mode: str, o: Outcome) -> None:
    record = {
        "dataset": dataset, "mode": mode, "agent": o.probe.agent_id, "group": o.probe.group,
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
GENERIC_HEADER = ("store", "mode", "agent", "prompts", "got memory", "tokens (got)",
                  "X-Memory-Section", "misses")


def markdown_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    return lines + ["| " + " | ".join(cells) + " |" for cells in body]


def rich_table(title: str, header: Sequence[str], body: Sequence[Sequence[str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for index, name in enumerate(header):
        table.add_column(name, justify="left" if index == 0 else "right")
    for cells in body:
        table.add_row(*cells)
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
    if run.messages_added_by_asking:
        notes += f" Asking added {run.messages_added_by_asking} messages to the store!"
    if run.sections:
        lines = ", ".join(f"{name} {count:.1f}" for name, count in run.sections.items())
        notes += f" Lines per block by section (mean over blocks): {lines}."
    return notes


def generic_cells(run: Run) -> list[str]:
    g = run.generic or {}
    return [run.dataset, MODES[run.mode][0], g["agent"], str(g["prompts"]),
            f"{g['got_memory']:.3f}", f"{g['tokens_with_memory']:.0f}",
            ", ".join(f"{k} {v}" for k, v in g["sections"].items()), str(g["deadline_misses"])]


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
    body = [generic_cells(r) for r in runs if r.generic is not None]
    if body:
        title = "Generic prompts (the gate's false positives)"
        console.print(rich_table(title, GENERIC_HEADER, body))
        lines += ["", f"### {title}", "", *markdown_table(GENERIC_HEADER, body)]
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


def plans(datasets: Sequence[str], limit: int | None, console: Console) -> list[Plan]:
    """What to ingest and ask per store; data files that are absent are skipped, saying so."""
    generic: list[str] = []
    if "generic" in datasets:
        if VICUNA_PATH.is_file():
            generic = vicuna_prompts()
        else:
            console.print(f"generic prompts not found at {VICUNA_PATH}; skipping them.")
    today = datetime.now(UTC).date()
    out = []
    for name, module in (("longmemeval", longmemeval), ("locomo", locomo)):
        wanted = name in datasets
        if not (wanted or generic):
            continue
        if not module.available():
            console.print(module.unavailable_message())
            continue
        if name == "longmemeval":
            histories, probes = longmemeval_data(limited(longmemeval.load(), limit), today)
            order: Sequence[str] = longmemeval.QUESTION_TYPES
        else:
            histories, probes = locomo_data(locomo.load(), limit, today)
            order = [category_name(c) for c in locomo.RETRIEVAL_CATEGORIES]
        if not wanted:  # for the generic prompts alone, one history is enough
            histories, probes = histories[:1], []
        out.append(Plan(name, histories, probes, generic, order))
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--limit", type=int, default=None,
                        help="questions per type (LongMemEval) and category (LoCoMo)")
    parser.add_argument("--setting", action="append", type=parse_setting, default=[],
                        metavar="NAME=VALUE",
                        help="a proxy setting, e.g. relevance_gate_mode=off (repeatable)")
    parser.add_argument("--neighbour", type=int, default=0, metavar="TURNS",
                        help="first ingest an agent of this many LongMemEval turns beside "
                             "the evaluated ones (isolation of their rankings)")
    parser.add_argument("--out", default="docs/results/eval.md",
                        help="the Markdown report ('' for none)")
    parser.add_argument("--dump", default="",
                        help="also write every question's block and verdicts (JSON Lines)")
    add_store_backend_argument(parser)
    options = parser.parse_args(argv)
    settings = dict(options.setting)
    console = Console()
    if not console.is_terminal:  # a log file: wide enough for the tables
        console = Console(width=160)
    load_before, started = load_average(), time.perf_counter()

    todo = plans(options.datasets, options.limit, console)
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
                neighbour = (neighbour_history(options.neighbour, datetime.now(UTC).date())
                             if options.neighbour else None)
                runs.append(run_plan(plan, mode, settings, progress, dump, neighbour))
    seconds = time.perf_counter() - started

    lines = render(runs, console)
    if options.out:
        args = sys.argv[1:] if argv is None else list(argv)
        environment = [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("MNEMO_")]
        write_report(Path(options.out), lines, {
            "command": " ".join(["python -m tests.benchmarks.eval_memory", *args]),
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
        "generic": [{"dataset": r.dataset, "mode": r.mode, **(r.generic or {})}
                    for r in runs if r.generic is not None],
        "runs": [{"dataset": r.dataset, "mode": r.mode, "turns": r.turns,
                  "ingest_s": r.ingest_seconds, "embedding_wait_s": r.embedding_wait_seconds,
                  "ask_s": r.ask_seconds,
                  "messages_added_by_asking": r.messages_added_by_asking, **r.store}
                 for r in runs],
        "seconds": seconds,
    }


if __name__ == "__main__":
    run_as_script(main)

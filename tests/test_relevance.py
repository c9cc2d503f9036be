"""The relevance gate: lexical rules, known entities, the probe, the LLM gate, make_gate."""

from __future__ import annotations

import asyncio
import time

import pytest

from mnemoproxy.errors import SettingError
from mnemoproxy.gate.relevance import (
    AlwaysGate,
    GateContext,
    GateDecision,
    HeuristicGate,
    LLMGate,
    Section,
    make_gate,
)
from mnemoproxy.gate.relevance.scan import HEAD_CHARS, TAIL_CHARS

PETS = ("Luna", "Blue Lagoon", "Bob")

# (message, expected section); known entities are PETS for every case.
CASES = [
    # identity
    ("What's my name?", "identity"),
    ("whats my name", "identity"),
    ("What’s my name?", "identity"),
    ("Who am I?", "identity"),
    ("Where do I live again?", "identity"),
    ("Do you know where I work?", "identity"),
    ("How old am I?", "identity"),
    ("What do I do for a living?", "identity"),
    ("what is my job", "identity"),
    ("Do you know me?", "identity"),
    ("Do you remember my name?", "identity"),
    ("What do you know about me?", "identity"),
    # transcript
    ("What were my exact words?", "transcript"),
    ("What did I say about the budget?", "transcript"),
    ("What did I tell you when we met?", "transcript"),
    ("Quote me on that.", "transcript"),
    ("Repeat word for word what I told you", "transcript"),
    ("Repeat what I said about the lease", "transcript"),
    ("How did I phrase it?", "transcript"),
    # earlier conversations and time
    ("We discussed this already, right?", "episode"),
    ("As we talked about, the deadline moved.", "episode"),
    ("Remember when we planned the trip?", "episode"),
    ("Do you remember the recipe?", "episode"),
    ("Last time you suggested a different library.", "episode"),
    ("What did I do last week?", "episode"),
    ("What did I eat yesterday?", "episode"),
    ("The other day I asked about Rust, any update?", "episode"),
    ("What did you suggest earlier?", "episode"),
    ("Previously, we agreed on Postgres.", "episode"),
    ("Where did I go in March?", "episode"),
    ("What did we do on Monday?", "episode"),
    ("What did I buy a few days ago?", "episode"),
    ("Let's pick up our last conversation.", "episode"),
    # explicit recall verbs
    ("Remind me what we planned for Saturday", "episode"),
    ("Can you recall what I ordered?", "episode"),
    ("Did I mention my trip to Oslo?", "episode"),
    ("Remind me which wine I prefer", "pinned"),
    # preferences and decisions
    ("What do I like to eat?", "pinned"),
    ("What's my favourite colour?", "pinned"),
    ("Am I allergic to anything?", "pinned"),
    ("What did we decide about the logo?", "pinned"),
    ("How do I usually take my coffee?", "pinned"),
    # possessives in a question or request
    ("How should I clean my boat?", "pinned"),
    ("Write a birthday poem for my sister", "pinned"),
    ("What's the status of my project?", "pinned"),
    # known entities
    ("How is Luna doing?", "episode"),
    ("luna needs a walk, any tips?", "episode"),
    ("Should we go back to the blue lagoon?", "episode"),
    # nothing to recall
    ("What's 2 + 2?", "none"),
    ("Write a haiku about autumn", "none"),
    ("Rewrite your previous answer as a limerick", "none"),
    ("Translate 'good morning' into French", "none"),
    ("Explain how TCP works", "none"),
    ("hi", "none"),
    ("thanks!", "none"),
    ("fix my code: def f(x): return x +", "none"),
    ("Can you check my grammar? Their going home.", "none"),
    ("Rewrite my essay to be shorter", "none"),
    ("Can you fix my python code?", "none"),
    ("Translate this word for word: je pense donc je suis", "none"),
    ("Explain precision and recall", "none"),
    ("What's the weather like in May?", "none"),
    ("How many years ago did the dinosaurs die?", "none"),
    ("Remind me to call mom at five", "none"),
    ("Were earlier versions of Python slower?", "none"),
    ("Bob is a common name, isn't it?", "none"),  # names under 4 characters are ignored
    ("My sister is visiting next week.", "none"),  # a statement: memory is told, not asked
    ("", "none"),
]


@pytest.mark.parametrize(("message", "expected"), CASES)
async def test_heuristic_gate_sections(message: str, expected: str) -> None:
    decision = await HeuristicGate().decide(message, GateContext(known_entities=PETS))
    assert decision.section == expected, decision.reason
    assert decision.inject == (expected != "none")


def test_the_table_is_large_and_covers_every_section() -> None:
    assert len(CASES) >= 40
    assert {section for _, section in CASES} == {
        "identity",
        "pinned",
        "episode",
        "transcript",
        "none",
    }


async def test_reasons_name_the_cue() -> None:
    gate, context = HeuristicGate(), GateContext(known_entities=PETS)
    assert (await gate.decide("what's my name", context)).reason == (
        "identity question: 'what's my name'"
    )
    assert (await gate.decide("How is Luna?", context)).reason == "known entity: 'Luna'"
    assert (await gate.decide("Explain TCP", context)).reason == "no memory cue"


class Probe:
    """A retrieval probe returning a fixed strength, recording what it was asked."""

    def __init__(self, strength: float, *, delay: float = 0.0, error: Exception | None = None):
        self.strength, self.delay, self.error = strength, delay, error
        self.asked: list[str] = []

    async def __call__(self, text: str) -> float:
        self.asked.append(text)
        await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return self.strength


async def test_a_strong_probe_injects_episodes_for_a_first_person_question() -> None:
    probe = Probe(0.71)
    decision = await HeuristicGate().decide("Which hotel did we book?", GateContext(probe=probe))
    assert decision == GateDecision("episode", "probe: strong evidence 0.71")
    assert probe.asked == ["Which hotel did we book?"]


async def test_a_weak_probe_injects_nothing() -> None:
    decision = await HeuristicGate().decide(
        "Which hotel did we book?", GateContext(probe=Probe(0.3))
    )
    assert decision == GateDecision("none", "probe: weak evidence 0.30")


async def test_the_threshold_is_the_callers_to_set() -> None:
    gate = HeuristicGate(probe_threshold=0.25)
    decision = await gate.decide("Which hotel did we book?", GateContext(probe=Probe(0.3)))
    assert decision.section == "episode"
    with pytest.raises(SettingError):
        HeuristicGate(probe_threshold=1.5)


@pytest.mark.parametrize(
    "message", ["Explain how TCP works", "I booked a hotel.", "Tell them the news"]
)
async def test_the_probe_is_only_asked_about_questions(message: str) -> None:
    probe = Probe(1.0)
    decision = await HeuristicGate().decide(message, GateContext(probe=probe))
    assert decision.section == "none"
    assert probe.asked == []


async def test_third_person_questions_are_probed_too() -> None:
    gate = HeuristicGate(probe_threshold=0.45)
    strong = await gate.decide("When did Caroline move to Sweden?", GateContext(probe=Probe(0.6)))
    assert strong.section == "episode"
    weak = await gate.decide("What's 2 + 2?", GateContext(probe=Probe(0.2)))
    assert weak.section == "none"


async def test_lexical_rules_answer_before_the_probe() -> None:
    probe = Probe(0.0)
    decision = await HeuristicGate().decide("What's my name?", GateContext(probe=probe))
    assert decision.section == "identity"
    assert probe.asked == []


async def test_a_failing_or_slow_probe_injects_nothing() -> None:
    context = GateContext(probe=Probe(1.0, error=RuntimeError("store closed")))
    failed = await HeuristicGate().decide("Which hotel did we book?", context)
    assert failed == GateDecision("none", "probe failed: RuntimeError")

    started = time.perf_counter()
    slow = GateContext(probe=Probe(1.0, delay=5.0))
    decision = await HeuristicGate(probe_timeout=0.05).decide("Which hotel did we book?", slow)
    assert decision == GateDecision("none", "probe failed: TimeoutError")
    assert time.perf_counter() - started < 2.0


FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 200  # ~11k characters


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("What's my name? " + FILLER, "identity"),  # cue in the head
        (FILLER + " What did I say about the budget?", "transcript"),  # cue in the tail
        (FILLER[:5000] + " What's my name? " + FILLER[:5000], "none"),  # outside the window
    ],
)
async def test_long_messages_are_scanned_at_head_and_tail(message: str, expected: str) -> None:
    assert len(message) > HEAD_CHARS + TAIL_CHARS
    decision = await HeuristicGate().decide(message, GateContext(known_entities=PETS))
    assert decision.section == expected


async def test_long_messages_stay_fast() -> None:
    gate, message = HeuristicGate(), FILLER + " How is Luna?"
    await gate.decide(message, GateContext(known_entities=PETS))  # loads spaCy
    started = time.perf_counter()
    for _ in range(10):
        await gate.decide(message, GateContext(known_entities=PETS))
    # Generous bound: a 2-core machine shared with other suites; typically ~1 ms each.
    assert (time.perf_counter() - started) / 10 < 0.05


async def test_entity_sets_do_not_leak_into_each_other() -> None:
    gate = HeuristicGate()
    assert (await gate.decide("How is Luna?", GateContext(known_entities=PETS))).inject
    other = GateContext(known_entities=("Max", "Rover"))
    assert not (await gate.decide("How is Luna?", other)).inject
    assert (await gate.decide("Did Rover eat?", other)).reason == "known entity: 'Rover'"


async def test_always_gate_injects_everything_and_keeps_the_lexical_section() -> None:
    gate, context = AlwaysGate(), GateContext(known_entities=PETS)
    assert await gate.decide("What's 2 + 2?", context) == GateDecision(
        "episode", "gate off: always inject"
    )
    identity = await gate.decide("Who am I?", context)
    assert identity.section == "identity"
    assert identity.reason.startswith("gate off: identity question")
    assert (await gate.decide("What's my favourite colour?", context)).section == "pinned"


class FakeCore:
    """A core model that answers from a queue (an Exception is raised, a float is slept)."""

    def __init__(self, *answers: str | Exception | float):
        self.answers = list(answers)
        self.calls: list[dict] = []

    async def complete(
        self,
        messages: list[dict],
        *,
        json_schema: dict | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
    ) -> str:
        self.calls.append(
            {"messages": messages, "schema": json_schema, "timeout": timeout, "max": max_tokens}
        )
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, float):
            await asyncio.sleep(answer)
            return "identity"
        return answer


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("pinned", "pinned"), (" Transcript.\n", "transcript"), ('{"section": "none"}', "none")],
)
async def test_llm_gate_takes_a_good_answer(answer: str, expected: Section) -> None:
    core = FakeCore(answer)
    gate = LLMGate(core, HeuristicGate())
    decision = await gate.decide("How is Luna?", GateContext(known_entities=PETS))
    assert decision == GateDecision(expected, f"llm: {expected}")
    (call,) = core.calls
    assert call["messages"][-1] == {"role": "user", "content": "How is Luna?"}
    assert "Luna" in call["messages"][0]["content"]
    assert call["schema"]["properties"]["section"]["enum"] == [
        "identity",
        "pinned",
        "episode",
        "transcript",
        "none",
    ]
    assert call["timeout"] == gate.timeout


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("I think it is probably episode", "unknown answer"),
        ('{"section": "everything"}', "unknown answer"),
        (ConnectionError("refused"), "ConnectionError"),
    ],
)
async def test_llm_gate_falls_back_on_garbage_and_errors(answer: str | Exception, why: str) -> None:
    gate = LLMGate(FakeCore(answer), HeuristicGate())
    decision = await gate.decide("What's my name?", GateContext())
    assert decision.section == "identity"
    assert decision.reason.startswith(f"llm fallback ({why}")
    assert decision.reason.endswith("identity question: 'What's my name'")


async def test_llm_gate_falls_back_on_timeout() -> None:
    gate = LLMGate(FakeCore(5.0), HeuristicGate(), timeout=0.05)
    started = time.perf_counter()
    decision = await gate.decide("Explain how TCP works", GateContext())
    assert time.perf_counter() - started < 2.0
    assert decision == GateDecision("none", "llm fallback (timeout): no memory cue")


def test_make_gate_builds_each_mode() -> None:
    assert isinstance(make_gate("off"), AlwaysGate)
    assert isinstance(make_gate("heuristic"), HeuristicGate)
    assert isinstance(make_gate("llm", core=FakeCore()), LLMGate)
    with pytest.raises(SettingError, match="needs the core model"):
        make_gate("llm")
    with pytest.raises(SettingError, match="unknown relevance_gate_mode"):
        make_gate("sometimes")

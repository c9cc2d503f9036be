"""The relevance gate: cues, the user's own life, calibrated evidence, the LLM gate, make_gate."""

from __future__ import annotations

import asyncio
import time

import pytest

from mnemoproxy.errors import SettingError
from mnemoproxy.gate.relevance import (
    AlwaysGate,
    Evidence,
    GateContext,
    GateDecision,
    HeuristicGate,
    LLMGate,
    Section,
    make_gate,
)
from mnemoproxy.gate.relevance.llm import MAX_ANSWER_TOKENS
from mnemoproxy.gate.relevance.scan import HEAD_CHARS, TAIL_CHARS, scan_window, shared_scanner
from mnemoproxy.memory.core_model.client import Completion

PETS = ("Luna", "Blue Lagoon", "Bob")

# (message, expected section) decided by the message alone (no retrieval probe).
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
    # explicit recall verbs, and what the assistant said
    ("Remind me what we planned for Saturday", "episode"),
    ("Can you recall what I ordered?", "episode"),
    ("Did I mention my trip to Oslo?", "episode"),
    ("Remind me which wine I prefer", "pinned"),
    ("What did you tell me about sourdough starters?", "episode"),
    ("Which book did you recommend?", "episode"),
    ("You mentioned me a podcast, which one was it?", "episode"),
    # preferences and decisions
    ("What do I like to eat?", "pinned"),
    ("What's my favourite colour?", "pinned"),
    ("Am I allergic to anything?", "pinned"),
    ("What did we decide about the logo?", "pinned"),
    ("How do I usually take my coffee?", "pinned"),
    # the user's own past: what they did, have, or were given
    ("How many bikes do I currently own?", "episode"),
    ("Which show did I start watching first?", "episode"),
    ("How long had I been a member when I attended the meetup?", "episode"),
    ("Who gave me a new stand mixer as a birthday gift?", "episode"),
    ("What is the order of the six museums I visited?", "episode"),
    ("How many dozen eggs do we have left?", "episode"),
    ("Did I ever finish that puzzle?", "episode"),
    # asked for in a request: what the user did, where, how much
    ("Tell me where I parked at the airport.", "episode"),
    ("add up what we paid for the ferry tickets", "episode"),
    ("List the towns we stayed in on the coast trip, the ones we liked.", "episode"),
    ("count the mornings I swam this month", "episode"),
    # nothing to recall, or nothing to decide without retrieval
    ("What's 2 + 2?", "none"),
    ("Explain what I missed in this proof.", "none"),  # the text at hand
    ("Fix the bug I introduced in the parser", "none"),
    ("Write a resignation letter saying I accepted another offer.", "none"),
    ("Write a poem about the places we visited in Utah.", "none"),  # told what it needs
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
    ("Can you explain that again?", "none"),
    ("My bread came out flat again, what went wrong?", "none"),
    ("Were earlier versions of Python slower?", "none"),
    ("How do I center a div?", "none"),
    ("How can I improve my time management skills?", "none"),
    ("How is Luna doing?", "none"),  # a known name still needs evidence (below)
    ("My sister is visiting next week.", "none"),  # a statement: memory is told, not asked
    # material handed over: its "I", "my" and dates are someone else's words
    ('Fix the typos: "Me and my brother goes to the lake last sunday with our dog."', "none"),
    ("Here is a message from a tenant:\n\nHi, my heater broke yesterday and I told you "
     "last week already.\n\nDraft a short reply.", "none"),
    ("Sort these by sentiment:\n1. I hated my flight\n2. My hotel was lovely", "none"),
    ("Summarize this in one line: Last month our team shipped the app and I led the "
     "launch, which we celebrated on Friday.", "none"),
    ("```\n# my fix from yesterday\nx = 1\n```\nWhy does this crash?", "none"),
    # role-play and persona set-ups
    ("Pretend you are my old landlord and I am asking for my deposit back.", "none"),
    ("Act as a travel agent. I want to go somewhere warm in March.", "none"),
    ("You are now a chess coach. Critique the Sicilian for a beginner.", "none"),
    ("From now on, answer as a pirate. How do sails work?", "none"),
    # a date told beside a question about something else
    ("We covered limits in class last week: what is the derivative of ln x?", "none"),
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
    assert (await gate.decide("Which show did I start first?", context)).reason == (
        "the user's own past: 'did i'"
    )
    assert (await gate.decide("Explain TCP", context)).reason == "no memory cue"


# The agent's reference spread: ten prompts' nearest similarities, 0.20 to 0.38.
REFERENCE = [0.20, 0.22, 0.24, 0.26, 0.28, 0.30, 0.32, 0.34, 0.36, 0.38]


class Probe:
    """Retrieval evidence of a fixed strength, recording the names it was asked about."""

    def __init__(
        self,
        similarity: float,
        *,
        names: tuple[str, ...] = (),
        name_share: float = 0.0,
        delay: float = 0.0,
        error: Exception | None = None,
        words: dict[str, int] | None = None,
        items: int = 1000,
        commonness: dict[str, float | None] | None = None,
        phrases: dict[str, int] | None = None,
    ):
        self.evidence = Evidence(similarity, REFERENCE, names, name_share, words=words or {},
                                 items=items, commonness=commonness or {},
                                 phrases=phrases or {})
        self.delay, self.error = delay, error
        self.asked: list[list[str]] = []

    async def __call__(self, names) -> Evidence:
        self.asked.append(list(names))
        await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        held = [name for name in self.evidence.names if name in names]  # as memory would
        e = self.evidence
        return Evidence(e.similarity, REFERENCE, held, e.name_share, words=e.words,
                        items=e.items, commonness=e.commonness, phrases=e.phrases)


async def decide(message: str, probe: Probe, entities=PETS) -> GateDecision:
    return await HeuristicGate().decide(
        message, GateContext(known_entities=entities, probe=probe)
    )


@pytest.mark.parametrize("message", [
    "Who was the plumber again?",
    "The hotel in Porto, where was it again?",
    "remind me who the plumber was",
])
async def test_a_reminder_of_no_ones_doing_is_decided_by_the_evidence(message: str) -> None:
    # Asked back without a word of the user or the assistant, a particular may be
    # memory's or anyone's ("remind me how the electoral college works"): memory near it,
    # beyond nine in ten reference prompts, says it was told.
    near = await decide(message, Probe(0.37))
    assert (near.section, near.confidence) == ("episode", "low"), near.reason
    assert near.reason.startswith("asked back")
    assert (await decide(message, Probe(0.3))).section == "none"


@pytest.mark.parametrize("message", [
    "remind me how a bill becomes law",
    "what's the rule for who and whom again?",
    "how does that mnemonic go again, i before e except after c?",
])
async def test_a_refresher_anyone_might_ask_is_no_recall(message: str) -> None:
    for similarity in (0.15, 0.3):  # nothing near it; near, but not beyond nine in ten
        decision = await decide(message, Probe(similarity))
        assert decision.section == "none", decision.reason


def test_evidence_is_read_against_the_agents_own_spread() -> None:
    assert Evidence(0.33, REFERENCE).beats(0.5)  # above the median (0.28)
    assert not Evidence(0.33, REFERENCE).beats(0.9)  # below nine tenths (0.36)
    assert Evidence(0.44, REFERENCE).beats(1.0, 0.05)
    assert not Evidence(0.42, REFERENCE).beats(1.0, 0.05)
    assert Evidence(0.1, ()).beats(1.0)  # an agent with no vectors yet: anything beats it


@pytest.mark.parametrize(
    "message",
    [
        "I'm planning a trip to Denver soon. Any suggestions on what to do there?",
        "Can you recommend a show or movie for me to watch tonight?",
        "I've been sneezing quite a bit lately. Could it be my living room?",
        "Any tips for my trip to Lisbon?",
    ],
)
async def test_the_users_own_situation_gets_memory_sized_by_the_evidence(message: str) -> None:
    strong = await decide(message, Probe(0.37))
    assert (strong.section, strong.confidence) == ("episode", "high"), strong.reason
    weak = await decide(message, Probe(0.15))
    assert (weak.section, weak.confidence) == ("episode", "low"), weak.reason


@pytest.mark.parametrize(
    "message",
    [
        "How can I improve my time management skills?",
        "What's a good way to start running if I've never run before?",
        "Give me ten ideas for a science fair project.",
        "What if the Beatles had never formed as a band?",
        "How many words are spoken daily on Earth? Try to explain your answer.",
        "Write a poem about the sea.",
        # "Plan", as "write" or "create", asks for a piece of work: told in full, it
        # needs memory beyond anything anyone asks.
        "Plan a 4-week beginner strength routine for me, three sessions a week, 45 minutes "
        "each.",
    ],
)
async def test_requests_anyone_could_send_stay_quiet_on_ordinary_evidence(message: str) -> None:
    decision = await decide(message, Probe(0.37, names=("Earth", "Beatles")))
    assert decision.section == "none", decision.reason


@pytest.mark.parametrize(
    "message",
    [
        "Organise a dinner party for my parents-in-law, 8 people, two of them vegetarian.",
        "Draft a weekly chore rota for me and my flatmates. There are four of us. Nobody "
        "likes hoovering. The kitchen is the big job.",
        "Suggest a reading list for my book club: we meet monthly, we like slow literary "
        "novels, short ones please, nothing with a sad ending, and half of us read on the "
        "train.",
    ],
)
async def test_a_situation_told_with_its_own_particulars_needs_memory_to_stand_out(
    message: str,
) -> None:
    # Counts, several sentences or many words of it: the request brings what it needs.
    weak = await decide(message, Probe(0.15))
    assert weak.section == "none", weak.reason
    strong = await decide(message, Probe(0.45))
    assert strong.section == "episode", strong.reason


async def test_a_task_told_in_full_needs_memory_beyond_anything_anyone_asks() -> None:
    task = ("Write a toast for my brother's wedding. His name is Marco, his wife is Hana. "
            "They met rock climbing.")
    near_the_best = await decide(task, Probe(0.37))  # beats 9 reference prompts in 10
    assert near_the_best.section == "none", near_the_best.reason
    assert "told in full" in near_the_best.reason
    beyond = await decide(task, Probe(0.45))
    assert beyond.section == "episode", beyond.reason
    untold = await decide("Write a toast for my brother's wedding.", Probe(0.37))
    assert untold.section == "episode", untold.reason


@pytest.mark.parametrize(
    "message",
    ["Why do we yawn when someone else yawns?", "Why am I always hungry after a swim?",
     "Why does my voice sound strange on recordings?"],
)
async def test_why_in_the_present_asks_how_things_are_not_the_users_past(message: str) -> None:
    assert shared_scanner().scan(message).personal.own_past is None
    assert shared_scanner().scan("Why did I sell the blue bike?").personal.own_past


def holding_its_words(message: str) -> Probe:
    """Weak retrieval over a memory that holds each of the message's longer words twice,
    none of them common in English."""
    words = {w.strip("?.,'").lower(): 2 for w in message.split() if len(w) > 3}
    return Probe(0.1, words=words, commonness=dict.fromkeys(words, 3.5))


@pytest.mark.parametrize("message", [
    "Why do I always get a headache on Sunday evenings?",
    "why do we always fight about money before holidays",
])
async def test_a_why_in_the_present_asks_an_explanation_whatever_habit_or_date_it_names(
    message: str,
) -> None:
    held = holding_its_words(message)
    decision = await decide(message, held)
    assert decision.section == "none", decision.reason
    # A habit asked about the user's own doings is still theirs.
    assert (await decide("What do I usually order at Nando's?", held)).section == "pinned"


@pytest.mark.parametrize(("question", "how_to"), [
    ("I start a new job on Monday. Where do I begin?", True),
    ("My landlord kept the deposit, what do I do now?", True),
    ("How can you tell if an avocado is ripe?", True),
    ("My sister is moving in with us, where do we start?", True),
    ("what tent do I have?", False),
    ("Where do I keep the spare tent?", False),
    ("Where do I usually park at the stadium?", False),
])
def test_a_bare_question_word_before_do_i_asks_how_to_go_on(question: str, how_to: bool) -> None:
    personal = shared_scanner().scan(question).personal
    assert (personal.own_past is None) is how_to
    assert (personal.asks_about_user is None) is how_to


def test_everyday_words_opening_a_line_name_nothing() -> None:
    assert shared_scanner().scan("quick one - Where did Priya park?").names == ["Priya"]


def test_things_set_against_each_other_are_different_things() -> None:
    evidence = Evidence(0.1, REFERENCE, words={"kilos": 2}, items=1000,
                        commonness={"kilos": 3.5})
    assert evidence.held_in_each([("kilos", "sand"), ("kilos", "cotton")], 5.0, 0.01, 8) == []
    evidence = Evidence(0.1, REFERENCE, words={"kilos": 2, "cotton": 1}, items=1000,
                        commonness={"kilos": 3.5, "cotton": 3.5})
    assert evidence.held_in_each(
        [("kilos", "sand"), ("kilos", "cotton")], 5.0, 0.01, 8) == ["kilos", "cotton"]


def test_quoted_names_open_and_close_with_the_same_mark() -> None:
    # The apostrophes of "What's" and "j'ai" open no quote: no " and " to find everywhere.
    message = ("What's the difference between \"je suis pleine\" and \"j'ai assez mangé\"? "
               "And is 'Les Misérables' worth reading?")
    assert shared_scanner().scan(message).names[:3] == [
        "je suis pleine", "j'ai assez mangé", "Les Misérables"]


def test_a_roman_one_closing_a_name_is_no_pronoun() -> None:
    assert shared_scanner().scan("Who succeeded Charles I?").personal.asks_about_user is None
    scanned = shared_scanner().scan("Why did Henry I and his barons quarrel?").personal
    assert scanned.own_past is None and scanned.asks_about_user is None
    assert shared_scanner().scan("On Monday I drove Jo where?").personal.asks_about_user
    assert shared_scanner().scan("Who did Jo and I meet in Rome?").personal.own_past


async def test_a_task_about_the_users_situation_needs_clear_evidence() -> None:
    message = "Can you help me write a resignation letter to my current employer?"
    assert (await decide(message, Probe(0.33))).section == "none"
    clear = await decide(message, Probe(0.39))
    assert (clear.section, clear.confidence) == ("episode", "medium")


async def test_names_memory_holds_need_evidence_and_central_ones_less() -> None:
    question = "When did Caroline go to the support group?"
    assert (await decide(question, Probe(0.30, names=("Caroline",)))).section == "none"
    central = await decide(question, Probe(0.30, names=("Caroline",), name_share=0.8))
    assert (central.section, central.confidence) == ("episode", "medium")
    named = await decide(question, Probe(0.37, names=("Caroline",)))
    assert named.section == "episode" and "Caroline" in named.reason


async def test_a_known_entity_needs_evidence_above_the_median() -> None:
    assert (await decide("How is Luna doing?", Probe(0.25))).section == "none"
    known = await decide("How is Luna doing?", Probe(0.30))
    assert known.reason.startswith("a name memory knows: 'Luna'")
    # As spelled: the lower-case word is not the name.
    assert (await decide("Is luna a good name for a cat?", Probe(0.30))).section == "none"


async def test_any_other_question_needs_to_stand_out_and_gets_a_small_block() -> None:
    question = "What are the benefits of meditation?"
    assert (await decide(question, Probe(0.40))).section == "none"
    stands_out = await decide(question, Probe(0.50))
    assert (stands_out.section, stands_out.confidence) == ("episode", "low")


@pytest.mark.parametrize(
    "message", ["Explain how TCP works", "I booked a hotel.", "Tell them the news"]
)
async def test_the_probe_is_only_asked_about_questions_and_requests(message: str) -> None:
    probe = Probe(1.0)
    decision = await decide(message, probe)
    assert decision.section == "none"
    assert probe.asked == []


async def test_cues_answer_before_the_probe() -> None:
    probe = Probe(0.0)
    assert (await decide("What's my name?", probe)).section == "identity"
    assert (await decide("How many bikes do I own?", probe)).section == "episode"
    assert probe.asked == []


async def test_the_probe_is_told_the_names_in_the_message() -> None:
    probe = Probe(0.0)
    await decide("Where is the painting 'Ethereal Dreams' by Emma Taylor hanging?", probe)
    assert probe.asked == [["Ethereal Dreams", "Emma Taylor"]]


async def test_a_failing_or_slow_probe_injects_nothing() -> None:
    message = "I'm planning a trip, any suggestions?"
    failed = await decide(message, Probe(1.0, error=RuntimeError("store closed")))
    assert failed == GateDecision("none", "probe failed")

    started = time.perf_counter()
    slow = GateContext(probe=Probe(1.0, delay=5.0))
    decision = await HeuristicGate(probe_timeout=0.05).decide(message, slow)
    assert decision == GateDecision("none", "probe failed")
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
    assert (await decide("How is Luna?", Probe(0.30))).inject
    assert not (await decide("How is Luna?", Probe(0.30), entities=("Max", "Rover"))).inject
    rover = await decide("Did Rover eat?", Probe(0.30), entities=("Max", "Rover"))
    assert rover.reason.startswith("a name memory knows: 'Rover'")


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
    ) -> Completion:
        self.calls.append(
            {"messages": messages, "schema": json_schema, "timeout": timeout, "max": max_tokens}
        )
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, float):
            await asyncio.sleep(answer)
            return Completion("identity")
        return Completion(answer)


LOW_CONFIDENCE = "What are the benefits of meditation?"  # stands out in memory: a small block


async def llm_decide(core: FakeCore, message: str, probe: Probe | None = None) -> GateDecision:
    context = GateContext(known_entities=PETS, probe=probe)
    return await LLMGate(core, HeuristicGate(), timeout=0.5).decide(message, context)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"needs_memory": true}', "episode"),
        (" Yes.\n", "episode"),
        ('{"needs_memory": false}', "none"),
        ("no", "none"),
    ],
)
async def test_llm_gate_arbitrates_an_unsure_block(answer: str, expected: Section) -> None:
    core = FakeCore(answer)
    decision = await llm_decide(core, LOW_CONFIDENCE, Probe(0.50))
    assert decision.section == expected
    assert decision.reason.startswith("llm: memory ")
    assert decision.reason.endswith(
        "(stands out in memory: nearest 0.50, above 100% of requests)")
    (call,) = core.calls
    assert call["messages"][-1] == {"role": "user", "content": LOW_CONFIDENCE}
    assert "Luna" in call["messages"][0]["content"]
    assert call["schema"]["properties"]["needs_memory"]["type"] == "boolean"
    assert call["timeout"] == 0.5 and call["max"] == MAX_ANSWER_TOKENS


@pytest.mark.parametrize(
    ("message", "probe"),
    [
        ("What's my name?", None),  # a cue: sure
        ("Write a haiku about autumn", Probe(0.50)),  # no reason for memory
        ("What is 2+2?", Probe(0.20)),  # nothing stands out
        ("Any tips for my trip to Lisbon?", Probe(0.37)),  # the user's situation, clear
    ],
)
async def test_llm_gate_leaves_sure_decisions_alone(message: str, probe: Probe | None) -> None:
    core = FakeCore('{"needs_memory": true}')
    decision = await llm_decide(core, message, probe)
    assert decision == await decide(message, probe or Probe(0.0))
    assert core.calls == []


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("I think it probably does", "unknown answer"),
        ('{"needs_memory": "maybe"}', "unknown answer"),
        (ConnectionError("refused"), "ConnectionError"),
        (5.0, "timeout"),
    ],
)
async def test_llm_gate_keeps_the_heuristics_decision_without_an_answer(
    answer: str | Exception | float, why: str
) -> None:
    started = time.perf_counter()
    decision = await llm_decide(FakeCore(answer), LOW_CONFIDENCE, Probe(0.50))
    assert time.perf_counter() - started < 2.0
    assert (decision.section, decision.confidence) == ("episode", "low")
    assert decision.reason.startswith(f"llm unanswered ({why}")


def test_make_gate_builds_each_mode() -> None:
    assert isinstance(make_gate("off"), AlwaysGate)
    assert isinstance(make_gate("heuristic"), HeuristicGate)
    assert isinstance(make_gate("llm", core=FakeCore()), LLMGate)
    with pytest.raises(SettingError, match="needs the core model"):
        make_gate("llm")
    with pytest.raises(SettingError, match="unknown relevance_gate_mode"):
        make_gate("sometimes")


async def test_a_situation_told_beside_a_question_anyone_could_ask_is_background() -> None:
    for message in (
        "I'm totally new to sailing, what's the difference between a ketch and a yawl?",
        "I'm anxious about my driving test next month. How can I calm my nerves?",
        "Explain compound interest to me like I'm ten.",
    ):
        assert (await decide(message, Probe(0.35))).section == "none", message
    # Asked for this user's sake, the same situation reads memory.
    asked = await decide("I'm new to sailing. Any tips for my first week on the boat?",
                         Probe(0.35))
    assert asked.section == "episode"


async def test_the_users_question_fires_when_memory_holds_its_words() -> None:
    question = "any news on my gazebo roof repair?"
    held = Probe(0.1, words={"news": 40, "gazebo": 1, "roof": 3, "repair": 0},
                 commonness={"news": 5.6, "gazebo": 2.9, "roof": 4.3, "repair": 4.2})
    decision = await decide(question, held)
    assert (decision.section, decision.confidence) == ("episode", "medium")
    assert "gazebo" in decision.reason
    # The same words absent from memory: the situation alone gets a small block.
    absent = Probe(0.1, words=dict.fromkeys(held.evidence.words, 0),
                   commonness=dict(held.evidence.commonness))
    assert (await decide(question, absent)).confidence == "low"


async def test_a_question_naming_what_only_memory_knows_fires_without_a_person() -> None:
    question = "Quillon deadline?"
    known = Probe(0.1, words={"quillon": 2, "deadline": 30}, items=4000,
                  commonness={"quillon": 0.0, "deadline": 4.1})
    assert (await decide(question, known)).section == "episode"
    # A word rare in the language but common in this memory is a topic, not a name.
    topic = Probe(0.1, words={"quillon": 900, "deadline": 30}, items=4000,
                  commonness={"quillon": 0.0, "deadline": 4.1})
    assert (await decide(question, topic)).section == "none"
    # Everyday words memory holds rarely do not make a generic question about memory.
    generic = Probe(0.1, words={"effective": 1, "stress": 2}, items=4000,
                    commonness={"effective": 4.9, "stress": 4.7})
    assert (await decide("What are effective ways to beat stress?", generic)).section == "none"


async def test_a_rare_word_in_a_question_about_the_world_is_a_topic() -> None:
    # No person in it, no name memory holds, more than a lookup's words: a word memory
    # holds rarely is a topic the question and memory happen to share.
    question = "Which recent breakthroughs have made photovoltaics more affordable worldwide?"
    held = Probe(0.1, words={"photovoltaics": 2}, items=4000, commonness={"photovoltaics": 1.9})
    assert (await decide(question, held)).section == "none"
    # Written as a name, or asked of a person memory knows, it is memory's own.
    named = "Which breakthroughs has Photovoltaics Weekly reported on lately?"
    held_named = Probe(0.1, words={"photovoltaics": 2, "weekly": 40}, items=4000,
                       commonness={"photovoltaics": 1.9, "weekly": 4.4})
    assert (await decide(named, held_named)).section == "episode"
    person = "Which photovoltaics breakthroughs did Odile explain at the meetup?"
    held_person = Probe(0.1, names=("Odile",), words={"photovoltaics": 2}, items=4000,
                        commonness={"photovoltaics": 1.9})
    assert (await decide(person, held_person)).section == "episode"


async def test_a_comparison_anyone_could_ask_is_no_question_about_memory_s_events() -> None:
    question = "Which burns hotter, a birch log or an oak log?"
    held = Probe(0.1, words={"birch": 1, "oak": 2}, commonness={"birch": 3.3, "oak": 3.9})
    assert "compares" not in (await decide(question, held)).reason
    # Set against each other in time, or as a person's choice, they are memory's.
    for asked in ("Which came first, the birch planting or the oak felling?",
                  "Did Odile plant a birch or an oak?"):
        probe = Probe(0.1, names=("Odile",), words={"birch": 1, "oak": 2},
                      commonness={"birch": 3.3, "oak": 3.9})
        assert "compares" in (await decide(asked, probe)).reason, asked


async def test_a_fragment_pointing_at_what_the_user_spoke_of_fires_when_memory_holds_it() -> None:
    fragment = "that podcast my cousin recommended on beekeeping"
    held = Probe(0.1, words={"podcast": 2, "cousin": 5, "recommended": 9, "beekeeping": 1},
                 commonness={"podcast": 4.2, "cousin": 4.3, "recommended": 4.6,
                             "beekeeping": 2.4})
    decision = await decide(fragment, held)
    assert decision.section == "episode" and "beekeeping" in decision.reason
    absent = Probe(0.1, words=dict.fromkeys(held.evidence.words, 0),
                   commonness=dict(held.evidence.commonness))
    # The same words absent from memory: at most the small block of a situation.
    assert (await decide(fragment, absent)).confidence == "low"
    # "that" opening a clause points at nothing.
    assert shared_scanner().scan("I read somewhere that we dream in colour").personal \
        .points_back is None


@pytest.mark.parametrize(
    "message",
    ["which hotel was that wedding where we danced till 3am?",
     "the name of that bakery we liked in Ghent",
     "what's the name of my best mate from the rowing club?"],
)
async def test_a_question_of_the_users_own_needs_less_to_stand_out(message: str) -> None:
    # Between nine tenths of the reference prompts (0.36) and all of them by the margin.
    near = await decide(message, Probe(0.37))
    assert (near.section, near.confidence) == ("episode", "low"), near.reason
    assert (await decide(message, Probe(0.3))).section == "none"
    # A question anyone could ask, as near, still does not stand out.
    anyone = await decide("which hotel chain is the biggest in the world?", Probe(0.37))
    assert anyone.section == "none", anyone.reason


async def test_a_how_to_naming_a_thing_memory_holds_is_no_question_about_it() -> None:
    kotlin = Probe(0.37, names=("Kotlin",))
    how_to = "What's the quickest way to pick up Kotlin if I already know Java?"
    assert (await decide(how_to, kotlin)).section == "none"
    assert (await decide("What did the Kotlin meetup cover?", kotlin)).section == "episode"


async def test_work_asked_of_the_model_in_a_later_sentence_is_a_task() -> None:
    message = ("My son asked me why the sky is blue and I froze. Could you explain it so a "
               "child gets it?")
    assert shared_scanner().scan(message).personal.task
    # What the user tells is the background of an explanation anyone could ask for.
    assert (await decide(message, Probe(0.45))).section == "none"


def test_an_adverb_is_no_thing_memory_knows() -> None:
    evidence = Evidence(0.1, REFERENCE, words={"etymologically": 1, "kibble": 1}, items=4000,
                        commonness={"etymologically": 1.2, "kibble": 2.1})
    assert evidence.rare_words_held(0.01, 8, 3.0) == ["kibble"]
    assert evidence.words_held(5.0, 0.01, 8) == ["kibble"]


def test_a_pronoun_after_that_is_no_thing_pointed_at() -> None:
    assert shared_scanner().scan("Is that something I should worry about?").personal \
        .points_back is None


@pytest.mark.parametrize(
    ("typed", "read_as_question"),
    [("wich bus did i take to the airport", True), ("hw long was my flight to Oslo", True),
     ("wen did we adopt the cat", True), ("two coffees please", False),
     ("hat shops near the station are shut", False)],
)
def test_a_misspelt_question_word_is_read_as_the_word_meant(
    typed: str, read_as_question: bool
) -> None:
    assert shared_scanner().scan(typed).is_question == read_as_question


def test_a_long_number_ends_its_sentence_and_a_list_number_does_not() -> None:
    said = "My app calls my API on localhost:5000. How do I fix it?"
    assert shared_scanner().scan(said).personal.advice  # the how-to is a sentence of its own
    listed = "Sort these: 1. I need the report. 2. Send me the report."
    assert shared_scanner().scan(listed).personal.own_past is None


@pytest.mark.parametrize("message", [
    # A statement of the situation, then a clause asking a judgment or tips on it.
    "useEffect runs twice in my React app in development, is that a bug?",
    # The options a question weighs are its own terms, not a thing the user has.
    "The wifi in my back bedroom is terrible but fine near the router. What are my options?",
    # "our" speaking for everyone.
    "Which planet in our solar system has the longest day?",
    "Is it true we only use 10% of our brains?",
    # "help me understand" asks for an explanation, as "explain" does.
    "Help me understand why ice floats. Keep it simple, I'm not a science person.",
    # A how-to inside the question.
    "I've been invited to give a eulogy next week. How long should it be and how do I "
    "structure it?",
])
async def test_a_question_anyone_could_ask_stays_quiet_though_memory_holds_its_words(
    message: str,
) -> None:
    assert (await decide(message, holding_its_words(message))).section == "none", message


def test_a_clause_asking_for_tips_asks_nothing_of_the_user_s_past() -> None:
    personal = shared_scanner().scan("my phone battery drains so fast, tips?").personal
    # Not a question about the user's own things; a request for their sake, which the
    # situation rule weighs.
    assert personal.asks_about_user is None and personal.situated == "my phone"


async def test_a_question_word_clause_asks_about_what_the_statement_before_it_names() -> None:
    question = "my sister's wedding in Porto, when was it?"
    held = Probe(0.1, words={"sister": 3, "wedding": 2, "porto": 1},
                 commonness={"sister": 4.6, "wedding": 4.6, "porto": 3.2})
    assert (await decide(question, held)).section == "episode"


@pytest.mark.parametrize(("question", "held"), [
    ("Which happened first, the purchase of the espresso machine or the dishwasher leak?",
     {"espresso": 1, "dishwasher": 2, "leak": 1}),
    ("Pottery workshop or the trip to Ghent - which was earlier?",
     {"pottery": 1, "ghent": 2}),
    ("How many days between the christening and the marathon?",
     {"christening": 1, "marathon": 1}),
    ("Was the sofa delivered before or after the living room was painted?",
     {"sofa": 1, "painted": 2}),
    ("What came last: the new tires, the roof repair, or the piano recital?",
     {"tires": 1, "roof": 1, "recital": 1}),
])
async def test_things_set_against_each_other_that_memory_holds_each_of(
    question: str, held: dict[str, int],
) -> None:
    commonness = dict.fromkeys(held, 3.5)
    decision = await decide(question, Probe(0.1, words=held, commonness=commonness))
    assert decision.section == "episode" and "compares" in decision.reason, question
    # One of them absent from memory: no comparison of what memory holds.
    first = next(iter(held))
    partly = Probe(0.1, words={**held, first: 0}, commonness=commonness)
    assert "compares" not in (await decide(question, partly)).reason


def test_the_difference_between_two_things_sets_no_events_against_each_other() -> None:
    question = "What's the difference between baking soda and baking powder?"
    assert shared_scanner().scan(question).personal.alternatives == ()


@pytest.mark.parametrize("message", [
    "My landlord wants me out by Friday. Do I have to leave if there's no written notice?",
    "do we need to tip the movers if they arrive late?",
    "I was fined on a train abroad. Do I have to pay it?",
])
async def test_an_obligation_asked_is_no_question_about_the_users_past(message: str) -> None:
    personal = shared_scanner().scan(message).personal
    assert personal.own_past is None and personal.asks_about_user is None, message
    assert (await decide(message, holding_its_words(message))).section == "none", message


@pytest.mark.parametrize("message", [
    "In German, how do I say 'my bike was stolen from the station'?",
    "Quick one, how do we split a bill fairly between roommates?",
])
def test_a_how_to_opening_the_clause_that_asks_is_advice(message: str) -> None:
    assert shared_scanner().scan(message).personal.advice, message


@pytest.mark.parametrize("message", [
    "My car smells musty after all the rain. Can I get rid of it?",
    "I spilled coffee on my wool rug. Can I still get the stain out?",
])
async def test_a_fix_for_the_users_situation_needs_memory_to_hold_something_of_it(
    message: str,
) -> None:
    # The same fix for anyone: nothing near, or only as near as most prompts come, no
    # block; memory as near as a question of the user's own needs, a block.
    assert (await decide(message, Probe(0.15))).section == "none", message
    assert (await decide(message, Probe(0.30))).section == "none", message  # above half
    near = await decide(message, Probe(0.37))  # above nine tenths of the reference prompts
    assert near.section == "episode", near.reason


@pytest.mark.parametrize("message", [
    "My nephew turns nine next month. Gift ideas?",
    "I've got a free Sunday. What would you recommend I do?",
    "I keep waking up before dawn. Do you think it's my evening coffee?",
    "We're planning a safari for our anniversary. Thoughts?",
])
async def test_a_choice_or_a_view_asked_for_the_user_keeps_a_small_block(message: str) -> None:
    weak = await decide(message, Probe(0.15))
    assert (weak.section, weak.confidence) == ("episode", "low"), weak.reason


@pytest.mark.parametrize("message", [
    "what office chair should i get",
    "Any novels I could read next?",
    "which tent should we take",
    # no one named as its beneficiary, no criteria told: asked in a few words
    "Any podcast you'd suggest for the gym?",
    "what should we watch tonight",
    "What could I bake this weekend?",
])
async def test_a_thing_to_choose_is_asked_for_the_user(message: str) -> None:
    # Their tastes decide it: memory near the question, a small block; nothing, none.
    assert (await decide(message, Probe(0.15))).section == "none", message
    near = await decide(message, Probe(0.30))
    assert (near.section, near.confidence) == ("episode", "low"), near.reason


async def test_what_a_choice_told_in_full_says_of_the_user_is_its_premise() -> None:
    message = ("Which tablet should I get if I mostly read comics at night, travel a lot, "
               "hate glossy screens and I use a Mac?")
    assert (await decide(message, holding_its_words(message))).section == "none"
    # Asked in fewer words, what it says of the user may be what memory holds of them.
    short = "Which tablet should I get if I read comics at night, and I travel a lot?"
    assert (await decide(short, holding_its_words(short))).section == "episode"


@pytest.mark.parametrize("message", [
    "Suggest some healthy snacks for the office.",  # bidden: a task set
    "What should I expect at my first pottery class?",  # advice anyone gets
    "which would you pick?",  # among the options at hand
    # its criteria told
    "what rug should I buy for a hallway that gets muddy boots, pets and lots of sun, "
    "nothing too pale",
])
async def test_a_choice_set_as_a_task_or_told_in_full_is_no_question_of_taste(
    message: str,
) -> None:
    assert (await decide(message, Probe(0.30))).section == "none", message


async def test_what_a_name_memory_holds_owns_is_looked_up_however_written() -> None:
    held = Probe(0.2, words={"theo": 1, "swimming": 1, "earth": 1},
                 commonness={"theo": 3.7, "swimming": 4.4, "earth": 5.3}, items=10)
    decision = await decide("what time is theo's swimming on thursdays", held)
    assert (decision.section, decision.reason) == (
        "episode", "looks up a name memory holds: theo")
    # An everyday owner is no name: "the earth's" is anyone's.
    assert (await decide("how old is the earth's crust", held)).section == "none"


@pytest.mark.parametrize("message", [
    "remind me how to convert a recipe to grams in my head",
    "My old laptop's hinge snapped. Fix it or replace it?",
])
async def test_a_how_to_or_two_things_to_do_is_no_recall(message: str) -> None:
    moving = Probe(0.2, words={"fix": 1, "replace": 1}, commonness={"fix": 4.6, "replace": 4.5},
                   items=1000)
    decision = await decide(message, moving)
    assert decision.section == "none", decision.reason


@pytest.mark.parametrize("message", [
    "what temperature should i bake salmon at",
    "What questions should I ask at the end of an interview?",
    "What size pot should I use for a monstera?",
])
async def test_a_measure_to_work_out_is_no_choice(message: str) -> None:
    assert (await decide(message, Probe(0.30))).section == "none", message


@pytest.mark.parametrize("message", ["Marlowe's vet?", "Who is Marlowe?", "And Marlowe?"])
async def test_a_lookup_of_a_name_memory_holds_fires(message: str) -> None:
    # "Marlowe" is no rare word in English, but memory holds it in one item.
    held = Probe(0.1, words={"marlowe": 1, "vet": 3}, commonness={"marlowe": 3.4, "vet": 3.9},
                 items=40)
    decision = await decide(message, held)
    assert (decision.section, decision.confidence) == ("episode", "medium"), decision.reason


async def test_a_name_in_a_longer_question_or_not_written_as_one_is_no_lookup() -> None:
    held = Probe(0.1, words={"marlowe": 1}, commonness={"marlowe": 3.4}, items=40)
    assert (await decide("marlowe vet?", held)).section == "none"
    assert (await decide("Marlowe vet?", held)).section == "none"  # a sentence's capital
    assert (await decide("What did critics make of Marlowe's plays in his own lifetime?",
                         held)).section == "none"


def test_a_name_with_a_capital_inside_it_is_written_as_a_name() -> None:
    from mnemoproxy.gate.relevance.heuristic import _written_as_name
    assert _written_as_name("mcgee", "What beer does McGee's serve?")
    assert not _written_as_name("gee", "What beer does McGee's serve?")
    assert not _written_as_name("mcgee", "what beer does mcgee's serve?")


@pytest.mark.parametrize(("message", "own"), [
    ("wat i named the hamster", "i named"),
    ("where I parked at the stadium?", "i parked"),
    ("When I baked bread it collapsed. Why?", None),  # a clause of time, not a question
    # the subject of a clause of time inside the question, not of the question
    ("how long until the bruise fades and I look presentable?", None),
    ("what did the I in IKEA stand for?", None),  # the letter, after an article
])
def test_a_question_word_then_i_and_a_past_verb_asks_of_the_users_doing(
    message: str, own: str | None,
) -> None:
    assert shared_scanner().scan(message).personal.own_past == own


def test_a_choice_asked_for_a_time_of_the_users_is_their_situation() -> None:
    assert shared_scanner().scan("Any ideas for a game night tonight?").personal.situated
    assert shared_scanner().scan("Any ideas for a game night?").personal.situated is None


def test_a_subordinate_clause_speaks_of_no_user_the_question_asks_about() -> None:
    message = "Is a parking fine abroad still due, since I don't live there?"
    assert shared_scanner().scan(message).personal.asks_about_user is None


@pytest.mark.parametrize(("message", "explains"), [
    ("Put simply, how does the dishwasher get my glasses spotless?", True),
    ("how do these noise filters on my camera work?", True),
    ("How does Priya like her new job?", False),  # a person memory may know
])
def test_how_a_thing_works_is_an_explanation_whoevers_it_is(message: str, explains: bool) -> None:
    assert shared_scanner().scan(message).personal.explains is explains


def test_a_word_a_large_memory_holds_by_chance_tells_nothing() -> None:
    # "presentation" (Zipf 4.3) once in a memory of 300 words is telling; once in a memory
    # of 80,000 words it is what chance puts there, unless memory holds it far more often.
    small = Evidence(0.1, words={"presentation": 1}, commonness={"presentation": 4.3},
                     items=20, size=300)
    large = Evidence(0.1, words={"presentation": 1}, commonness={"presentation": 4.3},
                     items=500, size=80_000)
    often = Evidence(0.1, words={"presentation": 12}, commonness={"presentation": 4.3},
                     items=500, size=80_000)
    assert small.words_held(5.0, 0.01, 8) == ["presentation"]
    assert large.words_held(5.0, 0.01, 8) == []
    assert often.words_held(5.0, 0.01, 8) == ["presentation"]


@pytest.mark.parametrize("message", [
    "Need some ideas for a snowy weekend with my twins, we're all getting cabin fever.",
    "any cheap lunch suggestions? i'm bored of the same sandwiches every day",
])
async def test_ideas_asked_for_the_users_situation_are_asked_without_a_question_mark(
    message: str,
) -> None:
    decision = await decide(message, Probe(0.15))
    assert (decision.section, decision.confidence) == ("episode", "low"), decision.reason
    assert (await decide("Need some ideas for a science fair project.", Probe(0.15))
            ).section == "none"


@pytest.mark.parametrize("message", [
    "How long did I have to wait for the cable guy in the end?",
    "so how much did I have to pay for the skip hire?",
])
def test_an_obligation_in_the_past_is_one_of_the_users_doings(message: str) -> None:
    personal = shared_scanner().scan(message).personal
    assert personal.own_past is not None or personal.asks_about_user is not None, message


def test_a_bare_question_word_opening_the_asking_clause_is_no_how_to_on_its_own() -> None:
    # After a statement, "when do I ..." may ask the user's own date; "how do I" is a how-to.
    assert not shared_scanner().scan(
        "The passport office wrote to me, when do I have my appointment?").personal.advice


def test_since_with_a_past_verb_dates_the_users_own_past() -> None:
    personal = shared_scanner().scan(
        "How many weeks had gone by since I adopted the kitten when she first got sick?"
    ).personal
    assert personal.own_past is not None


@pytest.mark.parametrize(("message", "asks"), [
    ("garage door code", True),
    ("the roofer we hired in june", True),
    ("tile colour we picked for the bathroom pls", True),
    ("my car insurance renewal date", True),
    ("my brother is moving to Lyon", False),  # a verb of its own: it tells
    ("went to the lake with dana", False),
    ("build a database of every pasta shape", False),  # a verb and its object: work
    ("sort these names by surname", False),
    ("we loved the concert", False),
    ("my dog chewed the sofa", False),
    ("The roofer we hired in June.", False),  # a full stop ends a statement
    ("notes from the quarterly planning meeting we had with the design team", False),
])
def test_a_short_fragment_is_asked_as_a_question_is(message: str, asks: bool) -> None:
    assert shared_scanner().scan(message).is_question is asks, message


async def test_a_fragment_naming_what_memory_holds_fires() -> None:
    held = Probe(0.1, words={"roofer": 1, "hired": 2, "gutters": 1},
                 commonness={"roofer": 2.6, "hired": 4.4, "gutters": 2.9}, items=40)
    assert (await decide("the roofer we hired for the gutters", held)).section == "episode"
    assert (await decide("the roofer we hired for the gutters", Probe(0.1))).section == "none"


@pytest.mark.parametrize("message", [
    "Hosting a picnic for ten on Sunday — what should I bring?",
    "Painting the nursery this weekend - what should I buy first?",
])
async def test_a_dash_sets_the_clause_that_asks_apart(message: str) -> None:
    # A how-to after the dash: the date is the plan's, as anyone's would be.
    assert shared_scanner().scan(message).personal.advice, message
    assert (await decide(message, Probe(0.1))).section == "none", message


@pytest.mark.parametrize("message", [
    "What should my weekly food budget be?",
    "I'm starting to run again. What should my first week look like?",
])
def test_what_the_users_own_plan_should_be_is_advice(message: str) -> None:
    personal = shared_scanner().scan(message).personal
    assert personal.advice and personal.asks_about_user is None, message


def test_a_common_word_in_alternatives_counts_where_memory_holds_it_beyond_chance() -> None:
    groups = (("allergy", "test"), ("sleep", "study"))
    commonness = {"allergy": 3.6, "test": 5.2, "sleep": 5.05, "study": 5.3}
    words = {"allergy": 1, "test": 1, "sleep": 1, "study": 1}
    small = Evidence(0.1, words=words, commonness=commonness, items=16, size=220)
    large = Evidence(0.1, words=words, commonness=commonness, items=900, size=80_000)
    assert small.held_in_each(groups, 5.0, 0.01, 8) == ["allergy", "sleep"]
    assert large.held_in_each(groups, 5.0, 0.01, 8) == []


async def test_a_situation_told_with_particulars_needs_more_for_the_whole_block() -> None:
    # Above three in four reference prompts (0.32), or nine in ten (0.36), but only
    # beyond all of them by the margin (0.43) does memory stand out.
    told = "We're hosting 12 people for my partner's 40th on Saturday. Any ideas for food?"
    assert (await decide(told, Probe(0.33))).section == "none"
    assert (await decide(told, Probe(0.37))).section == "none"
    assert (await decide(told, Probe(0.45))).section == "episode"
    pointed = "We're hosting a party for my partner on Saturday. Any ideas for food?"
    decision = await decide(pointed, Probe(0.33))
    assert (decision.section, decision.confidence) == ("episode", "high"), decision.reason


@pytest.mark.parametrize("message", [
    "storage unit gate code",  # a short lookup
    "Which tiler fitted my shower tray?",  # the user's own question
])
async def test_a_phrase_memory_holds_side_by_side_names_what_is_asked(message: str) -> None:
    # Each word is common in the language; memory holds the two together in one item.
    words = {"gate": 3, "code": 4, "shower": 2, "tray": 2, "storage": 2, "unit": 3}
    held = Probe(0.1, words=words, commonness=dict.fromkeys(words, 5.3), items=40,
                 phrases={"gate code": 1, "storage unit": 1, "shower tray": 1})
    decision = await decide(message, held)
    assert decision.section == "episode" and decision.confidence == "medium", decision.reason
    assert "shower tray" in decision.reason or "gate code" in decision.reason
    apart = Probe(0.1, words=words, commonness=dict.fromkeys(words, 5.3), items=40)
    assert (await decide(message, apart)).confidence != "medium"  # the words alone: less


async def test_a_phrase_in_a_longer_question_about_the_world_names_nothing() -> None:
    held = Probe(0.1, phrases={"boiling point": 1}, items=900)
    question = "Why does the boiling point of water drop at high altitude?"
    assert (await decide(question, held)).section == "none"


def test_a_phrase_a_large_memory_holds_by_chance_names_nothing() -> None:
    # A phrase is no more common than its rarer word: in 80,000 words "shower" (Zipf 4.6)
    # turns up about three times by chance, so the phrase once tells nothing.
    commonness = {"shower": 4.6, "tray": 4.0, "last": 6.1, "week": 5.5}
    def held(items: int, size: float, **phrases: int) -> list[str]:
        return Evidence(0.1, commonness=commonness, items=items, size=size,
                        phrases={k.replace("_", " "): v for k, v in phrases.items()}
                        ).phrases_held(0.01, 8)
    assert held(40, 600, shower_tray=1) == ["shower tray"]
    assert held(900, 80_000, shower_tray=1) == []
    assert held(40, 600, last_week=1) == []  # an everyday word names nothing


def test_a_quote_closing_a_sentence_ends_it() -> None:
    # What the user tells ("my landlord texted me ...") is apart from what they ask.
    told = 'My landlord texted me just "Fine." Is he annoyed, or am I reading too much into it?'
    personal = shared_scanner().scan(told).personal
    assert personal.asks_about_user is None
    assert personal.alternatives == ()


@pytest.mark.parametrize(("message", "points_back"), [
    ("The other night I read that octopuses have three hearts. Is that true?", False),
    ("Earlier today I burnt the rice again. How do I stop it sticking?", False),
    ("What did I order the other night?", True),
    ("Last time you suggested a different library.", True),
])
def test_a_time_pointed_back_at_is_the_conversations_where_it_asks_or_speaks_with_it(
    message: str, points_back: bool
) -> None:
    assert ("back_then" in shared_scanner().scan(message).matches) is points_back, message


@pytest.mark.parametrize("message", [
    "Do you remember who painted the ceiling of the Sistine Chapel?",
    "Remember when the first iPhone came out?",
])
async def test_asked_whether_the_model_remembers_an_answer_anyone_knows_the_evidence_decides(
    message: str,
) -> None:
    cues = shared_scanner().scan(message)
    assert "episode" not in cues.matches and cues.asked_back is not None, cues.matches
    assert (await decide(message, Probe(0.25))).section == "none"
    # Still a thing told before: "do you remember the recipe?".
    assert "episode" in shared_scanner().scan("Do you remember the playlist?").matches


@pytest.mark.parametrize("message", [
    "When I was a teenager I broke my arm skateboarding. Do bones heal stronger after?",
    "Where we used to live, I grew tomatoes on the balcony! Can they grow indoors?",
])
def test_a_question_word_opening_a_sentence_that_states_tells_the_users_past(
    message: str,
) -> None:
    personal = shared_scanner().scan(message).personal
    assert personal.own_past is None and personal.asks_about_user is None, message
    assert shared_scanner().scan("When did I last see the dentist").personal.own_past


def test_what_the_user_says_after_asking_what_they_should_do_is_its_premise() -> None:
    message = "Which camera should I buy if I shoot mostly landscapes at dawn?"
    assert shared_scanner().scan(message).personal.own_past is None


@pytest.mark.parametrize("message", [
    "My knee clicks when I climb stairs. Is that normal, or should I see a doctor?",
    "Should I repaint the fence or replace it?",
    "Am I overreacting or was that rude?",
])
def test_a_state_or_a_decision_asked_is_no_alternative(message: str) -> None:
    assert shared_scanner().scan(message).personal.alternatives == (), message


def test_why_we_do_as_people_do_speaks_of_everyone() -> None:
    assert shared_scanner().scan("Why do we lose our baby teeth?").personal.situated is None


@pytest.mark.parametrize("message", [
    "Is there an easy way to get candle wax out of a tablecloth?",
    "What's a tactful way to turn down a wedding invitation?",
    "What are some ways to keep cut basil fresh?",
])
def test_a_way_to_do_something_is_advice(message: str) -> None:
    assert shared_scanner().scan(message).personal.advice, message


def test_recommend_me_is_a_choice_asked_for_the_user() -> None:
    message = "Long flight tomorrow. Recommend me something to watch"
    assert shared_scanner().scan(message).personal.for_the_user == "recommend ... me"


async def test_a_rare_word_in_a_message_that_tells_at_length_is_a_topic_both_touch() -> None:
    rare = Probe(0.2, words={"mealybugs": 1}, commonness={"mealybugs": 1.5}, items=2000)
    told = ("My jade plant has white fluffy spots on the stems and under the leaves. I "
            "think they might be mealybugs. It sits on a sunny windowsill. What should I do?")
    assert (await decide(told, rare)).section == "none"
    asked = "Did the mealybugs come back on my jade plant?"
    assert (await decide(asked, rare)).section == "episode"


async def test_a_plan_with_a_time_ahead_is_no_fix_anyone_gets() -> None:
    # Above half the reference prompts (0.28), below nine tenths (0.36).
    plan = "I'm repainting my kitchen cabinets next weekend. Any tips?"
    assert (await decide(plan, Probe(0.31))).section == "episode"
    fix = "My kitchen cabinets are peeling. Any tips?"
    assert (await decide(fix, Probe(0.31))).section == "none"


def test_a_judgement_asked_of_a_past_told_is_no_question_about_it() -> None:
    told = ("We drove to the coast last weekend and it rained all three days. Were we "
            "unwise to go in October?")
    assert shared_scanner().scan(told).personal.own_past is None
    assert shared_scanner().scan("Were we at the coast in October?").personal.own_past


def test_what_the_user_did_set_against_a_thing_is_their_own_past() -> None:
    scan = shared_scanner().scan
    assert scan("how does that compare to what I paid last year?").personal.own_past
    assert scan("which is cheaper than what we booked in Porto?").personal.own_past
    # What the user expected or thought is no doing memory holds.
    assert scan("how does that compare to what I expected?").personal.own_past is None


async def test_a_date_in_a_question_of_someone_elses_is_no_situation_told() -> None:
    # Above nine in ten reference prompts (0.36), not beyond them all by the margin.
    asked = "What did Marguerite recently recommend to Odile on March 3, 2026?"
    assert (await decide(asked, Probe(0.37))).section == "episode"


@pytest.mark.parametrize("lookup", [
    "wifi password at the cabin pls",
    "dentist appointment time?",
    "landlord phone number",
])
async def test_a_lookup_naming_nothing_of_the_world_is_the_users_own(lookup: str) -> None:
    # Above nine in ten reference prompts (0.36) and more: a thing of the asker's own.
    assert shared_scanner().scan(lookup).lookup, lookup
    near = await decide(lookup, Probe(0.385), entities=())
    assert (near.section, near.confidence) == ("episode", "low"), near.reason
    assert near.reason.startswith("a lookup of the user's own")
    assert (await decide(lookup, Probe(0.3), entities=())).section == "none"


@pytest.mark.parametrize("message", [
    "Ada Lovelace birthplace?",  # names someone of the world
    "How many moons does Jupiter have?",  # a sentence with its verb
    "we went hiking with jo",  # tells
    "vinyl vs streaming, which do you prefer",  # the model's view asked
])
def test_a_named_or_stated_message_is_no_lookup(message: str) -> None:
    assert not shared_scanner().scan(message).lookup, message


def test_a_lookup_may_name_its_thing_by_what_the_model_said() -> None:
    assert shared_scanner().scan("grout brand you mentioned for the shower").lookup


def test_a_question_of_its_own_after_a_past_told_asks_its_own() -> None:
    told = ("As a kid I had a bike whose chain kept slipping off every week - what makes a "
            "chain jump the sprockets?")
    assert shared_scanner().scan(told).personal.asks_about_user is None
    back = "my cousin's graduation in Leeds, when was it?"
    assert shared_scanner().scan(back).personal.asks_about_user == "my"


@pytest.mark.parametrize("message", [
    "Kayak or paddleboard for a first summer on the lake?",
    "We have two toddlers and a small yard. Get a puppy now or wait a few years?",
])
def test_alternatives_that_open_the_question_are_a_choice_weighed(message: str) -> None:
    assert shared_scanner().scan(message).personal.alternatives == (), message


def test_recalling_as_a_how_to_is_no_memory_cue() -> None:
    scan = shared_scanner().scan
    assert "recall" not in scan("How can I recall a message in Slack?").matches
    assert "recall" in scan("Do I recall right that the lease ends in May?").matches


def test_a_day_or_a_month_is_no_name() -> None:
    message = "The shops close early this Friday. Why do stores do that in December?"
    cues = shared_scanner().scan(message)
    assert cues.names == []


@pytest.mark.parametrize("question", [
    "how many times has the dishwasher leaked since spring?",
    "How long did the visa application take in the end?",
])
async def test_a_count_of_what_happened_naming_nothing_of_the_world_is_the_users_own(
    question: str,
) -> None:
    near = await decide(question, Probe(0.385), entities=())
    assert (near.section, near.confidence) == ("episode", "low"), near.reason
    assert near.reason.startswith("a count of the user's own")
    assert (await decide(question, Probe(0.3), entities=())).section == "none"
    # Naming something of the world, or asking how to, it is anyone's.
    named = "How long did the Hundred Years' War last?"
    assert (await decide(named, Probe(0.385), entities=())).section == "none"
    howto = "How long should I rest a steak?"
    assert shared_scanner().scan(howto).personal.tallied is None


@pytest.mark.parametrize(("question", "held"), [
    ("what was the book club pick for the autumn?", "pick"),
    ("did the boiler service happen before the cold snap?", "boiler"),
    ("btw what grout colour did we end up using in the shower?", "grout"),
    ("How long did it take to move into the new flat?", "flat"),
])
async def test_a_past_of_a_thing_memory_holds_naming_nothing_of_the_world_is_the_users_own(
    question: str, held: str,
) -> None:
    # Above three in four reference prompts (0.32), below nine in ten (0.36), with a
    # rarer word memory holds.
    probe = Probe(0.33, words={held: 2}, commonness={held: 3.5}, items=2000)
    near = await decide(question, probe, entities=())
    assert (near.section, near.confidence) == ("episode", "low"), near.reason
    assert near.reason.startswith("a past memory holds")
    # Memory that holds none of its words, or stands no nearer than most requests do,
    # is no sign of the user's past.
    assert (await decide(question, Probe(0.33), entities=())).section == "none"
    far = Probe(0.3, words={held: 2}, commonness={held: 3.5}, items=2000)
    assert (await decide(question, far, entities=())).section == "none"


@pytest.mark.parametrize("question", [
    "When did the Berlin Wall come down?",  # names something of the world
    "Why were the 1920s called roaring?",  # brings a number of its own
    "What should I have asked the landlord?",  # no past asked
])
async def test_a_past_of_the_world_or_a_question_not_in_the_past_is_anyones(
    question: str,
) -> None:
    word = "landlord" if "landlord" in question else "roaring"
    probe = Probe(0.33, words={word: 2}, commonness={word: 3.5}, items=2000)
    decision = await decide(question, probe, entities=())
    assert not decision.reason.startswith("a past memory holds"), decision.reason


def test_coming_up_with_something_is_work_asked_of_the_model() -> None:
    scan = shared_scanner().scan
    assert scan("Can you come up with a name for the reading challenge our team runs?"
                ).personal.task
    assert scan("Come up with five names for a bakery.").personal.task
    assert not scan("How did you come up with that?").personal.task


async def test_asked_for_the_user_with_their_background_told_needs_memory_to_stand_out() -> None:
    told = ("I studied marine biology, spent four years on research boats and code a little "
            "in R. Which jobs could I apply for, and at what kind of companies?")
    assert shared_scanner().scan(told).personal.for_the_user is not None
    assert (await decide(told, Probe(0.40))).section == "none"
    assert (await decide(told, Probe(0.50))).section == "episode"
    # Asked without the telling, the user's background is memory's to give.
    short = "Which jobs could I apply for?"
    assert (await decide(short, Probe(0.40))).section == "episode"


async def test_a_question_that_tells_at_length_what_it_asks_about_is_answered_by_it() -> None:
    problem = ("Maria bought 4 notebooks at $3 each and 2 pens at $1.50 each. She paid with a "
               "$20 bill. How much change did she get back?")
    decision = await decide(problem, Probe(0.50), entities=())
    assert (decision.section, decision.reason.split(":")[0]) == ("none", "told in full")


@pytest.mark.parametrize(("message", "own_past"), [
    ("list the cities I've flown to since March", "i 've"),
    ("add up what the boiler has cost us in call-outs", "cost us"),
    ("tell me what the dentist charged me last time", "charged me"),
    # "need" ends in "-ed" and is no past; "would" is no "had".
    ("Tell me what I need for a weekend in Oslo", None),
    ("tell me what I'd need for a weekend in Oslo", None),
    ("tell me what a weekend in Oslo would cost me", None),
])
def test_a_request_asks_after_what_the_user_has_done_or_had_done_to_them(
    message: str, own_past: str | None,
) -> None:
    assert shared_scanner().scan(message).personal.own_past == own_past


@pytest.mark.parametrize(("message", "asked_back"), [
    ("What was that pasta shape with the little ears?", "What was that pasta"),
    ("which were those two plants that hate wet feet", "which were those two"),
    ("What was that like?", None),
    ("What was that about?", None),
])
def test_what_was_that_thing_asks_a_thing_back(message: str, asked_back: str | None) -> None:
    cues = shared_scanner().scan(message)
    assert cues.asked_back == asked_back
    assert "recall" not in cues.matches  # of no one: the evidence decides


async def test_a_thing_asked_back_of_no_one_is_decided_by_the_evidence() -> None:
    message = "What was that pasta shape with the little ears?"
    assert (await decide(message, Probe(0.3), entities=())).section == "none"
    near = await decide(message, Probe(0.385), entities=())
    assert (near.section, near.confidence) == ("episode", "low"), near.reason


def test_a_line_break_pasted_as_html_ends_a_sentence() -> None:
    message = ("We start our team's step challenge in May, as every year.<br><br>Can you come "
               "up with a name for it?")
    assert shared_scanner().scan(message).personal.task
    assert scan_window("a<BR />b<br>c") == "a\nb\nc"


@pytest.mark.parametrize(("message", "asked_back"), [
    ("whats the wifi password at the cabin again", True),
    ("What is the name of the bakery on the corner of Elm street again", True),
    # With someone doing something, "again" repeats it.
    ("what can I do so it never happens again", False),
])
def test_again_closing_a_question_asks_a_particular_back_however_far(
    message: str, asked_back: bool,
) -> None:
    assert (shared_scanner().scan(message).asked_back is not None) == asked_back


@pytest.mark.parametrize(("message", "diagnosed"), [
    ("My espresso tastes sour. I grind fine and pull 25 seconds at 92C. What am I doing "
     "wrong?", True),
    ("the hedge i planted in april has brown tips all over, what did we get wrong", True),
    ("the crust burns before the middle sets, what did I mess up", True),
    # Asked alone, it may ask what memory holds of it.
    ("What was I doing wrong with the espresso?", False),
])
def test_what_went_wrong_with_what_was_just_told_is_diagnosed_from_it(
    message: str, diagnosed: bool,
) -> None:
    personal = shared_scanner().scan(message).personal
    assert personal.explains == diagnosed
    assert (personal.own_past is None) == diagnosed


async def test_a_persona_set_up_is_a_task_whatever_it_remembers() -> None:
    message = ("Be a knight from 1350 riding into my village. Tell me what you remember of "
               "the plague years.")
    decision = await decide(message, Probe(0.5))
    assert (decision.section, decision.reason) == ("none", "a role-play or persona set-up")


async def test_earlier_in_a_comparison_in_time_asks_the_order_not_a_time_back() -> None:
    comparison = "Which was built earlier, the Colosseum or the Pantheon?"
    assert HeuristicGate().lexical(comparison, GateContext()) is None
    assert (await decide(comparison, Probe(0.2))).section == "none"
    pointed = "Earlier, you said the Pantheon was older. Which was it?"
    assert HeuristicGate().lexical(pointed, GateContext()).section == "episode"


def test_what_the_assistant_put_forward_asked_back_is_recall() -> None:
    cues = shared_scanner().scan("you recommended a podcast for my commute, what was it called")
    assert cues.matches["recall"] == "you recommended a"


async def test_the_users_telling_beside_a_question_about_the_world_is_background() -> None:
    message = "My aunt's favourite painter is Georgia O'Keeffe. What year did the museum open?"
    probe = Probe(0.2, words={"aunt": 1}, phrases={"favourite painter": 1},
                  commonness={"aunt": 4.6, "favourite": 4.7, "painter": 4.2})
    assert (await decide(message, probe, entities=())).section == "none"
    looked_up = await decide("aunt's favourite painter?", probe, entities=())
    assert looked_up.reason.startswith("names a phrase memory holds"), looked_up.reason


def test_a_contraction_typed_without_its_apostrophe_names_nothing() -> None:
    words = {"whats": 1, "dont": 1, "youre": 1, "shed": 1, "shell": 1}
    evidence = Evidence(0.3, words=words, items=1000, size=10_000,
                        commonness=dict.fromkeys(words, 3.5))
    assert evidence.words_held(5.0, 0.01, 8) == ["shed", "shell"]


@pytest.mark.parametrize(("message", "recalled"), [
    ("that stretching routine you described, how many reps was it",
     "that stretching routine you described"),
    ("which app did you point me to for tracking bills?", "did you point"),
])
def test_what_the_assistant_explained_pointed_back_at_is_recall(
    message: str, recalled: str,
) -> None:
    assert shared_scanner().scan(message).matches["recall"] == recalled



@pytest.mark.parametrize(("message", "asks"), [
    ("what was the name of the taqueria? want to go back friday", True),
    ("oh and when is the boiler service due? need to book time off", True),
    # the question's material, or a sentence that goes on at length, is no reason given
    ('I wrote this last night, can you tidy it? "We was late because the bus."', False),
    ("If I buy 3 pens at $2, what do I pay? My son's worksheet says the answer is $5 "
     "and I think the book has a mistake.", False),
])
def test_a_question_followed_by_why_it_is_asked_asks(message: str, asks: bool) -> None:
    assert shared_scanner().scan(message).is_question is asks, message

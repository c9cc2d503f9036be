"""What a small core model gets wrong, and what the LLM distiller keeps of it: copied prompt
examples, the assistant's words taken for the user's, guessed identity, fragments, and
answers cut off by max_tokens."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from mnemoproxy.errors import DistillError
from mnemoproxy.memory.core_model.client import Completion
from mnemoproxy.memory.distill.llm import LLMDistiller
from mnemoproxy.memory.distill.parse import DISTILLATION_SCHEMA, close_truncated
from mnemoproxy.memory.models import SessionInput, Turn
from tests.support.servers.fake_core_model import FakeCoreModel

TURNS = [
    Turn("Can you explain how JSON schemas work?", "Sure. A schema describes..."),
    Turn("I live in Porto, by the way. I'm vegetarian.", "Noted! Porto has great food."),
    Turn("Any restaurant tips?", "Try Casa Guedes, and you should learn to cook bacalhau."),
]


def session(turns: list[Turn] = TURNS) -> SessionInput:
    return SessionInput("agent", "s1", turns, session_date=datetime(2024, 5, 7))


def answer(pinned: list[str] = (), identity: list[str] = (), turns: list[int] | None = None,
           **episode: Any) -> str:
    """A core model's answer; `turns`: the source turns every fact names (prompt numbers)."""
    said = {} if turns is None else {"turns": turns}
    return json.dumps({
        "episode": {"summary": "User asked about JSON schemas and food in Porto.",
                    "topics": ["json"], "entities": ["Porto"], "decisions": [],
                    "action_items": [], "salience": 0.4, **episode},
        "pinned_candidates": [{"content": c, "salience": 0.5, "tags": [], **said}
                              for c in pinned],
        "identity_facts": [{"content": c, **said} if said else c for c in identity],
    })


async def distil(*script: str | Completion, turns: list[Turn] = TURNS):
    core = FakeCoreModel(*script)
    return await LLMDistiller(core).distill(session(turns)), core


async def test_the_prompts_own_example_shapes_and_its_old_examples_are_never_stored() -> None:
    copied = [
        "User lives in Berlin", "User's daughter is named Mia",
        "User chose PostgreSQL for the billing service",
        "User will submit the grant proposal by 2024-06-14", "User lives in <city>",
        "User is allergic to peanuts", "User prefers metric units",
    ]
    result, core = await distil(answer(pinned=copied, identity=copied))
    assert result.pinned == [] and result.identity == []
    assert result.ungrounded == len(copied)  # counted once each, so an ingest reports them
    system = core.calls[0]["messages"][0]["content"]
    assert "Berlin" not in system and "Mia" not in system and "PostgreSQL" not in system


async def test_facts_from_the_assistants_words_are_not_the_users() -> None:
    result, _ = await distil(answer(pinned=[
        "User should learn to cook bacalhau", "User likes Casa Guedes", "User is vegetarian",
    ]))
    assert [f.content for f in result.pinned] == ["User is vegetarian"]
    assert result.ungrounded == 2


@pytest.mark.parametrize("turn", [1, 2, 3])
async def test_advice_and_copied_examples_stay_dropped_whichever_turn_they_name(
    turn: int,
) -> None:
    invented = ["User should learn to cook bacalhau", "User likes Casa Guedes",
                "User will try Casa Guedes", "User lives in Berlin",
                "User's daughter is named Mia"]
    result, _ = await distil(answer(pinned=invented, identity=invented, turns=[turn]))
    assert result.pinned == [] and result.identity == []


async def test_a_kept_fact_keeps_the_turn_it_names_or_the_one_that_says_it() -> None:
    result, _ = await distil(answer(pinned=["User is vegetarian"], turns=[2]))
    assert [(f.content, f.source_turns) for f in result.pinned] == [
        ("User is vegetarian", (1,))]
    result, _ = await distil(answer(pinned=["User is vegetarian"]))  # no turns named
    assert [f.source_turns for f in result.pinned] == [(1,)]


# Two people talking, as a shared chat log is imported: the one memory serves (here
# Caroline) speaks on either side of a turn.
DIALOGUE = [
    Turn("Melanie: Any fun plans for the summer?",
         "Caroline: Researching adoption agencies - it's been a dream to have a family. "
         "Have you ever been to Lisbon?"),
    Turn("Melanie: Young people's resilience is amazing. Care to share some stories?",
         "Caroline: I mentor a transgender teen. We've been building up confidence and "
         "finding positive strategies, and you should see how it pays off!"),
    Turn("Caroline: My three dogs are all the same age, and they get along as a pack.",
         "Melanie: Oh, Biscuit, Pepper and Rolo must keep you busy! Read up on pack walks."),
]


@pytest.mark.parametrize(("fact", "turns"), [
    # A capable model's paraphrase of what the named turn's speaker said of themselves.
    ("User is researching adoption agencies, dreaming of having a family.", [1]),
    ("User mentors a transgender teen and works on building confidence.", [2]),
    ("User mentors a transgender teen and works on building confidence.", None),
    # A count written as a digit, the names only the other side said.
    ("User has 3 dogs that get along well as a pack.", [3]),
    ("User's dogs are named Biscuit, Pepper and Rolo.", [3]),
])
async def test_a_capable_models_true_facts_are_kept(fact: str, turns: list[int] | None) -> None:
    result, _ = await distil(answer(pinned=[fact], turns=turns), turns=DIALOGUE)
    assert [f.content for f in result.pinned] == [fact]


@pytest.mark.parametrize("fact", [
    "User should read up on pack walks.",  # the other side's advice
    "User has been to Lisbon.",  # the other side's question
    "User adopted a cat from a shelter.",  # said by nobody
])
async def test_the_other_sides_advice_and_questions_are_not_the_users(fact: str) -> None:
    for turns in ([1], [3], None):
        result, _ = await distil(answer(pinned=[fact], turns=turns), turns=DIALOGUE)
        assert result.pinned == [], (fact, turns)


async def test_identity_needs_the_users_own_first_person_statement() -> None:
    result, _ = await distil(answer(identity=[
        "User lives in Porto",  # "I live in Porto": earned
        "User works with JSON schemas",  # asked about, never said of themselves
        "User is a software engineer",  # nobody said it
    ]))
    assert [f.content for f in result.identity] == ["User lives in Porto"]
    # Words the user used, not said of themselves: at most an ordinary fact.
    assert "User is a software engineer" not in [f.content for f in result.pinned]


async def test_grounded_words_not_said_of_oneself_stay_an_ordinary_fact() -> None:
    turns = [Turn("My sister loves Porto. Which wines should she try?", "Port, of course.")]
    result, _ = await distil(answer(identity=["User's sister loves Porto"]), turns=turns)
    assert result.identity == [] or [f.content for f in result.identity] == [
        "User's sister loves Porto"]
    assert len(result.identity) + len(result.pinned) == 1


async def test_fragments_without_a_statement_are_dropped() -> None:
    result, _ = await distil(answer(pinned=["Porto, Portugal", "Porto"], identity=["Porto"]))
    assert result.pinned == [] and result.identity == []


# What a 135M-parameter model wrote as facts (make eval-real), every word of it from the
# user's turns: copied lines, a prompt placeholder, loops, unfinished sentences.
NOT_FACTS = [
    "User: I live in Porto, by the way. I'm vegetarian.",
    "User is vegetarian, I'm sure I'll make it happen!",
    "User will [action_item1] in Porto",
    "User lives in <city>",
    "User lives in Porto. User lives in Porto. User lives in Porto.",
    "User lives in Porto, by the way...",
]


@pytest.mark.parametrize("fact", NOT_FACTS)
async def test_what_a_small_model_writes_instead_of_a_fact_is_dropped(fact: str) -> None:
    result, _ = await distil(answer(pinned=[fact], identity=[fact]))
    assert result.pinned == [] and result.identity == []


@pytest.mark.parametrize(
    "summary",
    [
        "Sri Lanka: Exploring Colombo's architecture and city planning.",  # another session's
        "User lives in [city] and asked about [topic_name].",
        "User asked about JSON. User asked about JSON. User asked about JSON.",
    ],
)
async def test_a_summary_the_session_does_not_support_is_dropped(summary: str) -> None:
    result, _ = await distil(answer(summary=summary))
    assert result.episode is None


@pytest.mark.parametrize(
    "summary",
    [
        "User asked how JSON schemas work and mentioned being a vegetarian in Porto.",
        # A phrase said twice is emphasis, not yet a loop.
        "User asked how JSON schemas work. Being a vegetarian in Porto, user asked how "
        "JSON schemas work for recipes.",
    ],
)
async def test_a_summary_in_its_own_words_is_kept(summary: str) -> None:
    result, _ = await distil(answer(summary=summary))
    assert result.episode is not None and result.episode.summary == summary


async def test_a_quote_inside_a_fact_is_not_a_copied_line() -> None:
    fact = 'User says "I live in Porto" when asked where home is'
    result, _ = await distil(answer(pinned=[fact]))
    assert [f.content for f in result.pinned] == [fact]


async def test_invented_entities_leave_the_episode() -> None:
    result, _ = await distil(answer(entities=["Porto", "Lisbon", "Casa Guedes"]))
    assert result.episode is not None
    assert result.episode.entities == ["Porto", "Casa Guedes"]


async def test_an_answer_cut_off_by_max_tokens_keeps_what_it_finished() -> None:
    full = answer(pinned=["User is vegetarian", "User lives in Porto"])
    cut = full[: full.index("User lives in Porto") + 8]  # inside the second fact's string
    result, core = await distil(Completion(cut, truncated=True))
    assert [f.content for f in result.pinned] == ["User is vegetarian"]
    assert len(core.calls) == 1


async def test_an_unreadable_cut_off_answer_is_asked_once_more_shorter() -> None:
    looping = Completion('{"episode": {"summary": "' + "la " * 400, truncated=True)
    result, core = await distil(looping, answer(pinned=["User is vegetarian"]))
    assert [f.content for f in result.pinned] == ["User is vegetarian"]
    assert len(core.calls) == 2
    second = core.calls[1]
    assert "too long" in second["messages"][-1]["content"]
    assert second["json_schema"]["properties"]["pinned_candidates"]["maxItems"] == 3


async def test_two_cut_off_answers_are_a_clear_failure_naming_the_setting() -> None:
    looping = Completion('{"episode": {"summary": "' + "la " * 400, truncated=True)
    with pytest.raises(DistillError, match="core_max_tokens"):
        await distil(looping, looping)


def test_the_schema_bounds_every_list_and_string() -> None:
    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "array":
                assert "maxItems" in node, node
            if node.get("type") == "string":
                assert "maxLength" in node, node
            for value in node.values():
                walk(value)

    walk(DISTILLATION_SCHEMA)


def test_closing_a_truncated_reply() -> None:
    assert json.loads(close_truncated('{"a": [1, 2, 3')) == {"a": [1, 2]}
    assert json.loads(close_truncated('{"a": {"b": "unfinish')) == {"a": {}}
    assert close_truncated('{"a": 1}') == '{"a": 1}'
    assert close_truncated("no json at all") == "no json at all"

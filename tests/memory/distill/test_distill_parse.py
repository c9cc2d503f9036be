"""parse_distillation: every shape a model reply comes in, and the repairs applied to it."""

from __future__ import annotations

import json

import pytest

from mnemoproxy.errors import DistillError
from mnemoproxy.memory.distill.parse import MAX_ITEM_CHARS, parse_distillation

GOOD = {
    "episode": {
        "summary": "User planned a move to Paris.",
        "topics": ["moving"],
        "entities": ["Paris"],
        "decisions": ["User will move in June"],
        "action_items": ["Book movers"],
        "salience": 0.7,
    },
    "pinned_candidates": [
        {"content": "User prefers trains to planes", "salience": 0.6, "tags": ["preference"]}
    ],
    "identity_facts": ["User lives in Berlin"],
}
GOOD_JSON = json.dumps(GOOD)


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(GOOD_JSON, id="raw"),
        pytest.param(f"  \n{json.dumps(GOOD, indent=2)}\n", id="raw-indented"),
        pytest.param(f"```json\n{GOOD_JSON}\n```", id="fenced-json"),
        pytest.param(f"```\n{GOOD_JSON}\n```", id="fenced-bare"),
        pytest.param(f"Here you go:\n```JSON\n{GOOD_JSON}\n```\nHope it helps!", id="fenced-prose"),
        pytest.param(f"Sure! The memory is {GOOD_JSON} -- done.", id="embedded-in-prose"),
        pytest.param(
            f'Format: {{like this}} and {{"note": 1}}. Answer: {GOOD_JSON}',
            id="prose-with-other-braces-first",
        ),
        pytest.param(f'<think>Maybe {{"episode": 1}}?</think>\n{GOOD_JSON}', id="think-block"),
        pytest.param(
            GOOD_JSON.replace('"Paris"]', '"Paris",]').replace("0.7}", "0.7,}"),
            id="trailing-commas",
        ),
        pytest.param(
            "Answer: " + GOOD_JSON.replace('"Berlin"]', '"Berlin" ,\n ]') + " (end)",
            id="trailing-comma-in-prose",
        ),
    ],
)
def test_reads_every_wrapping_of_the_same_answer(reply: str) -> None:
    result = parse_distillation(reply)
    assert result.episode is not None
    assert result.episode.summary == "User planned a move to Paris."
    assert result.episode.entities == ["Paris"]
    assert result.episode.salience == 0.7
    assert [(f.content, f.kind, f.salience, f.tags) for f in result.pinned] == [
        ("User prefers trains to planes", "pinned", 0.6, ["preference"])
    ]
    assert [(f.content, f.kind) for f in result.identity] == [("User lives in Berlin", "identity")]
    assert all(f.slot is None for f in result.pinned + result.identity)


def test_braces_and_quotes_inside_strings_do_not_confuse_the_scanner() -> None:
    summary = 'User wrote `if (x) { y = "}" }` in C, then said "done {".'
    payload = {
        "episode": {"summary": summary},
        "pinned_candidates": [{"content": "User's favourite emoticon is :-}", "salience": 0.4}],
        "identity_facts": [],
    }
    reply = f"Result below.\n{json.dumps(payload)}\nThat's all {{"
    result = parse_distillation(reply)
    assert result.episode is not None
    assert result.episode.summary == summary
    assert [f.content for f in result.pinned] == ["User's favourite emoticon is :-}"]


def test_trailing_comma_inside_a_string_is_kept() -> None:
    reply = '{"episode": {"summary": "Listed a, b, }",}, "identity_facts": ["x ,]",],}'
    result = parse_distillation(reply)
    assert result.episode is not None
    assert result.episode.summary == "Listed a, b, }"
    assert [f.content for f in result.identity] == ["x ,]"]


@pytest.mark.parametrize(
    ("salience", "expected"),
    [("0.8", 0.8), (" 0.25 ", 0.25), (1.7, 1.0), (-3, 0.0), ("high", 0.5), (True, 0.5), (1, 1.0)],
)
def test_episode_salience_is_coerced_and_clamped(salience: object, expected: float) -> None:
    reply = json.dumps({"episode": {"summary": "s", "salience": salience}})
    episode = parse_distillation(reply).episode
    assert episode is not None
    assert episode.salience == expected


def test_unambiguous_wrong_types_are_coerced() -> None:
    reply = json.dumps(
        {
            "episode": {"summary": "  Talked about tea.  ", "topics": "tea", "entities": None},
            "pinned_candidates": [
                "User drinks green tea daily",
                {"fact": "User avoids caffeine after 6pm", "salience": "0.9", "tags": "health"},
                {"text": "User owns a 2019 bike", "tags": [2019, "bike", {"bad": 1}]},
            ],
            "identity_facts": [
                {"content": "User is 34"},
                {"fact": "User is a nurse"},
                "User has a cat",
            ],
        }
    )
    result = parse_distillation(reply)
    assert result.episode is not None
    assert result.episode.summary == "Talked about tea."
    assert result.episode.topics == ["tea"]
    assert result.episode.entities == []
    assert [(f.content, f.salience, f.tags) for f in result.pinned] == [
        ("User drinks green tea daily", 0.5, []),
        ("User avoids caffeine after 6pm", 0.9, ["health"]),
        ("User owns a 2019 bike", 0.5, ["2019", "bike"]),
    ]
    assert [f.content for f in result.identity] == [
        "User is 34",
        "User is a nurse",
        "User has a cat",
    ]


def test_lone_values_become_lists_of_one() -> None:
    reply = json.dumps(
        {
            "episode": "User asked about the weather.",
            "pinned_candidates": {"content": "User plans a hike on 2024-06-01"},
            "identity_facts": "User's name is Ana",
        }
    )
    result = parse_distillation(reply)
    assert result.episode is not None
    assert result.episode.summary == "User asked about the weather."
    assert [f.content for f in result.pinned] == ["User plans a hike on 2024-06-01"]
    assert [f.content for f in result.identity] == ["User's name is Ana"]


def test_facts_are_stripped_deduplicated_and_filtered() -> None:
    too_long = "User likes " + "x" * MAX_ITEM_CHARS
    reply = json.dumps(
        {
            "episode": {"summary": "s", "topics": ["Tea", "tea ", "", "  "]},
            "pinned_candidates": [
                {"content": "  User prefers tea  "},
                {"content": "user PREFERS tea."},
                {"content": ""},
                {"content": too_long},
                {"content": "User lives in Lisbon"},
                {"salience": 0.9},
            ],
            "identity_facts": ["User lives in Lisbon", "  ", "User lives  in lisbon"],
        }
    )
    result = parse_distillation(reply)
    assert result.episode is not None
    assert result.episode.topics == ["Tea"]
    # "User lives in Lisbon" was filed twice: it is kept once, as identity.
    assert [f.content for f in result.pinned] == ["User prefers tea"]
    assert [f.content for f in result.identity] == ["User lives in Lisbon"]


def test_missing_optional_fields_get_defaults() -> None:
    result = parse_distillation('{"episode": {"summary": "Only a summary."}}')
    assert result.episode is not None
    assert result.episode.topics == result.episode.decisions == []
    assert result.episode.salience == 0.5
    assert result.pinned == result.identity == []


def test_expected_keys_with_nothing_in_them_mean_nothing_to_keep() -> None:
    result = parse_distillation(
        '{"episode": {"summary": ""}, "pinned_candidates": [], "identity_facts": []}'
    )
    assert result.episode is None
    assert result.pinned == result.identity == []


def test_an_episode_without_summary_is_dropped_but_facts_survive() -> None:
    result = parse_distillation('{"episode": {"topics": ["x"]}, "identity_facts": ["User is Bo"]}')
    assert result.episode is None
    assert [f.content for f in result.identity] == ["User is Bo"]


@pytest.mark.parametrize(
    ("reply", "reason_part"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("   \n\t ", "empty", id="whitespace"),
        pytest.param("<think>hmm</think>", "think", id="only-think"),
        pytest.param("I cannot help with that.", "no JSON object", id="prose"),
        pytest.param('{"episode": {"summary": "cut off', "no JSON object", id="truncated"),
        pytest.param("[1, 2, 3]", "no JSON object", id="array"),
        pytest.param('{"answer": 42, "notes": []}', "none of the keys", id="wrong-keys"),
        pytest.param("{{{{ x }} }", "no JSON object", id="brace-garbage"),
    ],
)
def test_unusable_replies_raise_with_a_reason(reply: str, reason_part: str) -> None:
    with pytest.raises(DistillError) as caught:
        parse_distillation(reply)
    assert reason_part in caught.value.reason
    assert caught.value.reason in str(caught.value)


def test_a_truncated_reply_does_not_pass_off_an_inner_object_as_the_answer() -> None:
    reply = '{"episode": {"summary": "s"}, "pinned_candidates": [{"content": "User likes'
    with pytest.raises(DistillError):
        parse_distillation(reply)


def test_brace_heavy_garbage_is_rejected_quickly() -> None:
    with pytest.raises(DistillError):
        parse_distillation("{" * 50_000 + "x")

"""The planner's budget (property-based) and where the block lands in the messages."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemoproxy.gate.fence import FENCE_CLOSE, FENCE_OPEN
from mnemoproxy.gate.inject import inject
from mnemoproxy.gate.planner import PlannedItem, Planner
from mnemoproxy.gate.tokens.counter import count_tokens

NOW = 1_715_000_000.0
_planner = Planner(budget_tokens=800)

lines = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=400)


def _items(kind: str, texts: list[str]) -> list[PlannedItem]:
    return [PlannedItem(kind, i, t, 1.0 - i / 1000, NOW - i) for i, t in enumerate(texts)]


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(min_value=100, max_value=4000),
    identity=st.lists(lines, max_size=25),
    ranked=st.lists(lines, max_size=60),
    kinds=st.lists(st.sampled_from(["pinned", "episode", "transcript"]), min_size=1),
)
def test_block_never_exceeds_budget(budget, identity, ranked, kinds):
    _planner.budget = budget
    ranked_items = [
        PlannedItem(kinds[i % len(kinds)], i, t, 1.0, NOW) for i, t in enumerate(ranked)
    ]
    block = _planner.fit(_items("identity", identity), ranked_items, NOW)
    if block is not None:
        assert block.tokens == count_tokens(block.text) <= budget
        assert block.text.startswith(FENCE_OPEN) and block.text.endswith(FENCE_CLOSE)


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(min_value=100, max_value=2000),
    ranked=st.lists(st.tuples(lines, st.sampled_from(["summary", "user", "assistant"]),
                              st.integers(0, 3)), max_size=40),
)
def test_summaries_giving_way_keep_the_block_within_budget(budget, ranked):
    _planner.budget = budget
    items = [PlannedItem("episode" if speaker == "summary" else "transcript", i, text, 1.0,
                         NOW - group, f"session:{group}", speaker, (i, False))
             for i, (text, speaker, group) in enumerate(ranked)]
    block = _planner.fit([], items, NOW)
    if block is not None:
        assert block.tokens == count_tokens(block.text) <= budget
        said = {item.group for item in block.items if item.speaker != "summary"}
        assert not [i for i in block.items if i.speaker == "summary" and i.group in said]


def test_a_summary_gives_way_to_its_conversations_own_words():
    _planner.budget = 800
    summary = PlannedItem("episode", 1, "User planned a trip to Lisbon in May.", 0.9, NOW,
                          "session:1", "summary")
    said = PlannedItem("transcript", 2, "I'm flying to Lisbon on May 3.", 0.8, NOW,
                       "session:1", "user", (0, False))
    other = PlannedItem("episode", 3, "User asked for a risotto recipe.", 0.7, NOW - 86_400,
                        "session:2", "summary")
    block = _planner.fit([], [summary, said, other], NOW)
    assert block is not None
    assert "flying to Lisbon" in block.text and "planned a trip" not in block.text
    assert "risotto" in block.text  # a conversation with no line of its own keeps its summary


def test_fill_prefers_rank_and_keeps_identity_first():
    _planner.budget = 150
    identity = _items("identity", ["User's name is Alice"])
    ranked = _items("pinned", [f"fact number {i} " + "word " * 20 for i in range(10)])
    block = _planner.fit(identity, ranked, NOW)
    assert block is not None
    assert block.items[0].kind == "identity"
    assert "fact number 0" in block.text
    assert "fact number 9" not in block.text
    assert "recalled" in block.text.lower() and "not" in block.text.lower()


BLOCK = "<recalled_memory>x</recalled_memory>"


def test_user_prefix_goes_before_latest_user_text_and_leaves_system_alone():
    messages = [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "reply"},
        {"role": "user", "content": "second"},
    ]
    original = copy.deepcopy(messages)
    out = inject(messages, BLOCK, "user_prefix")
    assert messages == original  # input untouched
    assert out[0] == original[0]
    assert out[1] == original[1]
    assert out[3]["content"] == BLOCK + "\n\nsecond"


def test_multimodal_gets_a_text_part_and_tool_results_are_left_alone():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "what is it?"}, image]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "result"},
    ]
    out = inject(messages, BLOCK, "user_prefix")
    assert out[0]["content"][0] == {"type": "text", "text": BLOCK}
    assert out[0]["content"][1:] == messages[0]["content"]
    assert out[1:] == messages[1:]


def test_system_mode_with_and_without_system_prompt():
    with_system = [{"role": "system", "content": "rules"}, {"role": "user", "content": "hi"}]
    out = inject(with_system, BLOCK, "system")
    assert out[0]["content"] == "rules\n\n" + BLOCK
    assert out[1] == with_system[1]
    without = [{"role": "user", "content": "hi"}]
    out = inject(without, BLOCK, "system")
    assert out == [{"role": "system", "content": BLOCK}, without[0]]

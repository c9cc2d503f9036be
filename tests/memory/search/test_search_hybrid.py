"""Hybrid search: filters, fusion, recency, MMR, hostile input, agent isolation."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemoproxy.errors import InvalidArgument
from mnemoproxy.memory import Memory
from mnemoproxy.memory.embedders import HashingEmbedder
from mnemoproxy.memory.models import EpisodeDraft, FactDraft
from mnemoproxy.memory.search.hybrid import BM25_ONLY, NAME_LIFT, Fusion
from mnemoproxy.memory.search.query_terms import affordable_terms, word_pairs
from mnemoproxy.memory.store.records import TranscriptMessage
from tests.support.servers.proxy_server import make_settings

DAY = 86_400.0
NOW = 1_700_000_000.0


async def open_memory(folder: Path, embedder) -> Memory:
    settings = make_settings(data_dir=str(folder), embedding_backend="hashing")
    return await Memory.open(settings, embedder=embedder, background=False)


async def say(memory: Memory, agent: str, *texts: str, at: float = NOW, key: str = "s") -> None:
    session_id = await memory.store.session(agent, key)
    await memory.store.add_transcript(agent, session_id, [
        TranscriptMessage(n, "user", text, at + n) for n, text in enumerate(texts)
    ])


async def test_finds_every_item_type_with_provenance(memory: Memory) -> None:
    await say(memory, "agent", "we adopted a greyhound called Pixel", "the weather is grey")
    fact_id = await memory.store.insert_fact(
        "agent", FactDraft("Has a greyhound named Pixel", kind="identity", slot="pet"), at=NOW
    )
    await memory.store.add_episode("agent", EpisodeDraft("Adopting Pixel the greyhound",
                                                  topics=["pets"]), at=NOW)
    await memory.drain()

    results = await memory.search("agent", "greyhound Pixel", now=NOW)
    assert {r.kind for r in results} == {"identity", "episode", "transcript"}
    assert all(r.score > 0 for r in results)
    assert "the weather is grey" not in [r.text for r in results]
    assert results == sorted(results, key=lambda r: r.score, reverse=True)
    fact = next(r for r in results if r.kind == "identity")
    assert (fact.item_id, fact.provenance["kind"], fact.provenance["slot"]) == (
        fact_id, "identity", "pet")
    turn = next(r for r in results if r.kind == "transcript")
    assert turn.text == "we adopted a greyhound called Pixel"
    assert (turn.provenance["turn_index"], turn.provenance["role"], turn.at) == (0, "user", NOW)
    assert set(turn.components) >= {"bm25", "vector", "fused"}

    only_facts = await memory.search("agent", "greyhound", kinds=("identity", "pinned"), now=NOW)
    assert [r.kind for r in only_facts] == ["identity"]
    only_episodes = await memory.search("agent", "greyhound", kinds=("episode",), now=NOW)
    assert [r.kind for r in only_episodes] == ["episode"]


async def test_superseded_and_deleted_facts_are_never_returned(memory: Memory) -> None:
    old = await memory.store.insert_fact("agent", FactDraft("Lives in Berlin", slot="home"))
    await memory.drain()
    new = await memory.store.supersede_fact("agent", old, FactDraft("Lives in Paris", slot="home"))
    gone = await memory.store.insert_fact("agent", FactDraft("Lives near a Berlin lake"))
    await memory.store.delete_fact("agent", gone)
    await memory.drain()
    for query in ("lives Berlin", "lives Paris"):
        assert [r.item_id for r in await memory.search("agent", query)] == [new]


async def test_every_text_match_is_returned(memory: Memory) -> None:
    await say(memory, "agent", "Berlin in spring", "Berlin Berlin Berlin", "Paris")
    results = await memory.search("agent", "Berlin", fusion=BM25_ONLY)
    assert sorted(r.text for r in results) == ["Berlin Berlin Berlin", "Berlin in spring"]


async def test_a_casual_spelling_answers_the_spelled_out_word_and_back(memory: Memory) -> None:
    await say(memory, "agent", "board games night with my gf", "my girlfriend loves wine",
              "a quiet evening alone")
    by_question = await memory.search("agent", "what did he do with his girlfriend?",
                                      fusion=BM25_ONLY)
    by_chat = await memory.search("agent", "any plans with your gf?", fusion=BM25_ONLY)
    expected = ["board games night with my gf", "my girlfriend loves wine"]
    assert sorted(r.text for r in by_question) == expected
    assert sorted(r.text for r in by_chat) == expected


async def test_items_without_vectors_are_found_by_text(memory: Memory) -> None:
    await say(memory, "agent", "the quokka smiled")
    results = await memory.search("agent", "quokka")  # the worker has not run
    assert [r.text for r in results] == ["the quokka smiled"]
    assert results[0].components["vector"] == 0.0


async def test_vectors_find_what_words_alone_miss(memory: Memory) -> None:
    # The hashing embedder shares bigrams; BM25 needs the exact (stemmed) words.
    await say(memory, "agent", "blue whale", "red panda")
    await memory.drain()
    vector_only = Fusion(vector_weight=1.0)
    results = await memory.search("agent", "blue whale", fusion=vector_only, top_k=1)
    assert [r.text for r in results] == ["blue whale"]
    assert results[0].components["bm25"] == 0.0


def test_affordable_terms_keeps_the_rarest_within_the_budget() -> None:
    terms = ["went", "kayaking", "maria", "zebra"]
    # Query order kept; the commonest dropped once the budget is spent.
    assert affordable_terms(terms, [900, 40, 300, 0], 500) == ["kayaking", "maria"]
    assert affordable_terms(terms, [900, 40, 300, 0], 2_000) == ["went", "kayaking", "maria"]
    # The rarest term found is kept even when it alone is over the budget.
    assert affordable_terms(terms, [900, 700, 800, 0], 500) == ["kayaking"]
    assert affordable_terms(terms, [0, 0, 0, 0], 500) == []
    # Counts stop just past the budget, so the terms past it tie: the query's first wins.
    assert affordable_terms(terms, [501, 501, 501, 0], 500) == ["went"]
    # Together the terms may match twice the budget.
    assert affordable_terms(terms, [400, 400, 400, 0], 500) == ["went", "kayaking"]


async def test_the_commonest_terms_give_way_to_the_match_budget(memory: Memory) -> None:
    await say(memory, "agent", *[f"an apple a day number {n}" for n in range(6)],
              "a kiwi and an apple")
    budget_three = Fusion(vector_weight=0.0, match_budget=3)
    # "apple" (7 documents) does not fit next to "kiwi" (1): only kiwi is scored.
    results = await memory.search("agent", "apple kiwi", fusion=budget_three)
    assert [r.text for r in results] == ["a kiwi and an apple"]
    # Alone and over the budget, a term is scored on its newest matches.
    results = await memory.search("agent", "apple", fusion=budget_three)
    assert sorted(r.text for r in results) == [
        "a kiwi and an apple", "an apple a day number 4", "an apple a day number 5"]
    exact = await memory.search("agent", "apple", fusion=BM25_ONLY)
    assert len(exact) == 7


async def test_documents_with_every_common_term_come_first(memory: Memory) -> None:
    await say(memory, "agent", *[f"kiwi {n}" for n in range(5)],
              *[f"banana {n}" for n in range(8)], "a banana kiwi smoothie")
    budget_three = Fusion(vector_weight=0.0, match_budget=3)
    # Both terms are over the budget: the one document holding both, whatever their order.
    for query in ("kiwi banana", "banana kiwi"):
        results = await memory.search("agent", query, fusion=budget_three)
        assert [r.text for r in results] == ["a banana kiwi smoothie"]


async def test_the_match_budget_looks_past_a_busier_agent(memory: Memory) -> None:
    budget_three = Fusion(vector_weight=0.0, match_budget=3)
    await say(memory, "few", "my apple tree", "apple pie recipe", at=NOW - 30 * DAY)
    await say(memory, "some", *[f"apple crumble {n}" for n in range(5)], at=NOW - 20 * DAY)
    await say(memory, "busy", *[f"apple number {n}" for n in range(10)])
    # The latest "apple" documents of all agents are the busy agent's: the others' own
    # latest matches are scored instead (all of them for an agent with fewer).
    few = await memory.search("few", "apple", fusion=budget_three)
    assert sorted(r.text for r in few) == ["apple pie recipe", "my apple tree"]
    some = await memory.search("some", "apple", fusion=budget_three)
    assert sorted(r.text for r in some) == [f"apple crumble {n}" for n in (2, 3, 4)]


async def test_a_scoped_search_finds_facts_by_vector_among_many_messages(
    memory: Memory,
) -> None:
    # 400 messages nearer the query than the one fact: nearest neighbours of every type
    # would all be messages.
    await say(memory, "agent", *[f"blue whale song {n}" for n in range(400)])
    await memory.drain()
    no_facts_yet = await memory.search("agent", "blue whale", kinds=("identity", "pinned"))
    assert no_facts_yet == []
    fact_id = await memory.store.insert_fact("agent", FactDraft("Saw a blue fish and a whale"))
    await memory.drain()
    results = await memory.search("agent", "blue whale", kinds=("identity", "pinned"),
                           fusion=Fusion(vector_weight=1.0))
    assert [(r.kind, r.item_id) for r in results] == [("pinned", fact_id)]
    assert results[0].components["vector"] > 0


class BrokenEmbedder:
    name = "broken"
    dim = 8

    async def load(self) -> None:
        pass

    async def embed(self, texts):
        raise ConnectionError("embedding endpoint unreachable")


async def test_a_failing_embedder_leaves_text_search_working(tmp_path: Path) -> None:
    memory = await open_memory(tmp_path, BrokenEmbedder())
    try:
        await say(memory, "agent", "the lighthouse keeper")
        assert [r.text for r in await memory.search("agent", "lighthouse")] == [
            "the lighthouse keeper"]
    finally:
        await memory.close()


async def test_days_window_and_recency(memory: Memory) -> None:
    await say(memory, "agent", "chess opening practice", at=NOW - 30 * DAY, key="old")
    await say(memory, "agent", "chess opening practice", at=NOW - 1 * DAY, key="new")
    await memory.drain()
    recent = await memory.search("agent", "chess", days=7, now=NOW)
    assert [r.at for r in recent] == [NOW - DAY]
    both = await memory.search("agent", "chess", now=NOW, recency_half_life_days=7)
    assert [r.at for r in both] == [NOW - DAY, NOW - 30 * DAY]
    assert both[0].components["recency"] > both[1].components["recency"]


async def test_mmr_passes_over_a_near_duplicate(memory: Memory) -> None:
    texts = ("pasta recipe with garlic", "pasta recipe with garlic and oil",
             "pasta shapes explained", "a long story that mentions pasta once in passing")
    for n, text in enumerate(texts):  # separate sessions: each is embedded alone
        await say(memory, "agent", text, key=f"s{n}")
    await memory.drain()
    plain = await memory.search("agent", "pasta recipe garlic", top_k=2, fusion=BM25_ONLY)
    diverse = await memory.search("agent", "pasta recipe garlic", top_k=2, fusion=BM25_ONLY,
                           mmr_lambda=0.3)
    assert [r.text for r in plain] == list(texts[:2])
    assert diverse[0].text == texts[0] and diverse[1].text != texts[1]


@pytest.mark.parametrize("query", [
    "", "   ", '"', '"unbalanced', "a*", "NEAR(a b)", "x AND OR NOT y", "(((", "content:foo",
    "col:val ^start", "-minus +plus", "naïve café 東京 😀", "\x00\x01", "'; DROP TABLE facts; --",
    "word " * 2000,
])
async def test_hostile_queries_never_crash(memory: Memory, query: str) -> None:
    await say(memory, "agent", "naïve café in 東京 with foo content", "AND OR NOT NEAR")
    await memory.drain()
    results = await memory.search("agent", query)
    assert all(r.kind == "transcript" for r in results)


async def test_fts_operators_are_matched_as_words(memory: Memory) -> None:
    await say(memory, "agent", "AND OR NOT NEAR", "unrelated sentence")
    results = await memory.search("agent", "NOT NEAR", fusion=BM25_ONLY)
    assert [r.text for r in results] == ["AND OR NOT NEAR"]


async def test_unknown_agent_gets_nothing(memory: Memory) -> None:
    await say(memory, "agent", "hello there")
    await memory.drain()
    assert await memory.search("stranger", "hello there") == []


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"kinds": ("everything",)}, "kinds"), ({"top_k": 0}, "top_k"), ({"top_k": 10_000}, "top_k"),
    ({"days": -1}, "days"), ({"days": float("nan")}, "days"),
    ({"recency_half_life_days": 0}, "recency_half_life_days"), ({"mmr_lambda": 2.0}, "mmr_lambda"),
])
async def test_bad_arguments_raise_invalid_argument(memory: Memory, kwargs, param: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await memory.search("agent", "hello", **kwargs)
    assert caught.value.param == param
    with pytest.raises(InvalidArgument):
        await memory.search("", "hello")


_word = st.sampled_from(["apple", "river", "stone", "cloud", "ember", "violet", "tide"])
_text = st.lists(_word, min_size=1, max_size=5).map(" ".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts_a=st.lists(_text, min_size=1, max_size=6),
       texts_b=st.lists(_text, max_size=6), query=_text,
       kinds=st.sampled_from([None, ("identity", "pinned"), ("transcript",)]))
def test_no_item_of_one_agent_is_ever_returned_for_another(
    texts_a: list[str], texts_b: list[str], query: str, kinds
) -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as folder:
            memory = await open_memory(Path(folder), HashingEmbedder())
            try:
                # Same words for both agents; a marker word tells whose row a result is.
                for agent, texts in (("a", texts_a), ("b", texts_b)):
                    marked = [f"{text} owner{agent}" for text in texts]
                    await say(memory, agent, *marked)
                    for text in marked:
                        await memory.store.insert_fact(agent, FactDraft(text))
                await memory.drain()
                for agent in ("a", "b"):
                    results = await memory.search(agent, query, kinds=kinds, top_k=50)
                    assert all(r.text.endswith(f"owner{agent}") for r in results)
            finally:
                await memory.store.close()

    asyncio.run(scenario())


async def test_adjacent_messages_are_those_said_just_before_and_after(memory: Memory) -> None:
    session_id = await memory.store.session("agent", "talk")
    await memory.store.add_transcript("agent", session_id, [
        TranscriptMessage(0, "user", "hello", NOW),
        TranscriptMessage(0, "assistant", "hi there", NOW),
        TranscriptMessage(1, "user", "do you still keep turtles?", NOW + 10),
        TranscriptMessage(1, "assistant", "yes, three of them", NOW + 10),
        TranscriptMessage(2, "user", "lovely", NOW + 20),
    ])
    other = await memory.store.session("agent", "another talk")
    await memory.store.add_transcript("agent", other, [
        TranscriptMessage(0, "user", "unrelated", NOW + 30)])
    ids = {r.text: r.item_id for r in await memory.search("agent", "turtles three hello "
                                                          "there lovely unrelated", top_k=20)}
    adjacent = await memory.store.adjacent_messages(
        "agent", [ids["do you still keep turtles?"], ids["hello"], ids["lovely"],
                  ids["unrelated"]])

    def texts(text: str) -> list[str]:
        return [m.text for m in adjacent.get(ids[text], [])]

    assert texts("do you still keep turtles?") == ["hi there", "yes, three of them"]
    assert texts("hello") == ["hi there"]
    assert texts("lovely") == ["yes, three of them"]
    assert texts("unrelated") == []
    assert await memory.store.adjacent_messages("someone else", [ids["hello"]]) == {}
    since = await memory.store.adjacent_messages(
        "agent", [ids["do you still keep turtles?"]], since=NOW + 5)
    assert [m.text for m in since[ids["do you still keep turtles?"]]] == ["yes, three of them"]


async def test_with_neighbours_an_answer_comes_with_the_line_it_answers(memory: Memory) -> None:
    session_id = await memory.store.session("agent", "talk")
    await memory.store.add_transcript("agent", session_id, [
        TranscriptMessage(0, "user", "do you still keep turtles?", NOW),
        TranscriptMessage(0, "assistant", "yes, three of them, they make me feel calm", NOW),
    ])
    await say(memory, "agent", *[f"a walk in park number {n}" for n in range(5)], key="other")
    await memory.drain()
    plain = await memory.search("agent", "turtles", fusion=BM25_ONLY)
    assert [r.text for r in plain] == ["do you still keep turtles?"]
    found = await memory.search("agent", "turtles", fusion=BM25_ONLY, neighbours=True)
    assert [r.text for r in found] == [
        "do you still keep turtles?", "yes, three of them, they make me feel calm"]
    assert found[1].components["neighbour"] > 0


async def test_a_name_most_of_the_memory_says_still_lifts_the_items_naming_that_person(
    memory: Memory,
) -> None:
    """"Melanie" is in most of this memory, so the search looks past the word; the
    question is still about her: her park day beats Caroline's better-worded one."""
    await say(memory, "agent", *[f"Melanie: chat {n} with Caroline" for n in range(40)])
    await say(memory, "agent", "Caroline: the park, the big park, a park day with melanie",
              "Melanie: we went to the park", key="parks")
    await memory.drain()
    assert "melanie" in await memory.common_words("agent")
    found = await memory.search("agent", "When did Melanie go to the park?", fusion=BM25_ONLY)
    assert [r.text for r in found[:2]] == [
        "Melanie: we went to the park",
        "Caroline: the park, the big park, a park day with melanie",
    ]
    assert found[0].components["name"] == NAME_LIFT
    assert "name" not in found[1].components  # the word in lower case is no name
    unnamed = await memory.search("agent", "when did we go to the park?", fusion=BM25_ONLY)
    assert unnamed[0].text.startswith("Caroline: the park")
    assert all("name" not in r.components for r in unnamed)


async def test_a_name_only_spoken_to_lifts_nothing(memory: Memory) -> None:
    """An assistant that greets its user by name in every reply says the name most: a
    question naming the user lifts the lines about them, not every greeting."""
    await say(memory, "agent", *[f"Great question, Ada! Here is answer {n}." for n in range(40)])
    await say(memory, "agent", "Thanks, Ada! Green tea is a fine drink.",
              "Wow Ada, tea again?", "My sister Ada drinks green tea every morning",
              key="tea")
    await memory.drain()
    assert "ada" in await memory.common_words("agent")
    found = await memory.search("agent", "What does Ada drink?", fusion=BM25_ONLY)
    named = {r.text: "name" in r.components for r in found}
    assert named["My sister Ada drinks green tea every morning"]
    assert not named["Thanks, Ada! Green tea is a fine drink."]
    assert not named.get("Wow Ada, tea again?", False)
    assert found[0].text == "My sister Ada drinks green tea every morning"


async def test_the_yardstick_is_what_was_said_whether_or_not_it_was_summarised(
    memory: Memory,
) -> None:
    """How near memory comes to requests anyone sends is measured on the messages: a
    summary that reads like one of them (as distillation writes them) does not raise the
    bar a user's own question must clear."""
    prompts = ("How do I center a div in CSS?", "Write a haiku about autumn leaves.")
    for agent in ("said", "summarised"):
        await say(memory, agent, "my greyhound Pixel chewed the sofa again",
                  "we are moving to Leeds in March", "the plumber comes on Tuesday")
    for prompt in prompts:
        await memory.store.add_episode("summarised", EpisodeDraft(prompt, topics=[]), at=NOW)
    await memory.store.add_episode("only-summaries", EpisodeDraft(prompts[0], topics=[]), at=NOW)
    await memory.drain()
    said = await memory.reference_similarities("said", prompts)
    assert max(said) < 0.9
    assert await memory.reference_similarities("summarised", prompts) == said
    # A memory of summaries alone is measured on them.
    assert max(await memory.reference_similarities("only-summaries", prompts)) > 0.99


async def test_each_set_of_reference_prompts_keeps_its_own_spread(memory: Memory) -> None:
    """The gate measures a message against requests in its own language: asking for one
    set does not replace the spread measured for another."""
    await say(memory, "bilingual", "my greyhound Pixel chewed the sofa again",
              "mein Windhund Pixel hat wieder das Sofa angeknabbert")
    await memory.drain()
    english = ("How do I train my dog to stop chewing?", "Write a haiku about autumn leaves.")
    german = ("Wie gewöhne ich meinem Hund das Kauen ab?", "Schreib ein Haiku über Herbstlaub.")
    first = await memory.reference_similarities("bilingual", english)
    other = await memory.reference_similarities("bilingual", german)
    assert other != first
    assert await memory.reference_similarities("bilingual", english) == first
    assert await memory.reference_similarities("bilingual", german) == other


def test_word_pairs_are_neighbouring_content_words_within_a_clause() -> None:
    assert word_pairs("the plumber guy who fixed the water heater") == [
        "plumber guy", "water heater"]
    assert word_pairs("the code, gate four") == ["gate four"]  # nothing across the comma
    assert word_pairs("what is it") == []


async def test_word_counts_count_neighbouring_words_as_a_phrase(memory: Memory) -> None:
    await say(memory, "agent", "the gate code at the storage unit is 4471",
              "code review went fine, then gate 9 for boarding")
    words, phrases, items = await memory.word_counts("agent", "storage unit gate code")
    assert words["gate"] == 2 and words["code"] == 2
    assert phrases["gate code"] == 1 and phrases["storage unit"] == 1  # side by side once
    assert phrases["unit gate"] == 0
    assert items == 2

"""Consolidation: decay and eviction, promotion, pruning, episode merging, idempotence,
agent isolation, search consistency, and the promoted_at migration."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemoproxy.errors import InvalidArgument
from mnemoproxy.memory import Memory
from mnemoproxy.memory.background.consolidate import (
    PINNED_HALF_LIFE_DAYS,
    consolidate,
    effective_salience,
    near_duplicate_groups,
)
from mnemoproxy.memory.models import EpisodeDraft, FactDraft, FactKind
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.records import TranscriptMessage
from mnemoproxy.memory.store.schema import MIGRATIONS
from mnemoproxy.memory.write.facts import NEAR_DUPLICATE_JACCARD, normalise
from tests.support.servers.raw_store import rows as raw_rows

DAY = 86_400.0
NOW = 1_700_000_000.0
FLOOR = 0.2
RETENTION_DAYS = 365


async def run(store: Store, agent_id: str | None = None, now: float = NOW):
    return await consolidate(
        store, salience_floor=FLOOR, episode_retention_days=RETENTION_DAYS, now=now,
        agent_id=agent_id,
    )


async def pinned(store: Store, content: str, *, days_ago: float, salience: float = 0.5,
                 agent: str = "agent", kind: FactKind = "pinned") -> int:
    draft = FactDraft(content, kind=kind, salience=salience)
    at = NOW - days_ago * DAY
    return await store.insert_fact(agent, draft, at=at, stored_at=at)


async def episode(store: Store, summary: str, *, days_ago: float, agent: str = "agent",
                  **fields: Any) -> int:
    at = NOW - days_ago * DAY
    return await store.add_episode(agent, EpisodeDraft(summary, **fields),
                                   started_at=at, ended_at=at + 600, at=at)


def rows(store: Store, sql: str) -> list[tuple[object, ...]]:
    return raw_rows(store, sql)


# -- decay ----------------------------------------------------------------------------------

def test_decay_halves_per_half_life_from_the_base_time_and_spares_identity() -> None:
    base = NOW - PINNED_HALF_LIFE_DAYS * DAY
    assert effective_salience("pinned", 0.8, base, 1, 0, now=NOW) == pytest.approx(0.4)
    assert effective_salience("pinned", 0.8, NOW, 1, 0, now=NOW) == 0.8
    # Confirmed by three sources or five uses: half the speed.
    assert effective_salience("pinned", 0.8, base, 3, 0, now=NOW) == pytest.approx(0.8 * 0.5**0.5)
    assert effective_salience("pinned", 0.8, base, 1, 5, now=NOW) == pytest.approx(0.8 * 0.5**0.5)
    assert effective_salience("identity", 0.8, NOW - 3650 * DAY, 1, 0, now=NOW) == 0.8
    assert effective_salience("pinned", 0.8, NOW + DAY, 1, 0, now=NOW) == 0.8  # clock skew


async def test_faded_pinned_facts_are_evicted_and_logged(store: Store) -> None:
    stale = await pinned(store, "Likes the old bakery", days_ago=120)  # 0.5 -> 0.198
    fresh = await pinned(store, "Plays chess on Sundays", days_ago=100)  # 0.5 -> 0.232
    surfaced = await pinned(store, "Keeps bees", days_ago=300)
    await store.bump_use("agent", [("fact", surfaced)], at=NOW - 10 * DAY)
    used = await pinned(store, "Runs marathons", days_ago=200)  # 0.107 unless confirmed
    for _ in range(5):
        await store.bump_use("agent", [("fact", used)], at=NOW - 200 * DAY)
    identity = await pinned(store, "Name is Ana", days_ago=3000, salience=0.3, kind="identity")

    report = await run(store)

    assert report.facts_evicted == 1
    assert {f.id for f in await store.current_facts("agent")} == {fresh, surfaced, used, identity}
    assert await store.fact("agent", stale) is None
    # A soft delete: the row is still there, stamped with the pass's time.
    assert rows(store, f"SELECT deleted_at FROM facts WHERE id = {stale}") == [(NOW,)]
    log = await store.processing_log("agent")
    assert [entry["event"] for entry in log] == ["consolidated"]
    assert log[0]["detail"]["facts_evicted"] == [
        {"id": stale, "content": "Likes the old bakery", "salience": 0.1984}
    ]


async def test_decay_is_not_compounded_by_repeated_passes(store: Store) -> None:
    fact_id = await pinned(store, "Collects stamps", days_ago=100)
    for day in range(10):  # daily passes over the fact's last 10 days above the floor
        await run(store, now=NOW + day * DAY)
    assert [f.id for f in await store.current_facts("agent")] == [fact_id]
    assert (await store.current_facts("agent"))[0].salience == 0.5
    await run(store, now=NOW + 20 * DAY)  # 120 days since its base time: below the floor
    assert await store.current_facts("agent") == []


# -- promotion ------------------------------------------------------------------------------

async def test_facts_restated_in_three_sessions_are_promoted_once(store: Store) -> None:
    confirmed = await pinned(store, "Drinks green tea", days_ago=5)
    nearly_full = await pinned(store, "Is a nurse", days_ago=5, salience=0.95)
    twice = await pinned(store, "Likes jazz", days_ago=5)
    identity = await pinned(store, "Lives in Lisbon", days_ago=5, kind="identity")
    for fact_id in (confirmed, nearly_full, identity, confirmed, nearly_full, identity, twice):
        assert await store.merge_fact("agent", fact_id, salience=0.0, at=NOW - 2 * DAY)

    first = await run(store)
    await store.merge_fact("agent", confirmed, salience=0.0, at=NOW - DAY)  # a fourth source
    second = await run(store, now=NOW + DAY)

    assert (first.facts_promoted, second.facts_promoted) == (2, 0)
    salience = {f.id: f.salience for f in await store.current_facts("agent")}
    assert salience[confirmed] == pytest.approx(0.6)
    assert salience[nearly_full] == 1.0
    assert (salience[twice], salience[identity]) == (0.5, 0.5)
    # Promotion is not a reinforcement: it leaves the decay's base time alone.
    assert rows(store, f"SELECT updated_at FROM facts WHERE id = {nearly_full}") == [
        (NOW - 2 * DAY,)
    ]


# -- episodes -------------------------------------------------------------------------------

async def test_near_duplicate_episodes_merge_into_the_one_that_happened_first(
    store: Store,
) -> None:
    # The later episode is inserted first: "older" means it happened first.
    later = await episode(store, "User planned a trip to Lisbon with Ana in June",
                          days_ago=3, topics=["travel", "flights"], entities=["lisbon", "Ana"],
                          decisions=["book the flights"], salience=0.8)
    earlier = await episode(store, "User planned a trip to Lisbon with Ana in May",
                            days_ago=30, topics=["travel"], entities=["Lisbon"], salience=0.4)
    other = await episode(store, "User repaired the kitchen sink", days_ago=10)
    await store.bump_use("agent", [("episode", later), ("episode", earlier)], at=NOW - DAY)

    report = await run(store)

    assert report.episodes_merged == 1
    live = {e.id: e for e in await store.recent_episodes("agent", limit=10)}
    assert set(live) == {earlier, other}
    kept = live[earlier]
    assert kept.summary == "User planned a trip to Lisbon with Ana in May"
    assert (kept.topics, kept.entities) == (["travel", "flights"], ["Lisbon", "Ana"])
    assert kept.decisions == ["book the flights"]
    assert (kept.salience, kept.use_count, kept.last_used) == (0.8, 2, NOW - DAY)
    assert (kept.started_at, kept.ended_at) == (NOW - 30 * DAY, NOW - 3 * DAY + 600)
    # The FTS mirror follows: the kept episode is now found by the topic it gained.
    assert [hit[1] for hit in await store.bm25_candidates("agent", ["flights"], ("episode",))] == [
        earlier
    ]
    detail = (await store.processing_log("agent"))[0]["detail"]
    assert detail["episodes_merged"] == [[earlier, [later]]]


def test_each_episode_is_compared_with_the_kept_ones_only() -> None:
    first = "a b c d e f g h i j"
    second = "a b c d e f g h i x"  # 9/11 alike with the first
    third = "a b c d e f g h x y"  # 9/11 alike with the second, 8/12 with the first
    assert near_duplicate_groups([(1, first), (2, second), (3, third)]) == {1: [2]}
    assert near_duplicate_groups([(1, first), (2, ""), (3, "A, b c d e f g h i j!")]) == {1: [3]}


def _brute_force_groups(summaries: list[tuple[int, str]]) -> dict[int, list[int]]:
    kept: list[tuple[int, set[str]]] = []
    groups: dict[int, list[int]] = {}
    for episode_id, text in summaries:
        tokens = set(normalise(text).split())
        if not tokens:
            continue
        match = next((k for k, other in kept
                      if len(tokens & other) / len(tokens | other) >= NEAR_DUPLICATE_JACCARD),
                     None)
        if match is None:
            kept.append((episode_id, tokens))
        else:
            groups.setdefault(match, []).append(episode_id)
    return groups


@given(st.lists(st.lists(st.sampled_from("abcdefghijklmnop"), min_size=0, max_size=16),
                max_size=40))
def test_prefix_filtering_finds_exactly_what_comparing_every_pair_finds(
    token_lists: list[list[str]],
) -> None:
    summaries = [(n, " ".join(tokens)) for n, tokens in enumerate(token_lists)]
    assert near_duplicate_groups(summaries) == _brute_force_groups(summaries)


async def test_episodes_past_retention_are_pruned_and_the_transcript_stays(
    store: Store,
) -> None:
    old = await episode(store, "An old chat about gardening", days_ago=400)
    recent = await episode(store, "A chat about bread", days_ago=300)
    # Created long ago, but it ended recently: the end is what counts.
    long_running = await store.add_episode(
        "agent", EpisodeDraft("A long project"), started_at=NOW - 500 * DAY,
        ended_at=NOW - 10 * DAY, at=NOW - 500 * DAY)
    session_id = await store.session("agent", "s")
    await store.add_transcript("agent", session_id, [
        TranscriptMessage(0, "user", "my tomatoes are growing", NOW - 400 * DAY)])

    report = await run(store)

    assert report.episodes_pruned == 1
    assert {e.id for e in await store.recent_episodes("agent")} == {recent, long_running}
    assert rows(store, f"SELECT deleted_at FROM episodes WHERE id = {old}") == [(NOW,)]
    assert [m.content for m in await store.session_transcript("agent", session_id)] == [
        "my tomatoes are growing"]


# -- the pass as a whole --------------------------------------------------------------------

async def _mixed_memory(store: Store, agent: str) -> None:
    await pinned(store, "Likes the old bakery", days_ago=120, agent=agent)
    confirmed = await pinned(store, "Drinks green tea", days_ago=5, agent=agent)
    for _ in range(2):
        await store.merge_fact(agent, confirmed, salience=0.0, at=NOW - DAY)
    await episode(store, "We compared three laptops for work", days_ago=20, agent=agent)
    await episode(store, "We compared three laptops for work today", days_ago=2, agent=agent)
    await episode(store, "An old chat about gardening", days_ago=400, agent=agent)


def _snapshot(store: Store) -> list[list[tuple[object, ...]]]:
    return [rows(store, f"SELECT * FROM {table} ORDER BY 1, 2")
            for table in ("facts", "episodes", "processing_log", "embeddings")]


async def test_a_second_pass_at_the_same_time_changes_nothing(store: Store) -> None:
    await _mixed_memory(store, "agent")
    first = await run(store)
    assert (first.facts_promoted, first.facts_evicted, first.episodes_pruned,
            first.episodes_merged) == (1, 1, 1, 1)
    before = _snapshot(store)

    second = await run(store)

    assert second.as_dict() | {"seconds": 0} == {
        "agents": 1, "facts_evicted": 0, "episodes_merged": 0, "episodes_pruned": 0,
        "facts_promoted": 0, "seconds": 0}
    assert _snapshot(store) == before


async def test_a_pass_never_crosses_agents(store: Store) -> None:
    await _mixed_memory(store, "a")
    await _mixed_memory(store, "b")
    await episode(store, "Shared words in two agents", days_ago=1, agent="a")
    await episode(store, "Shared words in two agents", days_ago=1, agent="b")
    untouched_b = _snapshot(store)[0:2]

    only_a = await run(store, agent_id="a")

    assert only_a.agents == 1 and only_a.facts_evicted == 1
    assert [r for r in _snapshot(store)[0] if r[1] == "b"] == [
        r for r in untouched_b[0] if r[1] == "b"]
    assert [r for r in _snapshot(store)[1] if r[1] == "b"] == [
        r for r in untouched_b[1] if r[1] == "b"]
    assert await store.processing_log("b") == []

    every_agent = await run(store)
    assert (every_agent.agents, every_agent.facts_evicted, every_agent.episodes_merged) == (2, 1, 1)
    for agent in ("a", "b"):  # the same summary in two agents is not a duplicate
        summaries = [e.summary for e in await store.recent_episodes(agent)]
        assert summaries.count("Shared words in two agents") == 1


async def test_search_no_longer_returns_what_a_pass_removed(memory: Memory) -> None:
    store = memory.store
    stale = await pinned(store, "Remembers the zeppelin museum", days_ago=200)
    kept = await episode(store, "Visited the zeppelin museum with Ana", days_ago=20)
    duplicate = await episode(store, "Visited the zeppelin museum with Ana today", days_ago=2)
    pruned = await episode(store, "Read about zeppelin history", days_ago=400)
    await memory.drain()  # vectors for all of them, so both halves of search see them
    before = await memory.search("agent", "zeppelin museum", now=NOW)
    assert {(r.kind, r.item_id) for r in before} == {
        ("pinned", stale), ("episode", kept), ("episode", duplicate), ("episode", pruned)}

    await run(store)
    await memory.drain()  # the merged episode is re-embedded with its new labels

    results = await memory.search("agent", "zeppelin museum", now=NOW)
    assert [(r.kind, r.item_id) for r in results] == [("episode", kept)]
    assert rows(store, f"SELECT COUNT(*) FROM embeddings WHERE item_id = {kept} "
                       "AND item_type = 'episode'") == [(1,)]


async def test_bad_arguments_are_refused(store: Store) -> None:
    with pytest.raises(InvalidArgument, match="salience_floor"):
        await consolidate(store, salience_floor=1.5, episode_retention_days=30)
    with pytest.raises(InvalidArgument, match="episode_retention_days"):
        await consolidate(store, salience_floor=0.2, episode_retention_days=0)
    with pytest.raises(InvalidArgument, match="agent_id"):
        await consolidate(store, salience_floor=0.2, episode_retention_days=30, agent_id=" ")


# -- migration ------------------------------------------------------------------------------

async def test_database_before_promotion_column_upgrades(tmp_path: Path) -> None:
    promotion = [name for name, _ in MIGRATIONS].index("m003_fact_promotion")
    old = await Store.open(tmp_path, migrations=MIGRATIONS[:promotion])
    fact_id = await old.insert_fact("agent", FactDraft("Drinks green tea"), at=NOW)
    for _ in range(2):
        await old.merge_fact("agent", fact_id, salience=0.0, at=NOW)
    await old.close()
    with sqlite3.connect(tmp_path / "memory.db") as db:
        assert "promoted_at" not in {r[1] for r in db.execute("PRAGMA table_info(facts)")}

    upgraded = await Store.open(tmp_path)
    try:
        assert (await run(upgraded)).facts_promoted == 1
        assert rows(upgraded, f"SELECT promoted_at FROM facts WHERE id = {fact_id}") == [(NOW,)]
    finally:
        await upgraded.close()

"""The SQLite store: migrations, idempotent writes, fact lifecycle, FTS sync, agent isolation."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemoproxy.errors import InvalidArgument, MemoryFailure
from mnemoproxy.memory.models import EpisodeDraft, FactDraft, Turn
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.knowledge.retrieval import _EMBED_SOURCES
from mnemoproxy.memory.store.postgres.schema import PG_MIGRATIONS
from mnemoproxy.memory.store.records import TranscriptMessage
from mnemoproxy.memory.store.schema import MIGRATIONS
from tests.support.servers.raw_store import raw


def messages(*texts: str, start: int = 0, at: float = 1000.0) -> list[TranscriptMessage]:
    return [
        TranscriptMessage(start + n // 2, "user" if n % 2 == 0 else "assistant", text, at + n)
        for n, text in enumerate(texts)
    ]


async def test_blank_database_gets_every_migration(store: Store) -> None:
    with raw(store) as db:
        names = [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY name")]
        if store.dialect == "postgres":
            assert names == [name for name, _ in PG_MIGRATIONS]
        else:
            assert names == [name for name, _ in MIGRATIONS]
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_database_at_previous_step_upgrades(tmp_path: Path) -> None:
    old = await Store.open(tmp_path, migrations=MIGRATIONS[:-1])
    await old.close()
    with sqlite3.connect(tmp_path / "memory.db") as db:
        assert db.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0] == len(MIGRATIONS) - 1
    upgraded = await Store.open(tmp_path)
    try:
        session_id = await upgraded.session("a", "s")
        await upgraded.add_transcript("a", session_id, messages("the zebra grazes"))
        assert await upgraded.bm25_candidates("a", ["zebra"], ("transcript",))
    finally:
        await upgraded.close()
    reopened = await Store.open(tmp_path)
    await reopened.close()  # nothing left to apply, nothing applied twice


async def test_reads_run_side_by_side_and_stop_cleanly_at_close(
    tmp_path: Path, store_url: str
) -> None:
    store = await Store.open(tmp_path, store_url=store_url)
    session_id = await store.session("a", "s")
    await store.add_transcript("a", session_id, messages("the zebra grazes", "so it does"))
    found = await asyncio.gather(*(
        store.bm25_candidates("a", ["zebra"], ("transcript",)) for _ in range(20)))
    assert all(len(hits) == 1 for hits in found)
    await store.close()
    await store.close()  # a second close is harmless
    with pytest.raises(MemoryFailure, match="closed"):
        await store.bm25_candidates("a", ["zebra"], ("transcript",))


async def test_a_write_in_one_hop_commits_all_or_nothing(store: Store) -> None:
    def agent_then_failure(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO agents (id, created_at, last_active) VALUES ('a', 1, 1)")
        raise ValueError("half-way")

    with pytest.raises(ValueError, match="half-way"):
        await store._write_in_one_hop(agent_then_failure)
    assert not await store.has_agent("a")  # rolled back
    returned = await store._write_in_one_hop(
        lambda conn: conn.execute("INSERT INTO agents (id, created_at, last_active) "
                                  "VALUES ('a', 1, 1) RETURNING 1").fetchone()[0]
    )
    assert returned == 1 and await store.has_agent("a")  # the writer is usable after


async def test_a_cancelled_write_in_one_hop_ends_before_its_caller_hears(
    store: Store,
) -> None:
    started = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow(conn: sqlite3.Connection) -> None:
        loop.call_soon_threadsafe(started.set)
        conn.execute("INSERT INTO agents (id, created_at, last_active) VALUES ('a', 1, 1)")
        time.sleep(0.2)

    write = asyncio.create_task(store._write_in_one_hop(slow))
    await started.wait()
    write.cancel()
    with pytest.raises(asyncio.CancelledError):
        await write
    # Cancelled while it ran: the cancellation reaches the caller once it has committed
    # (the write lock held until then), never with the transaction still open.
    assert await store.has_agent("a")


async def test_session_is_created_once_per_key(store: Store) -> None:
    first = await store.session("agent", "key-1", at=10.0)
    again = await store.session("agent", "key-1", at=20.0)
    other = await store.session("agent", "key-2", at=30.0)
    assert again == first and other != first
    assert await store.latest_session("agent") == (other, "key-2")
    summary = await store.agents_summary()
    assert [entry["id"] for entry in summary] == ["agent"]
    assert summary[0]["last_active"] == 30.0


async def test_transcript_inserts_are_idempotent(store: Store) -> None:
    session_id = await store.session("agent", "s")
    assert await store.add_transcript("agent", session_id, messages("hi", "hello")) == 2
    assert await store.add_transcript("agent", session_id, messages("hi", "hello")) == 0
    mixed = messages("hi", "hello", "how are you", "fine")
    assert await store.add_transcript("agent", session_id, mixed) == 2
    stored = await store.session_transcript("agent", session_id)
    assert [(m.turn_index, m.role, m.content) for m in stored] == [
        (0, "user", "hi"), (0, "assistant", "hello"),
        (1, "user", "how are you"), (1, "assistant", "fine"),
    ]


async def test_a_message_is_embedded_with_the_one_before_it(store: Store) -> None:
    session_id = await store.session("agent", "s")
    await store.add_transcript("agent", session_id, messages("q0", "a0", "q1", "a1", "q2"))
    other_id = await store.session("agent", "other")
    await store.add_transcript("agent", other_id, messages("elsewhere", start=5))
    queued, items = await store.queued_for_vectors("transcript")
    assert len(queued) == 6  # every new message is queued for a vector
    day = "01 January 1970"
    assert [item.text for item in items] == [
        f"{day}: q0", f"{day}: q0\na0", f"{day}: a0\nq1", f"{day}: q1\na1",
        f"{day}: a1\nq2", f"{day}: elsewhere",
    ]
    # The previous message is found by seeking the session's index, not by walking the
    # session from its start (which made long sessions quadratic to embed).
    source = _EMBED_SOURCES["transcript"]
    if store.dialect == "sqlite":
        with raw(store) as db:
            plan = " ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {source}"))
        assert "turn_index<" in plan.replace(" ", "")


async def test_record_turns_stores_session_messages_and_signals_once(store: Store) -> None:
    assert await store.session_progress("agent", "s") == (None, 0)
    when = datetime(2024, 5, 8, 13, 56, tzinfo=UTC)
    turns = [(0, Turn("hi", "hello", when)), (1, Turn("plans?", "a hike"))]
    session_id, added = await store.record_turns("agent", "s", turns)
    assert added == 2
    assert await store.record_turns("agent", "s", turns) == (session_id, 0)
    assert await store.session_progress("agent", "s") == (session_id, 2)
    assert await store.latest_session("agent") == (session_id, "s")
    stored = await store.session_transcript("agent", session_id)
    assert [(m.turn_index, m.role, m.content) for m in stored] == [
        (0, "user", "hi"), (0, "assistant", "hello"), (1, "user", "plans?"),
        (1, "assistant", "a hike"),
    ]
    assert stored[0].at == when.timestamp()
    signals = await store.pending_signals("agent", session_id)
    assert [(s.turn_index, s.user_text, s.assistant_text) for s in signals] == [
        (0, "hi", "hello"), (1, "plans?", "a hike")]
    seeded = [(2, Turn("seeded", "without a signal", when))]
    assert await store.record_turns("agent", "s", seeded, queue_signals=False) == (session_id, 1)
    assert len(await store.pending_signals("agent", session_id)) == 2


async def test_pending_signal_lifecycle(store: Store) -> None:
    session_id = await store.session("agent", "s")
    assert await store.add_pending_signal("agent", session_id, 0, "u0", "a0", at=5.0)
    assert not await store.add_pending_signal("agent", session_id, 0, "u0", "a0", at=6.0)
    assert await store.add_pending_signal("agent", session_id, 1, "u1", "a1", at=7.0)
    pending = await store.pending_signals("agent", session_id)
    assert [s.turn_index for s in pending] == [0, 1]
    assert await store.sessions_with_pending_signals() == [("agent", session_id, 7.0)]

    ids = [s.id for s in pending]
    assert await store.bump_signal_attempts("agent", ids, "timeout") == 1
    assert await store.bump_signal_attempts("agent", ids[:1], "timeout again") == 2
    await store.mark_signals_done("agent", ids[1:])
    await store.dead_letter_signals("agent", ids[:1], "gave up after 2 attempts")
    assert await store.pending_signals("agent", session_id) == []
    assert await store.sessions_with_pending_signals() == []
    assert (await store.status("m"))["dead_signals"] == 1


async def test_fact_merge_supersede_and_delete(store: Store) -> None:
    session_id = await store.session("agent", "s")
    berlin = await store.insert_fact(
        "agent", FactDraft("Lives in Berlin", kind="identity", salience=0.4,
                           slot="identity:location"), source_session_id=session_id, at=100.0
    )
    tea = await store.insert_fact("agent", FactDraft("Prefers tea", tags=["drink"]), at=100.0)

    assert await store.merge_fact("agent", berlin, salience=0.9, at=200.0)
    merged = await store.fact("agent", berlin)
    assert merged is not None
    assert (merged.source_count, merged.salience, merged.updated_at) == (2, 0.9, 200.0)

    paris = await store.supersede_fact(
        "agent", berlin, FactDraft("Lives in Paris", kind="identity", slot="identity:location"),
        at=300.0,
    )
    current = await store.current_facts("agent", kind="identity", slot="identity:location")
    assert [f.content for f in current] == ["Lives in Paris"]
    old = await store.fact("agent", berlin)
    assert old is not None and (old.valid_to, old.superseded_by) == (300.0, paris)
    assert not await store.merge_fact("agent", berlin, salience=1.0)  # history is read-only

    assert await store.delete_fact("agent", tea)
    assert not await store.delete_fact("agent", tea)
    assert [f.id for f in await store.current_facts("agent")] == [paris]
    assert (await store.agents_summary())[0]["facts"] == 1


async def test_fts_mirrors_follow_updates_and_deletes(store: Store) -> None:
    fact_id = await store.insert_fact("agent", FactDraft("The cat is called Miso"))
    session_id = await store.session("agent", "s")
    await store.add_transcript("agent", session_id, messages("my cat Miso sleeps"))
    episode_id = await store.add_episode("agent", EpisodeDraft("Talked about pets",
                                                              topics=["cats"]))
    assert await store.bm25_candidates("agent", ["miso"], ("fact",))
    assert await store.bm25_candidates("agent", ["cats"], ("episode",))

    with raw(store) as db:
        db.execute("UPDATE facts SET content = 'The dog is called Rex' WHERE id = ?", (fact_id,))
        db.execute("UPDATE episodes SET topics_json = '[\"dogs\"]' WHERE id = ?", (episode_id,))
        db.execute("DELETE FROM transcript WHERE session_id = ?", (session_id,))
        # The FTS index itself agrees with its content tables.
        for table in ("facts_fts", "episodes_fts", "transcript_fts"):
            if store.dialect == "sqlite":
                db.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")

    assert await store.bm25_candidates("agent", ["miso"], ("fact",)) == []
    rex = await store.bm25_candidates("agent", ["rex"], ("fact",))
    assert [(item_type, item_id) for item_type, item_id, _ in rex] == [("fact", fact_id)]
    assert await store.bm25_candidates("agent", ["cats"], ("episode",)) == []
    assert await store.bm25_candidates("agent", ["dogs"], ("episode",))
    assert await store.bm25_candidates("agent", ["sleeps"], ("transcript",)) == []


async def test_episodes_use_counts_and_entities(store: Store) -> None:
    first = await store.add_episode("agent", EpisodeDraft("Planned a trip", salience=0.7),
                                    at=10.0)
    second = await store.add_episode("agent", EpisodeDraft("Fixed the bike"), at=20.0)
    fact_id = await store.insert_fact("agent", FactDraft("Owns a bike"))
    assert [e.id for e in await store.recent_episodes("agent", limit=5)] == [second, first]

    await store.bump_use("agent", [("episode", first), ("fact", fact_id), ("transcript", 1)],
                         at=50.0)
    episode = (await store.recent_episodes("agent"))[1]
    assert (episode.use_count, episode.last_used) == (1, 50.0)
    assert (await store.current_facts("agent"))[0].use_count == 1

    await store.upsert_entities("agent", ["Lisbon", "Ana"], at=1.0)
    await store.upsert_entities("agent", ["lisbon", "  ", ""], at=2.0)
    assert await store.entity_names("agent") == ["Lisbon", "Ana"]


async def test_agents_never_see_each_others_rows(store: Store) -> None:
    session_a = await store.session("a", "shared-key")
    session_b = await store.session("b", "shared-key")
    assert session_a != session_b
    await store.insert_fact("a", FactDraft("A's secret"))
    await store.add_pending_signal("a", session_a, 0, "u", "x")
    await store.upsert_entities("a", ["Zed"])
    await store.add_transcript("a", session_a, messages("secret words"))
    assert await store.current_facts("b") == []
    assert await store.pending_signals("b", session_a) == []
    assert await store.entity_names("b") == []
    assert await store.bm25_candidates("b", ["secret"], ("transcript",)) == []
    assert await store.session_transcript("b", session_a) == []
    assert not await store.delete_fact("b", 1)


@pytest.mark.parametrize("agent_id", ["", "   "])
async def test_blank_agent_id_is_refused(store: Store, agent_id: str) -> None:
    with pytest.raises(InvalidArgument, match="agent_id"):
        await store.current_facts(agent_id)
    with pytest.raises(InvalidArgument):
        await store.session(agent_id, "s")


async def test_processing_log_and_status(store: Store) -> None:
    await store.log_event("agent", "distilled", {"facts": 2}, at=3.0)
    assert await store.processing_log("agent") == [
        {"session_id": None, "event": "distilled", "detail": {"facts": 2}, "at": 3.0}
    ]
    assert await store.processing_log("other") == []
    status = await store.status("hashing-256-v1")
    assert status["db_path"].endswith(
        "memory.db" if store.dialect == "sqlite" else store.path.rsplit("/", 1)[1])
    assert status["embedding_model"] == "hashing-256-v1"


async def test_a_neighbours_common_words_never_crowd_out_an_agents_own_matches(
    store: Store,
) -> None:
    """BM25 counts and scores an agent's own matches: a neighbour holding the query's words
    in hundreds of newer messages changes nothing for it (migration m007)."""
    mine = await store.session("ana", "s")
    await store.add_transcript("ana", mine, messages(
        "We adopted a greyhound from the shelter", "I went hiking", at=1000.0))
    theirs = await store.session("bo", "s")
    await store.add_transcript("bo", theirs, messages(
        *(f"greyhound adopted shelter note {n}" for n in range(120)), at=2000.0))
    for budget in (5, 500):
        found = await store.bm25_candidates(
            "ana", ["adopted", "greyhound", "shelter"], ("transcript",), match_budget=budget)
        assert len(found) == 1, budget  # ana's message, none of bo's
    assert len(await store.bm25_candidates(
        "bo", ["greyhound"], ("transcript",), match_budget=5)) == 5  # the latest of its own


async def test_a_sessions_distillation_is_claimed_by_one_holder_until_its_lease_runs_out(
    store: Store,
) -> None:
    session = await store.session("a", "s")
    assert await store.claim_distillation("a", session, "p1", until=110, now=100) is None
    assert await store.claim_distillation("a", session, "p2", until=120, now=105) == 110
    assert await store.claim_distillation("a", session, "p1", until=130, now=108) is None
    assert await store.claim_distillation("a", session, "p2", until=140, now=131) is None
    await store.release_distillation(session, "p1")  # no longer its holder: nothing
    assert await store.claim_distillation("a", session, "p1", until=150, now=132) == 140
    await store.release_distillation(session, "p2")
    assert await store.claim_distillation("a", session, "p1", until=150, now=132) is None
    assert await store.forget_session("a", session) is not None  # the claim goes with it

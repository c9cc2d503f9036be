"""Forgetting an agent leaves nothing behind: no row, no search entry, no vector, no index
file, no byte of its text in any file under data_dir; its neighbours keep everything."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from mnemoproxy.memory import Memory, Turn
from mnemoproxy.memory.background import scrub
from tests.support.memory_client import memory_settings, sdk
from tests.support.servers.proxy_server import ProxyServer
from tests.support.servers.raw_store import rows, stored_bytes

SECRET_WORD = "Quokkaberry"
DOCUMENT_WORD = "Zanzibarella"  # said in a document alone
PROCEDURE_WORD = "Pumpernickelo"  # said in a procedure alone


def every_byte(folder: Path) -> bytes:
    return stored_bytes(folder)


def long_thread(word: str, turns: int = 30) -> list[dict[str, str]]:
    """A conversation over a 1000-token budget whose opening names `word`."""
    messages = [{"role": "user", "content": f"My dog {word} needs a walking plan."},
                {"role": "assistant", "content": "Happy to help with the walks."}]
    for i in range(turns):
        messages += [
            {"role": "user", "content": f"Day {i}: where should we walk, somewhere quiet with "
                                        "shade, water and a bench for me to rest on?"},
            {"role": "assistant", "content": f"Day {i}: try the river path, then the park "
                                             "with the old oaks, and rest by the fountain."}]
    return [*messages, {"role": "user", "content": "And tomorrow?"}]


def thread_summaries(data_dir: Path) -> list[tuple[str, str]]:
    return rows(data_dir, "SELECT agent_id, summary FROM thread_summaries")


def test_a_forgotten_agent_leaves_no_trace(fake_upstream, tmp_path):
    settings = memory_settings(fake_upstream, tmp_path, embedding_backend="wordllama",
                               context_budget_tokens=1000)
    data_dir = Path(settings.data_dir)
    with ProxyServer(settings) as server:
        for agent, word in (("dana", SECRET_WORD), ("bo", "Marmalade")):
            response = httpx.post(server.url + "/memory/ingest", json={
                "agent_id": agent, "conversation_id": "c1", "turns": [
                    {"user": f"My name is {agent.title()} and my dog is called {word}.",
                     "assistant": f"{word} is a lovely name."},
                    {"user": f"I live in Lisbon and {word} loves the beach.",
                     "assistant": "Noted."}]})
            assert response.status_code == 200, response.text
        sdk(server, "dana", "s2").chat.completions.create(model="m", messages=[
            {"role": "user", "content": f"{SECRET_WORD} ate my sandwich today."}])
        # A long thread of each: its oldest turns are kept as a running summary.
        for agent, word in (("dana", SECRET_WORD), ("bo", "Marmalade")):
            raw = sdk(server, agent, "walks").chat.completions.with_raw_response.create(
                model="m", messages=long_thread(word))  # type: ignore[arg-type]
            assert int(raw.headers["X-Context-Compressed-Turns"]) > 0
        # A document of hers too: its rows, chunks, search entries and vectors go as well.
        document = httpx.post(server.url + "/agents/dana/documents", files={"file": (
            "care.md", f"# Care of {SECRET_WORD}\n\n## Food\n\n{SECRET_WORD} eats "
                       f"carrots and {DOCUMENT_WORD} twice a day.".encode())})
        assert document.status_code == 201, document.text
        # And a procedure: its row and its search entries go too.
        procedure = httpx.post(server.url + "/agents/dana/procedures", json={
            "name": f"walk {SECRET_WORD}", "steps": [f"Pack {PROCEDURE_WORD} treats",
                                                     "Take the river path"]})
        assert procedure.status_code == 201, procedure.text
    vectors_before = sorted(p.name for p in (data_dir / "vectors").glob("*.usearch"))
    assert len(vectors_before) == 2 and SECRET_WORD.encode() in every_byte(data_dir)
    assert DOCUMENT_WORD.encode() in every_byte(data_dir)
    assert PROCEDURE_WORD.encode() in every_byte(data_dir)
    summaries = thread_summaries(data_dir)
    assert [a for a, _ in sorted(summaries)] == ["bo", "dana"]
    assert any(SECRET_WORD in text for _, text in summaries)

    with ProxyServer(settings) as server:
        forgotten = httpx.delete(server.url + "/agents/dana")
        assert forgotten.status_code == 200, forgotten.text
        assert forgotten.json()["forgotten"]["messages"] == 6 + len(long_thread("")) + 1
        assert [a for a, _ in thread_summaries(data_dir)] == ["bo"]
        assert forgotten.json()["forgotten"]["facts"] >= 1
        assert SECRET_WORD.encode() not in every_byte(data_dir)  # while it runs
        assert [a["id"] for a in httpx.get(server.url + "/agents").json()["agents"]] == ["bo"]
        assert httpx.delete(server.url + "/agents/dana").status_code == 404
        assert httpx.get(server.url + "/agents/dana/facts").status_code == 404
        assert httpx.get(server.url + "/agents/dana/documents").status_code == 404
        assert httpx.get(server.url + "/agents/dana/procedures").status_code == 404
        assert httpx.post(server.url + "/memory/search", json={
            "agent_id": "dana", "query": "carrots and hay", "scope": "documents"},
        ).json()["results"] == []
        found = httpx.post(server.url + "/memory/search", json={
            "agent_id": "bo", "query": "what is my dog called"}).json()["results"]
        assert any("Marmalade" in r["text"] for r in found)  # the neighbour keeps all
    assert SECRET_WORD.encode() not in every_byte(data_dir)
    assert b"dana" not in every_byte(data_dir)
    assert DOCUMENT_WORD.encode() not in every_byte(data_dir)
    assert PROCEDURE_WORD.encode() not in every_byte(data_dir)
    assert len(list((data_dir / "vectors").glob("*.usearch"))) == 1


def test_a_forgotten_session_takes_its_long_thread_summary_along(fake_upstream, tmp_path):
    settings = memory_settings(fake_upstream, tmp_path, context_budget_tokens=1000)
    data_dir = Path(settings.data_dir)
    with ProxyServer(settings) as server:
        for session, word in (("walks", SECRET_WORD), ("runs", "Marmalade")):
            raw = sdk(server, "dana", session).chat.completions.with_raw_response.create(
                model="m", messages=long_thread(word))  # type: ignore[arg-type]
            assert int(raw.headers["X-Context-Compressed-Turns"]) > 0
        assert len(thread_summaries(data_dir)) == 2
        sessions = httpx.get(server.url + "/agents/dana/sessions").json()["sessions"]
        walks = next(s["id"] for s in sessions if s["conversation_id"] == "walks")
        assert httpx.delete(f"{server.url}/agents/dana/sessions/{walks}").status_code == 200
        left = thread_summaries(data_dir)
        assert len(left) == 1 and "Marmalade" in left[0][1]
        assert SECRET_WORD.encode() not in every_byte(data_dir)
        # The same conversation sent again is summarised afresh, from what it says.
        raw = sdk(server, "dana", "walks").chat.completions.with_raw_response.create(
            model="m", messages=long_thread(SECRET_WORD))  # type: ignore[arg-type]
        assert raw.headers["X-Context-Summary"] == "extractive"
        assert httpx.delete(server.url + "/agents/dana").status_code == 200
        assert thread_summaries(data_dir) == []
    assert SECRET_WORD.encode() not in every_byte(data_dir)


async def _fill(memory: Memory, agent: str, turns: int, word: str = SECRET_WORD) -> None:
    said = " ".join(f"{word}{n} went to the lake with a friend." for n in range(20))
    await memory.ingest(agent, "c", [Turn(f"{said} ({i})", "Noted.") for i in range(turns)],
                        skip_extraction=True)


async def test_forgetting_frees_space_without_rewriting_the_whole_database(
    memory: Memory, monkeypatch
):
    if memory.store.dialect != "sqlite":
        pytest.skip("SQLite's file: PostgreSQL frees space with its own VACUUM")
    monkeypatch.setattr(scrub, "SCRUB_AFTER_SECONDS", 2.0)
    monkeypatch.setattr(scrub, "SCRUB_EVERY_SECONDS", 3.0)
    await _fill(memory, "kept", 50, word="Marmalade")
    await _fill(memory, "big", 400)
    database = Path(memory.store.path)
    writer = memory.store._writer  # type: ignore[attr-defined]
    await writer.run(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
    size = database.stat().st_size
    statements: list[str] = []
    await writer.run(lambda conn: conn.set_trace_callback(statements.append))
    # A tenant forgetting in a loop: each forget costs what it deletes, no more.
    assert await memory.forget_agent("big") is not None
    for number in range(10):
        await _fill(memory, f"loop{number}", 2)
        assert await memory.forget_agent(f"loop{number}") is not None
    on_the_request_path = list(statements)
    assert not [s for s in on_the_request_path if s.strip().upper() == "VACUUM"]
    assert not [s for s in on_the_request_path if "'optimize'" in s]
    assert database.stat().st_size < size * 0.6  # the freed pages left the file
    assert SECRET_WORD.encode() not in database.read_bytes()  # zeroed as it was deleted
    # The full-text indexes are merged afterwards, once for the whole loop.
    await asyncio.sleep(2.5)
    merges = [s for s in statements if "'optimize'" in s]
    assert len(merges) == 5  # one pass over the five indexes
    assert SECRET_WORD.lower().encode() not in every_byte(database.parent)
    found = await memory.search("kept", "who went to the lake?")
    assert found

"""Forgetting an agent leaves nothing behind: no row, no search entry, no vector, no index
file, no byte of its text in any file under data_dir; its neighbours keep everything."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.memory_client import memory_settings, sdk
from tests.proxy_server import ProxyServer

SECRET_WORD = "Quokkaberry"


def every_byte(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_a_forgotten_agent_leaves_no_trace(fake_upstream, tmp_path):
    settings = memory_settings(fake_upstream, tmp_path, embedding_backend="wordllama")
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
    vectors_before = sorted(p.name for p in (data_dir / "vectors").glob("*.usearch"))
    assert len(vectors_before) == 2 and SECRET_WORD.encode() in every_byte(data_dir)

    with ProxyServer(settings) as server:
        forgotten = httpx.delete(server.url + "/agents/dana")
        assert forgotten.status_code == 200, forgotten.text
        assert forgotten.json()["forgotten"]["messages"] == 6
        assert forgotten.json()["forgotten"]["facts"] >= 1
        assert SECRET_WORD.encode() not in every_byte(data_dir)  # while it runs
        assert [a["id"] for a in httpx.get(server.url + "/agents").json()["agents"]] == ["bo"]
        assert httpx.delete(server.url + "/agents/dana").status_code == 404
        assert httpx.get(server.url + "/agents/dana/facts").status_code == 404
        found = httpx.post(server.url + "/memory/search", json={
            "agent_id": "bo", "query": "what is my dog called"}).json()["results"]
        assert any("Marmalade" in r["text"] for r in found)  # the neighbour keeps all
    assert SECRET_WORD.encode() not in every_byte(data_dir)
    assert b"dana" not in every_byte(data_dir)
    assert len(list((data_dir / "vectors").glob("*.usearch"))) == 1

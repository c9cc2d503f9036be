"""Carrying an agent's memory out and back in: JSON Lines, an exact round trip, and an
import that merges without duplicates."""

from __future__ import annotations

import json

import httpx

from tests.support.memory_client import memory_settings, sdk, wait_for
from tests.support.servers.proxy_server import ProxyServer


def export(server: ProxyServer, agent: str) -> list[dict]:
    response = httpx.get(f"{server.url}/agents/{agent}/export")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


def import_(server: ProxyServer, agent: str, records: list[dict]) -> httpx.Response:
    body = "".join(json.dumps(r) + "\n" for r in records)
    return httpx.post(f"{server.url}/agents/{agent}/import", content=body.encode(),
                      headers={"Content-Type": "application/x-ndjson"})


def test_an_export_imports_exactly_and_twice_adds_nothing(fake_upstream, tmp_path):
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as server:
        for conversation, text in (("c1", "I live in Berlin and my dog is called Rex."),
                                   ("c2", "I moved to Paris last month.")):
            response = httpx.post(server.url + "/memory/ingest", json={
                "agent_id": "dana", "conversation_id": conversation,
                "session_date": "2024-05-0" + conversation[-1],
                "turns": [{"user": text, "assistant": "Noted."}]})
            assert response.status_code == 200, response.text
        manual = b"# Kettle\n\nDescale the kettle every 6 weeks with citric acid."
        httpx.post(f"{server.url}/agents/dana/documents", files={
            "file": ("kettle.md", manual, "text/markdown")}).raise_for_status()
        httpx.post(f"{server.url}/agents/dana/procedures", json={
            "name": "Weekly backup", "steps": ["Plug in the disk", "Run the backup script"]},
        ).raise_for_status()
        records = export(server, "dana")
        kinds = {r["type"] for r in records}
        assert kinds >= {"agent", "session", "fact", "episode", "document", "procedure"}
        assert any(r["type"] == "fact" and r["superseded_by"] for r in records)  # history

        first = import_(server, "copy", records)
        assert first.status_code == 200, first.text
        assert first.json()["added"]["messages"] == 4
        assert export(server, "copy") == records  # exact
        again = import_(server, "copy", records).json()["added"]
        assert not any(again.values())  # merged: nothing twice
        assert export(server, "copy") == records
        # Imported memory is memory: searchable (vectors rebuilt in the background).
        found = wait_for(lambda: httpx.post(server.url + "/memory/search", json={
            "agent_id": "copy", "query": "where do I live", "scope": "transcript"}
        ).json()["results"])
        assert any("Paris" in r["text"] for r in found)
        documents = wait_for(lambda: httpx.post(server.url + "/memory/search", json={
            "agent_id": "copy", "query": "descale the kettle", "scope": "documents"}
        ).json()["results"])
        assert "citric acid" in documents[0]["text"]
        procedures = httpx.get(f"{server.url}/agents/copy/procedures").json()
        assert [p["steps"] for p in procedures["procedures"]] == [
            ["Plug in the disk", "Run the backup script"]]
        client = sdk(server, "copy", "s9")
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Where do I live now?"}])
        assert "Paris" in fake_upstream.requests[-1].json["messages"][-1]["content"]


def test_bad_imports_are_refused_clearly_and_change_nothing(memory_proxy):
    for body, param in ((b"not json\n", "body"),
                        (b'{"type": "planet"}\n', "type"),
                        (b'{"type": "session", "key": "s"}\n', "started_at"),
                        (b'{"type": "fact", "ref": 1, "kind": "rumour", "content": "x", '
                         b'"valid_from": 1, "created_at": 1, "updated_at": 1}\n', "kind"),
                        (b'{"type": "session", "key": "s", "started_at": NaN}\n', "started_at"),
                        (b'{"type": "fact", "ref": 1, "kind": "pinned", "content": "x", '
                         b'"valid_from": 1e300, "created_at": 1, "updated_at": 1}\n',
                         "valid_from"),
                        (b'{"type": "fact", "ref": 1, "kind": "pinned", "content": "x", '
                         b'"valid_from": 1, "created_at": 1, "updated_at": 1, '
                         b'"use_count": 1180591620717411303424}\n', "use_count"),
                        (b'{"type": "episode", "summary": "s", "created_at": 1, "topics": 5}\n',
                         "topics"),
                        (b'{"type": "session", "key": "s", "started_at": 1, "messages": 5}\n',
                         "messages"),
                        (b'{"type": "document", "title": "t", "media_type": "text/plain", '
                         b'"created_at": 1, "chunks": [{"position": 0, "created_at": 1}]}\n',
                         "content"),
                        (b'{"type": "document", "title": "t", "media_type": "text/plain", '
                         b'"created_at": 1, "chunks": [{"position": 0, "content": "a", '
                         b'"created_at": 1}, {"position": 0, "content": "b", '
                         b'"created_at": 1}]}\n', "position"),
                        (b'{"type": "procedure", "name": "n", "steps": [], "created_at": 1, '
                         b'"updated_at": 1}\n', "steps"),
                        (b'{"type": "chunk", "position": 0, "content": "a", '
                         b'"created_at": 1}\n', "type"),
                        (b'{"type": "fact", "ref": 1, "kind": "pinned", "content": "x", '
                         b'"valid_from": 1, "created_at": 1, "updated_at": 1, '
                         b'"sources": [["s", -1]]}\n', "sources"),
                        (b'{"type": "session", "key": "s", "started_at": 1, "messages": '
                         b'[{"turn_index": 0, "role": "user", "content": "a", "at": 1, '
                         b'"restates_memory": "yes"}]}\n', "restates_memory")):
        response = httpx.post(f"{memory_proxy.url}/agents/x/import", content=body,
                              headers={"Content-Type": "application/x-ndjson"})
        assert response.status_code == 400, body
        assert response.json()["error"]["param"] == param
    assert httpx.get(f"{memory_proxy.url}/agents/x/export").status_code == 404


def test_a_correction_made_before_an_export_stays_made_after_the_import(fake_upstream, tmp_path):
    """A deleted fact's retracted lines and the turns each fact came from travel with the
    export: the copy does not serve what the user took back."""
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as server:
        post = httpx.post(server.url + "/memory/ingest", json={
            "agent_id": "dora", "conversation_id": "food", "turns": [
                {"user": "I prefer vegetarian food, no meat for me.", "assistant": "Noted!"},
                {"user": "My sister Ines lives in Porto.", "assistant": "Lovely city."}]})
        assert post.status_code == 200, post.text
        facts = httpx.get(f"{server.url}/agents/dora/facts").json()["facts"]
        food = next(f for f in facts if "vegetarian" in f["content"])
        assert httpx.delete(f"{server.url}/agents/dora/facts/{food['id']}").json()[
            "lines_retracted"] >= 1
        records = export(server, "dora")
        lines = [m for r in records if r["type"] == "session" for m in r["messages"]]
        assert [m["content"][:12] for m in lines if m.get("retracted_at")] == [
            "I prefer veg", "Noted!"]
        kept = [r for r in records if r["type"] == "fact" and r["deleted_at"] is None]
        assert kept and all(r["sources"] == [["food", 1]] for r in kept), kept

        assert import_(server, "copy", records).status_code == 200
        assert export(server, "copy") == records
        question = {"agent_id": "copy", "messages": [
            {"role": "user", "content": "Which food do I prefer for dinner?"}]}
        block = httpx.post(server.url + "/memory/preview", json=question).json()["block"]
        assert "vegetarian" not in (block or "")
        # The copy's facts still know their turns: deleting one there retracts its lines.
        sister = next(f for f in httpx.get(f"{server.url}/agents/copy/facts").json()["facts"]
                      if "Porto" in f["content"] or "Ines" in f["content"])
        assert httpx.delete(f"{server.url}/agents/copy/facts/{sister['id']}").json()[
            "lines_retracted"] == 2

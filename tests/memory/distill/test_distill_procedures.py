"""Procedures through the real interface: a session that teaches a way of doing something
(the user's numbered steps, "first ... then ...", or the assistant's steps answering "how
do I ...") is distilled into a named procedure with its steps, by the rules and by the core
model (grounded: steps the session never said are dropped); a later "how do I ..." chat
gets it in the block, an unrelated question does not, another agent never; listed, read,
added, edited and deleted under /agents/{id}/procedures; forgetting the session or the
agent deletes it; bad input is 4xx."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.memory_client import memory_settings, post, sdk, user_text_seen_upstream
from tests.support.servers.fake_upstream import Reply
from tests.support.servers.proxy_server import ProxyServer

DEPLOY = ("Here's how I deploy the blog:\n1. Run the link checker\n"
          "2. Build the site with hugo --minify\n3. Rsync the public folder to the droplet")
ROTATE = ("To rotate the staging keys, first revoke the old key in vault, then generate a "
          "new one with keygen, and finally restart the gateway.")


def ingest(server: ProxyServer, agent: str, conversation: str,
           turns: list[dict[str, str]]) -> dict[str, Any]:
    response = post(server, "/memory/ingest",
                    {"agent_id": agent, "conversation_id": conversation, "turns": turns})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def procedures(server: ProxyServer, agent: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{server.url}/agents/{agent}/procedures")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["procedures"]
    return found


def ask(server: ProxyServer, agent: str, question: str) -> tuple[str, str]:
    raw = sdk(server, agent).chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": question}])
    return raw.headers["x-memory-section"], raw.headers["x-memory-items"]


@pytest.fixture
def server(fake_upstream, tmp_path):
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as s:
        yield s


def test_the_rules_store_taught_procedures_and_a_how_to_question_gets_them(
    server, fake_upstream
):
    ingest(server, "dev", "deploying", [
        {"user": DEPLOY, "assistant": "Got it, I'll remember that."},
        {"user": ROTATE, "assistant": "Noted."},
    ])
    ingest(server, "dev", "router", [
        {"user": "How do I reset the office router?",
         "assistant": "Like this:\n1. Unplug it for 30 seconds\n2. Hold the reset button "
                      "for 10 seconds\n3. Log in at the admin page"},
    ])
    found = {p["name"]: p for p in procedures(server, "dev")}
    assert set(found) == {"deploy the blog", "rotate the staging keys", "reset the office router"}
    assert found["deploy the blog"]["steps"] == [
        "Run the link checker", "Build the site with hugo --minify",
        "Rsync the public folder to the droplet"]
    assert found["rotate the staging keys"]["steps"] == [
        "Revoke the old key in vault", "Generate a new one with keygen", "Restart the gateway"]
    assert found["reset the office router"]["steps"][0] == "Unplug it for 30 seconds"
    assert all(p["session_id"] for p in found.values())

    section, items = ask(server, "dev", "How do I deploy the blog again?")
    block = user_text_seen_upstream(fake_upstream)
    assert section != "none" and int(items) >= 1
    assert "Procedures the user taught or used" in block
    assert "deploy the blog" in block
    assert "1. Run the link checker" in block and "3. Rsync the public folder" in block

    ask(server, "dev", "What are the steps to rotate the staging keys?")
    assert "2. Generate a new one with keygen" in user_text_seen_upstream(fake_upstream)

    # Unrelated questions, how-to ones included, get no procedure.
    for question in ("How can I improve my time management skills?",
                     "Write a haiku about autumn leaves.", "Explain TCP"):
        ask(server, "dev", question)
        assert "Procedures the user taught" not in user_text_seen_upstream(fake_upstream)
    # Another agent never sees them.
    ask(server, "other", "How do I deploy the blog again?")
    assert "link checker" not in user_text_seen_upstream(fake_upstream)
    assert httpx.get(f"{server.url}/agents/nobody/procedures").status_code == 404


def test_a_procedure_taught_again_replaces_the_steps(server):
    ingest(server, "dev", "one", [{"user": DEPLOY, "assistant": "ok"}])
    ingest(server, "dev", "two", [{"user": "Here's how I deploy the blog now: 1. Build the "
                                           "site 2. Push to the pages branch", "assistant": "ok"}])
    [procedure] = procedures(server, "dev")
    assert procedure["steps"] == ["Build the site", "Push to the pages branch"]


def test_the_core_model_path_keeps_only_grounded_procedures(fake_upstream, tmp_path):
    settings = memory_settings(fake_upstream, tmp_path, core_model="fake-core-model")
    answer = {
        "episode": {"summary": "User explained how they deploy the blog.", "topics": [],
                    "entities": [], "decisions": [], "action_items": [], "salience": 0.5},
        "pinned_candidates": [], "identity_facts": [],
        "procedures": [
            {"name": "deploy the blog", "applies_when": "when the user deploys the blog",
             "steps": ["Run the link checker", "Build the site with hugo --minify",
                       "Email the marketing team in Zurich",  # never said: dropped
                       "Rsync the public folder to the droplet"]},
            {"name": "bake sourdough bread", "applies_when": "",  # never said at all
             "steps": ["Feed the starter", "Proof overnight"]},
        ],
    }
    with ProxyServer(settings) as server:
        fake_upstream.reply(json.dumps(answer), stream=False)
        ingest(server, "dev", "deploying", [{"user": DEPLOY, "assistant": "Got it."}])
        schema = fake_upstream.requests[-1].json["response_format"]["json_schema"]["schema"]
        assert "procedures" in schema["properties"]
        [procedure] = procedures(server, "dev")
        assert procedure["name"] == "deploy the blog"
        assert procedure["applies_when"] == "when the user deploys the blog"
        assert procedure["steps"] == ["Run the link checker", "Build the site with hugo --minify",
                                      "Rsync the public folder to the droplet"]


def test_procedures_are_listed_added_edited_and_deleted(server, fake_upstream):
    url = f"{server.url}/agents/ops/procedures"
    created = httpx.post(url, json={"name": "restore a backup", "steps": [
        "Stop the app", "Copy the snapshot from the bucket", "Start the app"],
        "applies_when": "after data loss"})
    assert created.status_code == 201, created.text
    pid = created.json()["id"]
    assert created.json()["session_id"] is None
    assert httpx.get(f"{url}/{pid}").json()["steps"][1] == "Copy the snapshot from the bucket"

    edited = httpx.patch(f"{url}/{pid}", json={"steps": ["Stop the app", "Run restore.sh"]})
    assert edited.status_code == 200, edited.text
    assert edited.json()["steps"] == ["Stop the app", "Run restore.sh"]
    assert edited.json()["name"] == "restore a backup"
    # A reply of its own, not the echo of the block: this conversation teaches nothing.
    fake_upstream.enqueue(Reply("Happy to help."))
    ask(server, "ops", "How do I restore a backup?")
    assert "2. Run restore.sh" in user_text_seen_upstream(fake_upstream)

    other = httpx.post(url, json={"name": "rotate logs", "steps": ["a", "b"]}).json()["id"]
    assert httpx.patch(f"{url}/{other}", json={"name": "Restore a backup"}).status_code == 400
    page = httpx.get(url, params={"limit": 1}).json()
    assert len(page["procedures"]) == 1 and page["next_cursor"] == pid
    rest = httpx.get(url, params={"limit": 1, "cursor": pid}).json()
    assert [p["id"] for p in rest["procedures"]] == [other]

    # Another agent cannot reach it.
    assert httpx.get(f"{server.url}/agents/someone/procedures/{pid}").status_code == 404
    assert httpx.delete(f"{server.url}/agents/someone/procedures/{pid}").status_code == 404

    deleted = httpx.delete(f"{url}/{pid}")
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True
    assert httpx.get(f"{url}/{pid}").status_code == 404
    assert httpx.delete(f"{url}/{pid}").status_code == 404
    assert [p["id"] for p in procedures(server, "ops")] == [other]


@pytest.mark.parametrize("body", [
    {"name": "x"}, {"name": "", "steps": ["a"]}, {"name": "x", "steps": []},
    {"name": "x", "steps": ["a"], "extra": 1}, {"name": "x", "steps": [" "]},
    {"name": "x", "steps": "a"},
])
def test_bad_procedures_are_refused(server, body):
    response = httpx.post(f"{server.url}/agents/ops/procedures", json=body)
    assert response.status_code == 400, response.text
    assert "error" in response.json()


def test_bad_edits_are_refused(server):
    url = f"{server.url}/agents/ops/procedures"
    pid = httpx.post(url, json={"name": "n", "steps": ["a", "b"]}).json()["id"]
    assert httpx.patch(f"{url}/{pid}", json={}).status_code == 400
    assert httpx.patch(f"{url}/{pid}", json={"steps": []}).status_code == 400
    assert httpx.patch(f"{url}/{pid + 100}", json={"name": "m"}).status_code == 404
    assert httpx.get(f"{url}/0").status_code == 400


def test_forgetting_the_session_or_the_agent_deletes_its_procedures(server, fake_upstream):
    ingest(server, "dev", "deploying", [{"user": DEPLOY, "assistant": "ok"}])
    ingest(server, "dev", "keys", [{"user": ROTATE, "assistant": "ok"}])
    by_name = {p["name"]: p for p in procedures(server, "dev")}
    assert len(by_name) == 2
    session = by_name["deploy the blog"]["session_id"]
    assert httpx.delete(f"{server.url}/agents/dev/sessions/{session}").status_code == 200
    assert [p["name"] for p in procedures(server, "dev")] == ["rotate the staging keys"]
    ask(server, "dev", "How do I deploy the blog again?")
    assert "link checker" not in user_text_seen_upstream(fake_upstream)

    assert httpx.delete(f"{server.url}/agents/dev").status_code == 200
    assert httpx.get(f"{server.url}/agents/dev/procedures").status_code == 404
    ask(server, "dev", "What are the steps to rotate the staging keys?")
    assert "keygen" not in user_text_seen_upstream(fake_upstream)

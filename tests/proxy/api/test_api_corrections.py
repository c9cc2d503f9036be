"""Corrections stick: a fact deleted by hand stops reaching the model, its own words in the
transcript included; an edited fact is read with its new value, the old wording no longer
served as current. Through a real proxy, the management API and the block a question gets."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support.memory_client import memory_settings, post
from tests.support.servers.fake_upstream import Reply
from tests.support.servers.proxy_server import ProxyServer

CORE = "fake-core-model"


def preview_block(server: ProxyServer, agent: str, question: str) -> str:
    response = post(server, "/memory/preview", {
        "agent_id": agent, "messages": [{"role": "user", "content": question}]})
    assert response.status_code == 200, response.text
    return str(response.json()["block"] or "")


def facts(server: ProxyServer, agent: str) -> list[dict]:
    return httpx.get(f"{server.url}/agents/{agent}/facts").json()["facts"]


@pytest.fixture
def rules_proxy(fake_upstream, tmp_path):
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as server:
        yield server


def test_a_deleted_fact_takes_its_own_words_out_of_the_block(rules_proxy):
    ingested = post(rules_proxy, "/memory/ingest", {
        "agent_id": "dora", "conversation_id": "food", "turns": [
            {"user": "I prefer vegetarian food, no meat for me.", "assistant": "Noted!"},
            {"user": "Any idea for a weekend hike near Lyon?", "assistant": "Try the Monts d'Or."},
        ]})
    assert ingested.json()["distillation"]["facts_added"] >= 1, ingested.text
    question = "Which food do I prefer for dinner?"
    assert "vegetarian" in preview_block(rules_proxy, "dora", question)

    fact = next(f for f in facts(rules_proxy, "dora") if "vegetarian" in f["content"])
    deleted = httpx.delete(f"{rules_proxy.url}/agents/dora/facts/{fact['id']}")
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["lines_retracted"] >= 1

    assert "vegetarian" not in preview_block(rules_proxy, "dora", question)
    # The words stay in the transcript for search and audit, marked as taken back.
    found = post(rules_proxy, "/memory/search", {
        "agent_id": "dora", "query": "vegetarian food", "scope": "transcript"}).json()
    line = next(r for r in found["results"] if "vegetarian" in r["text"])
    assert line["provenance"]["retracted"] is True
    session = line["provenance"]["session_id"]
    transcript = httpx.get(f"{rules_proxy.url}/agents/dora/sessions/{session}").json()
    assert [(m["content"][:12], m["retracted"]) for m in transcript["messages"]][:2] == [
        ("I prefer veg", True), ("Noted!", True)]
    page = httpx.get(f"{rules_proxy.url}/ui/agents/dora/sessions/{session}").text
    assert "retracted: a fact drawn from it was deleted" in page
    # The rest of the conversation is not taken back.
    found = post(rules_proxy, "/memory/search", {
        "agent_id": "dora", "query": "hike near Lyon", "scope": "transcript"}).json()
    assert [r["provenance"]["retracted"] for r in found["results"] if "hike" in r["text"]] == [
        False]


def test_an_edited_fact_is_read_with_its_new_value_only(fake_upstream, tmp_path):
    fact = "User's trip to Rome is from December 12 to December 14."
    distillation = {
        "episode": {"summary": "", "topics": [], "entities": [], "decisions": [],
                    "action_items": [], "salience": 0.5},
        "pinned_candidates": [{"content": fact, "salience": 0.8, "tags": [], "turns": [1]}],
        "identity_facts": [], "procedures": []}
    fake_upstream.answer_model(CORE, Reply(json.dumps(distillation)))
    settings = memory_settings(fake_upstream, tmp_path, core_model=CORE)
    with ProxyServer(settings) as server:
        post(server, "/memory/ingest", {"agent_id": "rui", "conversation_id": "trip", "turns": [
            {"user": "My trip to Rome is from December 12 to December 14, I booked it today.",
             "assistant": "Lovely, Rome in December!"}]})
        [stored] = facts(server, "rui")
        assert stored["content"] == fact
        question = "When is my trip to Rome?"
        assert "December 14" in preview_block(server, "rui", question)

        new = "User's trip to Rome is from December 12 to December 15."
        edited = httpx.patch(f"{server.url}/agents/rui/facts/{stored['id']}",
                             json={"content": new})
        assert edited.status_code == 200 and edited.json()["id"] == stored["id"]
        block = preview_block(server, "rui", question)
        assert "December 15" in block and "December 14" not in block

"""What distillation stores, through the real proxy: no credentials, no invented facts, and
time order kept whatever order sessions arrive in."""

from __future__ import annotations

import json

import httpx

from tests.support.memory_client import (
    memory_settings,
    post,
    sdk,
    search,
    wait_for,
)
from tests.support.servers.fake_core_model import LENA_DISTILLATION
from tests.support.servers.proxy_server import ProxyServer


def test_credentials_are_redacted_before_storage(memory_proxy):
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    client = sdk(memory_proxy, "kim", "keys")
    client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": f"My OpenAI key is {key}, keep it."}]
    )
    found = wait_for(lambda: search(memory_proxy, "kim", "OpenAI key", scope="transcript"))
    stored = " ".join(r["text"] for r in found)
    assert key not in stored and "[redacted]" in stored


def test_a_core_model_that_invents_facts_stores_none_of_them(fake_upstream, tmp_path):
    settings = memory_settings(fake_upstream, tmp_path, core_model="fake-core-model")
    invented = {
        **LENA_DISTILLATION,
        "pinned_candidates": [
            {"content": "User chose PostgreSQL for the billing service", "salience": 0.8},
            {"content": "User is vegetarian", "salience": 0.7},
        ],
        "identity_facts": ["User lives in Berlin", "User's daughter is named Mia"],
    }
    with ProxyServer(settings) as server:
        fake_upstream.reply(json.dumps(invented), stream=False)
        response = post(
            server,
            "/memory/ingest",
            {
                "agent_id": "ana",
                "conversation_id": "c",
                "turns": [{"user": "How do JSON schemas work?", "assistant": "They describe..."}],
            },
        )
        distillation = response.json()["distillation"]
        assert distillation["facts_ungrounded"] == 4 and distillation["facts_added"] == 0
        for scope in ("pinned", "identity"):
            assert search(server, "ana", "Berlin Mia PostgreSQL vegetarian", scope=scope) == []


def _ingest(server, agent: str, conversation: str, date: str, user: str) -> dict:
    response = post(server, "/memory/ingest", {
        "agent_id": agent, "conversation_id": conversation, "session_date": date,
        "turns": [{"user": user, "assistant": "Noted."}],
    })
    assert response.status_code == 200, response.text
    return response.json()["distillation"]


def test_an_older_contradicting_session_is_history_not_the_current_value(memory_proxy):
    _ingest(memory_proxy, "olga", "recent", "2024-06-01", "I live in Lisbon.")
    older = _ingest(memory_proxy, "olga", "years-ago", "2020-03-01", "I live in Berlin.")
    assert older["facts_historical"] == 1 and older.get("facts_superseded", 0) == 0
    facts = [r["text"] for r in search(memory_proxy, "olga", "where does the user live",
                                       scope="pinned")]
    assert "User lives in Lisbon" in facts and "User lives in Berlin" not in facts
    preview = post(memory_proxy, "/memory/preview", {
        "agent_id": "olga", "messages": [{"role": "user", "content": "Where do I live?"}]
    }).json()
    assert "User lives in Lisbon" in preview["block"]
    assert "User lives in Berlin" not in preview["block"]


def test_backdated_sessions_neither_age_nor_prune_what_memory_holds(memory_proxy):
    _ingest(memory_proxy, "pia", "recent", "2024-06-01", "I love green tea.")
    restated = _ingest(memory_proxy, "pia", "old", "2019-01-01", "I love green tea.")
    assert restated["facts_merged"] == 1
    report = post(memory_proxy, "/memory/consolidate", {"agent_id": "pia"}).json()
    assert report["facts_evicted"] == 0 and report["episodes_pruned"] == 0
    assert report["episodes_merged"] == 1  # the two sessions said the same thing
    agents = {a["id"]: a for a in httpx.get(memory_proxy.url + "/agents").json()["agents"]}
    assert agents["pia"]["facts"] == 1 and agents["pia"]["episodes"] == 1
    assert search(memory_proxy, "pia", "green tea", scope="pinned")[0]["text"] == (
        "User loves green tea"
    )

"""The memory API through the real proxy: ingest, search, preview, facts listed,
consolidation and dead letters on demand, and bad bodies answered with a 400 naming the
field."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.memory_client import (
    memory_settings,
    post,
    search,
    wait_for,
)
from tests.support.servers.fake_core_model import LENA_DISTILLATION
from tests.support.servers.proxy_server import ProxyServer


def test_ingest_reports_supersession(memory_proxy):
    def ingest(conversation: str, text: str) -> dict[str, Any]:
        response = post(
            memory_proxy,
            "/memory/ingest",
            {
                "agent_id": "erin",
                "conversation_id": conversation,
                "turns": [{"user": text, "assistant": "Noted."}],
            },
        )
        assert response.status_code == 200, response.text
        return response.json()["distillation"]

    assert ingest("c1", "I live in Berlin.")["facts_added"] >= 1
    assert ingest("c2", "I live in Berlin.")["facts_merged"] >= 1
    assert ingest("c3", "I just moved to Paris.")["facts_superseded"] >= 1
    found = search(memory_proxy, "erin", "where does the user live", scope="pinned")
    texts = [r["text"] for r in found]
    assert any("Paris" in t for t in texts)
    assert not any("Berlin" in t for t in texts)  # superseded facts are not read


def test_an_agents_facts_are_listed_with_history_filters_and_pages(memory_proxy):
    for conversation, text in (
        ("c1", "I live in Berlin. I'm vegetarian."),
        ("c2", "I just moved to Paris."),
        ("c3", "My sister Ana plays the cello."),
    ):
        post(
            memory_proxy,
            "/memory/ingest",
            {"agent_id": "erin", "conversation_id": conversation,
             "turns": [{"user": text, "assistant": "Noted."}]},
        )
    post(memory_proxy, "/memory/ingest", {"agent_id": "other", "conversation_id": "x",
                                          "turns": [{"user": "I live in Rome.", "assistant": ""}]})

    def facts(**params: Any) -> dict[str, Any]:
        response = httpx.get(memory_proxy.url + "/agents/erin/facts", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    current = facts()["facts"]
    texts = " | ".join(f["content"] for f in current)
    assert "Paris" in texts and "vegetarian" in texts and "Berlin" not in texts
    assert "Rome" not in texts  # another agent's memory is not listed
    assert all(f["status"] == "current" for f in current)
    (old,) = facts(status="superseded")["facts"]
    assert "Berlin" in old["content"] and old["conversation_id"] == "c1"
    assert old["superseded_by"] in {f["id"] for f in current}
    assert len(facts(status="all")["facts"]) == len(current) + 1
    assert [f["content"] for f in facts(q="PARIS")["facts"]] == [
        f["content"] for f in current if "Paris" in f["content"]
    ]
    assert {f["kind"] for f in facts(kind="identity")["facts"]} <= {"identity"}

    pages, cursor = [], 0
    while cursor is not None:
        page = facts(limit=1, cursor=cursor)
        pages += page["facts"]
        cursor = page["next_cursor"]
    assert [f["id"] for f in pages] == [f["id"] for f in sorted(current, key=lambda f: f["id"])]

    unknown = httpx.get(memory_proxy.url + "/agents/nobody/facts")
    assert unknown.status_code == 404 and unknown.json()["error"]["param"] == "agent_id"
    for bad in ({"status": "deleted"}, {"limit": 0}, {"limit": "many"}, {"cursor": -1}):
        response = httpx.get(memory_proxy.url + "/agents/erin/facts", params=bad)
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["error"]["param"] == next(iter(bad)), response.text


def test_preview_shows_decision_and_block_without_calling_upstream(memory_proxy, fake_upstream):
    post(
        memory_proxy,
        "/memory/ingest",
        {
            "agent_id": "finn",
            "conversation_id": "c",
            "turns": [{"user": "My name is Finn.", "assistant": "Hi Finn"}],
        },
    )
    before = len(fake_upstream.requests)
    response = post(
        memory_proxy,
        "/memory/preview",
        {"agent_id": "finn", "messages": [{"role": "user", "content": "who am I?"}]},
    )
    assert response.status_code == 200, response.text
    preview = response.json()
    assert preview["section"] == "identity" and preview["inject"] is True
    assert "Finn" in preview["block"] and preview["reason"]
    assert len(fake_upstream.requests) == before


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/memory/ingest", {"conversation_id": "c", "turns": [{"user": "x"}]}, "agent_id"),
        ("/memory/ingest", {"agent_id": "a", "turns": [{"user": "x"}]}, "conversation_id"),
        ("/memory/ingest", {"agent_id": "a", "conversation_id": "c"}, "turns"),
        ("/memory/ingest", {"agent_id": "a", "conversation_id": "c", "turns": ["x"]}, "turns[0]"),
        (
            "/memory/ingest",
            {"agent_id": "a", "conversation_id": "c", "turns": [{"user": "x", "date": "soon"}]},
            "turns[0].date",
        ),
        (
            "/memory/ingest",
            {"agent_id": "a", "conversation_id": "c", "turns": [{"user": "x"}], "session_date": 12},
            None,
        ),
        (
            "/memory/ingest",
            {
                "agent_id": "a",
                "conversation_id": "c",
                "turns": [{"user": "x"}],
                "skip_extraction": "no",
            },
            "skip_extraction",
        ),
        ("/memory/search", {"agent_id": "a"}, "query"),
        ("/memory/search", {"agent_id": "a", "query": "x", "scope": "everything"}, "scope"),
        ("/memory/search", {"agent_id": "a", "query": "x", "top_k": 0}, "top_k"),
        ("/memory/search", {"query": "x"}, "agent_id"),
        ("/memory/preview", {"agent_id": "a", "messages": "hi"}, "messages"),
    ],
)
def test_bad_memory_api_bodies_get_400_naming_the_field(memory_proxy, path, body, param):
    response = post(memory_proxy, path, body)
    if param is None:  # a valid body (unix-seconds date): accepted
        assert response.status_code == 200, response.text
        return
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"


def test_search_survives_hostile_queries(memory_proxy):
    post(
        memory_proxy,
        "/memory/ingest",
        {
            "agent_id": "gus",
            "conversation_id": "c",
            "turns": [{"user": "I love NEAR field radio and AND gates.", "assistant": "ok"}],
        },
    )
    for query in [
        '"unbalanced',
        "NEAR(a b)",
        "a AND OR NOT",
        "(((",
        "*",
        "x" * 10_000,
        "über café 日本語 🚀",
        "",
        "col:value",
        "^start",
    ]:
        response = post(memory_proxy, "/memory/search", {"agent_id": "gus", "query": query})
        assert response.status_code in (200, 400), (query[:20], response.text)
    assert search(memory_proxy, "nobody-here", "anything") == []


def test_dead_lettered_sessions_are_distilled_again_on_request(fake_upstream, tmp_path):
    settings = memory_settings(
        fake_upstream, tmp_path, core_model="fake-core-model", distill_max_attempts=1
    )
    with ProxyServer(settings) as server:
        fake_upstream.error(500)
        turns = [{"user": "Hi, I'm Lena.", "assistant": "Hello Lena!"}]
        response = post(
            server, "/memory/ingest", {"agent_id": "lena", "conversation_id": "c", "turns": turns}
        )
        assert response.json()["distillation"]["status"] == "dead_lettered"

        def store():
            return httpx.get(server.url + "/health").json()["memory"]

        assert store()["dead_signals"] == 1
        fake_upstream.reply(json.dumps(LENA_DISTILLATION), stream=False)  # the core model is back
        retried = post(server, "/memory/dead-letters/retry", {"agent_id": "lena"})
        assert retried.status_code == 200, retried.text
        assert retried.json() == {"status": "ok", "sessions": 1, "turns": 1}
        assert wait_for(lambda: store()["dead_signals"] == 0 and store()["pending_signals"] == 0)
        assert any("Lena" in r["text"] for r in search(server, "lena", "name", scope="identity"))
        nothing = post(server, "/memory/dead-letters/retry", {})
        assert nothing.json() == {"status": "ok", "sessions": 0, "turns": 0}


def test_consolidation_on_demand(memory_proxy):
    post(
        memory_proxy,
        "/memory/ingest",
        {
            "agent_id": "otto",
            "conversation_id": "c",
            "turns": [{"user": "I love jazz.", "assistant": "Nice"}],
        },
    )
    response = post(memory_proxy, "/memory/consolidate", {"agent_id": "otto"})
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["agents"] == 1
    assert {"facts_evicted", "episodes_merged", "episodes_pruned", "facts_promoted"} <= set(report)
    everyone = httpx.post(memory_proxy.url + "/memory/consolidate")
    assert everyone.status_code == 200


def test_the_api_scope_words_are_memorys():
    from typing import get_args

    from mnemoproxy.memory import KINDS, SCOPES
    from mnemoproxy.proxy.api.memory import Scope

    assert set(get_args(Scope)) == set(SCOPES)
    assert {kind for kinds in SCOPES.values() for kind in kinds} == set(KINDS)

"""A fact knows the turn it was said in: search finds the turn by the fact and the fact by
the turn, and the block shows one of the two, the shorter that keeps what was asked.
Through a real proxy whose core model names the turns of its facts."""

from __future__ import annotations

import json

import httpx
import pytest

from mnemoproxy.gate.excerpt import Query
from mnemoproxy.gate.planner import _carries
from tests.support.memory_client import memory_settings, post
from tests.support.servers.fake_upstream import Reply
from tests.support.servers.proxy_server import ProxyServer

CORE = "fake-core-model"
LONG_TURN = (
    "We drove up the coast last weekend and stopped at every single lighthouse on the way, "
    "all nine of them. At the end of it my daughter Maya finally told us that she got into "
    "the conservatory in Lyon to study the cello, which we had been hoping for all year. "
    "So we celebrated with a huge plate of oysters in a little harbour bar by the pier."
)
FACT = "User's daughter Maya got into the conservatory in Lyon to study the cello."
DISTILLATION = {
    "episode": {"summary": "User told of a drive up the coast and Maya's news.",
                "topics": ["family"], "entities": ["Maya"], "decisions": [],
                "action_items": [], "salience": 0.6},
    "pinned_candidates": [{"content": FACT, "salience": 0.7, "tags": ["family"],
                           "turns": [1]}],
    "identity_facts": [],
    "procedures": [],
}


@pytest.fixture
def proxy(fake_upstream, tmp_path):
    fake_upstream.answer_model(CORE, Reply(json.dumps(DISTILLATION)))
    with ProxyServer(memory_settings(fake_upstream, tmp_path, core_model=CORE)) as server:
        ingested = post(server, "/memory/ingest", {
            "agent_id": "ines", "conversation_id": "trip", "turns": [
                {"user": LONG_TURN, "assistant": "Congratulations to Maya!"},
                {"user": "Can you suggest songs for a long drive?",
                 "assistant": "Try some classic road-trip rock."},
            ]})
        assert ingested.status_code == 200, ingested.text
        assert ingested.json()["distillation"]["facts_added"] == 1
        yield server


def preview_block(server: ProxyServer, question: str) -> str:
    response = post(server, "/memory/preview", {
        "agent_id": "ines", "messages": [{"role": "user", "content": question}]})
    assert response.status_code == 200, response.text
    return str(response.json()["block"] or "")


def test_the_fact_is_stored_once_and_found_by_search(proxy):
    found = post(proxy, "/memory/search", {"agent_id": "ines", "query": "Maya conservatory",
                                           "top_k": 10}).json()["results"]
    fact = next(r for r in found if r["kind"] == "pinned")
    assert fact["text"] == FACT
    facts = httpx.get(f"{proxy.url}/agents/ines/facts").json()["facts"]
    assert [f["content"] for f in facts] == [FACT]


def test_the_block_shows_the_fact_in_place_of_the_long_turn_it_was_drawn_from(proxy):
    block = preview_block(proxy, "Where is my daughter going to study music?")
    assert f"noted: {FACT}" in block
    # The evidence once: the fact, not the fact and the turn.
    assert block.count(FACT) == 1 and "conservatory in Lyon to study the cello, which" not in block


def test_the_turn_is_shown_where_the_fact_would_lose_what_was_asked(proxy):
    block = preview_block(proxy, "What did we eat in the harbour bar to celebrate the news?")
    assert "oysters" in block
    assert FACT not in block


def test_a_fact_that_sums_a_turn_up_does_not_stand_for_it():
    turn = ("Besides great views, I also like hotels with unique features, such as a rooftop "
            "pool or a hot tub on the balcony.")
    question = "Can you suggest a hotel for my trip?"
    query = Query.of(question, [turn])
    # Both keep "hotel"; only the restatement keeps what the user named.
    assert not _carries("User likes hotels with unique features.", turn, query)
    assert _carries("User likes hotels with great views, a rooftop pool or a balcony hot tub.",
                    turn, query)

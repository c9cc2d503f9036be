"""A question or search that names a time gets what was said then, through the real proxy."""

from __future__ import annotations

from datetime import datetime

from tests.support.memory_client import (
    memory_settings,
    post,
    sdk,
    search,
    user_text_seen_upstream,
)
from tests.support.servers.proxy_server import ProxyServer

FRIENDS = ["Ana", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea"]


def ingest_monthly_dinners(server: ProxyServer, agent: str) -> None:
    """Twelve dinners in twelve months of 2025, alike but for the friend."""
    for month, name in enumerate(FRIENDS, start=1):
        response = post(server, "/memory/ingest", {
            "agent_id": agent, "conversation_id": f"dinner-{month}",
            "session_date": f"2025-{month:02d}-14T19:00:00Z", "skip_extraction": True,
            "turns": [{"user": f"I had dinner with {name} at the noodle bar tonight.",
                       "assistant": "Sounds lovely."}],
        })
        assert response.status_code == 200, response.text


def test_a_question_naming_a_date_gets_what_was_said_then(fake_upstream, tmp_path):
    # A block holds a few of the dinners; asked about one date, it holds that one.
    settings = memory_settings(fake_upstream, tmp_path, memory_budget_tokens=160)
    with ProxyServer(settings) as server:
        for month, friend in ((3, "Cleo"), (9, "Ivo")):
            agent = f"diner-{month}"  # a fresh agent: the first question is remembered too
            ingest_monthly_dinners(server, agent)
            day = datetime(2025, month, 14).strftime("%B %d, %Y")  # "March 14, 2025"
            sdk(server, agent).chat.completions.create(model="m", messages=[
                {"role": "user", "content": f"Who did I have dinner with on {day}?"}])
            block = user_text_seen_upstream(fake_upstream)
            assert f"dinner with {friend}" in block, block


def test_a_search_naming_a_date_ranks_what_was_said_then_first(memory_proxy):
    ingest_monthly_dinners(memory_proxy, "diner")
    for query, friend in (("dinner at the noodle bar in July 2025", "Gus"),
                          ("dinner on 14 November, 2025", "Kai")):
        results = search(memory_proxy, "diner", query, scope="transcript", top_k=3)
        assert f"dinner with {friend}" in results[0]["text"], results
        assert results[0]["components"]["period"] > 0  # lifted for its date
        assert all("period" not in r["components"] for r in results if friend not in r["text"]
                   and r["text"] != "Sounds lovely.")

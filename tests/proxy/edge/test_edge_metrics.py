"""GET /metrics through a real proxy: the numbers move with what the proxy does, and the
core model's daily token cap sends distillation to the rules and the LLM gate to the
heuristic, saying so in /metrics and /health."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mnemoproxy.errors import CoreModelCapped
from mnemoproxy.memory.core_model.budget import CoreBudget
from mnemoproxy.memory.core_model.client import Completion
from tests.support.memory_client import memory_settings, post, sdk
from tests.support.servers.proxy_server import ProxyServer

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

LENA_FACTS = {
    "episode": {"summary": "Lena said hello.", "topics": [], "entities": [], "decisions": [],
                "action_items": [], "salience": 0.4},
    "pinned_candidates": [],
    "identity_facts": ["User's name is Lena"],
}


def scrape(server: ProxyServer) -> Samples:
    response = httpx.get(server.url + "/metrics", timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def ingest(server: ProxyServer, conversation: str, text: str) -> dict:
    response = post(server, "/memory/ingest", {
        "agent_id": "lena", "conversation_id": conversation,
        "turns": [{"user": text, "assistant": "Noted."}]})
    assert response.status_code == 200, response.text
    return response.json()["distillation"]


def test_a_chat_with_memory_moves_requests_latencies_reads_and_gate(memory_proxy):
    post(memory_proxy, "/memory/ingest", {
        "agent_id": "dana", "conversation_id": "c",
        "turns": [{"user": "My name is Dana and I live in Lisbon.", "assistant": "Hi Dana!"}]})
    before = scrape(memory_proxy)
    sdk(memory_proxy, "dana", "s2").chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Where do I live?"}])
    assert httpx.get(memory_proxy.url + "/agents/dana/facts").status_code == 200
    after = scrape(memory_proxy)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    chat = "/v1/chat/completions"
    assert moved("mnemoproxy_requests_total", route=chat, status="200") == 1
    assert moved("mnemoproxy_requests_total", route="/agents/{agent_id}/facts", status="200") == 1
    assert moved("mnemoproxy_memory_read_seconds_count") == 1
    assert moved("mnemoproxy_memory_read_seconds_sum") > 0
    assert moved("mnemoproxy_upstream_seconds_count", route=chat) == 1
    assert moved("mnemoproxy_memory_reads_total", outcome="injected") == 1
    assert moved("mnemoproxy_injected_tokens_total") > 0
    sections = ("identity", "pinned", "episode", "transcript", "none")
    assert sum(moved("mnemoproxy_gate_decisions_total", section=s) for s in sections) == 1
    assert value(after, "mnemoproxy_items", kind="messages") >= 4
    # Routes are labelled by template, never by a raw path naming an agent.
    assert not any("dana" in v for _, labels in after for _, v in labels)


def test_an_unknown_path_is_counted_without_its_path(memory_proxy):
    assert httpx.get(memory_proxy.url + "/no/such/route/for-bob").status_code == 404
    samples = scrape(memory_proxy)
    assert value(samples, "mnemoproxy_requests_total", route="unmatched", status="404") == 1
    assert not any("bob" in v for _, labels in samples for _, v in labels)


def test_distillation_tokens_are_counted_and_past_the_cap_the_rules_distil(
    fake_upstream, tmp_path, caplog
):
    settings = memory_settings(fake_upstream, tmp_path, core_model="fake-core-model",
                               core_model_daily_tokens=10)
    with ProxyServer(settings) as server, caplog.at_level(logging.WARNING):
        fake_upstream.reply(json.dumps(LENA_FACTS), stream=False)  # the core model's answer
        first = ingest(server, "c1", "Hi, I'm Lena.")
        assert first["status"] == "distilled" and "fallback" not in first
        core_call = fake_upstream.requests[-1].json
        assert core_call["model"] == "fake-core-model"
        samples = scrape(server)
        prompt = value(samples, "mnemoproxy_core_model_tokens_total",
                       purpose="distill", type="prompt")
        completion = value(samples, "mnemoproxy_core_model_tokens_total",
                           purpose="distill", type="completion")
        # The fake upstream's usage counts words: the prompt's, and the JSON answer's.
        assert prompt == sum(len(m["content"].split()) for m in core_call["messages"])
        assert completion == len(json.dumps(LENA_FACTS).split())
        assert value(samples, "mnemoproxy_core_model_tokens_today") == prompt + completion
        assert value(samples, "mnemoproxy_core_model_capped") == 1
        assert value(samples, "mnemoproxy_distillations_total", outcome="distilled") == 1

        calls = len(fake_upstream.requests)
        for conversation in ("c2", "c3"):
            later = ingest(server, conversation, "I live in Porto and I work at Acme.")
            assert later["status"] == "distilled", later
            assert "core_model_daily_tokens" in later["fallback"]
        assert len(fake_upstream.requests) == calls  # the core model was not asked again
        assert any("Porto" in f["content"] for f in
                   httpx.get(server.url + "/agents/lena/facts").json()["facts"])

        samples = scrape(server)
        assert value(samples, "mnemoproxy_distillations_total", outcome="fallback") == 2
        assert value(samples, "mnemoproxy_core_model_refused_calls_total", purpose="distill") == 2
        memory = httpx.get(server.url + "/health").json()["memory"]
        assert memory["core_model"]["capped"] is True
        assert memory["core_model"]["tokens_today"] == prompt + completion
    warnings = [r for r in caplog.records if "core_model_daily_tokens" in r.getMessage()]
    assert len(warnings) == 1  # once a day, however many sessions fall back


def test_past_the_cap_the_llm_gate_leaves_the_decision_to_the_heuristic(fake_upstream, tmp_path):
    settings = memory_settings(
        fake_upstream, tmp_path, relevance_gate_mode="llm", core_model="fake-core-model",
        core_model_daily_tokens=1, summary_debounce_seconds=600,
        memory_read_deadline_seconds=10,
    )
    with ProxyServer(settings) as server:
        post(server, "/memory/ingest", {
            "agent_id": "lena", "conversation_id": "c", "skip_extraction": True,
            "turns": [{"user": "My name is Lena. I'm off to Lisbon in May.", "assistant": ""}]})
        client = sdk(server, "lena")
        unsure = [{"role": "user", "content": "What should Lena pack for Lisbon?"}]
        fake_upstream.reset()
        fake_upstream.reply('{"needs_memory": false}', stream=False)  # the gate's one call
        raw = client.chat.completions.with_raw_response.create(model="m", messages=unsure)
        assert raw.headers["x-memory-section"] == "none"  # the model withheld the block
        assert len(fake_upstream.requests) == 2

        fake_upstream.reset()
        raw = client.chat.completions.with_raw_response.create(model="m", messages=unsure)
        assert raw.headers["x-memory-section"] == "episode"  # the heuristic's own decision
        assert len(fake_upstream.requests) == 1  # only the chat itself went upstream

        samples = scrape(server)
        assert value(samples, "mnemoproxy_core_model_tokens_total",
                     purpose="relevance_gate", type="completion") > 0
        assert value(samples, "mnemoproxy_core_model_refused_calls_total",
                     purpose="relevance_gate") == 1
        assert value(samples, "mnemoproxy_core_model_capped") == 1


def test_the_cap_is_per_utc_day():
    now = datetime(2024, 5, 8, 23, 59, tzinfo=UTC)
    budget = CoreBudget(100, clock=lambda: now)
    budget.check("distill")
    budget.spend("distill", Completion("{}", prompt_tokens=80, completion_tokens=30))
    assert budget.capped and budget.status()["tokens_today"] == 110
    with pytest.raises(CoreModelCapped):
        budget.check("relevance_gate")
    now += timedelta(minutes=2)  # past midnight, UTC
    assert not budget.capped and budget.tokens_today == 0
    budget.check("distill")
    assert budget.status()["tokens"]["distill"] == {"prompt": 80, "completion": 30}
    assert budget.status()["refused_calls"] == {"distill": 0, "relevance_gate": 1}
    assert not CoreBudget(0).capped  # 0: no cap

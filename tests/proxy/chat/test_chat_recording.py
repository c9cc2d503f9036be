"""Chat turns become memory: recorded through the real proxy (the openai SDK in, the fake
upstream out), backfilled, kept to their agent, and distilled."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.support.memory_client import (
    memory_settings,
    post,
    sdk,
    search,
    wait_for,
)
from tests.support.servers.malformed_events import MALFORMED_DELTAS
from tests.support.servers.proxy_server import ProxyServer


def test_chat_turns_become_facts_after_debounce(memory_proxy, fake_upstream):
    client = sdk(memory_proxy, "alice", "s1")
    client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Hi! My name is Alice and I live in Berlin."}],
    )
    stream = client.chat.completions.create(
        model="m",
        stream=True,
        messages=[
            {"role": "user", "content": "Hi! My name is Alice and I live in Berlin."},
            {"role": "assistant", "content": "echo: Hi!"},
            {"role": "user", "content": "I'm allergic to peanuts, please remember that."},
        ],
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    def facts():
        found = search(memory_proxy, "alice", "peanuts allergy Berlin", scope="pinned")
        return found if len(found) >= 2 else None

    texts = " | ".join(r["text"] for r in wait_for(facts))
    assert "Berlin" in texts and "peanut" in texts.lower()
    agents = httpx.get(memory_proxy.url + "/agents").json()["agents"]
    alice = next(a for a in agents if a["id"] == "alice")
    # One episode, or two when a busy machine let the debounce fire between the turns.
    assert alice["facts"] >= 2 and alice["episodes"] in (1, 2)
    assert (alice["turns"], alice["messages"]) == (2, 4)


def test_no_agent_header_reads_and_writes_nothing_and_says_so(memory_proxy, fake_upstream):
    body = {"model": "m", "messages": [{"role": "user", "content": "My name is Bob."}]}
    for headers, missing in (({}, "no X-Agent-Id header"), ({"X-Agent-Id": ""}, "is empty")):
        for stream in (False, True):
            response = httpx.post(memory_proxy.base_url + "/chat/completions",
                                  json={**body, "stream": stream}, headers=headers)
            assert response.status_code == 200
            assert response.headers["x-memory-section"] == "off"
            assert missing in response.headers["x-memory-hint"]
            assert "X-Agent-Id: <agent>" in response.headers["x-memory-hint"]
            # The hint is a header only: the request and the reply go through untouched.
            assert fake_upstream.requests[-1].json == {**body, "stream": stream}
    time.sleep(0.3)
    assert httpx.get(memory_proxy.url + "/agents").json()["agents"] == []


def test_a_proxy_without_memory_says_so_in_a_header(proxy, fake_upstream):
    body = {"model": "m", "messages": [{"role": "user", "content": "My name is Bob."}]}
    response = httpx.post(proxy.base_url + "/chat/completions", json=body,
                          headers={"X-Agent-Id": "bob"})
    assert response.status_code == 200 and response.json()["choices"]
    assert response.headers["x-memory-section"] == "off"
    assert "memory is disabled" in response.headers["x-memory-hint"]


def test_replayed_request_does_not_duplicate_and_history_is_backfilled(memory_proxy):
    messages = [
        {"role": "user", "content": "We talked about sailing before."},
        {"role": "assistant", "content": "Yes, your boat is called Luna."},
        {"role": "user", "content": "I'm repainting the boat blue."},
    ]
    client = sdk(memory_proxy, "carol", "boat")
    for _ in range(3):  # a retried request is the same turn
        client.chat.completions.create(model="m", messages=messages)

    def turns():
        agents = httpx.get(memory_proxy.url + "/agents").json()["agents"]
        return next((a["turns"] for a in agents if a["id"] == "carol"), 0)

    assert wait_for(lambda: turns() == 2)  # as ingest counts them: a user message and its reply
    time.sleep(0.3)
    assert turns() == 2
    found = search(memory_proxy, "carol", "boat Luna", scope="transcript")
    assert any("Luna" in r["text"] for r in found)


def test_an_agent_is_one_agent_whichever_door_and_spelling(memory_proxy):
    decomposed = "jose\u0301"  # "josé" as e + combining accent, as some keyboards send it
    response = post(memory_proxy, "/memory/ingest", {
        "agent_id": decomposed, "conversation_id": "c1",
        "turns": [{"user": "I keep bees on my roof.", "assistant": "Lovely."}],
    })
    assert response.status_code == 200, response.text
    chat = httpx.post(
        memory_proxy.base_url + "/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "How are my bees?"}]},
        headers={"X-Agent-Id": "jos\u00e9".encode()},  # UTF-8 bytes on the wire
    )
    assert chat.status_code == 200, chat.text

    def agents():
        listed = httpx.get(memory_proxy.url + "/agents").json()["agents"]
        return {a["id"]: a["turns"] for a in listed}

    assert wait_for(lambda: agents() == {"jos\u00e9": 2})
    assert httpx.head(memory_proxy.url + "/agents").status_code == 200
    facts = httpx.get(memory_proxy.url + f"/agents/{decomposed}/facts")
    assert facts.status_code == 200 and facts.json()["agent_id"] == "jos\u00e9"


@pytest.mark.parametrize("agent", [
    "voil\u00e0",  # à is C3 A0 in UTF-8: A0 read alone is a no-break space
    "\u0100b\u0105",  # ą is C4 85: 85 read alone is a next-line character
    "\u00a0bo\u2003",  # blanks around an id (here Unicode's) are not part of it
])
def test_an_id_whose_last_utf8_byte_reads_as_a_blank_is_that_id(memory_proxy, agent):
    chat = httpx.post(
        memory_proxy.base_url + "/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "I keep bees."}]},
        headers={"X-Agent-Id": agent.encode()},
    )
    assert chat.status_code == 200, chat.text
    assert chat.headers["X-Memory-Section"]
    assert wait_for(lambda: agent.strip() in {
        a["id"] for a in httpx.get(memory_proxy.url + "/agents").json()["agents"]})


def test_backfill_from_one_request_is_bounded_to_the_latest_turns(fake_upstream, tmp_path):
    settings = memory_settings(fake_upstream, tmp_path, max_backfill_turns=5)
    history = []
    for i in range(2000):
        history += [{"role": "user", "content": f"Note {i} about the garden."},
                    {"role": "assistant", "content": "Noted."}]
    messages = [*history, {"role": "user", "content": "What did I plant last?"}]
    with ProxyServer(settings) as server:
        sdk(server, "gardener", "long").chat.completions.create(model="m", messages=messages)

        def turns():
            agents = httpx.get(server.url + "/agents").json()["agents"]
            return next((a["turns"] for a in agents if a["id"] == "gardener"), 0)

        assert wait_for(lambda: turns() == 6)  # five earlier turns and the answered one
        found = search(server, "gardener", "Note garden", scope="transcript", top_k=50)
        assert "Note 1999" in " ".join(r["text"] for r in found)
        assert "Note 1994 " not in " ".join(r["text"] for r in found)


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_round_reads_memory_once_and_records_the_answered_turn(
    memory_proxy, fake_upstream, stream
):
    post(
        memory_proxy,
        "/memory/ingest",
        {
            "agent_id": "tom",
            "conversation_id": "diet",
            "turns": [{"user": "I am vegetarian and I cook dinner at home.", "assistant": "Ok."}],
        },
    )
    client = sdk(memory_proxy, "tom", "cooking")
    question = [{"role": "user", "content": "What should I cook tonight, given my diet?"}]
    fake_upstream.tool_call("find_recipes", {"diet": "vegetarian"}, stream=stream)
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=question, stream=stream
    )
    assert raw.headers["x-memory-section"] != "none"
    for _ in raw.parse() if stream else ():  # the stream is read to its end
        pass
    call = fake_upstream.requests[-1]
    assert "vegetarian" in json.dumps(call.json["messages"])  # memory reached the model

    continuation = [
        *question,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "find_recipes", "arguments": '{"diet": "vegetarian"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "lentil curry; mushroom risotto"},
    ]
    fake_upstream.reply("Try the lentil curry tonight.", stream=stream)
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=continuation, stream=stream
    )
    for _ in raw.parse() if stream else ():
        pass
    assert raw.headers["x-memory-section"] == "none"
    assert fake_upstream.requests[-1].json["messages"] == continuation  # forwarded as sent

    def recorded():
        found = search(memory_proxy, "tom", "lentil curry tonight", scope="transcript")
        return [r["text"] for r in found if "lentil curry tonight" in r["text"]]

    answer = wait_for(recorded)
    assert len(answer) == 1 and "[tool call find_recipes(" in answer[0]
    cooking = search(memory_proxy, "tom", "cook tonight diet", scope="transcript")
    assert sum("What should I cook tonight" in r["text"] for r in cooking) == 1


def test_malformed_stream_events_reach_the_client_and_the_rest_is_remembered(
    memory_proxy, fake_upstream
):
    good = [{"choices": [{"index": 0, "delta": {"content": text}}]} for text in ("Hel", "lo")]
    malformed = MALFORMED_DELTAS
    fake_upstream.raw_events([good[0], *malformed, good[1]])
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Hi there"}]}
    with httpx.stream("POST", memory_proxy.base_url + "/chat/completions", json=body,
                      headers={"X-Agent-Id": "sam"}, timeout=30) as response:
        assert response.status_code == 200
        events = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert len(events) == len(good) + len(malformed) + 1  # every event, then [DONE]
    assert events[-1] == "data: [DONE]"
    found = wait_for(lambda: search(memory_proxy, "sam", "Hello", scope="transcript"))
    assert any("Hello" in r["text"] for r in found), found

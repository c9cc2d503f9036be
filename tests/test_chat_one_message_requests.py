"""A client that sends one message at a time: its requests are one conversation while they
keep coming, and a question it asked that memory answered is not served back as memory."""

from __future__ import annotations

import httpx

from tests.support.memory_client import sdk, wait_for

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def _ask(client, text: str, system: dict[str, str] = SYSTEM):
    return client.chat.completions.with_raw_response.create(
        model="m", messages=[system, {"role": "user", "content": text}])


def _sessions(url: str, agent: str) -> list[dict]:
    return httpx.get(f"{url}/agents/{agent}/sessions").json()["sessions"]


def test_one_message_requests_of_one_client_are_one_session(memory_proxy, fake_upstream):
    url, client = memory_proxy.url, sdk(memory_proxy, "ola")
    for text in ("Write a haiku about autumn.", "Now one about winter.",
                 "And one about spring."):
        _ask(client, text)
    _ask(client, "Write a limerick.", {"role": "system", "content": "You are a poet."})
    # A conversation sent with its history, and one named by the client, keep their own.
    client.chat.completions.create(model="m", messages=[
        SYSTEM, {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"},
        {"role": "user", "content": "Tell me a joke."}])
    sdk(memory_proxy, "ola", "named").chat.completions.create(
        model="m", messages=[SYSTEM, {"role": "user", "content": "Hello there"}])

    sessions = wait_for(lambda: (s := _sessions(url, "ola")) and len(s) >= 4 and s)
    by_first = {s["first_message"]: s for s in sessions}
    assert by_first["Write a haiku about autumn."]["messages"] == 6
    assert by_first["Write a limerick."]["messages"] == 2
    assert by_first["Hello"]["messages"] == 4
    assert by_first["Hello there"]["conversation_id"] == "named"
    grouped = by_first["Write a haiku about autumn."]["id"]
    transcript = httpx.get(f"{url}/agents/ola/sessions/{grouped}").json()["messages"]
    assert [m["content"] for m in transcript if m["role"] == "user"] == [
        "Write a haiku about autumn.", "Now one about winter.", "And one about spring."]
    # The same request sent again (a retry) is stored once.
    _ask(client, "And one about spring.")
    transcript = httpx.get(f"{url}/agents/ola/sessions/{grouped}").json()["messages"]
    assert len(transcript) == 6


def test_a_question_memory_answered_is_not_served_as_memory(memory_proxy, fake_upstream):
    url = memory_proxy.url
    ingested = httpx.post(url + "/memory/ingest", json={
        "agent_id": "kim", "conversation_id": "intro", "session_date": "2024-05-01",
        "turns": [{"user": "I have a border collie called Biscuit.", "assistant": "Lovely!"}]})
    assert ingested.status_code == 200, ingested.text
    client = sdk(memory_proxy, "kim")

    first = _ask(client, "What's my dog called?")
    assert first.headers["x-memory-section"] not in ("none", "off", "error")
    assert "Biscuit" in fake_upstream.requests[-1].json["messages"][-1]["content"]
    told = _ask(client, "My dog Biscuit loves chasing waves at the beach.")
    assert told.headers["x-memory-section"] is not None

    later = _ask(client, "What is my dog's name, and what does he love?")
    sent = fake_upstream.requests[-1].json["messages"][-1]["content"]
    assert later.headers["x-memory-section"] not in ("none", "off", "error")
    assert "Biscuit" in sent
    assert "What's my dog called?" not in sent  # the earlier question is not memory
    assert "chasing waves" in sent.split("What is my dog's name")[0]  # what was told is
    # The question stays in the transcript, for search and audit.
    found = httpx.post(url + "/memory/search", json={
        "agent_id": "kim", "query": "What's my dog called", "scope": "transcript"}).json()
    assert any(r["text"] == "What's my dog called?" for r in found["results"])

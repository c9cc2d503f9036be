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


def test_a_chat_ui_conversation_is_stored_once_in_its_own_session(memory_proxy, fake_upstream):
    """A chat UI sends a new chat's first message alone, and from the second on the whole
    history: the opening, stored with the one-message requests, moves to its conversation."""
    url, client = memory_proxy.url, sdk(memory_proxy, "ana")
    _ask(client, "Write a haiku about autumn.")  # an earlier one-message request
    opening = "Hi! I keep bees in my garden in Ghent."
    first = client.chat.completions.create(
        model="m", messages=[SYSTEM, {"role": "user", "content": opening}])
    reply = first.choices[0].message.content or ""
    history = [SYSTEM, {"role": "user", "content": opening},
               {"role": "assistant", "content": reply}]
    for follow_up in ("How many hives should I start with?", "And when do I harvest?"):
        client.chat.completions.create(
            model="m", messages=[*history, {"role": "user", "content": follow_up}])
        history += [{"role": "user", "content": follow_up},
                    {"role": "assistant", "content": reply}]

    def stored() -> dict[str, list[str]]:
        by_first = {}
        for s in _sessions(url, "ana"):
            transcript = httpx.get(f"{url}/agents/ana/sessions/{s['id']}").json()["messages"]
            by_first[s["first_message"]] = [m["content"] for m in transcript
                                            if m["role"] == "user"]
        return by_first

    sessions = wait_for(lambda: (s := stored()) and len(s.get(opening, [])) == 3 and s)
    assert sessions == {
        "Write a haiku about autumn.": ["Write a haiku about autumn."],
        opening: [opening, "How many hives should I start with?", "And when do I harvest?"]}
    found = httpx.post(url + "/memory/search", json={
        "agent_id": "ana", "query": "bees garden Ghent", "scope": "transcript"}).json()
    assert [r["text"] for r in found["results"]].count(opening) == 1


def test_a_chat_ui_conversation_opened_alone_takes_its_whole_session(memory_proxy):
    """When the opening is all its one-message session holds, that session becomes the
    conversation's (the same id, renamed), nothing left behind."""
    url, client = memory_proxy.url, sdk(memory_proxy, "ben")
    opening = "My cat Miso hates the vacuum cleaner."
    reply = client.chat.completions.create(
        model="m", messages=[SYSTEM, {"role": "user", "content": opening}],
    ).choices[0].message.content or ""
    before = wait_for(lambda: _sessions(url, "ben"))
    client.chat.completions.create(model="m", messages=[
        SYSTEM, {"role": "user", "content": opening}, {"role": "assistant", "content": reply},
        {"role": "user", "content": "How do I get her used to it?"}])
    after = wait_for(lambda: (s := _sessions(url, "ben")) and s[0]["messages"] == 4 and s)
    assert [s["id"] for s in after] == [before[0]["id"]]
    assert after[0]["first_message"] == opening

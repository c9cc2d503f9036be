"""Memory you can see and fix: an agent, its sessions and transcripts, episodes, and facts
added, edited (history kept) and deleted by hand, through the management routes."""

from __future__ import annotations

import httpx

from tests.support.memory_client import sdk, wait_for
from tests.support.servers.raw_store import stored_bytes


def test_look_through_an_agents_memory_and_fix_it_by_hand(memory_proxy, fake_upstream):
    url = memory_proxy.url
    ingested = httpx.post(url + "/memory/ingest", json={
        "agent_id": "dana", "conversation_id": "intro", "session_date": "2024-05-08",
        "turns": [{"user": "Hi, my name is Dana Whitfield.", "assistant": "Hello Dana!"},
                  {"user": "I live in Berlin.", "assistant": "Nice city."}]})
    assert ingested.status_code == 200, ingested.text

    agent = httpx.get(url + "/agents/dana").json()
    assert agent["turns"] == 2 and any("Dana" in line for line in agent["identity"])
    sessions = httpx.get(url + "/agents/dana/sessions").json()
    assert [s["conversation_id"] for s in sessions["sessions"]] == ["intro"]
    session_id = sessions["sessions"][0]["id"]
    transcript = httpx.get(f"{url}/agents/dana/sessions/{session_id}").json()["messages"]
    assert [m["content"] for m in transcript][:2] == [
        "Hi, my name is Dana Whitfield.", "Hello Dana!"]
    episodes = httpx.get(url + "/agents/dana/episodes").json()["episodes"]
    assert len(episodes) == 1 and episodes[0]["session_id"] == session_id

    added = httpx.post(url + "/agents/dana/facts", json={
        "content": "User prefers oat milk in coffee.", "salience": 0.9})
    assert added.status_code == 201, added.text
    fact = added.json()
    assert fact["status"] == "current" and fact["salience"] == 0.9

    edited = httpx.patch(f"{url}/agents/dana/facts/{fact['id']}",
                         json={"content": "User prefers soy milk in coffee."}).json()
    assert edited["id"] == fact["id"] and edited["salience"] == 0.9
    assert edited["content"] == "User prefers soy milk in coffee."
    detail = httpx.get(f"{url}/agents/dana/facts/{fact['id']}").json()
    assert detail["status"] == "current"
    assert [(h["content"], h["status"]) for h in detail["history"]] == [
        ("User prefers oat milk in coffee.", "superseded"),
        ("User prefers soy milk in coffee.", "current")]
    assert detail["history"][0]["superseded_by"] == fact["id"]
    assert httpx.patch(f"{url}/agents/dana/facts/{edited['id']}",
                       json={"salience": 0.4}).json()["salience"] == 0.4

    # The fact fixed by hand is what the model now gets.
    client = sdk(memory_proxy, "dana", "s2")
    client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": "What milk do I like in my coffee?"}])
    sent = fake_upstream.requests[-1].json["messages"][-1]["content"]
    assert "soy milk" in sent and "oat milk" not in sent

    assert httpx.delete(f"{url}/agents/dana/facts/{edited['id']}").json()["deleted"]
    current = httpx.get(url + "/agents/dana/facts?q=milk").json()["facts"]
    assert current == []
    history = httpx.get(url + "/agents/dana/facts?q=milk&status=all").json()["facts"]
    assert [f["content"] for f in history] == ["User prefers oat milk in coffee."]
    found = wait_for(lambda: httpx.post(url + "/memory/search", json={
        "agent_id": "dana", "query": "milk coffee", "scope": "pinned"}).json()["results"] == [])
    assert found


def test_an_edited_fact_keeps_its_id_and_deleting_that_id_removes_it(memory_proxy):
    url = memory_proxy.url
    httpx.post(url + "/memory/ingest", json={
        "agent_id": "dana", "conversation_id": "c1", "session_date": "2024-05-01",
        "turns": [{"user": "I live in Berlin.", "assistant": "Noted."}]})
    httpx.post(url + "/memory/ingest", json={
        "agent_id": "dana", "conversation_id": "c2", "session_date": "2024-05-02",
        "turns": [{"user": "I moved to Paris.", "assistant": "Noted."}]})
    [fact] = [f for f in httpx.get(url + "/agents/dana/facts").json()["facts"]
              if "Paris" in f["content"]]
    for content in ("User lives in Lyon", "User lives in Nantes"):
        edited = httpx.patch(f"{url}/agents/dana/facts/{fact['id']}", json={"content": content})
        assert edited.status_code == 200 and edited.json()["id"] == fact["id"]
    detail = httpx.get(f"{url}/agents/dana/facts/{fact['id']}").json()
    assert [h["content"] for h in detail["history"]] == [
        "User lives in Berlin", "User lives in Paris", "User lives in Lyon",
        "User lives in Nantes"]
    assert detail["history"][-1]["id"] == fact["id"]

    assert httpx.delete(f"{url}/agents/dana/facts/{fact['id']}").json()["deleted"]
    current = httpx.get(url + "/agents/dana/facts").json()["facts"]
    assert not any("lives in" in f["content"] for f in current)
    assert httpx.get(f"{url}/agents/dana/facts/{fact['id']}").status_code == 404
    everything = httpx.get(url + "/agents/dana/facts?status=all").json()["facts"]
    assert {f["content"] for f in everything} >= {"User lives in Paris", "User lives in Lyon"}
    gone = httpx.patch(f"{url}/agents/dana/facts/{fact['id']}", json={"content": "x"})
    assert gone.status_code == 404


def test_bad_management_requests_get_clear_4xx(memory_proxy):
    url = memory_proxy.url
    assert httpx.get(url + "/agents/nobody").status_code == 404
    assert httpx.get(url + "/agents/nobody/sessions").status_code == 404
    assert httpx.post(url + "/agents/dana/facts", json={"content": " "}).status_code == 400
    bad_salience = httpx.post(url + "/agents/dana/facts", json={"content": "x", "salience": 2})
    assert bad_salience.status_code == 400
    assert bad_salience.json()["error"]["param"] == "salience"
    fact = httpx.post(url + "/agents/dana/facts", json={"content": "User likes tea."}).json()
    assert httpx.patch(f"{url}/agents/dana/facts/{fact['id']}", json={}).status_code == 400
    assert httpx.patch(f"{url}/agents/dana/facts/999999", json={"salience": 0.1}).status_code == 404
    assert httpx.delete(f"{url}/agents/dana/facts/999999").status_code == 404
    assert httpx.get(f"{url}/agents/dana/sessions/999999").status_code == 404
    assert httpx.get(f"{url}/agents/dana/facts/0").status_code == 400


def test_metrics_count_reads_tokens_and_memory(memory_proxy):
    httpx.post(memory_proxy.url + "/memory/ingest", json={
        "agent_id": "dana", "conversation_id": "c",
        "turns": [{"user": "My name is Dana and I live in Lisbon.", "assistant": "Hi Dana!"}]})
    client = sdk(memory_proxy, "dana", "s2")
    client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": "Where do I live?"}])
    response = httpx.get(memory_proxy.url + "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    values = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
              for line in response.text.splitlines() if line and not line.startswith("#")}
    assert values['mnemoproxy_memory_reads_total{outcome="injected"}'] == 1
    assert values["mnemoproxy_injected_tokens_total"] > 0
    assert values['mnemoproxy_items{kind="messages"}'] >= 4
    assert values["mnemoproxy_agents"] == 1


def test_a_facts_history_a_forgotten_session_and_a_deleted_episode(memory_proxy, tmp_path):
    url = memory_proxy.url
    for conversation, text in (("c1", "I live in Berlin."),
                               ("c2", "I moved to Paris. My locker code is Zyxquorn.")):
        httpx.post(url + "/memory/ingest", json={
            "agent_id": "dana", "conversation_id": conversation,
            "session_date": "2024-05-0" + conversation[-1],
            "turns": [{"user": text, "assistant": "Noted."}]})
    facts = httpx.get(url + "/agents/dana/facts?status=all").json()["facts"]
    paris = next(f for f in facts if "Paris" in f["content"])
    line = httpx.get(f"{url}/agents/dana/facts/{paris['id']}").json()["history"]
    assert [("Berlin" in f["content"], "Paris" in f["content"]) for f in line] == [
        (True, False), (False, True)]

    sessions = httpx.get(url + "/agents/dana/sessions").json()["sessions"]
    second = next(s["id"] for s in sessions if s["conversation_id"] == "c2")
    forgotten = httpx.delete(f"{url}/agents/dana/sessions/{second}")
    assert forgotten.status_code == 200, forgotten.text
    assert forgotten.json()["forgotten"]["messages"] == 2
    data_dir = tmp_path / "data"
    stored = stored_bytes(data_dir)
    assert b"Zyxquorn" not in stored and b"Berlin" in stored
    current = httpx.get(url + "/agents/dana/facts").json()["facts"]
    assert [("Berlin" in f["content"]) for f in current] == [True]  # Paris went with c2
    assert httpx.delete(f"{url}/agents/dana/sessions/{second}").status_code == 404

    episode = httpx.get(url + "/agents/dana/episodes").json()["episodes"][0]
    assert httpx.delete(f"{url}/agents/dana/episodes/{episode['id']}").json()["deleted"]
    assert httpx.get(url + "/agents/dana/episodes").json()["episodes"] == []
    assert httpx.delete(f"{url}/agents/dana/episodes/{episode['id']}").status_code == 404


def test_a_kept_fact_outlives_consolidation(memory_proxy):
    url = memory_proxy.url
    kept = httpx.post(url + "/agents/dana/facts", json={
        "content": "User's passport expires in 2031.", "salience": 0.0, "pinned": True}).json()
    faded = httpx.post(url + "/agents/dana/facts", json={
        "content": "User had toast today.", "salience": 0.0}).json()
    assert kept["pinned"] and not faded["pinned"]
    report = httpx.post(url + "/memory/consolidate", json={"agent_id": "dana"})
    assert report.status_code == 200, report.text
    current = [f["content"] for f in httpx.get(url + "/agents/dana/facts").json()["facts"]]
    assert current == ["User's passport expires in 2031."]
    let_go = httpx.patch(f"{url}/agents/dana/facts/{kept['id']}", json={"pinned": False})
    assert let_go.json()["pinned"] is False
    httpx.post(url + "/memory/consolidate", json={"agent_id": "dana"})
    assert httpx.get(url + "/agents/dana/facts").json()["facts"] == []


def test_forgetting_the_middle_of_three_values_keeps_the_latest_current(memory_proxy):
    url = memory_proxy.url
    for n, city in ((1, "Berlin"), (2, "Paris"), (3, "Rome")):
        httpx.post(url + "/memory/ingest", json={
            "agent_id": "dana", "conversation_id": f"c{n}", "session_date": f"2024-05-0{n}",
            "turns": [{"user": f"I live in {city}.", "assistant": "Noted."}]})
    sessions = httpx.get(url + "/agents/dana/sessions").json()["sessions"]
    middle = next(s["id"] for s in sessions if s["conversation_id"] == "c2")
    assert httpx.delete(f"{url}/agents/dana/sessions/{middle}").status_code == 200
    current = [f["content"] for f in httpx.get(url + "/agents/dana/facts").json()["facts"]]
    assert any("Rome" in c for c in current) and not any("Berlin" in c for c in current)
    history = httpx.get(url + "/agents/dana/facts?status=superseded").json()["facts"]
    assert [("Berlin" in f["content"]) for f in history] == [True]

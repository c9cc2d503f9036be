"""What is sent again is recognised, never stored twice: a conversation ingested again (a
whole export imported twice, a history grown since, a part sent twice), a document uploaded
again (the same bytes, or a changed file of the same name); answers say what was new,
updated or unchanged. A PDF's title is its real title, else its first bookmark, else its
file name."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemoproxy.memory.write.reimport import known_prefix
from tests.support.data.pdf_maker import make_pdf
from tests.support.servers.proxy_server import ProxyServer


def ingest(server: ProxyServer, turns: list[tuple[str, str]], **extra: Any) -> dict[str, Any]:
    answer = httpx.post(server.url + "/memory/ingest", timeout=60, json={
        "agent_id": "zoe", "conversation_id": "c1",
        "turns": [{"user": u, "assistant": a} for u, a in turns], **extra})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def transcript(server: ProxyServer) -> list[str]:
    sessions = httpx.get(server.url + "/agents/zoe/sessions").json()["sessions"]
    assert len(sessions) == 1
    messages = httpx.get(f"{server.url}/agents/zoe/sessions/{sessions[0]['id']}").json()
    return [m["content"] for m in messages["messages"] if m["role"] == "user"]


def test_a_conversation_ingested_again_adds_only_what_is_new(memory_proxy):
    first = [("I moved to Porto.", "Lovely!"), ("My cat is Mia.", "Cute.")]
    answer = ingest(memory_proxy, first, title="Moving to Porto")
    assert (answer["conversation"], answer["turns_ingested"], answer["turns_skipped"]) == (
        "new", 2, 0)
    facts = httpx.get(memory_proxy.url + "/agents/zoe/facts").json()["facts"]

    again = ingest(memory_proxy, first, title="Moving to Porto")
    assert (again["conversation"], again["turns_ingested"], again["turns_skipped"]) == (
        "unchanged", 0, 2)
    assert again["distillation"]["status"] == "nothing_pending"
    assert httpx.get(memory_proxy.url + "/agents/zoe/facts").json()["facts"] == facts

    grown = ingest(memory_proxy, [*first, ("I work at Oceanlab.", "Nice.")])
    assert (grown["conversation"], grown["turns_ingested"], grown["turns_skipped"]) == (
        "updated", 1, 2)
    # Parts: the next one is added, one sent again (or its tail) is not.
    assert ingest(memory_proxy, [("I play chess.", "Fun.")])["turns_ingested"] == 1
    assert ingest(memory_proxy, [("I work at Oceanlab.", "Nice."),
                                 ("I play chess.", "Fun.")])["conversation"] == "unchanged"
    assert transcript(memory_proxy) == ["I moved to Porto.", "My cat is Mia.",
                                        "I work at Oceanlab.", "I play chess."]
    session = httpx.get(memory_proxy.url + "/agents/zoe/sessions").json()["sessions"][0]
    assert session["title"] == "Moving to Porto"
    assert session["first_message"] == "I moved to Porto."


def test_a_document_uploaded_again_is_kept_once(memory_proxy):
    url = memory_proxy.url + "/agents/ops/documents"
    manual = b"# Kettle\n\nDescale the kettle every 6 weeks."
    first = httpx.post(url, files={"file": ("kettle.md", manual)}, timeout=60)
    assert first.status_code == 201 and first.json()["status"] == "new"
    again = httpx.post(url, files={"file": ("kettle.md", manual)}, timeout=60)
    assert again.status_code == 200 and again.json()["status"] == "unchanged"
    assert again.json()["document"]["id"] == first.json()["document"]["id"]
    # The same bytes under another name are the same document too.
    renamed = httpx.post(url, files={"file": ("copy/kettle.md", manual)}, timeout=60)
    assert renamed.json()["status"] == "unchanged"

    changed = httpx.post(url, files={"file": ("kettle.md", manual.replace(b"6", b"8"))},
                         timeout=60)
    assert changed.status_code == 201 and changed.json()["status"] == "updated"
    listed = httpx.get(url).json()["documents"]
    assert [d["source"] for d in listed] == ["kettle.md"]
    found = httpx.post(memory_proxy.url + "/memory/search", json={
        "agent_id": "ops", "query": "descale the kettle weeks", "scope": "documents"}).json()
    assert [r["text"] for r in found["results"]] == ["Descale the kettle every 8 weeks."]

    as_text = {"title": "Note", "text": "The VPN gateway is vpn2."}
    assert httpx.post(url, json=as_text).json()["status"] == "new"
    assert httpx.post(url, json=as_text).json()["status"] == "unchanged"
    assert len(httpx.get(url).json()["documents"]) == 2


def test_an_export_carries_titles_and_content_hashes(memory_proxy):
    ingest(memory_proxy, [("I moved to Porto.", "Lovely!")], title="Moving")
    httpx.post(memory_proxy.url + "/agents/zoe/documents",
               files={"file": ("kettle.md", b"Descale it.")}, timeout=60).raise_for_status()
    exported = httpx.get(memory_proxy.url + "/agents/zoe/export").text
    assert '"title": "Moving"' in exported and '"content_hash": "' in exported
    copied = httpx.post(memory_proxy.url + "/agents/ann/import", content=exported,
                        headers={"Content-Type": "application/x-ndjson"})
    assert copied.status_code == 200, copied.text
    assert httpx.get(memory_proxy.url + "/agents/ann/sessions").json()["sessions"][0][
        "title"] == "Moving"
    # The imported document is known by its bytes: uploading them again adds nothing.
    again = httpx.post(memory_proxy.url + "/agents/ann/documents",
                       files={"file": ("kettle.md", b"Descale it.")}, timeout=60)
    assert again.json()["status"] == "unchanged"


def test_a_pdf_is_titled_by_its_real_title_else_its_bookmark_else_its_name(memory_proxy):
    url = memory_proxy.url + "/agents/ops/documents"
    cases = (("about:blank", None, "rack-spec"), ("", "Rack units", "Rack units"),
             ("Microsoft Word - spec.docx", None, "rack-spec"),
             ("The rack guide", "Rack units", "The rack guide"))
    for n, (title, bookmark, expected) in enumerate(cases):
        pdf = make_pdf([[f"The rack holds {40 + n} units."]], title=title, bookmark=bookmark)
        answer = httpx.post(url, files={"file": ("rack-spec.pdf", pdf)}, timeout=60)
        assert answer.status_code == 201, answer.text
        assert answer.json()["document"]["title"] == expected, (title, bookmark)


def naive_prefix(stored: list[int], arriving: list[int]) -> int:
    return max((k for k in range(len(arriving) + 1) for start in range(len(stored) + 1)
                if stored[start:start + k] == arriving[:k]), default=0)


@settings(max_examples=300, deadline=None, database=None)
@given(stored=st.lists(st.integers(0, 2), max_size=12),
       arriving=st.lists(st.integers(0, 2), max_size=8))
def test_the_known_prefix_is_the_longest_run_held_already(stored, arriving):
    assert known_prefix(stored, arriving) == naive_prefix(stored, arriving)


def test_the_known_prefix_stays_linear_on_repetitive_conversations():
    # A naive scan compares about 10^10 pairs here; the linear one about 4 * 10^5.
    compared = itertools.count()

    class Counted(str):
        def __eq__(self, other: object) -> bool:
            next(compared)
            return str.__eq__(self, other)

        __hash__ = str.__hash__

        def __ne__(self, other: object) -> bool:
            return not self.__eq__(other)

    stored = [Counted("ok")] * 100_000
    arriving = [Counted("ok")] * 99_999 + [Counted("bye")]
    assert known_prefix(stored, arriving) == 99_999
    assert next(compared) < 1_000_000

"""Documents (an agent's knowledge base) through the real interface: uploaded as JSON text or
as multipart files (text, Markdown, HTML, PDF), cut into chunks along their structure,
listed, read, searched (scope `documents`), put in the memory block of a chat whose
question they answer (and never another agent's), deleted for good; bad uploads are 4xx
in OpenAI's error shape."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.support.data.pdf_maker import make_pdf
from tests.support.memory_client import memory_settings, sdk, search, user_text_seen_upstream
from tests.support.servers.proxy_server import ProxyServer

MANUAL = """# Falcon X200 Drill Manual

The Falcon X200 is a cordless drill for wood and masonry.

## Warranty

The Falcon X200 carries a warranty of 36 months from the date of purchase. Keep the
receipt: the warranty claim needs it.

## Battery

### Charging

Charge the lithium battery for 90 minutes before its first use. The charger light turns
green when the battery is full.

### Storage

Store the battery at room temperature, half charged, when the drill is not used for
a month or more.
"""

RECIPES = """<html><head><title>Grandma's Recipes</title><script>alert('x')</script></head>
<body><h1>Grandma's Recipes</h1>
<h2>Quince jam</h2><p>Simmer the quinces with lemon peel for two hours.</p>
<h2>Walnut bread</h2><p>Bake the walnut bread at 190 degrees for forty minutes.</p>
</body></html>"""


def upload(server: ProxyServer, agent: str, *, files: Any = None, data: Any = None,
           json: Any = None, headers: Any = None) -> httpx.Response:
    return httpx.post(f"{server.url}/agents/{agent}/documents", files=files, data=data,
                      json=json, headers=headers, timeout=60)


def stored(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 201, response.text
    document: dict[str, Any] = response.json()["document"]
    return document


def chunks_of(server: ProxyServer, agent: str, document_id: int) -> list[dict[str, Any]]:
    response = httpx.get(f"{server.url}/agents/{agent}/documents/{document_id}")
    assert response.status_code == 200, response.text
    chunks: list[dict[str, Any]] = response.json()["chunks"]
    return chunks


@pytest.fixture
def server(fake_upstream, tmp_path):
    with ProxyServer(memory_settings(fake_upstream, tmp_path, max_body_bytes=200_000)) as s:
        yield s


def test_each_format_is_stored_in_chunks_along_its_structure(server):
    markdown = stored(upload(server, "kb", json={"title": "Drill manual", "text": MANUAL,
                                                  "media_type": "text/markdown"}))
    assert markdown["media_type"] == "text/markdown" and markdown["source"] == ""
    headings = [c["heading"] for c in chunks_of(server, "kb", markdown["id"])]
    assert headings == ["", "Warranty", "Battery › Charging", "Battery › Storage"]

    html = stored(upload(server, "kb", files={"file": ("recipes.html", RECIPES, "text/html")}))
    assert html["title"] == "Grandma's Recipes" and html["source"] == "recipes.html"
    recipes = chunks_of(server, "kb", html["id"])
    assert [c["heading"] for c in recipes] == ["Quince jam", "Walnut bread"]
    assert "alert" not in str(recipes)  # scripts are not text

    text = stored(upload(server, "kb", files={"file": ("notes.txt", b"First note.\n\nSecond.")},
                         data={"title": "Notes"}))
    assert text["title"] == "Notes" and text["media_type"] == "text/plain"
    assert [c["text"] for c in chunks_of(server, "kb", text["id"])] == ["First note.\n\nSecond."]

    pdf = make_pdf([["The pump runs at 1450 rpm."], ["Replace the seal every 2000 hours."]],
                   title="Pump Handbook")
    handbook = stored(upload(server, "kb", files={"file": ("pump.pdf", pdf, "application/pdf")}))
    assert handbook["title"] == "Pump Handbook" and handbook["media_type"] == "application/pdf"
    pages = chunks_of(server, "kb", handbook["id"])
    assert [(c["page"], c["position"]) for c in pages] == [(1, 0), (2, 1)]
    assert "2000 hours" in pages[1]["text"]

    # A Markdown file is told by its name; listing pages on with the cursor.
    stored(upload(server, "kb", files={"file": ("faq.md", b"# FAQ\n\n## Hours\n\nOpen 9-5.",
                                                "application/octet-stream")}))
    first = httpx.get(f"{server.url}/agents/kb/documents", params={"limit": 3}).json()
    rest = httpx.get(f"{server.url}/agents/kb/documents",
                     params={"cursor": first["next_cursor"]}).json()
    titles = [d["title"] for d in first["documents"] + rest["documents"]]
    assert titles == ["Drill manual", "Grandma's Recipes", "Notes", "Pump Handbook", "FAQ"]
    assert rest["next_cursor"] is None


def test_search_finds_chunks_with_their_source_and_position(server):
    document = stored(upload(server, "kb", json={"title": "Drill manual", "text": MANUAL,
                                                  "media_type": "text/markdown"}))
    httpx.post(server.url + "/memory/ingest", json={
        "agent_id": "kb", "conversation_id": "c", "skip_extraction": True,
        "turns": [{"user": "My warranty card for the fridge is lost.", "assistant": "Oh no."}]})
    found = search(server, "kb", "how long is the drill warranty", scope="documents")
    assert found and all(r["kind"] == "document" for r in found)
    best = found[0]
    assert "36 months" in best["text"]
    assert best["provenance"] == {"document_id": document["id"], "title": "Drill manual",
                                  "heading": "Warranty", "position": 1, "page": None}
    # Unscoped, documents compete with the rest of memory.
    assert "document" in {r["kind"] for r in search(server, "kb", "battery charging minutes")}
    assert search(server, "someone-else", "drill warranty", scope="documents") == []


def test_a_question_a_document_answers_gets_it_in_the_block(server, fake_upstream):
    stored(upload(server, "kb", json={"title": "Drill manual", "text": MANUAL,
                                       "media_type": "text/markdown"}))
    stored(upload(server, "kb", files={"file": ("recipes.html", RECIPES, "text/html")}))
    chat = sdk(server, "kb").chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user",
                              "content": "How long should I charge the battery before first use?"}])
    assert chat.headers["x-memory-section"] == "document"
    block = user_text_seen_upstream(fake_upstream)
    assert "[Drill manual › Battery › Charging]" in block and "90 minutes" in block

    sdk(server, "kb").chat.completions.create(
        model="m", messages=[{"role": "user", "content": "At what temperature do I bake the "
                                                         "walnut bread?"}])
    assert "190 degrees" in user_text_seen_upstream(fake_upstream)

    # A request anyone could send stays without memory, however the documents read.
    quiet = sdk(server, "kb").chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "Write a haiku about autumn leaves."}])
    assert quiet.headers["x-memory-section"] == "none"
    # Another agent never sees them.
    sdk(server, "other").chat.completions.create(
        model="m", messages=[{"role": "user",
                              "content": "How long should I charge the battery before first use?"}])
    assert "90 minutes" not in user_text_seen_upstream(fake_upstream)
    assert httpx.get(f"{server.url}/agents/other/documents").json()["documents"] == []
    assert httpx.get(f"{server.url}/agents/nobody/documents").status_code == 404


def test_a_deleted_document_is_gone(server, fake_upstream):
    document = stored(upload(server, "kb", json={"title": "Drill manual", "text": MANUAL,
                                                  "media_type": "text/markdown"}))
    assert httpx.delete(f"{server.url}/agents/other/documents/{document['id']}").status_code == 404
    deleted = httpx.delete(f"{server.url}/agents/kb/documents/{document['id']}")
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"agent_id": "kb", "document_id": document["id"], "deleted": True,
                              "chunks": 4}
    assert httpx.get(f"{server.url}/agents/kb/documents/{document['id']}").status_code == 404
    assert httpx.delete(f"{server.url}/agents/kb/documents/{document['id']}").status_code == 404
    assert search(server, "kb", "drill warranty months", scope="documents") == []
    assert httpx.get(f"{server.url}/agents/kb/documents").json()["documents"] == []
    sdk(server, "kb").chat.completions.create(
        model="m", messages=[{"role": "user", "content": "How long is the drill's warranty?"}])
    assert "36 months" not in user_text_seen_upstream(fake_upstream)


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


def test_bad_uploads_are_refused_with_what_to_do(server):
    broken = error_of(upload(server, "kb", files={
        "file": ("scan.pdf", b"%PDF-1.4 not really", "application/pdf")}), 400)
    assert "scan.pdf" in broken["message"] and broken["param"] == "file"
    empty_pdf = make_pdf([[]])
    assert "no text" in error_of(upload(server, "kb", files={
        "file": ("blank.pdf", empty_pdf, "application/pdf")}), 400)["message"]
    latin = "caf\u00e9".encode("latin-1")
    assert error_of(upload(server, "kb", files={
        "file": ("latin.txt", latin, "text/plain")}), 400)["param"] == "file"
    assert error_of(upload(server, "kb", files={
        "file": ("x.bin", b"\x00\x01binary", "application/zip")}), 400)["param"] == "media_type"
    assert error_of(upload(server, "kb", files={"file": ("e.txt", b"")}), 400)["param"] == "file"
    assert error_of(upload(server, "kb", files={"other": ("a.txt", b"text")}), 400)[
        "param"] == "file"
    assert error_of(upload(server, "kb", json={"title": "t"}), 400)["param"] == "text"
    assert error_of(upload(server, "kb", json={"title": "t", "text": "x", "media_type":
                                               "application/pdf"}), 400)["param"] == "media_type"
    assert error_of(upload(server, "kb", json={"title": "t", "text": " \n "}), 400)[
        "param"] == "text"
    assert error_of(httpx.post(f"{server.url}/agents/kb/documents", content=b"{",
                               headers={"Content-Type": "application/json"}), 400)
    assert error_of(httpx.post(f"{server.url}/agents/kb/documents", content=b"plain words",
                               headers={"Content-Type": "text/plain"}), 415)
    assert error_of(upload(server, "kb", files={"file": ("big.txt", b"word " * 50_000)}),
                    413)["code"]
    # Multipart is taken on this route alone, and never from another site's page.
    assert error_of(httpx.post(f"{server.url}/agents/kb/facts", files={
        "file": ("a.txt", b"text")}), 415)
    assert error_of(upload(server, "kb", files={"file": ("a.txt", b"text")},
                           headers={"Origin": "https://evil.example"}), 403)
    assert error_of(upload(server, "kb", files={"file": ("a.txt", b"text")},
                           headers={"Sec-Fetch-Site": "cross-site"}), 415)
    assert httpx.get(f"{server.url}/agents/kb/documents").status_code == 404  # none stored


def test_too_many_chunks_is_a_413(server, monkeypatch):
    from mnemoproxy.memory.write import documents

    monkeypatch.setattr(documents, "MAX_CHUNKS", 3)
    text = "\n\n".join(f"Paragraph {n}. " + "words " * 200 for n in range(6))
    error = error_of(upload(server, "kb", json={"title": "long", "text": text}), 413)
    assert "split it" in error["message"]


def test_recall_on_a_built_document_set(fake_upstream, tmp_path):
    """A light run of tests/benchmarks/quality/bench_documents.py: 8 look-alike manuals, 16
    questions each answered by one section, through search and through the chat."""
    from tests.support.data.document_recall import document_set, measure

    docs, questions = document_set(8)
    settings = memory_settings(fake_upstream, tmp_path, embedding_backend="wordllama")
    with ProxyServer(settings) as server:
        figures = measure(server.url, fake_upstream, docs, questions,
                          ["Write a haiku about autumn leaves.", "Explain how TCP works.",
                           "What are the health benefits of green tea?"])
    assert figures["search_documents_recall@5"] >= 0.9, figures
    assert figures["search_all_recall@5"] >= 0.9, figures
    assert figures["chats_whose_block_holds_the_answer"] >= 0.9, figures
    assert figures["generic_prompts_with_a_block"] == 0, figures


def test_malformed_html_is_read_in_one_pass_and_its_text_kept(server):
    # Unfinished tags by the thousand: the parser alone rescans each to the end.
    started = time.monotonic()
    bomb = upload(server, "kb", files={"file": ("bomb.html", b"<a " * 60_000, "text/html")})
    assert bomb.status_code in (201, 400, 413), bomb.text
    assert time.monotonic() - started < 5
    assert httpx.get(f"{server.url}/health", timeout=5).status_code == 200
    # Ordinary markup around the rough edges: a comparison, a quote in a title, a comment.
    page = (b"<html><head><title>Valve notes</title></head><body><!-- draft -->"
            b"<h1>Valve</h1><p title=\"it's\">Keep pressure < 6 bar and > 2 bar.</p>"
            b"<p>Check the <b>seal</b> yearly.</body>")
    document = stored(upload(server, "kb", files={"file": ("valve.html", page, "text/html")}))
    text = " ".join(c["text"] for c in chunks_of(server, "kb", document["id"]))
    assert "Keep pressure < 6 bar and > 2 bar." in text and "Check the seal yearly." in text
    assert "draft" not in text

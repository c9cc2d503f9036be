"""Document uploads within bounds: a small PDF whose pages share one compressed stream is
refused before it costs seconds of CPU, reading a PDF stops at its page, character and
time budgets, one key's uploads run a few at a time on threads of their own, and a large
multipart body is never written to the system's temporary folder (nor anywhere in clear
when memory is encrypted)."""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from mnemoproxy.memory import management
from mnemoproxy.memory.write import documents
from mnemoproxy.proxy.api import uploads
from mnemoproxy.proxy.edge.keys import KeyFile
from tests.support.data.pdf_maker import make_pdf, page_bomb
from tests.support.memory_client import memory_settings
from tests.support.servers.proxy_server import ProxyServer


def upload(url: str, agent: str, name: str, data: bytes, kind: str,
           headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(f"{url}/agents/{agent}/documents", files={"file": (name, data, kind)},
                      headers=headers, timeout=120)


@pytest.fixture
def server(fake_upstream, tmp_path):
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as proxy:
        yield proxy


def test_a_page_bomb_is_refused_in_well_under_a_second_of_cpu(server):
    bomb = page_bomb()
    assert len(bomb) < 16_000
    cpu = time.process_time()
    refused = upload(server.url, "kb", "bomb.pdf", bomb, "application/pdf")
    spent = time.process_time() - cpu
    assert refused.status_code == 413, refused.text
    assert "bomb.pdf" in refused.json()["error"]["message"]
    assert spent < 1.0, f"{spent:.2f} s of CPU"
    # An ordinary PDF of several pages still reads, each chunk with its page.
    pdf = make_pdf([[f"Page {n} tells of the falcon's nest on the cliff."] for n in range(1, 6)])
    stored = upload(server.url, "kb", "nests.pdf", pdf, "application/pdf")
    assert stored.status_code == 201, stored.text


def test_a_pdf_is_read_within_its_page_and_character_budgets(monkeypatch):
    pages = [[f"Page {n}: the lighthouse keeper logged the weather at dawn."] for n in range(9)]
    monkeypatch.setattr(documents, "MAX_PDF_PAGES", 8)
    with pytest.raises(documents.TooLarge, match="pages"):
        documents.parse_document(make_pdf(pages), "application/pdf", filename="log.pdf")
    monkeypatch.setattr(documents, "MAX_PDF_PAGES", 100)
    monkeypatch.setattr(documents, "MAX_TEXT_CHARS", 200)
    read: list[int] = []
    real = documents._page_text

    def counted(page: Any) -> str:
        read.append(1)
        return real(page)

    monkeypatch.setattr(documents, "_page_text", counted)
    with pytest.raises(documents.TooLarge, match="characters"):
        documents.parse_document(make_pdf(pages), "application/pdf", filename="log.pdf")
    assert len(read) < len(pages)  # stopped at the budget, not after every page
    monkeypatch.setattr(documents, "MAX_TEXT_CHARS", 10_000_000)
    monkeypatch.setattr(documents, "PARSE_SECONDS", 0.0)
    with pytest.raises(documents.TooLarge, match="seconds"):
        documents.parse_document(make_pdf(pages), "application/pdf", filename="log.pdf")


def _hold_an_upload(port: int, agent: str, key: str | None) -> socket.socket:
    """An upload whose body is still coming: its request line, headers and first bytes."""
    body_start = b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n"
    head = (f"POST /agents/{agent}/documents HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n")
    if key:
        head += f"Authorization: Bearer {key}\r\n"
    held = socket.create_connection(("127.0.0.1", port))
    held.sendall(head.encode() + b"\r\n" + body_start)
    return held


def test_one_key_uploads_a_few_documents_at_a_time(fake_upstream, tmp_path):
    keys = KeyFile(tmp_path / "data" / "keys.json")
    _, busy = keys.add(agents=("*",), admin=False)
    _, other = keys.add(agents=("*",), admin=False)
    with ProxyServer(memory_settings(fake_upstream, tmp_path,
                                     upstream_api_key="sk-up")) as server:
        held = [_hold_an_upload(server.port, "kb", busy)
                for _ in range(uploads.UPLOADS_PER_KEY)]
        try:
            time.sleep(0.3)
            refused = upload(server.url, "kb", "a.txt", b"The nest is on the cliff.",
                             "text/plain", headers={"Authorization": f"Bearer {busy}"})
            assert refused.status_code == 429, refused.text
            assert refused.json()["error"]["code"] == "too_many_uploads"
            taken = upload(server.url, "kb", "b.txt", b"The nest is on the cliff.",
                           "text/plain", headers={"Authorization": f"Bearer {other}"})
            assert taken.status_code == 201, taken.text
        finally:
            for connection in held:
                connection.close()
        time.sleep(0.3)  # the held uploads end: the key may upload again
        again = upload(server.url, "kb", "c.txt", b"The eggs hatched in May.", "text/plain",
                       headers={"Authorization": f"Bearer {busy}"})
        assert again.status_code == 201, again.text


def test_documents_are_read_on_threads_of_their_own(server, monkeypatch):
    seen: list[str] = []
    real = documents.parse_document

    def recorded(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(management, "parse_document", recorded)
    stored = upload(server.url, "kb", "a.txt", b"The nest is on the cliff.", "text/plain")
    assert stored.status_code == 201, stored.text
    assert seen and all(name.startswith("mnemo-documents") for name in seen), seen


@pytest.mark.parametrize("encrypted", [False, True])
def test_a_large_upload_is_never_spooled_to_the_system_temporary_folder(
    fake_upstream, tmp_path, monkeypatch, encrypted
):
    # A temporary folder that does not exist: a file spooled there fails the upload.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    overrides: dict[str, Any] = {}
    if encrypted:
        (tmp_path / "key").write_text("a passphrase of some length")
        # Encryption at rest is SQLite's, whichever backend this run's other tests use.
        overrides.update(encryption_key_file=str(tmp_path / "key"), store_url="")
    settings = memory_settings(fake_upstream, tmp_path, **overrides)
    if encrypted and settings.store_url:
        pytest.skip("encryption at rest is SQLite's")
    big = make_pdf([["The falcon nests on the cliff above the harbour."]],
                   padding=2 * 1024 * 1024)
    seen: list[Path] = []
    with ProxyServer(settings) as server:
        spool = Path(settings.data_dir) / uploads.SPOOL_FOLDER

        def watch() -> None:
            while not done.is_set():
                if spool.exists():
                    seen.extend(p for p in spool.iterdir())
                time.sleep(0.005)

        done = threading.Event()
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        stored = upload(server.url, "kb", "harbour.pdf", big, "application/pdf")
        done.set()
        watcher.join()
        assert stored.status_code == 201, stored.text
    if encrypted:
        assert not spool.exists() or not list(spool.iterdir())

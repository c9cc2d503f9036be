"""Encryption at rest: with encryption_key_file, no file under data_dir holds memory's text,
and only the right key opens it again."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from mnemoproxy.errors import SettingError
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.cipher import Cipher
from tests.support.memory_client import memory_settings, sdk
from tests.support.servers.proxy_server import ProxyServer

UNIQUE = "Zanzibarquokka"


def written_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_no_file_holds_memory_in_clear_and_the_key_opens_it(fake_upstream, tmp_path):
    key_file = tmp_path / "memory.key"
    key_file.write_text("correct horse battery staple\n")
    # Encryption at rest is SQLite's (SQLCipher), whichever backend this run's other tests use.
    settings = memory_settings(fake_upstream, tmp_path, encryption_key_file=str(key_file),
                               store_url="",
                               embedding_backend="wordllama")
    with ProxyServer(settings) as server:
        ingested = httpx.post(server.url + "/memory/ingest", json={
            "agent_id": "dana", "conversation_id": "c1", "turns": [
                {"user": f"My cat is called {UNIQUE}.", "assistant": f"{UNIQUE} is a fine name."}]})
        assert ingested.status_code == 200
        sdk(server, "dana", "s2").chat.completions.create(model="m", messages=[
            {"role": "user", "content": f"Remember {UNIQUE} likes tuna."}])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            health = httpx.get(server.url + "/health").json()["memory"]
            if health["embedded_items"] >= health["transcript_messages"]:
                break
            time.sleep(0.2)
        found = httpx.post(server.url + "/memory/search", json={
            "agent_id": "dana", "query": "what is my cat called"}).json()["results"]
        assert any(UNIQUE in r["text"] for r in found)  # usable while it runs
        data_dir = Path(settings.data_dir)
        assert UNIQUE.encode() not in written_bytes(data_dir)  # nor in the live WAL
    stored = written_bytes(data_dir)
    assert stored and UNIQUE.encode() not in stored and b"dana" not in stored
    assert not list(data_dir.rglob("*.usearch"))  # vectors stay in memory
    with ProxyServer(settings) as server:  # the same key opens it again
        found = httpx.post(server.url + "/memory/search", json={
            "agent_id": "dana", "query": "cat called"}).json()["results"]
        assert any(UNIQUE in r["text"] for r in found)


async def test_a_wrong_key_or_an_unencrypted_database_is_refused_clearly(tmp_path):
    right, wrong = tmp_path / "right.key", tmp_path / "wrong.key"
    right.write_text("the right passphrase")
    wrong.write_text("another passphrase")
    store = await Store.open(tmp_path / "enc", cipher=Cipher.from_file(str(right)))
    await store.close()
    with pytest.raises(SettingError, match="cannot be opened with the key"):
        await Store.open(tmp_path / "enc", cipher=Cipher.from_file(str(wrong)))
    plain = await Store.open(tmp_path / "plain")
    await plain.close()
    with pytest.raises(SettingError, match="written without encryption"):
        await Store.open(tmp_path / "plain", cipher=Cipher.from_file(str(right)))
    hex_key = tmp_path / "hex.key"
    hex_key.write_text("ab" * 32)
    store = await Store.open(tmp_path / "raw", cipher=Cipher.from_file(str(hex_key)))
    await store.close()


async def test_a_key_with_a_postgres_store_is_refused_clearly(tmp_path):
    key = tmp_path / "memory.key"
    key.write_text("the right passphrase")
    with pytest.raises(SettingError, match="encrypt the server's storage"):
        await Store.open(tmp_path / "d", cipher=Cipher.from_file(str(key)),
                         store_url="postgresql://nobody@127.0.0.1:1/none")

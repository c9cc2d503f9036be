"""Vectors: the embedding worker, usearch indexes derived from SQLite, and their rebuilds."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from mnemoproxy.errors import InvalidArgument
from mnemoproxy.memory.background.embedding_worker import EmbeddingWorker
from mnemoproxy.memory.embedders import HashingEmbedder, LocalEmbedder
from mnemoproxy.memory.models import EpisodeDraft, FactDraft
from mnemoproxy.memory.search.vectors import VectorIndexes, key_item, vector_key
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.records import ITEM_TYPES, TranscriptMessage
from tests.support.servers.backends import store_url_for
from tests.support.servers.raw_store import raw


class RenamedEmbedder(LocalEmbedder):
    """The hashing embedder under another model name, counting and optionally slow."""

    def __init__(self, name: str, delay: float = 0.0):
        self._inner = HashingEmbedder()
        self.name = name
        self.dim = self._inner.dim
        self.delay = delay
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(self.delay)
        self.texts.extend(texts)
        return self._inner.encode(texts)


@dataclass
class Parts:
    """The store with the vector machinery around it, as memory wires them."""

    store: Store
    vectors: VectorIndexes
    worker: EmbeddingWorker

    async def close(self) -> None:
        await self.worker.stop()
        await self.vectors.flush()
        await self.store.close()


async def open_parts(folder: Path, embedder: LocalEmbedder, *, start_worker: bool) -> Parts:
    store = await Store.open(folder, store_url=store_url_for(str(folder)))
    vectors = VectorIndexes(folder / "vectors", store, embedder)
    parts = Parts(store, vectors, EmbeddingWorker(store, embedder, vectors))
    if start_worker:
        parts.worker.start()
    return parts


async def fill(store: Store, agent: str = "agent") -> None:
    session_id = await store.session(agent, "s")
    await store.add_transcript(agent, session_id, [
        TranscriptMessage(0, "user", "I planted tomatoes in the garden", 1.0),
        TranscriptMessage(0, "assistant", "Tomatoes like sun", 2.0),
    ])
    await store.insert_fact(agent, FactDraft("Grows tomatoes"))
    await store.add_episode(agent, EpisodeDraft("Gardening chat", topics=["garden"]))


def test_keys_are_unique_across_item_types() -> None:
    keys = {vector_key(t, i) for t in ITEM_TYPES for i in range(50)}
    assert len(keys) == 50 * len(ITEM_TYPES)
    assert all(key_item(vector_key(t, 7)) == (t, 7) for t in ITEM_TYPES)


async def test_drain_embeds_every_item_once(tmp_path: Path) -> None:
    embedder = RenamedEmbedder("fake-a")
    parts = await open_parts(tmp_path, embedder, start_worker=False)
    await fill(parts.store)
    assert await parts.worker.drain() == 4
    assert await parts.worker.drain() == 0
    assert "Gardening chat (garden)" in embedder.texts
    # A message is embedded after its date and the message it answers.
    assert "01 January 1970: I planted tomatoes in the garden\nTomatoes like sun" in embedder.texts
    hits = await parts.vectors.search("agent", embedder.encode(["Grows tomatoes"])[0], 4)
    assert hits[0][:2] == ("fact", 1) and hits[0][2] > 0.99
    assert await parts.vectors.search("nobody", embedder.encode(["x"])[0], 4) == []
    await parts.close()


async def test_changed_text_and_changed_model_are_embedded_again(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path, RenamedEmbedder("fake-a"), start_worker=False)
    await fill(parts.store)
    await parts.worker.drain()
    with raw(parts.store) as db:
        db.execute("UPDATE facts SET content = 'Grows peppers' WHERE id = 1")
    assert await parts.worker.drain() == 1
    await parts.close()

    renamed = RenamedEmbedder("fake-b")
    parts = await open_parts(tmp_path, renamed, start_worker=False)
    assert await parts.worker.drain() == 4  # a new model name re-embeds everything
    assert await parts.store.embedding_count("agent", "fake-b") == 4
    assert await parts.store.embedding_count("agent", "fake-a") == 4  # kept for switching back
    await parts.close()


async def test_background_worker_embeds_without_blocking_the_loop(tmp_path: Path) -> None:
    slow = RenamedEmbedder("slow", delay=0.3)
    parts = await open_parts(tmp_path, slow, start_worker=True)
    await fill(parts.store)
    ticks = 0
    deadline = time.monotonic() + 10
    while await parts.store.embedding_count("agent", "slow") < 4 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
        ticks += 1
    assert await parts.store.embedding_count("agent", "slow") == 4
    assert ticks >= 10  # the loop kept running while the embedder slept in its thread
    await parts.close()


async def _reopened_index_size(tmp_path: Path, damage) -> tuple[int, int]:
    embedder = RenamedEmbedder("fake-a")
    parts = await open_parts(tmp_path, embedder, start_worker=False)
    await fill(parts.store)
    await parts.worker.drain()
    index_path, sidecar_path = parts.vectors.paths("agent")
    await parts.close()
    assert index_path.is_file() and sidecar_path.is_file()
    damage(index_path, sidecar_path)

    parts = await open_parts(tmp_path, embedder, start_worker=False)
    hits = await parts.vectors.search("agent", embedder.encode(["tomatoes"])[0], 10)
    rebuilds = parts.vectors.rebuilds
    await parts.close()
    return len(hits), rebuilds


async def test_intact_index_is_loaded_not_rebuilt(tmp_path: Path) -> None:
    assert await _reopened_index_size(tmp_path, lambda index, sidecar: None) == (4, 0)


async def test_deleted_index_is_rebuilt(tmp_path: Path) -> None:
    assert await _reopened_index_size(tmp_path, lambda index, sidecar: index.unlink()) == (4, 1)


async def test_truncated_index_is_rebuilt(tmp_path: Path) -> None:
    def truncate(index: Path, sidecar: Path) -> None:
        with index.open("r+b") as handle:
            handle.truncate(index.stat().st_size // 2)

    assert await _reopened_index_size(tmp_path, truncate) == (4, 1)


async def test_stale_index_is_brought_up_to_date_not_rebuilt(tmp_path: Path) -> None:
    def add_rows_behind_its_back(index: Path, sidecar: Path) -> None:
        with raw(tmp_path) as db:
            db.execute("INSERT INTO embeddings SELECT 'fact', 99, agent_id, model, "
                       "content_hash, vector FROM embeddings LIMIT 1")

    assert await _reopened_index_size(tmp_path, add_rows_behind_its_back) == (5, 0)


async def test_vectors_of_rows_deleted_behind_its_back_leave_the_index(tmp_path: Path) -> None:
    def delete_rows_behind_its_back(index: Path, sidecar: Path) -> None:
        with raw(tmp_path) as db:
            db.execute("DELETE FROM embeddings WHERE (item_type, item_id) IN (SELECT "
                       "item_type, item_id FROM embeddings ORDER BY item_type, item_id LIMIT 2)")

    assert await _reopened_index_size(tmp_path, delete_rows_behind_its_back) == (2, 0)


async def test_drop_deleted_removes_only_the_deleted_vectors(tmp_path: Path) -> None:
    embedder = RenamedEmbedder("fake-a")
    parts = await open_parts(tmp_path, embedder, start_worker=False)
    await fill(parts.store)
    await parts.worker.drain()
    query = embedder.encode(["tomatoes"])[0]
    before = {(t, i) for t, i, _ in await parts.vectors.search("agent", query, 10)}
    gone = sorted(before)[0]
    async with parts.store._write() as db:
        await db.execute("DELETE FROM embeddings WHERE item_type = ? AND item_id = ?", gone)
    await parts.vectors.drop_deleted("agent")
    after = {(t, i) for t, i, _ in await parts.vectors.search("agent", query, 10)}
    assert after == before - {gone} and parts.vectors.rebuilds == 0
    await parts.close()


async def test_index_of_another_model_is_rebuilt(tmp_path: Path) -> None:
    def other_model(index: Path, sidecar: Path) -> None:
        meta = json.loads(sidecar.read_text())
        sidecar.write_text(json.dumps({**meta, "model": "something-else"}))

    assert await _reopened_index_size(tmp_path, other_model) == (4, 1)


async def test_index_files_are_named_safely_for_any_agent_id(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path, RenamedEmbedder("fake-a"), start_worker=False)
    weird = "../../etc/passwd\x00 ünïcode/\\:*?"
    if parts.store.dialect == "postgres":  # its text holds no NUL: refused, not mangled
        with pytest.raises(InvalidArgument, match="NUL"):
            await parts.store.session(weird, "s")
        weird = weird.replace("\x00", "")
    await fill(parts.store, weird)
    await parts.worker.drain()
    index_path, _ = parts.vectors.paths(weird)
    assert index_path.parent == tmp_path / "vectors" and index_path.is_file()
    await parts.close()


class PoisonedEmbedder(RenamedEmbedder):
    """Fails any batch holding a text with POISON in it; `down` fails everything."""

    def __init__(self) -> None:
        super().__init__("poisoned")
        self.down = False

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.down or any("POISON" in text for text in texts):
            raise MemoryError("cannot allocate")
        return super().encode(texts)


async def test_a_text_that_cannot_be_embedded_is_set_aside_and_the_rest_embedded(
    tmp_path: Path, caplog
) -> None:
    embedder = PoisonedEmbedder()
    parts = await open_parts(tmp_path, embedder, start_worker=False)
    await fill(parts.store, "neighbour")
    session_id = await parts.store.session("agent", "s")
    await parts.store.add_transcript("agent", session_id, [
        TranscriptMessage(0, "user", "I walk the dog at six", 1.0),
        TranscriptMessage(1, "user", "POISON " * 10, 2.0),
    ])
    assert await parts.worker.drain() == 5  # all but the poisonous message
    assert await parts.store.embedding_count("neighbour", "poisoned") == 4
    assert await parts.store.embedding_count("agent", "poisoned") == 1
    assert "cannot embed transcript" in caplog.text
    assert await parts.worker.drain() == 0  # set aside, not retried in a loop
    assert (await parts.store.status("poisoned"))["embedding_failures"] == 1
    await parts.close()
    # A new process does not queue it again at its start-up catch-up...
    parts = await open_parts(tmp_path, embedder, start_worker=False)
    assert await parts.worker.drain() == 0
    # ... but a change of its text does, and once it embeds it is no longer a failure.
    async with parts.store._write() as db:
        await db.execute("UPDATE transcript SET content = 'I feed the cat' "
                         "WHERE content LIKE 'POISON%'")
    assert await parts.worker.drain() == 1
    assert (await parts.store.status("poisoned"))["embedding_failures"] == 0
    await parts.close()


async def test_an_embedder_that_is_down_leaves_the_queue_for_a_retry(tmp_path: Path) -> None:
    embedder = PoisonedEmbedder()
    parts = await open_parts(tmp_path, embedder, start_worker=False)
    await fill(parts.store)
    embedder.down = True
    with pytest.raises(MemoryError):
        await parts.worker.drain()
    embedder.down = False
    assert await parts.worker.drain() == 4
    await parts.close()

"""One usearch index per agent, on disk under `<data_dir>/vectors/`, derived from SQLite.

The embeddings table is the source of truth; an index file is a cache of it. On first use
in a process an agent's index is loaded and checked against a sidecar JSON (model, dim)
and against the row count in SQLite; a missing, unreadable (e.g. truncated) or stale file
is rebuilt from the table. While the process runs, the embedding worker keeps the loaded
index current with `upsert`, and `flush` writes changed indexes back.

With encryption at rest (`persist=False`) no index is written: vectors hold enough of
the text to be worth protecting, so indexes live in memory only and are built from the
encrypted database on first use in each process (a start-up cost, not a per-request one).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from usearch.index import Index

from mnemoproxy.memory.embedders import Embedder
from mnemoproxy.memory.store.records import ITEM_TYPES, ItemType

log = logging.getLogger(__name__)

# Exact (brute-force) search below this size: as fast as the graph there, and exact.
EXACT_SEARCH_LIMIT = 20_000
_TYPE_CODES = {item_type: code for code, item_type in enumerate(ITEM_TYPES)}
_KEY_STRIDE = 4  # keys = item_id * 4 + type code: unique across item types


def vector_key(item_type: ItemType, item_id: int) -> int:
    return item_id * _KEY_STRIDE + _TYPE_CODES[item_type]


def key_item(key: int) -> tuple[ItemType, int]:
    return ITEM_TYPES[key % _KEY_STRIDE], key // _KEY_STRIDE


class EmbeddingSource(Protocol):
    async def embedding_count(self, agent_id: str, model: str) -> int: ...

    async def embedding_matrix(
        self, agent_id: str, model: str, item_types: Sequence[ItemType]
    ) -> tuple[list[tuple[ItemType, int]], np.ndarray]: ...


@dataclass
class _Loaded:
    index: Index
    lock: asyncio.Lock
    dirty: bool = False


class VectorIndexes:
    def __init__(
        self, folder: Path, source: EmbeddingSource, embedder: Embedder, *, persist: bool = True
    ):
        self.folder = folder
        self.persist = persist
        self.source = source
        self.model = embedder.name
        self.dim = embedder.dim
        self._loaded: dict[str, _Loaded] = {}
        self._loading = asyncio.Lock()
        self.rebuilds = 0  # how many indexes were rebuilt from SQLite (for tests and /health)

    def paths(self, agent_id: str) -> tuple[Path, Path]:
        """Index file and sidecar for an agent: named by a hash, so any agent id is safe."""
        digest = hashlib.sha256(agent_id.encode("utf-8")).hexdigest()[:32]
        return self.folder / f"{digest}.usearch", self.folder / f"{digest}.json"

    async def search(
        self, agent_id: str, vector: np.ndarray, k: int
    ) -> list[tuple[ItemType, int, float]]:
        """(item_type, item_id, cosine similarity) of the k nearest items, best first."""
        loaded = await self._get(agent_id)
        async with loaded.lock:
            size = len(loaded.index)
            if size == 0 or k <= 0:
                return []
            matches = loaded.index.search(
                vector, min(k, size), exact=size <= EXACT_SEARCH_LIMIT
            )
        return [
            (*key_item(int(key)), 1.0 - float(distance))
            for key, distance in zip(matches.keys, matches.distances, strict=True)
        ]

    async def best_similarities(self, agent_id: str, vectors: np.ndarray) -> np.ndarray:
        """For each row of `vectors`, the cosine similarity of its nearest item (0 when the
        agent has none): one batch search."""
        loaded = await self._get(agent_id)
        async with loaded.lock:
            size = len(loaded.index)
            if size == 0 or len(vectors) == 0:
                return np.zeros(len(vectors), dtype=np.float32)
            matches = await asyncio.to_thread(
                loaded.index.search, vectors, 1, exact=size <= EXACT_SEARCH_LIMIT
            )
        return 1.0 - np.asarray(matches.distances, dtype=np.float32).reshape(len(vectors))

    async def size(self, agent_id: str) -> int:
        return len((await self._get(agent_id)).index)

    async def upsert(
        self, agent_id: str, items: Sequence[tuple[ItemType, int]], vectors: np.ndarray
    ) -> None:
        """Put vectors for items into the agent's index, replacing any they had."""
        if not items:
            return
        loaded = await self._get(agent_id)
        keys = np.array([vector_key(t, i) for t, i in items], dtype=np.uint64)
        async with loaded.lock:
            await asyncio.to_thread(_replace, loaded.index, keys, vectors)
            loaded.dirty = True

    async def flush(self) -> None:
        """Write every changed index to disk (atomically: temp file, then rename)."""
        if not self.persist:
            return
        for agent_id, loaded in list(self._loaded.items()):
            if loaded.dirty:
                async with loaded.lock:
                    await asyncio.to_thread(self._save, agent_id, loaded.index)
                    loaded.dirty = False

    async def forget(self, agent_id: str) -> None:
        """Drop the agent's index from memory and its files from disk."""
        async with self._loading:
            self._loaded.pop(agent_id, None)
            for path in self.paths(agent_id):
                path.unlink(missing_ok=True)

    async def _get(self, agent_id: str) -> _Loaded:
        loaded = self._loaded.get(agent_id)
        if loaded is not None:
            return loaded
        async with self._loading:
            loaded = self._loaded.get(agent_id)
            if loaded is None:
                index = await self._load_or_rebuild(agent_id)
                loaded = self._loaded[agent_id] = _Loaded(index, asyncio.Lock())
        return loaded

    async def _load_or_rebuild(self, agent_id: str) -> Index:
        expected = await self.source.embedding_count(agent_id, self.model)
        index = await asyncio.to_thread(self._load, agent_id)
        if index is not None and len(index) == expected:
            return index
        if index is not None or expected:
            log.info("rebuilding vector index of agent %r (%d vectors)", agent_id, expected)
        items, matrix = await self.source.embedding_matrix(agent_id, self.model, ITEM_TYPES)
        index = self._new_index()
        if items:
            keys = np.array([vector_key(t, i) for t, i in items], dtype=np.uint64)
            await asyncio.to_thread(index.add, keys, matrix)
            self.rebuilds += 1
            if self.persist:
                await asyncio.to_thread(self._save, agent_id, index)
        return index

    def _load(self, agent_id: str) -> Index | None:
        """The saved index, or None when missing, unreadable or for another model/dim."""
        if not self.persist:
            return None
        index_path, sidecar_path = self.paths(agent_id)
        try:
            meta = json.loads(sidecar_path.read_text(encoding="utf-8"))
            if meta.get("model") != self.model or meta.get("dim") != self.dim:
                return None
            index = Index.restore(str(index_path))
        except (OSError, ValueError, RuntimeError) as exc:
            log.debug("vector index of %r unusable: %s", agent_id, exc)
            return None
        if index is None or index.ndim != self.dim or len(index) != meta.get("count"):
            return None
        return index

    def _save(self, agent_id: str, index: Index) -> None:
        index_path, sidecar_path = self.paths(agent_id)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = index_path.with_suffix(".tmp")
        index.save(str(temp))
        os.chmod(temp, 0o600)
        os.replace(temp, index_path)
        # No agent id in the sidecar: file names are hashes so that ids stay private.
        meta = {"model": self.model, "dim": self.dim, "count": len(index)}
        descriptor = os.open(sidecar_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(json.dumps(meta))

    def _new_index(self) -> Index:
        # f16 halves memory and file size; cosine scores lose nothing that matters for
        # ranking. A smaller expansion_add makes bulk (re)builds several times faster for a
        # small recall cost, which expansion_search buys back at query time.
        return Index(
            ndim=self.dim, metric="cos", dtype="f16", expansion_add=32, expansion_search=128
        )


def _replace(index: Index, keys: np.ndarray, vectors: np.ndarray) -> None:
    # usearch refuses a key it already holds: an update is remove + add.
    present = [key for key in keys.tolist() if key in index]
    if present:
        index.remove(np.array(present, dtype=np.uint64))
    index.add(keys, np.asarray(vectors, dtype=np.float32))

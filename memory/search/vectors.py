"""One usearch index per agent, on disk under `<data_dir>/vectors/`, derived from SQLite.

The embeddings table is the source of truth; an index file is a cache of it. On first use
in a process an agent's index is loaded and checked against a sidecar JSON (model, dim)
and against the row count in SQLite; a missing or unreadable (e.g. truncated) file is
rebuilt from the table, one whose count differs is brought up to date (the items the
table lacks removed, those it has added). While the process runs, the embedding worker
keeps the loaded index current with `upsert`, items deleted for good leave it with
`drop_deleted`, and `flush` writes changed indexes back.

With encryption at rest (`persist=False`) no index is written: vectors hold enough of
the text to be worth protecting, so indexes live in memory only and are built from the
encrypted database on first use in each process (a start-up cost, not a per-request one).

Shared (several processes on one data_dir, workers > 1): every process keeps its own
indexes, and they all take their vectors from SQLite, where each stored vector has a
sequence number (migration m011). Before a search an agent's index reads the rows stored
after the last it applied (at most every REFRESH_SECONDS) and puts them in; the sidecar
records that number, so an index file loaded later catches up from there. A forget bumps
the agent's reset count, and every process drops its copy and loads the agent again. A
vector whose item was deleted stays in the index until then: it can only miss, since
search drops hits whose rows are gone. Only the owner of the background work
(`saving`) writes index files.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
from usearch.index import Index, Matches

from mnemoproxy.memory.embedders import Embedder
from mnemoproxy.memory.store.records import ITEM_TYPES, ItemType

log = logging.getLogger(__name__)

# Exact (brute-force) search below this size: as fast as the graph there, and exact.
EXACT_SEARCH_LIMIT = 20_000
# How far `best_similarities` looks for an item of the type it prefers.
PREFER_REACH = 16
# Agents whose indexes stay loaded (the ones read lately); an index is one agent's vectors.
LOADED_INDEXES = 128
_TYPE_CODES = {item_type: code for code, item_type in enumerate(ITEM_TYPES)}
_KEY_STRIDE = 4  # keys = item_id * 4 + type code: unique across item types
# Shared: longest a search goes without looking for vectors stored by other processes.
REFRESH_SECONDS = 0.5
CHANGES_PAGE = 20_000  # vectors read from SQLite in one go when catching up


def vector_key(item_type: ItemType, item_id: int) -> int:
    return item_id * _KEY_STRIDE + _TYPE_CODES[item_type]


def key_item(key: int) -> tuple[ItemType, int]:
    return ITEM_TYPES[key % _KEY_STRIDE], key // _KEY_STRIDE


class EmbeddingSource(Protocol):
    async def embedding_count(self, agent_id: str, model: str) -> int: ...

    async def embedding_matrix(
        self, agent_id: str, model: str, item_types: Sequence[ItemType]
    ) -> tuple[list[tuple[ItemType, int]], np.ndarray]: ...

    # Shared only (memory/store/shared.py).
    async def vector_position(self, agent_key: str) -> tuple[int, int]: ...

    async def vector_changes(
        self, agent_id: str, agent_key: str, model: str, after: int, limit: int
    ) -> tuple[int, list[tuple[int, ItemType, int, bytes]]]: ...

    async def mark_vectors_reset(self, agent_key: str) -> None: ...

    async def vector_keys(
        self, agent_id: str, model: str
    ) -> tuple[int, list[tuple[ItemType, int]]]: ...

    async def embedding_rows(
        self, agent_id: str, model: str, keys: Sequence[tuple[ItemType, int]]
    ) -> list[tuple[ItemType, int, np.ndarray]]: ...


@dataclass
class _Loaded:
    index: Index
    lock: asyncio.Lock
    dirty: bool = False
    # Shared: every vector stored with a sequence number up to `applied` is in the index;
    # `resets` is the agent's reset count it was loaded under.
    applied: int = 0
    resets: int = 0
    next_refresh: float = 0.0
    refreshing: asyncio.Lock = field(default_factory=asyncio.Lock)


class VectorIndexes:
    def __init__(
        self,
        folder: Path,
        source: EmbeddingSource,
        embedder: Embedder,
        *,
        persist: bool = True,
        shared: bool = False,
    ):
        self.folder = folder
        self.persist = persist
        self.shared = shared
        # Shared: whether this process writes index files (the owner of the background work).
        self.saving = not shared
        self.source = source
        self.model = embedder.name
        self.dim = embedder.dim
        # The indexes of the agents read lately (LOADED_INDEXES; see _forget_idle).
        self._loaded: OrderedDict[str, _Loaded] = OrderedDict()
        self._loading = asyncio.Lock()
        self.rebuilds = 0  # how many indexes were rebuilt from SQLite (for tests and /health)

    def paths(self, agent_id: str) -> tuple[Path, Path]:
        """Index file and sidecar for an agent: named by a hash, so any agent id is safe."""
        digest = _agent_key(agent_id)
        return self.folder / f"{digest}.usearch", self.folder / f"{digest}.json"

    async def search(
        self, agent_id: str, vector: np.ndarray, k: int
    ) -> list[tuple[ItemType, int, float]]:
        """(item_type, item_id, cosine similarity) of the k nearest items, best first."""
        loaded = await self._current(agent_id)
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

    async def best_similarities(
        self, agent_id: str, vectors: np.ndarray, prefer: ItemType | None = None
    ) -> np.ndarray:
        """For each row of `vectors`, the cosine similarity of its nearest item (0 when the
        agent has none): one batch search. With `prefer`, its nearest item of that type
        among the PREFER_REACH nearest, where there is one."""
        loaded = await self._current(agent_id)
        async with loaded.lock:
            size = len(loaded.index)
            if size == 0 or len(vectors) == 0:
                return np.zeros(len(vectors), dtype=np.float32)
            reach = 1 if prefer is None else min(PREFER_REACH, size)
            matches = await asyncio.to_thread(
                loaded.index.search, vectors, reach, exact=size <= EXACT_SEARCH_LIMIT
            )
        if isinstance(matches, Matches):  # one row
            rows = [(np.asarray(matches.keys), np.asarray(matches.distances))]
        else:  # a row's slots past its count (fewer neighbours than asked) are empty
            rows = [(np.asarray(matches.keys[n][:count]), np.asarray(matches.distances[n][:count]))
                    for n, count in enumerate(matches.counts)]
        code = None if prefer is None else _TYPE_CODES[prefer]
        best = np.ones(len(vectors), dtype=np.float32)
        for n, (keys, distances) in enumerate(rows):
            of_type = [c for c, key in enumerate(keys) if int(key) % _KEY_STRIDE == code]
            chosen = of_type[0] if of_type else 0
            if len(distances):
                best[n] = distances[chosen]
        return 1.0 - best

    async def size(self, agent_id: str) -> int:
        return len((await self._current(agent_id)).index)

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
        if not self.persist or not self.saving:
            return
        for agent_id, loaded in list(self._loaded.items()):
            if loaded.dirty:
                if self.shared:
                    await self._save_shared(agent_id, loaded)
                    continue
                async with loaded.lock:
                    await asyncio.to_thread(self._save, agent_id, loaded.index)
                    loaded.dirty = False

    async def forget(self, agent_id: str) -> None:
        """Drop the agent's index from memory and its files from disk (shared: in every
        process, which learn of it from the agent's reset count)."""
        if self.shared:
            await self.source.mark_vectors_reset(_agent_key(agent_id))
        async with self._loading:
            self._loaded.pop(agent_id, None)
            for path in self.paths(agent_id):
                path.unlink(missing_ok=True)

    async def drop_deleted(self, agent_id: str) -> None:
        """After items of the agent were deleted for good (a document, a forgotten
        session): their vectors leave its index, which is made to hold exactly the items
        the table has vectors for. Not a rebuild: rebuilding 100k vectors kept the agent's
        next read waiting ~20 s, past every read deadline. Shared: every process (this one
        included) drops its copy and loads the file again, brought up to date the same
        way."""
        if self.shared:
            await self.source.mark_vectors_reset(_agent_key(agent_id))
            async with self._loading:
                self._loaded.pop(agent_id, None)
            return
        loaded = self._loaded.get(agent_id)
        if loaded is not None:  # one not loaded is brought up to date when it is
            await self._reconcile(agent_id, loaded)

    async def catch_up(self, agent_id: str) -> None:
        """Shared: put the vectors stored since the last look into the agent's index now,
        if this process has it loaded (one it loads later reads them anyway)."""
        loaded = self._loaded.get(agent_id)
        if loaded is not None:
            await self._refresh(agent_id, loaded)

    # -- shared by several processes --------------------------------------------------------

    async def _current(self, agent_id: str) -> _Loaded:
        """The agent's index, shared: with what other processes stored (at most
        REFRESH_SECONDS old; a refresh already under way is not waited for)."""
        loaded = await self._get(agent_id)
        if (
            self.shared
            and time.monotonic() >= loaded.next_refresh
            and not loaded.refreshing.locked()
        ):
            loaded = await self._refresh(agent_id, loaded)
        return loaded

    async def _refresh(self, agent_id: str, loaded: _Loaded) -> _Loaded:
        """Apply the vectors stored after `loaded.applied`; an agent forgotten meanwhile (its
        reset count moved) is dropped and loaded again. Returns the index to use."""
        async with loaded.refreshing:
            loaded.next_refresh = time.monotonic() + REFRESH_SECONDS
            if await self._apply_changes(agent_id, loaded):
                return loaded
        log.info("vector index of agent %r dropped: the agent was forgotten", agent_id)
        async with self._loading:
            if self._loaded.get(agent_id) is loaded:
                del self._loaded[agent_id]
        return await self._get(agent_id)

    async def _apply_changes(self, agent_id: str, loaded: _Loaded) -> bool:
        """Put the vectors stored after `loaded.applied` into its index; False (and nothing
        applied) when the agent's reset count is no longer the one it was loaded under."""
        key = _agent_key(agent_id)
        while True:
            resets, rows = await self.source.vector_changes(
                agent_id, key, self.model, loaded.applied, CHANGES_PAGE
            )
            if resets != loaded.resets:
                return False
            if rows:
                keys = np.array([vector_key(t, i) for _, t, i, _ in rows], dtype=np.uint64)
                matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4")
                async with loaded.lock:
                    await asyncio.to_thread(
                        _replace, loaded.index, keys, matrix.reshape(len(rows), -1)
                    )
                    loaded.applied = max(loaded.applied, rows[-1][0])
                    loaded.dirty = True
            if len(rows) < CHANGES_PAGE:
                return True

    async def _load_shared(self, agent_id: str) -> _Loaded:
        """The agent's index file (when usable) brought up to date from SQLite, else a
        rebuild; either way with the sequence number it holds every vector up to.

        A file is brought up to date rather than rebuilt (a rebuild of 100k vectors takes
        tens of seconds, and reads of the agent wait for it): the vectors stored after
        the number its sidecar records are applied, then its items are made the table's,
        the missing added and the deleted removed. A file without a number (written by a
        single process) is trusted, as a single process trusts it, to hold the current
        vector of each item it has."""
        resets, last = await self.source.vector_position(_agent_key(agent_id))
        index, meta = await asyncio.to_thread(self._load_with_meta, agent_id)
        if index is not None:
            saved = meta.get("seq")
            loaded = _Loaded(index, asyncio.Lock(), applied=saved if isinstance(saved, int)
                             else last, resets=resets,
                             next_refresh=time.monotonic() + REFRESH_SECONDS)
            if await self._apply_changes(agent_id, loaded):
                await self._reconcile(agent_id, loaded)
                loaded.dirty = loaded.dirty or saved != loaded.applied
                return loaded
            resets, last = await self.source.vector_position(_agent_key(agent_id))
        items, matrix = await self.source.embedding_matrix(agent_id, self.model, ITEM_TYPES)
        index = self._new_index()
        if items:
            keys = np.array([vector_key(t, i) for t, i in items], dtype=np.uint64)
            await asyncio.to_thread(index.add, keys, matrix)
            self.rebuilds += 1
        loaded = _Loaded(index, asyncio.Lock(), dirty=bool(items), applied=last, resets=resets,
                         next_refresh=time.monotonic() + REFRESH_SECONDS)
        return loaded

    async def _reconcile(self, agent_id: str, loaded: _Loaded) -> None:
        """Make the index hold exactly the items the table has vectors for (those missing
        added with their stored vectors, those deleted removed)."""
        _, items = await self.source.vector_keys(agent_id, self.model)
        index = loaded.index
        async with loaded.lock:  # 100k keys: off the event loop
            missing, extra = await asyncio.to_thread(_differences, index, items)
        async with loaded.lock:
            if len(extra):
                await asyncio.to_thread(index.remove, extra)
        for start in range(0, len(missing), CHANGES_PAGE):  # a page stays under SQLite's
            rows = await self.source.embedding_rows(  # limit of bound values
                agent_id, self.model, missing[start : start + CHANGES_PAGE])
            if rows:
                added = np.array([vector_key(t, i) for t, i, _ in rows], dtype=np.uint64)
                async with loaded.lock:
                    await asyncio.to_thread(
                        _replace, index, added, np.stack([r[2] for r in rows]))
        if missing or len(extra):
            log.info("vector index of agent %r brought up to date: %d added, %d removed",
                     agent_id, len(missing), len(extra))
            loaded.dirty = True
        # `applied` stays: a vector stored since then for an item the index already held
        # is applied by the next refresh (re-applying one is harmless).

    async def _save_shared(self, agent_id: str, loaded: _Loaded) -> None:
        """Write the index with the sequence number it is current to, unless the agent was
        forgotten meanwhile (then no file of it may stay behind)."""
        key = _agent_key(agent_id)
        resets, _ = await self.source.vector_position(key)
        if resets == loaded.resets:
            async with loaded.lock:
                await asyncio.to_thread(self._save, agent_id, loaded.index, loaded.applied)
                loaded.dirty = False
            resets, _ = await self.source.vector_position(key)
            if resets == loaded.resets:
                return
        async with self._loading:
            if self._loaded.get(agent_id) is loaded:
                del self._loaded[agent_id]
            for path in self.paths(agent_id):
                path.unlink(missing_ok=True)

    async def _get(self, agent_id: str) -> _Loaded:
        loaded = self._loaded.get(agent_id)
        if loaded is not None:
            self._loaded.move_to_end(agent_id)
            return loaded
        async with self._loading:
            loaded = self._loaded.get(agent_id)
            if loaded is None:
                if self.shared:
                    loaded = self._loaded[agent_id] = await self._load_shared(agent_id)
                else:
                    index = await self._load_or_rebuild(agent_id)
                    loaded = self._loaded[agent_id] = _Loaded(index, asyncio.Lock())
                self._forget_idle()
        return loaded

    def _forget_idle(self) -> None:
        """Past LOADED_INDEXES agents, the least recently read indexes leave memory: any id
        a client sends is read, and each kept an index forever. Only those the next read
        can load again as they are: no unsaved change, in use by nobody, and on disk (or
        empty: an id nobody stored anything for)."""
        excess = len(self._loaded) - LOADED_INDEXES
        for agent_id, loaded in list(self._loaded.items()):
            if excess <= 0:
                return
            reloadable = self.shared or (self.persist and self.saving) or not len(loaded.index)
            if loaded.dirty or loaded.lock.locked() or not reloadable:
                continue
            del self._loaded[agent_id]
            excess -= 1

    async def _load_or_rebuild(self, agent_id: str) -> Index:
        expected = await self.source.embedding_count(agent_id, self.model)
        index = await asyncio.to_thread(self._load, agent_id)
        if index is not None and len(index) == expected:
            return index
        if index is not None and len(index):
            # Items deleted (or vectors stored) since the file was written: brought up to
            # date in place, a fraction of a rebuild's time.
            loaded = _Loaded(index, asyncio.Lock())
            await self._reconcile(agent_id, loaded)
            if loaded.dirty and self.persist:
                await asyncio.to_thread(self._save, agent_id, index)
            return index
        if expected:
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
        return self._load_with_meta(agent_id)[0]

    def _load_with_meta(self, agent_id: str) -> tuple[Index | None, dict[str, object]]:
        if not self.persist:
            return None, {}
        index_path, sidecar_path = self.paths(agent_id)
        try:
            meta = json.loads(sidecar_path.read_text(encoding="utf-8"))
            if meta.get("model") != self.model or meta.get("dim") != self.dim:
                return None, {}
            index = Index.restore(str(index_path))
        except (OSError, ValueError, RuntimeError) as exc:
            log.debug("vector index of %r unusable: %s", agent_id, exc)
            return None, {}
        if index is None or index.ndim != self.dim or len(index) != meta.get("count"):
            return None, {}
        return index, meta

    def _save(self, agent_id: str, index: Index, seq: int | None = None) -> None:
        index_path, sidecar_path = self.paths(agent_id)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = index_path.with_suffix(".tmp")
        index.save(str(temp))
        os.chmod(temp, 0o600)
        os.replace(temp, index_path)
        # No agent id in the sidecar: file names are hashes so that ids stay private.
        meta: dict[str, object] = {"model": self.model, "dim": self.dim, "count": len(index)}
        if seq is not None:
            meta["seq"] = seq
        # Written aside and renamed: another process may be reading it (workers > 1).
        temp = sidecar_path.with_suffix(".json.tmp")
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(json.dumps(meta))
        os.replace(temp, sidecar_path)

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


def _differences(
    index: Index, items: list[tuple[ItemType, int]]
) -> tuple[list[tuple[ItemType, int]], np.ndarray]:
    """(the items the index lacks, the keys it holds that are none of `items`)."""
    keys = np.array([vector_key(t, i) for t, i in items], dtype=np.uint64)
    held = np.asarray(index.contains(keys), dtype=bool).reshape(len(keys))
    missing = [item for item, there in zip(items, held.tolist(), strict=True) if not there]
    return missing, np.setdiff1d(np.asarray(index.keys, dtype=np.uint64), keys)


def _agent_key(agent_id: str) -> str:
    """The agent's name in file names and in vector_resets: a hash, never the id itself."""
    return hashlib.sha256(agent_id.encode("utf-8")).hexdigest()[:32]

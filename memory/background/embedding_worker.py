"""Background embedding of facts, episodes and transcript messages.

The store sets `content_changed` after every insert of searchable text; the worker wakes,
takes the items queued for a vector (new items and items whose text changed: triggers
queue them; at start, every item without a vector for the current model), embeds them
in batches in a thread so a slow model
never blocks the event loop, stores the vectors in SQLite and puts them in the agent's
usearch index. Until then an item is still found by full-text search.

With several processes on one data_dir (`vectors.shared`), vectors go to SQLite only and
every process's indexes take them from there (memory/search/vectors.py), this one's at once; the
owner of the background work also looks at the queue every `wake_seconds`, for items
other processes queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections import defaultdict
from collections.abc import AsyncIterator

import numpy as np

from mnemoproxy.memory.embedders import Embedder
from mnemoproxy.memory.search.vectors import VectorIndexes
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.knowledge.retrieval import ItemText
from mnemoproxy.memory.store.records import ITEM_TYPES, ItemType

log = logging.getLogger(__name__)

BATCH_SIZE = 256
RETRY_SECONDS = 30.0  # after an embedder failure, wait before trying again
FLUSH_SECONDS = 30.0  # longest an index change waits in memory before it is written
PROBE_TEXT = "a text any embedder can embed"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class EmbeddingWorker:
    def __init__(self, store: Store, embedder: Embedder, vectors: VectorIndexes):
        self.store = store
        self.embedder = embedder
        self.vectors = vectors
        self._task: asyncio.Task[None] | None = None
        self._drain_lock = asyncio.Lock()
        self._caught_up = False
        self.embedded = 0  # items embedded since start (for tests and status)
        # Longest wait between two looks at the queue when nothing was signalled here.
        self.wake_seconds = FLUSH_SECONDS

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="embedding-worker")
            self.store.content_changed.set()  # catch up on anything left from a previous run

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def drain(self, *, flush: bool = True) -> int:
        """Embed everything that lacks a vector now and (with `flush`) write the changed
        indexes to disk; returns how many items were embedded. Safe to call while the
        background task runs (one drain at a time)."""
        total = await self._embed_pending()
        if total and flush:
            await self.vectors.flush()
        return total

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """No batch is embedded while inside (one in flight is finished first)."""
        async with self._drain_lock:
            yield

    async def _embed_pending(self) -> int:
        async with self._drain_lock:
            if not self._caught_up:
                # Items left without a vector for this model (another embedder before, or
                # a crash between computing and storing): queued once per process.
                await self.store.queue_missing_vectors(self.embedder.name)
                self._caught_up = True
            total = 0
            for item_type in ITEM_TYPES:
                while True:
                    queued, items = await self.store.queued_for_vectors(
                        item_type, limit=BATCH_SIZE
                    )
                    if not queued:
                        break
                    total += await self._embed_or_isolate(item_type, items, queued)
            self.embedded += total
            return total

    async def _embed_or_isolate(
        self, item_type: ItemType, items: list[ItemText], queued: list[int]
    ) -> int:
        """Embed a batch; when it fails while the embedder still works (a probe text
        embeds), find the items that fail alone and take them off the queue without a
        vector (full-text search still finds them), so one poisonous text never holds up
        every agent's embeddings. An embedder that is down fails the probe too: the error
        goes up and the whole batch waits for a retry. Returns how many were embedded."""
        try:
            await self._embed_batch(item_type, items, queued)
            return len(items)
        except asyncio.CancelledError:
            raise
        except Exception:
            if not items:
                raise
            await self.embedder.embed([PROBE_TEXT])  # raises when the embedder is down
        embedded = 0
        with_text = {item.item_id for item in items}
        await self._embed_batch(item_type, [], [i for i in queued if i not in with_text])
        for item in items:
            try:
                await self._embed_batch(item_type, [item], [item.item_id])
                embedded += 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning(
                    "cannot embed %s %d of agent %s (%d characters): %s; set aside, it "
                    "stays findable by its words only", item_type, item.item_id,
                    item.agent_id, len(item.text), exc,
                )
                await self.store.set_aside_embedding(
                    self.embedder.name, item_type, item.item_id, f"{type(exc).__name__}: {exc}"
                )
        return embedded

    async def _embed_batch(
        self, item_type: ItemType, items: list[ItemText], queued: list[int]
    ) -> None:
        dequeue = [(item_type, item_id) for item_id in queued]
        if not items:  # only invisible items in this batch: nothing to embed
            await self.store.save_embeddings(self.embedder.name, [], dequeue=dequeue)
            return
        texts = [item.text for item in items]
        matrix = await self.embedder.embed(texts)
        matrix = np.asarray(matrix, dtype="<f4")
        # Index first, SQLite second: if the process dies in between, the index holds more
        # vectors than the table, and the count check at the next load removes the extra ones.
        by_agent: dict[str, list[int]] = defaultdict(list)
        for position, item in enumerate(items):
            by_agent[item.agent_id].append(position)
        for agent_id, positions in by_agent.items():
            if self.vectors.shared:
                break  # shared: the index takes the vectors from SQLite, below
            await self.vectors.upsert(
                agent_id, [(item_type, items[p].item_id) for p in positions], matrix[positions]
            )
        await self.store.save_embeddings(
            self.embedder.name,
            [
                (item_type, item.item_id, item.agent_id, content_hash(item.text), row.tobytes())
                for item, row in zip(items, matrix, strict=True)
            ],
            dequeue=dequeue,
        )
        if self.vectors.shared:
            for agent_id in by_agent:
                await self.vectors.catch_up(agent_id)

    async def _run(self) -> None:
        """Embed as content arrives. The index files are written at most every
        FLUSH_SECONDS (and at close): an index is a cache of SQLite, and rewriting a large
        one after every chat turn would cost more than the turn. A crash in between only
        means the index is found stale at the next start and rebuilt from SQLite."""
        changed = self.store.content_changed
        last_flush = time.monotonic()
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
            # that arrives as its timeout fires, and stop() then waits a whole FLUSH_SECONDS.
            with contextlib.suppress(TimeoutError):  # a quiet spell: time to flush
                async with asyncio.timeout(self.wake_seconds):
                    await changed.wait()
            changed.clear()
            try:
                await self._embed_pending()
                if time.monotonic() - last_flush >= FLUSH_SECONDS:
                    await self.vectors.flush()
                    last_flush = time.monotonic()
            except asyncio.CancelledError:
                raise
            except Exception:
                # Memory fails open: text search still finds the items; retry later.
                log.exception("embedding failed; retrying in %.0f s", RETRY_SECONDS)
                await asyncio.sleep(RETRY_SECONDS)
                changed.set()

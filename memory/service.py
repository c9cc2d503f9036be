"""One agent-scoped long-term memory, opened from settings: the store, the vector indexes,
the embedding worker, the write path and the consolidation schedule, with their
lifecycles. Everything outside memory/ goes through this object.

    memory = await Memory.open(settings, http=upstream)   # http: the lent JSON client
    await memory.record(agent, session_key, turns)        # the chat path's one write
    results = await memory.search(agent, "where do I live", kinds=("identity", "pinned"))
    await memory.close()                                  # distils what is pending, flushes
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections import OrderedDict
from collections.abc import Collection, Coroutine, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from mnemoproxy.config.settings import Settings
from mnemoproxy.memory.background.consolidate import ConsolidationReport, consolidate
from mnemoproxy.memory.background.embedding_worker import EmbeddingWorker
from mnemoproxy.memory.background.ownership import (
    OWNER_FILE,
    PENDING_POLL_SECONDS,
    QUEUE_POLL_SECONDS,
    Lock,
    OwnerLock,
    Ownership,
)
from mnemoproxy.memory.background.scrub import ScrubSchedule
from mnemoproxy.memory.core_model.budget import BudgetedCoreModel, CoreBudget
from mnemoproxy.memory.core_model.client import CoreModel, CoreModelClient, JsonClient
from mnemoproxy.memory.core_model.fallback import CapFallbackDistiller
from mnemoproxy.memory.distill.llm import LLMDistiller
from mnemoproxy.memory.distill.protocol import Distiller
from mnemoproxy.memory.distill.rules import RuleDistiller, assign_slots
from mnemoproxy.memory.embedders import Embedder, LocalEmbedder, make_embedder
from mnemoproxy.memory.embedders.offloaded import OFFLOADED_BACKENDS, OffloadedEmbedder
from mnemoproxy.memory.management import Management
from mnemoproxy.memory.models import Kind, Turn
from mnemoproxy.memory.search.hybrid import (
    DEFAULT_FUSION,
    DEFAULT_MMR_LAMBDA,
    Fusion,
    Retriever,
    SearchResult,
)
from mnemoproxy.memory.search.periods import period_asked
from mnemoproxy.memory.search.query_terms import query_terms, word_pairs
from mnemoproxy.memory.search.vectors import VectorIndexes
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.cipher import Cipher
from mnemoproxy.memory.store.conversations.threads import ThreadSummary
from mnemoproxy.memory.store.db import DB_FILE, require_agent
from mnemoproxy.memory.store.knowledge.procedures import StoredProcedure
from mnemoproxy.memory.store.postgres.connections import DatabaseOwnerLock
from mnemoproxy.memory.store.records import item_type_of
from mnemoproxy.memory.write.documents import PARSE_THREADS
from mnemoproxy.memory.write.pipeline import Claims, IngestResult, WritePath

log = logging.getLogger(__name__)

VECTORS_FOLDER = "vectors"
SHUTDOWN_DISTILL_SECONDS = 10.0
# Most chat turns left to be stored in the background after their reply went out (see
# record_within); beyond it replies wait for their turn.
MAX_BACKGROUND_RECORDS = 256
# Reference similarities are measured again once an agent's index has grown by this share
# (or by REMEASURE_ITEMS items, for small ones): the yardstick moves with the memory.
REMEASURE_GROWTH = 0.1
REMEASURE_ITEMS = 20
REFERENCE_CACHE_AGENTS = 4096
# Whether an agent holds documents is asked of the store again after this long (another
# process may have added some).
DOCUMENTS_SECONDS = 5.0
# Words are counted this far in each kind of item: past it a word is common, whatever
# its exact count.
WORD_COUNT_CAP = 50



async def _nothing() -> None:
    """No periodic look for an owner whose replicas each look for themselves."""


def shares_memory(settings: Settings) -> bool:
    """Whether other processes may write this memory too: several workers on data_dir, or
    a PostgreSQL store any number of replicas share."""
    return settings.workers > 1 or bool(settings.store_url)


@dataclass
class _Measured:
    items: int
    similarities: list[float]


class Memory(Management):
    """The front door: lifecycle, the chat path's reads and writes, upkeep; the management
    operations come from memory/management.py."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder,
        core_model: CoreModel | None,
        *,
        bulk_embedder: Embedder | None = None,
    ) -> None:
        """`bulk_embedder` computes the embedding worker's batches (the same model as
        `embedder`, elsewhere: memory/embedders/offloaded.py); `embedder` by default."""
        self.settings = settings
        # The SQL layer, for upkeep tools and tests; callers outside memory/ use the methods.
        self.store = store
        self._embedder = embedder
        # Every core-model call spends from one daily budget, counted by purpose.
        self.core_budget = CoreBudget(settings.core_model_daily_tokens)
        # The core model, when one is configured: the distiller's, lent to the LLM gate.
        self.core_model: CoreModel | None = None
        # The core model as the long-thread summaries use it (gate/threads/compressor.py): a summary
        # of a conversation is a distillation, counted (and capped) as one.
        self.summary_model: CoreModel | None = None
        distiller_core: CoreModel | None = None
        if core_model is not None:
            self.core_model = BudgetedCoreModel(core_model, self.core_budget, "relevance_gate")
            distiller_core = BudgetedCoreModel(core_model, self.core_budget, "distill")
            self.summary_model = distiller_core
        self._vectors = VectorIndexes(
            Path(settings.data_dir) / VECTORS_FOLDER, store, embedder,
            persist=not settings.encryption_key_file, shared=shares_memory(settings),
        )
        self._worker = EmbeddingWorker(store, bulk_embedder or embedder, self._vectors)
        self._retriever = Retriever(store, self._vectors, embedder)
        self._distiller = make_distiller(settings, distiller_core)
        self._writer = WritePath(
            store,
            self._distiller,
            debounce_seconds=settings.summary_debounce_seconds,
            max_attempts=settings.distill_max_attempts,
            identity_max_facts=settings.identity_max_facts,
            max_backfill_turns=settings.max_backfill_turns,
            redact_pii=settings.redact_pii,
            assign_slots=assign_slots,
        )
        self._background: set[asyncio.Task[Any]] = set()
        self._recording: set[asyncio.Task[Any]] = set()  # chat turns being stored
        # Replies that waited for their turn past the read deadline: the store is behind.
        self.records_waited_out = 0
        self._schedule: asyncio.Task[None] | None = None
        self._ownership: Ownership | None = None  # workers > 1 (memory/background/ownership.py)
        self._pending_poll: asyncio.Task[None] | None = None  # replicas on PostgreSQL
        self._reference_vectors: dict[tuple[str, ...], np.ndarray] = {}
        self._measured: OrderedDict[str, dict[tuple[str, ...], _Measured]] = OrderedDict()
        self._with_documents: dict[str, tuple[bool, float]] = {}
        # Forgets' full-text merge, in the background (memory/background/scrub.py).
        self._scrubs = ScrubSchedule(store.scrub)
        self._documents = ThreadPoolExecutor(PARSE_THREADS, thread_name_prefix="mnemo-documents")

    @staticmethod
    def held_at(settings: Settings) -> bool:
        """Whether memory exists where `settings` point: a database file in data_dir (a
        PostgreSQL store_url is taken to hold one). Commands that only read ask first, so
        as not to create an empty memory wherever they happen to run."""
        return bool(settings.store_url) or (Path(settings.data_dir) / DB_FILE).is_file()

    @classmethod
    async def open(
        cls,
        settings: Settings,
        *,
        http: JsonClient | None = None,
        embedder: Embedder | None = None,
        background: bool = True,
    ) -> Memory:
        """Open the memory under `settings.data_dir`. `http` reaches model servers (the core
        model, a remote embedder); `embedder` overrides the configured one (tests). With
        `background` the embedding worker, the debounced distillations and the
        consolidation schedule run; without it nothing happens unless asked (`drain`)."""
        bulk_embedder: Embedder | None = None
        if embedder is None:
            embedder = make_embedder(
                settings.embedding_backend,
                model=settings.embedding_model,
                url=settings.embedding_url or settings.upstream_url,
                api_key=settings.upstream_api_key,
                client=http,
            )
            if background and settings.embedding_backend in OFFLOADED_BACKENDS:
                assert isinstance(embedder, LocalEmbedder)
                bulk_embedder = OffloadedEmbedder(embedder, settings.embedding_backend)
        # Weights loaded (or a remote model's size learned) now, not on the first chat.
        await embedder.load()
        store = await Store.open(
            settings.data_dir, cipher=Cipher.from_file(settings.encryption_key_file),
            store_url=settings.store_url,
        )
        core = CoreModelClient(http, settings) if settings.core_model and http else None
        memory = cls(settings, store, embedder, core, bulk_embedder=bulk_embedder)
        if background and shares_memory(settings):
            await memory._share_background()
        elif background:
            memory._prepare_helper()
            memory._worker.start()
            await memory._writer.start()
            memory._start_consolidation()
        return memory

    async def _share_background(self) -> None:
        """workers > 1 or replicas on one database: the background work runs in the one
        process that owns the memory (memory/background/ownership.py); this one takes it on
        once it wins the owner lock. Replicas on PostgreSQL all distil, each session
        claimed by one of them at a time (memory/store/claims.py); embedding and consolidation stay
        the owner's."""
        distils_here = bool(self.settings.store_url)
        if distils_here:
            self._writer.claims = Claims(f"{socket.gethostname()}:{os.getpid()}")
            if isinstance(self._distiller, RuleDistiller):
                self._distiller.start()
            self._pending_poll = asyncio.get_running_loop().create_task(
                self._poll_pending(), name="memory-pending")
        else:
            self._writer.scheduler.standby = True

        async def become_owner() -> None:
            self._prepare_helper()
            self._vectors.saving = True
            self._writer.scheduler.standby = False
            self._worker.wake_seconds = QUEUE_POLL_SECONDS
            self._worker.start()
            if not distils_here:
                await self._writer.notice_pending()
            self._start_consolidation()

        lock: Lock = (DatabaseOwnerLock(self.settings.store_url) if self.settings.store_url
                      else OwnerLock(Path(self.settings.data_dir) / OWNER_FILE))
        poll = _nothing if distils_here else self._writer.notice_pending
        self._ownership = Ownership(lock, become_owner, poll)
        await self._ownership.start()

    async def _poll_pending(self) -> None:
        """Replicas on PostgreSQL: arm the sessions other processes recorded turns of, as
        the owner among workers does (memory/background/ownership.py), in every replica."""
        while True:
            try:
                await self._writer.notice_pending()
            except Exception:  # the next look tries again; the turns wait in the database
                log.exception("looking for other processes' pending turns failed")
            await asyncio.sleep(PENDING_POLL_SECONDS)

    def _prepare_helper(self) -> None:
        """The background work's part of the helper process (the rule distiller, the
        embedding worker's model; memory/background/helper_process.py) gets ready now, in a
        second or so beside the rest of the start-up, not on the first session or batch."""
        if isinstance(self._distiller, RuleDistiller):
            self._distiller.start()
        if isinstance(self._worker.embedder, OffloadedEmbedder):
            self._worker.embedder.prepare()

    async def close(self) -> None:
        """Stop the schedule, let running work finish (briefly), distil what is pending,
        write the vector indexes and close the database."""
        if self._schedule is not None:
            self._schedule.cancel()
        if self._pending_poll is not None:
            self._pending_poll.cancel()
        if self._ownership is not None:
            await self._ownership.stop()
            if self._ownership.is_owner and self._writer.claims is None:
                # What other processes left pending: distilled now.
                try:
                    await self._writer.notice_pending()
                except Exception:  # still pending in SQLite: the next owner distils it
                    log.exception("looking for pending turns at shutdown failed")
        if self._background:
            await asyncio.wait(set(self._background), timeout=SHUTDOWN_DISTILL_SECONDS)
        await self._writer.close(SHUTDOWN_DISTILL_SECONDS)
        await self._worker.stop()
        await self._vectors.flush()
        await self._scrubs.close()
        self._documents.shutdown(wait=False, cancel_futures=True)
        await self.store.close()
        if self._ownership is not None:
            self._ownership.release()

    # -- the write side ---------------------------------------------------------------------

    async def recent_session(self, agent_id: str, prefix: str, quiet_seconds: float) -> str | None:
        """The key of the agent's latest session whose key starts with `prefix` and that had
        a turn within the last `quiet_seconds`; None when there is none."""
        return await self.store.recent_session_key(agent_id, prefix, time.time() - quiet_seconds)

    async def continue_opening(
        self, agent_id: str, family: str, session_key: str, opening: str,
        quiet_seconds: float,
    ) -> bool:
        """A conversation sent with its history for the first time (`session_key` new)
        whose opening message is the latest turn of the agent's one-message session of
        `family` (within `quiet_seconds`): that turn moves to `session_key`, so that it is
        stored once, in its conversation. True when it moved."""
        since = time.time() - quiet_seconds
        recent = await self.store.recent_session_key(agent_id, family, since)
        if recent is None:
            return False
        return await self.store.move_last_turn(
            agent_id, recent, session_key, self._writer.scrub(opening))

    async def record(
        self, agent_id: str, session_key: str, turns: Sequence[tuple[int, Turn]]
    ) -> int:
        """Store a conversation's turns (index, turn) verbatim and queue them for
        distillation; turns already stored are skipped. Returns how many were new."""
        return await self._writer.record(agent_id, session_key, turns)

    async def record_within(
        self,
        agent_id: str,
        session_key: str,
        turns: Sequence[tuple[int, Turn]],
        seconds: float,
    ) -> bool:
        """`record`, waited for at most `seconds`: a chat reply is completed once its turn
        is stored, so a crash after the client has its answer loses nothing, and the rate
        of acknowledged turns cannot outrun the store. A store slower than that finishes
        in the background; so does one that fails (logged). True when stored in time.

        The turns left to finish in the background are bounded: past
        MAX_BACKGROUND_RECORDS a reply waits for its own turn however long it takes, so a
        store slower than the traffic slows the replies down instead of growing a backlog
        that a crash would lose."""
        task = self._spawn(self.record(agent_id, session_key, turns), "record a turn")
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)
        if len(self._recording) > MAX_BACKGROUND_RECORDS:
            self.records_waited_out += 1
            await asyncio.wait({task})
            return task.exception() is None
        try:
            await asyncio.wait_for(asyncio.shield(task), seconds)
        except Exception:  # too slow, or failed: the task goes on or has logged why
            return False
        return True

    async def ingest(
        self,
        agent_id: str,
        conversation_id: str,
        turns: Sequence[Turn],
        *,
        session_date: datetime | None = None,
        skip_extraction: bool = False,
        title: str = "",
    ) -> IngestResult:
        """Seed memory with a whole conversation, distil it and embed it now (awaited): once
        this returns, reads see the conversation as they will later, vectors included, so
        the same question gets the same memory right after an ingest as an hour later.
        Turns the conversation holds already are skipped (the result counts them); `title`
        names the session (an imported conversation's own title)."""
        result = await self._writer.ingest(
            agent_id,
            conversation_id,
            turns,
            session_date=session_date,
            skip_extraction=skip_extraction,
            title=title,
        )
        # Index files are written by the worker's schedule, not after every ingest.
        await self._worker.drain(flush=False)
        return result

    # -- the read side ----------------------------------------------------------------------

    async def search(
        self,
        agent_id: str,
        query: str,
        *,
        kinds: Collection[Kind] | None = None,
        top_k: int = 10,
        days: float | None = None,
        now: float | None = None,
        recency_half_life_days: float | None = None,
        mmr_lambda: float | None = DEFAULT_MMR_LAMBDA,
        fusion: Fusion = DEFAULT_FUSION,
        neighbours: bool = False,
    ) -> list[SearchResult]:
        """The agent's items best matching `query` (hybrid BM25 + vectors), best first;
        with `neighbours`, the messages said around the best ones compete too. A time the
        query names ("on May 3, 2023", "last weekend"; memory/search/periods.py) lifts what was
        said then."""
        period = period_asked(query, time.time() if now is None else now)
        return await self._retriever.search(
            agent_id,
            query,
            kinds=kinds,
            top_k=top_k,
            days=days,
            now=now,
            recency_half_life_days=recency_half_life_days,
            mmr_lambda=mmr_lambda,
            fusion=fusion,
            neighbours=neighbours,
            period=period,
        )

    async def entity_names(self, agent_id: str) -> list[str]:
        """Names the agent's memory knows (people, places, projects), most mentioned first."""
        return await self.store.entity_names(agent_id)

    async def reference_similarities(
        self, agent_id: str, texts: tuple[str, ...]
    ) -> list[float]:
        """How close the agent's memory comes to each of `texts`: the cosine similarity of
        each one's nearest message (its nearest item where no message is near), sorted.
        The gate reads a message's own best similarity against this spread, so that what
        counts as a close match depends on this agent's memory alone. Messages, because
        every memory has them, whether or not a core model distils it: summaries read like
        the requests anyone sends and would raise the bar for what the user said. Measured
        once and again after the memory has grown."""
        require_agent(agent_id)
        items = await self._vectors.size(agent_id)
        # One spread per set of texts: the gate's reference prompts come in each language.
        by_texts = self._measured.setdefault(agent_id, {})
        self._measured.move_to_end(agent_id)
        measured = by_texts.get(texts)
        if measured is not None and items <= max(
            measured.items * (1 + REMEASURE_GROWTH), measured.items + REMEASURE_ITEMS
        ):
            return measured.similarities
        vectors = await self.reference_vectors(texts)
        found = await self._vectors.best_similarities(agent_id, vectors, prefer="transcript")
        measured = by_texts[texts] = _Measured(items, sorted(float(s) for s in found))
        if len(self._measured) > REFERENCE_CACHE_AGENTS:
            self._measured.popitem(last=False)
        return measured.similarities

    async def word_counts(
        self, agent_id: str, text: str
    ) -> tuple[dict[str, int], dict[str, int], int]:
        """How many of the agent's items hold each of `text`'s search words, and each pair
        of its neighbouring words as a phrase (counted up to WORD_COUNT_CAP), and how many
        items the agent has: what the agent's memory holds of a message's words, and how
        rare each is there."""
        words, pairs = query_terms(text), word_pairs(text)
        counts, items = await self.store.term_counts(
            agent_id, list(dict.fromkeys([*words, *pairs])), WORD_COUNT_CAP)
        return ({w: counts[w] for w in words}, {p: counts[p] for p in pairs}, items)

    async def reference_vectors(self, texts: tuple[str, ...]) -> np.ndarray:
        """The embeddings of `texts` (the gate's reference prompts), computed once: the
        read path asks for them at start-up, so an agent's first question does not wait."""
        vectors = self._reference_vectors.get(texts)
        if vectors is None:
            vectors = self._reference_vectors[texts] = await self._embedder.embed(texts)
        return vectors

    async def common_words(self, agent_id: str) -> frozenset[str]:
        """Words in a large share of the agent's messages (see memory/search/common_terms.py): the
        names of the people a history is about, among others."""
        return await self._retriever.common_words(agent_id)

    def note_used(self, agent_id: str, items: Iterable[tuple[Kind, int]]) -> None:
        """Count that these items were put in front of the model (in the background)."""
        used = [(item_type_of(kind), item_id) for kind, item_id in items]
        if used:
            self._spawn(self.store.bump_use(agent_id, used), "count memory use")

    async def matching_procedures(self, agent_id: str, query: str) -> list[StoredProcedure]:
        """The agent's procedures sharing words with `query`, best first."""
        return await self.store.search_procedures(agent_id, query)


    async def has_documents(self, agent_id: str) -> bool:
        """Whether the agent holds documents (the gate then weighs them for any question);
        asked of the store at most every DOCUMENTS_SECONDS per agent."""
        known = self._with_documents.get(agent_id)
        if known is not None and time.monotonic() - known[1] < DOCUMENTS_SECONDS:
            return known[0]
        holds = await self.store.has_documents(agent_id)
        if len(self._with_documents) >= REFERENCE_CACHE_AGENTS:
            self._with_documents.clear()
        self._with_documents[agent_id] = (holds, time.monotonic())
        return holds

    # -- long threads (context_budget_tokens) ---------------------------------------------

    async def thread_summary(self, agent_id: str, session_key: str) -> ThreadSummary | None:
        """The running summary kept for the session's long thread, if any."""
        return await self.store.thread_summary(agent_id, session_key)

    async def save_thread_summary(
        self, agent_id: str, session_key: str, summary: ThreadSummary
    ) -> ThreadSummary:
        """Keep `summary` as the session's running summary, scrubbed as everything stored
        is (credentials, personal data with redact_pii); returns it as kept, to be sent as
        it will be sent again."""
        kept = replace(summary, summary=self._writer.scrub(summary.summary))
        await self.store.save_thread_summary(agent_id, session_key, kept)
        return kept

    # -- upkeep ---------------------------------------------------------------------------

    async def consolidate(self, agent_id: str | None = None) -> ConsolidationReport:
        """One consolidation pass now, over one agent or all."""
        return await consolidate(
            self.store,
            salience_floor=self.settings.salience_floor,
            episode_retention_days=self.settings.episode_retention_days,
            agent_id=agent_id,
        )

    async def retry_dead_letters(self, agent_id: str | None = None) -> tuple[int, int]:
        """Dead-lettered sessions (one agent's, or all) distilled again in the background;
        (sessions, turns) re-queued."""
        return await self._writer.retry_dead_letters(agent_id)

    async def health(self) -> dict[str, Any]:
        return {
            **await self.store.status(self._embedder.name),
            "records_in_flight": len(self._recording),
            "records_waited_out": self.records_waited_out,
            "status": "ok",
        }

    def activity(self) -> dict[str, Any]:
        """What memory did since start-up, without touching the store: distillations by
        outcome ("fallback": by the rules, the core model being capped for the day), and
        the core model's tokens by purpose against `core_model_daily_tokens`."""
        return {
            "distillations": dict(self._writer.outcomes),
            "core_model": self.core_budget.status(),
        }

    async def drain(self) -> int:
        """Embed everything still without a vector now (for callers that cannot wait for the
        background worker); returns how many items were embedded."""
        return await self._worker.drain()

    # -- lifecycle --------------------------------------------------------------------------

    def _start_consolidation(self) -> None:
        """Consolidate every `consolidation_interval_hours` (0 turns it off)."""
        hours = self.settings.consolidation_interval_hours
        if hours > 0:
            self._schedule = asyncio.get_running_loop().create_task(self._consolidate_every(hours))

    async def _consolidate_every(self, hours: float) -> None:
        while True:
            await asyncio.sleep(hours * 3600)
            try:
                report = await self.consolidate()
                log.info("consolidation: %s", report.as_dict())
            except Exception:  # the next pass tries again; memory keeps serving
                log.exception("consolidation failed")

    def _spawn(self, work: Coroutine[Any, Any, Any], what: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)

        def done(finished: asyncio.Task[Any]) -> None:
            self._background.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                log.error("memory could not %s: %r", what, finished.exception())

        task.add_done_callback(done)
        return task


def make_distiller(settings: Settings, core: CoreModel | None) -> Distiller:
    if core is not None:
        llm = LLMDistiller(
            core,
            timeout=settings.core_timeout_seconds,
            max_tokens=settings.core_max_tokens,
            context_tokens=settings.core_context_tokens,
            concurrency=settings.core_concurrency,
        )
        # A capped core model refuses its calls: the rules distil until the day ends.
        return CapFallbackDistiller(llm, RuleDistiller())
    return RuleDistiller()

"""Memory as the chat route sees it: read before forwarding, record after replying.

Both directions fail open: a memory error forwards the request without memory (and is
logged), and recording runs in the background, so the client never waits for memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from mnemoproxy.config.settings import Settings
from mnemoproxy.gate.messages import history_turns, session_fingerprint
from mnemoproxy.gate.planner import Planner
from mnemoproxy.gate.read_path import ReadPath, memory_headers
from mnemoproxy.gate.relevance import HeuristicGate, make_gate
from mnemoproxy.gate.relevance.types import GateContext
from mnemoproxy.gate.tokens import count_tokens
from mnemoproxy.memory.consolidate import ConsolidationReport, consolidate
from mnemoproxy.memory.distill.llm import LLMDistiller
from mnemoproxy.memory.distill.protocol import Distiller
from mnemoproxy.memory.distill.rules import RuleDistiller, assign_slots
from mnemoproxy.memory.embedders import Embedder, OpenAIEmbedder, make_embedder
from mnemoproxy.memory.models import Turn
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.write_path import WritePath
from mnemoproxy.proxy.services import MemoryPlan
from mnemoproxy.proxy.sse import AssistantReply
from mnemoproxy.proxy.upstream import CoreModelClient, Upstream

log = logging.getLogger("mnemoproxy.memory")

# The read path normally takes a few milliseconds; past this, the request goes on without.
READ_PATH_TIMEOUT_SECONDS = 2.0
SHUTDOWN_DISTILL_SECONDS = 10.0


class MemoryService:
    def __init__(
        self, store: Store, writer: WritePath, reader: ReadPath, settings: Settings
    ) -> None:
        self.store = store
        self.writer = writer
        self.reader = reader
        self.settings = settings
        self._background: set[asyncio.Task[Any]] = set()
        self._schedule: asyncio.Task[None] | None = None

    def start_consolidation(self) -> None:
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

    async def consolidate(self, agent_id: str | None = None) -> ConsolidationReport:
        return await consolidate(
            self.store,
            salience_floor=self.settings.salience_floor,
            episode_retention_days=self.settings.episode_retention_days,
            agent_id=agent_id,
        )

    async def before(
        self, agent_id: str, session_id: str | None, body: dict[str, Any]
    ) -> MemoryPlan:
        messages = body["messages"]
        plan = MemoryPlan(
            agent_id=agent_id,
            session_key=session_id or session_fingerprint(agent_id, messages),
            request=body,
        )
        try:
            result = await asyncio.wait_for(
                self.reader.prepare(agent_id, messages), READ_PATH_TIMEOUT_SECONDS
            )
        except Exception as exc:  # fail open: the chat must go through without memory
            log.warning(
                "memory read failed for agent %s, forwarding without memory: %r", agent_id, exc
            )
            plan.headers = memory_headers("error")
            return plan
        plan.headers = result.headers()
        if result.messages is not None and result.block is not None:
            plan.body = {**body, "messages": result.messages}
            used = [(i.item_type, i.item_id) for i in result.block.items]
            self._spawn(self.store.bump_use(agent_id, used), "bump use counts")
        return plan

    def after(self, plan: MemoryPlan, reply: AssistantReply) -> None:
        history, index, user_text = history_turns(plan.request["messages"])
        turns = [(t.index, Turn(t.user, t.assistant)) for t in history]
        turns.append((index, Turn(user_text, reply.as_text())))
        self._spawn(self.writer.record(plan.agent_id, plan.session_key, turns), "record turn")

    async def preview(self, agent_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        result = await self.reader.prepare(agent_id, messages)
        return {"agent_id": agent_id, **result.as_dict()}

    async def close(self) -> None:
        if self._schedule is not None:
            self._schedule.cancel()
        if self._background:
            await asyncio.wait(set(self._background), timeout=SHUTDOWN_DISTILL_SECONDS)
        await self.writer.close(SHUTDOWN_DISTILL_SECONDS)
        await self.store.close()

    def _spawn(self, work: Coroutine[Any, Any, Any], what: str) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)

        def done(finished: asyncio.Task[Any]) -> None:
            self._background.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                log.error("memory could not %s: %r", what, finished.exception())

        task.add_done_callback(done)


def make_distiller(settings: Settings, core: CoreModelClient | None) -> Distiller:
    if core is not None:
        return LLMDistiller(core, timeout=settings.core_timeout_seconds)
    return RuleDistiller()


async def build_memory(
    settings: Settings, upstream: Upstream
) -> tuple[MemoryService, Callable[[], Awaitable[None]]]:
    """Open the store and wire the read and write paths (the app's memory factory)."""
    embedder = make_embedder(
        settings.embedding_backend,
        model=settings.embedding_model,
        url=settings.embedding_url or settings.upstream_url,
        api_key=settings.upstream_api_key,
    )
    if isinstance(embedder, OpenAIEmbedder):
        # A remote model's size is learned by one request: not on the event loop.
        await asyncio.to_thread(lambda: embedder.dim)
    store = await Store.open(settings.data_dir, embedder)
    core = CoreModelClient(upstream, settings) if settings.core_model else None
    writer = WritePath(
        store,
        make_distiller(settings, core),
        debounce_seconds=settings.summary_debounce_seconds,
        max_attempts=settings.distill_max_attempts,
        identity_max_facts=settings.identity_max_facts,
        assign_slots=assign_slots,
    )
    await writer.start()
    reader = ReadPath(
        store,
        make_gate(
            settings.relevance_gate_mode,
            core=core,
            probe_threshold=settings.gate_probe_threshold,
        ),
        Planner(
            store,
            budget_tokens=settings.memory_budget_tokens,
            identity_max_facts=settings.identity_max_facts,
        ),
        settings.injection,
    )
    await _warm_up(embedder)
    service = MemoryService(store, writer, reader, settings)
    service.start_consolidation()
    return service, service.close


async def _warm_up(embedder: Embedder) -> None:
    """Load the tokenizer, the spaCy pipelines and the local embedding model at start-up,
    so that the first chat request does not pay a second or more for them."""

    def load() -> None:
        count_tokens("warm up")
        if not isinstance(embedder, OpenAIEmbedder):
            embedder.embed(["warm up"])

    await asyncio.to_thread(load)
    # Whatever the gate mode, the lexical scanner is used (directly or as the fallback).
    HeuristicGate().lexical("warm up", GateContext())

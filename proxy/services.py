"""What the routes are given: the collaborators created in the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from litestar import Request

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import MemoryDisabled
from mnemoproxy.gate import ReadPath, ThreadCompressor
from mnemoproxy.memory import Memory
from mnemoproxy.proxy.api.uploads import UploadSlots
from mnemoproxy.proxy.edge.access import authorize
from mnemoproxy.proxy.edge.ids import normalised_id
from mnemoproxy.proxy.edge.keys import KeyFile
from mnemoproxy.proxy.edge.metrics import Metrics
from mnemoproxy.proxy.edge.sessions import InspectorSessions
from mnemoproxy.proxy.relay.probe import UpstreamProbe
from mnemoproxy.proxy.relay.upstream import Upstream


@dataclass
class Services:
    settings: Settings
    upstream: Upstream
    memory: Memory | None = None  # None when memory is disabled
    read_path: ReadPath | None = None
    metrics: Metrics = field(default_factory=Metrics)
    keys: KeyFile | None = None  # the inspector's sign-in checks a key typed into it
    sessions: InspectorSessions | None = None  # and makes a session of it
    probe: UpstreamProbe | None = None  # whether the upstream answers (/health)
    # Document uploads under way, per key (proxy/api/uploads.py).
    uploads: UploadSlots = field(default_factory=UploadSlots)
    # Long threads' compression (context_budget_tokens), built once over memory.
    threads: ThreadCompressor | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.memory is not None:
            self.threads = ThreadCompressor.for_memory(self.memory)

    def agent_memory(self, request: Request[Any, Any, Any], agent_id: str) -> tuple[str, Memory]:
        """For a route acting on one agent: its id as the chat route keys it (normalised),
        once the caller is allowed it, and memory (MemoryDisabled when off)."""
        agent_id = normalised_id(agent_id)
        authorize(request, agent_id)
        memory, _ = self.require_memory()
        return agent_id, memory

    def require_memory(self) -> tuple[Memory, ReadPath]:
        if self.memory is None or self.read_path is None:
            raise MemoryDisabled("memory is disabled on this proxy; start it with enabled = true")
        return self.memory, self.read_path


async def open_memory(settings: Settings, upstream: Upstream) -> tuple[Memory, ReadPath]:
    """Memory (lent the upstream client for the core model and remote embeddings) and the
    read path over it: what the app's lifespan opens when memory is enabled."""
    memory = await Memory.open(settings, http=upstream)
    try:
        return memory, await ReadPath.open(settings, memory)
    except BaseException:
        await memory.close()
        raise

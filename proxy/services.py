"""What the routes are given: the collaborators created in the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from mnemoproxy.config.settings import Settings
from mnemoproxy.proxy.sse import AssistantReply
from mnemoproxy.proxy.upstream import Upstream


@dataclass
class MemoryPlan:
    """What memory decided for one chat request: the body to forward (None = unchanged),
    the response headers that say what was injected, and what to remember afterwards."""

    agent_id: str
    session_key: str
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)


class ChatMemory(Protocol):
    async def before(
        self, agent_id: str, session_id: str | None, body: dict[str, Any]
    ) -> MemoryPlan: ...

    def after(self, plan: MemoryPlan, reply: AssistantReply) -> None: ...


@dataclass
class Services:
    settings: Settings
    upstream: Upstream
    memory: ChatMemory | None = None

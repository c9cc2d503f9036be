"""The Litestar application: routes, error handlers, and the lifespan that owns resources."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar, get
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

from mnemoproxy.config.settings import Settings
from mnemoproxy.proxy.chat import chat_completions
from mnemoproxy.proxy.errors import EXCEPTION_HANDLERS
from mnemoproxy.proxy.memory_api import MEMORY_ROUTES
from mnemoproxy.proxy.memory_service import MemoryService
from mnemoproxy.proxy.passthrough import pass_through
from mnemoproxy.proxy.services import ChatMemory, Services
from mnemoproxy.proxy.upstream import Upstream

log = logging.getLogger("mnemoproxy")

# Builds the memory side once the upstream exists (the distiller reaches the core model
# through it); returns the ChatMemory and an async close function.
MemoryFactory = Callable[
    [Settings, Upstream], Awaitable[tuple[ChatMemory, Callable[[], Awaitable[None]]]]
]


def _services(state: State) -> Services:
    services: Services = state.services
    return services


@get("/health")
async def health(services: NamedDependency[Services]) -> dict[str, Any]:
    memory: Any = "disabled"
    if isinstance(services.memory, MemoryService):
        memory = {**await services.memory.store.status(), "status": "ok"}
    return {"status": "ok", "upstream": services.upstream.base_url, "memory": memory}


def create_app(
    settings: Settings,
    *,
    upstream: Upstream | None = None,
    memory_factory: MemoryFactory | None = None,
) -> Litestar:
    """Build the app. Collaborators can be passed in (tests pass fakes); whatever is not
    passed is created in the lifespan, so importing this module stays cheap."""

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        client = upstream or Upstream(settings)
        memory: ChatMemory | None = None
        close_memory: Callable[[], Awaitable[None]] | None = None
        if settings.enabled and memory_factory is not None:
            memory, close_memory = await memory_factory(settings, client)
        app.state.services = Services(settings=settings, upstream=client, memory=memory)
        try:
            yield
        finally:
            if close_memory is not None:
                await close_memory()
            if upstream is None:
                await client.aclose()

    return Litestar(
        route_handlers=[chat_completions, pass_through, health, *MEMORY_ROUTES],
        dependencies={"services": Provide(_services, sync_to_thread=False)},
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[lifespan],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=None,
        debug=False,
    )

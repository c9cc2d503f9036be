"""The Litestar application: routes, error handlers, and the lifespan that owns resources."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

from litestar import Litestar, Request, Response, asgi, route
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.types import Receive, Scope, Send

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import MemoryDisabled
from mnemoproxy.gate import ReadPath
from mnemoproxy.memory import Memory
from mnemoproxy.proxy import startup
from mnemoproxy.proxy.api.agents import AGENT_ROUTES
from mnemoproxy.proxy.api.documents import DOCUMENT_ROUTES
from mnemoproxy.proxy.api.memory import MEMORY_ROUTES, TYPE_DECODERS
from mnemoproxy.proxy.api.models import (
    CoreModelBudget,
    Health,
    MemoryHealth,
    ReadsSinceStart,
    UpstreamHealth,
)
from mnemoproxy.proxy.api.procedures import PROCEDURE_ROUTES
from mnemoproxy.proxy.chat.route import chat_completions
from mnemoproxy.proxy.edge.access import Guard, caller, require_keys_off_loopback
from mnemoproxy.proxy.edge.body_deadline import body_deadline
from mnemoproxy.proxy.edge.errors import EXCEPTION_HANDLERS
from mnemoproxy.proxy.edge.json_body import JsonRequest
from mnemoproxy.proxy.edge.keys import KeyFile
from mnemoproxy.proxy.edge.metrics import CONTENT_TYPE, Metrics
from mnemoproxy.proxy.edge.openapi import DescribedStructs
from mnemoproxy.proxy.edge.sessions import InspectorSessions
from mnemoproxy.proxy.inspector.routes import INSPECTOR_ROUTES, answer_inspector_in_html
from mnemoproxy.proxy.mcp.endpoint import LazyMcpEndpoint
from mnemoproxy.proxy.relay.passthrough import FastRelay
from mnemoproxy.proxy.relay.probe import UpstreamProbe
from mnemoproxy.proxy.relay.upstream import Upstream
from mnemoproxy.proxy.services import Services, open_memory

log = logging.getLogger(__name__)

# Opens memory and its read path once the upstream exists (memory reaches the core model
# and a remote embedder through it). Tests pass their own to inject faults.
MemoryOpener = Callable[[Settings, Upstream], Awaitable[tuple[Memory, ReadPath]]]


def _services(state: State) -> Services:
    services: Services = state.services
    return services


@route("/health", http_method=["GET", "HEAD"])
async def health(
    request: Request[Any, Any, Any], services: NamedDependency[Services]
) -> Health:
    """Liveness for anyone; the upstream and memory's counts for admin keys."""
    if not caller(request).admin:
        return Health(status="ok")
    upstream = UpstreamHealth.of(services.probe) if services.probe is not None else None
    if services.memory is None:
        return Health(status="ok", upstream=upstream, memory="disabled")
    reads = ReadsSinceStart(**services.metrics.read_counts())
    activity = services.memory.activity()
    return Health(status="ok", upstream=upstream,
                  memory=MemoryHealth(**await services.memory.health(), reads=reads,
                                      distillations=activity["distillations"],
                                      core_model=CoreModelBudget(**activity["core_model"])))


@route("/metrics", http_method=["GET"], include_in_schema=False)
async def metrics(services: NamedDependency[Services]) -> Response[bytes]:
    """Prometheus' text format (proxy/edge/metrics.py); admin keys only (it spans every agent)."""
    memory = services.memory
    health = {**await memory.health(), **memory.activity()} if memory is not None else None
    return Response(services.metrics.exposition(health), media_type=CONTENT_TYPE)


# How long a thread holding the interpreter may run before one that waits gets it (Python's
# default: 5 ms). The event loop waits on memory reads' threads (the plan, SQLite, vector
# search) for up to this long before it can relay another request; 1 ms keeps those
# stalls short without costing the reads CPU (bench_read_path measures the stall).
SWITCH_INTERVAL_SECONDS = 0.001


def create_app(
    settings: Settings,
    *,
    upstream: Upstream | None = None,
    memory_opener: MemoryOpener = open_memory,
    announce: bool = True,
    watch_upstream: bool = True,
) -> Litestar:
    """Build the app. Collaborators can be passed in (tests pass fakes); whatever is not
    passed is created in the lifespan, so importing this module stays cheap. With
    `announce` the lifespan logs the start-up report (proxy/startup.py): several workers
    leave it to the `serve` that started them. With `watch_upstream` it looks whether the
    upstream can be reached at start-up (/health looks again later, in any case); the
    command line's in-process app, which relays nothing, does not."""
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    keys = KeyFile.of(settings.keys_file, settings.data_dir)
    sessions = InspectorSessions(Path(settings.data_dir))
    guard = Guard(settings, keys, sessions)
    require_keys_off_loopback(settings, keys)
    counters = Metrics()
    opened: dict[str, Memory] = {}
    mcp = LazyMcpEndpoint(lambda: opened["memory"]) if settings.enabled else None

    @asgi("/mcp", is_mount=True, copy_scope=True)
    async def mcp_route(scope: Scope, receive: Receive, send: Send) -> None:
        if mcp is None:
            raise MemoryDisabled("memory is disabled on this proxy; start it with enabled = true")
        await mcp(scope, receive, send)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        client = upstream or Upstream(settings)
        probe = UpstreamProbe(client)
        looked = probe.check() if watch_upstream else asyncio.sleep(0, probe.last)  # not looked
        first_look = asyncio.get_running_loop().create_task(looked)
        memory: Memory | None = None
        read_path: ReadPath | None = None
        try:
            if settings.enabled:
                memory, read_path = await memory_opener(settings, client)
                opened["memory"] = memory
        except BaseException:
            first_look.cancel()
            raise
        if announce:
            startup.announce(settings, keys, await first_look)
        app.state.services = Services(settings, client, memory, read_path, counters, keys,
                                      sessions, probe=probe)
        try:
            yield
        finally:
            first_look.cancel()
            await probe.aclose()
            if mcp is not None:
                await mcp.aclose()
            if memory is not None:
                await memory.close()
            if upstream is None:
                await client.aclose()

    app = Litestar(
        route_handlers=[
            chat_completions, health, metrics, mcp_route, *MEMORY_ROUTES,
            *AGENT_ROUTES, *DOCUMENT_ROUTES, *PROCEDURE_ROUTES, *INSPECTOR_ROUTES,
        ],
        dependencies={"services": Provide(_services, sync_to_thread=False)},
        exception_handlers=answer_inspector_in_html(EXCEPTION_HANDLERS),
        type_decoders=TYPE_DECODERS,
        lifespan=[lifespan],
        before_send=[counters.count_response],
        request_max_body_size=settings.max_body_bytes,
        request_class=JsonRequest,
        middleware=[guard.middleware, body_deadline(settings.request_body_timeout_seconds)],
        # The schema of the proxy's own routes (the /v1 ones are OpenAI's): /schema/openapi.json.
        openapi_config=OpenAPIConfig(
            title="mnemoproxy", version=version("mnemoproxy"), path="/schema",
            render_plugins=[JsonRenderPlugin()], use_handler_docstrings=True,
        ),
        plugins=[DescribedStructs()],
        # Logging is the process's (the CLI sets it from log_level); Litestar's default
        # would configure the root logger at INFO and make log_level ineffective.
        logging_config=None,
        debug=False,
    )
    # Requests memory has no part in skip Litestar (proxy/relay/passthrough.py); they are
    # handed to it after the app's own ASGI entry, so lifespan and before_send still apply.
    app.asgi_handler = FastRelay(app.asgi_handler, guard, lambda: app.state.get("services"))
    return app

"""`workers > 1`: the proxy served by several processes on one port, under uvicorn's own
process supervisor (it binds the port once, starts the workers with it, and starts a new
one when one dies).

Each worker builds its app from the settings the `serve` command resolved, handed over
in an environment variable: the workers share data_dir, and memory decides among them
which one does the background work (memory/background/ownership.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from mnemoproxy.config.settings import Settings

SETTINGS_ENV = "MNEMOPROXY_WORKER_SETTINGS"
# Tests and benchmarks: "1" adds X-Mnemo-Worker (the answering process's pid) to responses.
WORKER_HEADER_ENV = "MNEMOPROXY_WORKER_HEADER"
WORKER_HEADER = b"x-mnemo-worker"


def serve_workers(settings: Settings, **uvicorn_options: Any) -> None:
    """Serve with `settings.workers` processes (returns when they have all stopped)."""
    import uvicorn

    os.environ[SETTINGS_ENV] = json.dumps(dataclasses.asdict(settings))
    uvicorn.run(
        f"{__name__}:app_from_environment",
        factory=True,
        workers=settings.workers,
        host=settings.host,
        port=settings.port,
        **uvicorn_options,
    )


def announce_once(settings: Settings) -> None:
    """The start-up report, logged once by the parent rather than by every worker."""
    import asyncio

    from mnemoproxy.proxy.edge.keys import KeyFile, keys_path
    from mnemoproxy.proxy.relay.probe import UpstreamProbe
    from mnemoproxy.proxy.relay.upstream import Upstream
    from mnemoproxy.proxy.startup import announce

    async def look() -> None:
        upstream = Upstream(settings)
        try:
            reachability = await UpstreamProbe(upstream).check()
        finally:
            await upstream.aclose()
        announce(settings, KeyFile(keys_path(settings.keys_file, settings.data_dir)),
                 reachability)

    asyncio.run(look())


def app_from_environment() -> ASGIApp:
    """One worker's app (uvicorn's factory), from the settings `serve_workers` handed over."""
    from mnemoproxy.proxy.app import create_app
    from mnemoproxy.proxy.edge.logs import configure_logging

    settings = Settings(**json.loads(os.environ[SETTINGS_ENV]))
    configure_logging(settings.log_level, settings.log_format)
    app: ASGIApp = create_app(settings, announce=False)  # `serve` announced the start
    if os.environ.get(WORKER_HEADER_ENV) == "1":
        return _with_worker_header(app)
    return app


def _with_worker_header(app: ASGIApp) -> ASGIApp:
    pid = str(os.getpid()).encode()

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_with_pid(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((WORKER_HEADER, pid))
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, send_with_pid)

    return wrapped

"""The /mcp endpoint, started on its first request.

The MCP SDK and what it stands on (pydantic, starlette, its JSON schemas) cost a process
about 30 MiB of private memory, more than anything else a proxy loads but the token
counter; most deployments never call /mcp, so none of it is imported until a request
arrives there. The SDK's session manager then runs in a task of its own for the rest of
the app's life: its task group must be entered and left by one task, and the request that
happened to start it ends long before the app does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from litestar.types import Receive, Scope, Send

if TYPE_CHECKING:
    from mnemoproxy.memory import Memory


class LazyMcpEndpoint:
    """An ASGI app serving the MCP tools over `memory()` (opened by the first request)."""

    def __init__(self, memory: Callable[[], Memory]) -> None:
        self._memory = memory
        self._app: Any = None
        self._starting = asyncio.Lock()
        self._stop = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app if self._app is not None else await self._start()
        await app(scope, receive, send)

    async def _start(self) -> Any:
        async with self._starting:
            if self._app is not None:  # another request started it meanwhile
                return self._app
            from mnemoproxy.proxy.mcp.tools import build_mcp, http_app

            server = build_mcp(self._memory)
            app = http_app(server)
            running = asyncio.get_running_loop().create_future()
            self._runner = asyncio.create_task(self._run(server, running))
            await running  # the session manager's failure to start is this request's
            self._app = app
            return app

    async def _run(self, server: Any, running: asyncio.Future[None]) -> None:
        try:
            async with server.session_manager.run():
                running.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not running.done():
                running.set_exception(exc)
            raise

    async def aclose(self) -> None:
        """Stop the session manager, if a request started it."""
        if self._runner is None:
            return
        self._stop.set()
        with contextlib.suppress(Exception):
            await self._runner

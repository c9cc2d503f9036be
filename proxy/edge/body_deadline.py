"""A deadline on receiving a request's body.

The HTTP server waits as long as a client likes between the bytes of a body, so a request
whose Content-Length promises more than is ever sent would hold its socket and a handler
forever. This ASGI wrapper bounds the time from the request's start to its last body
chunk; past it the request fails with a 408. Only the body is bounded: once it is in,
`receive` is the plain one again (a streamed reply listens on it for the client leaving).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from mnemoproxy.proxy.edge.errors import BodyTimeout


@asynccontextmanager
async def body_timeout(seconds: float, at: float | None = None) -> AsyncIterator[None]:
    """Receiving within the body's deadline (`at`, loop time; default `seconds` from now),
    or BodyTimeout."""
    at = asyncio.get_running_loop().time() + seconds if at is None else at
    try:
        async with asyncio.timeout_at(at):
            yield
    except TimeoutError:
        raise BodyTimeout(
            f"the request body did not arrive within {seconds:g} s "
            "(request_body_timeout_seconds); send the whole body promised by Content-Length"
        ) from None


def body_deadline(seconds: float) -> Any:
    """Litestar middleware: the body of every HTTP request within `seconds`."""

    def middleware(app: ASGIApp) -> ASGIApp:
        async def bounded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            loop = asyncio.get_running_loop()
            deadline = loop.time() + seconds
            body_done = False

            async def receive_in_time() -> ReceiveMessage:
                nonlocal body_done
                if body_done:
                    return await receive()
                async with body_timeout(seconds, deadline):
                    message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    body_done = True
                return message

            await app(scope, receive_in_time, send)

        return bounded

    return middleware

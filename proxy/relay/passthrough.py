"""Requests memory has nothing to do with, relayed below Litestar: every /v1/* route but
a chat that names an agent. They are most of a proxy's traffic, and each is a read of the
body, one upstream request and its reply copied back, so they are served by this thin ASGI
layer instead of Litestar's routing, dependency injection, request and response objects.

It keeps the app's rules: the same guard (hosts, origins, keys; proxy/edge/access.py), the
same body limits (max_body_bytes, request_body_timeout_seconds), a chat body checked as
the chat route checks it (proxy/chat/route.py), errors in OpenAI's shape, the upstream's
headers relayed as the Litestar relay relays them (hop-by-hop and the proxy's own server
headers left out), streams passed on chunk by chunk (an SSE stream the upstream breaks
ends with an error event), and the same metrics. Everything else goes on to Litestar.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from litestar.types import ASGIApp, HTTPScope, Receive, Scope, Send

from mnemoproxy.errors import MnemoError, TooLarge, UpstreamError
from mnemoproxy.proxy.chat.route import NO_AGENT, memory_off, parse_chat_body
from mnemoproxy.proxy.edge.access import Guard, routed_path
from mnemoproxy.proxy.edge.body_deadline import body_timeout
from mnemoproxy.proxy.edge.errors import MethodNotAllowed, error_body, http_status
from mnemoproxy.proxy.edge.metrics import CHAT_ROUTE, PASS_THROUGH_ROUTE
from mnemoproxy.proxy.relay.responses import WHOLE_BODY_LIMIT, broken_stream_event
from mnemoproxy.proxy.relay.upstream import UpstreamResponse, forward_headers
from mnemoproxy.proxy.services import Services

log = logging.getLogger(__name__)

# The messages sent here are plain dicts; Litestar's Send wants its TypedDicts.
_Sender = Callable[[Any], Awaitable[None]]
_AGENT_HEADER = b"x-agent-id"
PASS_THROUGH_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
# How requests served here are labelled: Litestar's chat route, and the pass-through.
PASS_THROUGH_TEMPLATE = "/v1/{path:path}"
_JSON = [(b"content-type", b"application/json")]
# A chat relayed here named no agent: its reply says so (proxy/chat/route.py).
_NO_AGENT_HEADERS = [(name.lower().encode(), value.encode())
                     for name, value in memory_off(NO_AGENT).items()]


class FastRelay:
    """ASGI app in front of Litestar's: takes the requests it can serve alone."""

    def __init__(self, app: ASGIApp, guard: Guard, services: Callable[[], Services | None]
                 ) -> None:
        self.app = app
        self.guard = guard
        self.services = services  # set by the app's lifespan; None before it ran

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                path = _path_if_relayed(scope)
            except MnemoError as refused:  # a /v1 path the guard refuses (dot segments)
                await _send_error(cast(_Sender, send), refused)
                return
            services = self.services()
            if path is not None and services is not None:
                await self._relay(cast(HTTPScope, scope), receive, send, path, services)
                return
        await self.app(scope, receive, send)

    async def _relay(
        self, scope: HTTPScope, receive: Receive, send: Send, path: str, services: Services
    ) -> None:
        chat = path == CHAT_ROUTE
        # Counted by the app's before_send hook under the route Litestar would have matched.
        scope["path_template"] = CHAT_ROUTE if chat else PASS_THROUGH_TEMPLATE
        reply = _Reply(send)
        try:
            self.guard.admit(scope, path)
            if scope["method"] not in PASS_THROUGH_METHODS:
                raise MethodNotAllowed(f"method {scope['method']} is not allowed on {path}")
            settings = services.settings
            body = await _read_body(receive, settings.max_body_bytes,
                                    settings.request_body_timeout_seconds)
            if chat:
                parse_chat_body(body)  # a bad chat request is a 400 here as on the route
            headers = forward_headers(
                ((k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]),
                api_key=services.upstream.api_key, identity_encoding=chat,
            )
            response = await services.upstream.send(
                scope["method"], CHAT_ROUTE if chat else relayed_path(scope), headers=headers,
                content=body or None, query=scope["query_string"].decode("latin-1"),
            )
            services.metrics.upstream[CHAT_ROUTE if chat else PASS_THROUGH_ROUTE].observe(
                response.waited)
            await _copy_response(response, receive, reply, head=scope["method"] == "HEAD",
                                 extra=_NO_AGENT_HEADERS if chat else [])
        except _ClientGone:
            return
        except MnemoError as error:
            if reply.started:  # the status line is out: the stream just ends
                log.warning("relay of %s ended early: %s", path, error.message)
            else:
                await _send_error(reply, error)
        except Exception:
            if reply.started:
                raise
            log.exception("unexpected error on %s %s", scope["method"], path)
            await _send_error(reply, MnemoError(
                "the proxy hit an internal error; it is logged, please report it"))


def relayed_path(scope: HTTPScope) -> str:
    """The path as the client wrote it (`a%2Fb` stays one segment for the upstream); the
    decoded one when the raw path does not name /v1 literally (the guard judged that)."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else ""
    return path if path.startswith("/v1/") else scope["path"]


class _Reply:
    """The client's `send`, noting whether the status line has gone out."""

    def __init__(self, send: Send) -> None:
        self._send: _Sender = cast(_Sender, send)
        self.started = False

    async def __call__(self, message: dict[str, Any]) -> None:
        self.started = True
        await self._send(message)


class _ClientGone(Exception):
    """The client hung up before its request was whole: nobody to answer."""


def _path_if_relayed(scope: Scope) -> str | None:
    """The routed path of a request this layer serves; None for one Litestar answers
    (memory's chats, a chat's wrong methods, every other route)."""
    method = scope.get("method")
    path = routed_path(scope)  # as the guard judges it, whatever its spelling; refusals raise
    if not path.startswith("/v1/"):
        return None
    if path == CHAT_ROUTE and (method != "POST" or any(
            name.lower() == _AGENT_HEADER for name, _ in scope["headers"])):
        return None
    return path


async def _read_body(receive: Receive, limit: int, seconds: float) -> bytes:
    """The whole request body, within `limit` bytes and `seconds`."""
    parts: list[bytes] = []
    size = 0
    async with body_timeout(seconds):
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise _ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise TooLarge(
                    "the request body is larger than the proxy accepts; send a smaller body "
                    "or raise the max_body_bytes setting")
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts) if len(parts) != 1 else parts[0]


async def _send_error(send: _Sender, error: MnemoError) -> None:
    status, _ = http_status(error)
    await send({"type": "http.response.start", "status": status, "headers": _JSON})
    await send({"type": "http.response.body", "body": json.dumps(error_body(error)).encode()})


async def _copy_response(
    response: UpstreamResponse, receive: Receive, send: _Sender, *, head: bool,
    extra: list[tuple[bytes, bytes]],
) -> None:
    """The upstream's response to the client (with the `extra` headers): a small whole body
    in one piece, anything else (SSE, unknown length, large) chunk by chunk as it arrives."""
    headers = [*response.raw_relayed_headers(), *extra]
    length = response.header("content-length")
    sse = (response.header("content-type") or "").startswith("text/event-stream")
    try:
        if head or (not sse and length is not None and length.isdigit()
                    and int(length) <= WHOLE_BODY_LIMIT):
            body = await response.read()
            # A HEAD answer has no body but tells the length a GET would get.
            size = length if head and length is not None else str(len(body))
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [*headers, (b"content-length", size.encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": headers})
        await _until_client_leaves(receive, _stream(response, send, sse))
    finally:
        await response.aclose()


async def _stream(response: UpstreamResponse, send: _Sender, sse: bool) -> None:
    try:
        async for chunk in response.chunks():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except UpstreamError as error:
        log.warning("upstream broke the stream: %s", error.message)
        if sse:
            await send({"type": "http.response.body", "body": broken_stream_event(error),
                        "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _until_client_leaves(receive: Receive, streaming: Awaitable[None]) -> None:
    """Run the stream, stopping it (and the upstream request) if the client disconnects."""
    relay = asyncio.ensure_future(streaming)
    watcher = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({relay, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (relay, watcher):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if relay.done() and not relay.cancelled():
        relay.result()


async def _disconnected(receive: Receive) -> Any:
    while (await receive())["type"] != "http.disconnect":
        pass

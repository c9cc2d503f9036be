"""Relaying one upstream response to the client: whole bodies as they are, streams chunk by
chunk as they arrive (never buffered), with an optional tee that reads a copy.

A successful reply is handed to `on_reply` before the client has all of it: a whole body
before it is sent, a stream before its closing `data: [DONE]` event. Whoever records the
turn there makes it durable before the client sees the reply complete."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from litestar import Response
from litestar.response import Stream

from mnemoproxy.errors import UpstreamError, UpstreamTimeout
from mnemoproxy.proxy.edge.errors import sse_error_event
from mnemoproxy.proxy.relay.sse import AssistantReply, StreamTee, reply_from_json
from mnemoproxy.proxy.relay.upstream import UpstreamResponse

log = logging.getLogger(__name__)

# Bodies up to this size with a known length are read whole and returned with their
# Content-Length; anything else (SSE, unknown length, large) streams through.
WHOLE_BODY_LIMIT = 4_000_000
# A reply body that streams through (chunked, or large) is copied for memory up to this
# size: a request body is at most max_body_bytes, and an answer of many megabytes is not
# a turn worth remembering whole.
_REMEMBERED_BODY_LIMIT = 32_000_000

OnReply = Callable[[AssistantReply], Awaitable[None]]
# The event that closes an OpenAI stream.
_DONE = re.compile(rb"data: ?\[DONE\]")


async def relay(
    response: UpstreamResponse,
    *,
    extra_headers: dict[str, str] | None = None,
    on_reply: OnReply | None = None,
) -> Response[Any]:
    """Turn an upstream response (headers received, body unread) into the client's response.

    `on_reply` is awaited with the reassembled assistant reply of a successful body, before
    the body is sent or before a stream's closing event (after the stream, when it has none);
    it is never called for errors or broken streams, and its failures never reach the client.
    """
    headers = response.relayed_headers()
    media_type = headers.pop("content-type", None) or headers.pop("Content-Type", None)
    headers.update(extra_headers or {})
    is_sse = (media_type or "").startswith("text/event-stream")
    length = response.header("content-length")
    ok = response.status_code < 400

    if not is_sse and length is not None and int(length) <= WHOLE_BODY_LIMIT:
        try:
            body = await response.read()
        finally:
            await response.aclose()
        if ok and on_reply is not None:
            reply = reply_from_json(body)
            if reply is not None:
                await _deliver(on_reply, reply)
        return Response(
            body,
            status_code=response.status_code,
            headers=headers,
            media_type=media_type,
        )

    if ok and not is_sse and on_reply is not None:
        chunks = _relay_remembered_body(response, on_reply)
    else:
        tee = StreamTee() if (ok and is_sse and on_reply is not None) else None
        chunks = _relay_chunks(response, tee, on_reply, is_sse)
    return Stream(
        chunks,
        status_code=response.status_code,
        headers=headers,
        media_type=media_type,
    )


def broken_stream_event(error: UpstreamError) -> bytes:
    """The event that ends an SSE stream the upstream broke midway: the client is told
    its reply is incomplete rather than seeing it silently cut."""
    broken = error if isinstance(error, UpstreamTimeout) else UpstreamError(
        "the upstream closed the stream before it finished; the reply is incomplete, "
        "retry the request",
        code="upstream_stream_broken",
    )
    return sse_error_event(broken)


async def _deliver(on_reply: OnReply, reply: AssistantReply) -> None:
    try:
        await on_reply(reply)
    except Exception:  # remembering never costs the client its reply
        log.exception("could not hand the reply to memory; this turn is not remembered")


async def _relay_chunks(
    response: UpstreamResponse,
    tee: StreamTee | None,
    on_reply: OnReply | None,
    is_sse: bool,
) -> AsyncIterator[bytes]:
    completed = delivered = False
    try:
        async for chunk in response.chunks():
            done = _DONE.search(chunk) if tee is not None else None
            if done is not None and tee is not None and on_reply is not None:
                # Everything before the closing event is the reply: remember it, then close.
                head, chunk = chunk[: done.start()], chunk[done.start() :]
                tee = _fed(tee, head)
                if head:
                    yield head
                if tee is not None:
                    reply = _reply_of(tee)
                    if reply is not None:
                        await _deliver(on_reply, reply)
                delivered, tee = True, None
            elif tee is not None:
                tee = _fed(tee, chunk)
            yield chunk
        completed = True
    except UpstreamError as error:
        log.warning("upstream broke the stream: %s", error.message)
        if is_sse:
            yield broken_stream_event(error)
    finally:
        await response.aclose()
    if completed and not delivered and tee is not None and on_reply is not None:
        # A stream without a closing event: remembered once it ended.
        reply = _reply_of(tee)
        if reply is not None:
            await _deliver(on_reply, reply)


async def _relay_remembered_body(
    response: UpstreamResponse, on_reply: OnReply
) -> AsyncIterator[bytes]:
    """A whole reply body that streams through (an upstream answering with chunked encoding,
    as Go servers do past 2 KB, or a large body), copied as it passes; its last chunk is
    held back until the reply is handed to memory, so the client has it all only once the
    turn is stored, as with a body read whole."""
    copy: bytearray | None = bytearray()
    held: bytes | None = None
    completed = False
    try:
        async for chunk in response.chunks():
            if copy is not None:
                if len(copy) + len(chunk) > _REMEMBERED_BODY_LIMIT:
                    log.warning("the reply is over %d bytes; this turn is not remembered",
                                _REMEMBERED_BODY_LIMIT)
                    copy = None
                else:
                    copy += chunk
            if held is not None:
                yield held
            held = chunk
        completed = True
    except UpstreamError as error:
        # Nothing can be added to a body already under way: the client sees it cut short.
        log.warning("upstream broke the reply body: %s", error.message)
    finally:
        await response.aclose()
    if completed and copy is not None:
        reply = reply_from_json(bytes(copy))
        if reply is not None:
            await _deliver(on_reply, reply)
    if held is not None:
        yield held


def _fed(tee: StreamTee, chunk: bytes) -> StreamTee | None:
    """The tee after reading `chunk`, or None when it cannot: reading a copy must never
    cut the client's stream."""
    try:
        tee.feed(chunk)
    except Exception:
        log.exception("could not read the upstream's stream; this reply is not remembered")
        return None
    return tee


def _reply_of(tee: StreamTee) -> AssistantReply | None:
    try:
        return tee.reply()
    except Exception:
        log.exception("could not read the upstream's stream; this reply is not remembered")
        return None

"""Relaying one upstream response to the client: whole bodies as they are, streams chunk by
chunk as they arrive (never buffered), with an optional tee that reads a copy."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from litestar import Response
from litestar.background_tasks import BackgroundTask
from litestar.response import Stream

from mnemoproxy.errors import UpstreamError
from mnemoproxy.proxy.errors import sse_error_event
from mnemoproxy.proxy.sse import AssistantReply, StreamTee, reply_from_json
from mnemoproxy.proxy.upstream import UpstreamResponse

log = logging.getLogger("mnemoproxy.relay")

# Bodies up to this size with a known length are read whole and returned with their
# Content-Length; anything else (SSE, unknown length, large) streams through.
_WHOLE_BODY_LIMIT = 4_000_000

OnReply = Callable[[AssistantReply], None]


async def relay(
    response: UpstreamResponse,
    *,
    extra_headers: dict[str, str] | None = None,
    on_reply: OnReply | None = None,
) -> Response[Any]:
    """Turn an upstream response (headers received, body unread) into the client's response.

    `on_reply` is called with the reassembled assistant reply once a successful body has
    been relayed completely; it is never called for errors or broken streams.
    """
    headers = response.relayed_headers()
    media_type = headers.pop("content-type", None) or headers.pop("Content-Type", None)
    headers.update(extra_headers or {})
    is_sse = (media_type or "").startswith("text/event-stream")
    length = response.header("content-length")
    ok = response.status_code < 400

    if not is_sse and length is not None and int(length) <= _WHOLE_BODY_LIMIT:
        try:
            body = await response.read()
        finally:
            await response.aclose()
        background = None
        if ok and on_reply is not None:
            reply = reply_from_json(body)
            if reply is not None:
                # Handed over only once the client has the whole response: remembering
                # must not delay it by a single scheduling slot.
                background = BackgroundTask(_deliver, on_reply, reply)
        return Response(
            body,
            status_code=response.status_code,
            headers=headers,
            media_type=media_type,
            background=background,
        )

    tee = StreamTee() if (ok and is_sse and on_reply is not None) else None
    return Stream(
        _relay_chunks(response, tee, on_reply, is_sse),
        status_code=response.status_code,
        headers=headers,
        media_type=media_type,
    )


async def _deliver(on_reply: OnReply, reply: AssistantReply) -> None:
    on_reply(reply)


async def _relay_chunks(
    response: UpstreamResponse,
    tee: StreamTee | None,
    on_reply: OnReply | None,
    is_sse: bool,
) -> AsyncIterator[bytes]:
    completed = False
    try:
        async for chunk in response.chunks():
            if tee is not None:
                try:
                    tee.feed(chunk)
                except Exception:  # reading a copy must never cut the client's stream
                    log.exception("could not read the upstream's stream; this reply is not "
                                  "remembered")
                    tee = None
            yield chunk
        completed = True
    except UpstreamError as error:
        log.warning("upstream broke the stream: %s", error.message)
        if is_sse:
            broken = UpstreamError(
                "the upstream closed the stream before it finished; the reply is incomplete, "
                "retry the request",
                code="upstream_stream_broken",
            )
            yield sse_error_event(broken)
    finally:
        await response.aclose()
    if completed and tee is not None and on_reply is not None:
        try:
            reply = tee.reply()
        except Exception:
            log.exception("could not read the upstream's stream; this reply is not remembered")
            return
        on_reply(reply)

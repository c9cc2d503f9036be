"""A fake OpenAI-compatible upstream: a real HTTP/1.1 server on 127.0.0.1 for tests.

aiohttp runs in a background thread with its own event loop, so sync tests, async tests
and a proxy in another thread or process all reach it over loopback. Every request is
recorded before it is answered. POST /v1/chat/completions consumes one-shot behaviours
queued with `enqueue` (or the shortcuts `reply`, `tool_call`, `error`, `stall`,
`drop_mid_stream`, `json`, `raw_events`, and for tool round trips `tool_calls`,
`answer_tool_result`, `tool_call_while_offered`); with none queued it echoes the last user
message, streaming when the request asks to.

A tool round trip is scripted as two behaviours: the call, then the answer given on
seeing its result (a request without a matching tool result gets a 400, as from a strict
server):

    fake.tool_call("search_memory", {"query": "pet"}).answer_tool_result(prefix="I see: ")

    with FakeUpstream() as fake:
        fake.reply("hello", chunk_delay=0.05).error(429)
        client = openai.OpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
        client.chat.completions.create(model="m", messages=[...])   # -> "hello"
        assert fake.last_json["model"] == "m"

Other routes: GET /v1/models, POST /v1/embeddings (deterministic hash vectors), any path
ending in /stream-echo (a short SSE stream), and any other /v1 path echoes the request
back as JSON so pass-through tests can see what was relayed.

As a process (for benchmarks): `python -m tests.support.servers.fake_upstream --port 8001`
serves until SIGTERM or Ctrl-C and prints its base URL first.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import math
import re
import signal
import struct
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

from aiohttp import web

# Each fake gets its own connections; stalled handlers must not hold up stop() for long.
_SHUTDOWN_TIMEOUT_SECONDS = 0.1
_MAX_BODY_BYTES = 64 * 1024 * 1024  # multimodal requests carry base64 images
_TOOL_ARGUMENT_FRAGMENTS = 4


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # raw (still percent-encoded), without the query string
    query: str  # raw, as sent
    headers: dict[str, str]  # lower-case names
    body: bytes
    json: Any  # the parsed body, or None when it is empty or not JSON


def error_body(message: str, status: int) -> dict[str, Any]:
    """OpenAI's error shape."""
    error_type = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


def embedding_for(text: str, dim: int = 8) -> list[float]:
    """A unit vector derived from a hash of `text`, rounded to float32 like the wire format."""
    raw = [byte - 127.5 for byte in hashlib.shake_256(text.encode()).digest(dim)]
    norm = math.sqrt(sum(value * value for value in raw))
    return list(struct.unpack(f"<{dim}f", struct.pack(f"<{dim}f", *(v / norm for v in raw))))


def _message_text(content: Any) -> str:
    if isinstance(content, list):  # multimodal: keep the text parts only
        return " ".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return content if isinstance(content, str) else ""


def _word_count(text: str) -> int:
    return len(text.split())


def _split_words(text: str) -> list[str]:
    """Lossless split into word-sized stream pieces ("a b" -> ["a ", "b"])."""
    return re.findall(r"\S+\s*|\s+", text)


def _split_evenly(text: str, parts: int) -> list[str]:
    size = max(1, math.ceil(len(text) / parts))
    return [text[start : start + size] for start in range(0, len(text), size)]


@dataclass
class ChatCall:
    """One POST /v1/chat/completions being answered, with the ids its chunks share."""

    request: web.Request
    payload: dict[str, Any]
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex[:24]}")
    created: int = field(default_factory=lambda: int(time.time()))

    @property
    def model(self) -> str:
        return str(self.payload.get("model", "fake-model"))

    @property
    def wants_stream(self) -> bool:
        return self.payload.get("stream") is True

    @property
    def include_usage(self) -> bool:
        options = self.payload.get("stream_options") or {}
        return options.get("include_usage") is True

    @property
    def echo_text(self) -> str:
        user_messages = [m for m in self.payload.get("messages", []) if m.get("role") == "user"]
        return f"echo: {_message_text(user_messages[-1].get('content'))}" if user_messages else ""

    def usage(self, completion_tokens: int) -> dict[str, int]:
        prompt_tokens = sum(
            _word_count(_message_text(m.get("content"))) for m in self.payload.get("messages", [])
        )
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }

    def completion(self, message: dict[str, Any], finish_reason: str, tokens: int) -> dict:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": self.usage(tokens),
        }

    def chunks(self, deltas: list[dict], finish_reason: str, tokens: int) -> list[dict]:
        """The chat.completion.chunk events of a stream, as OpenAI sends them."""
        steps: list[tuple[dict[str, Any], str | None]] = [(delta, None) for delta in deltas]
        steps.append(({}, finish_reason))
        events = [
            self._chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}])
            for delta, reason in steps
        ]
        if self.include_usage:
            events.append({**self._chunk([]), "usage": self.usage(tokens)})
        return events

    def _chunk(self, choices: list[dict]) -> dict[str, Any]:
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if self.include_usage:  # OpenAI sends usage: null on every chunk but the last
            chunk["usage"] = None
        return chunk


async def _open_sse(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    return response


async def _send_events(
    response: web.StreamResponse, events: list[Any], chunk_delay: float = 0.0
) -> None:
    """Write each event as its own `data:` line; aiohttp hands every write to the socket."""
    for index, event in enumerate(events):
        if index and chunk_delay:
            await asyncio.sleep(chunk_delay)
        await response.write(f"data: {json.dumps(event)}\n\n".encode())


async def _finish_sse(response: web.StreamResponse) -> web.StreamResponse:
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def _content_deltas(pieces: list[str]) -> list[dict[str, Any]]:
    # OpenAI opens with the role and empty content, then sends content-only deltas.
    return [{"role": "assistant", "content": ""}] + [{"content": piece} for piece in pieces]


async def _answer(
    call: ChatCall,
    stream: bool | None,
    *,
    message: dict[str, Any],
    deltas: list[dict[str, Any]],
    finish_reason: str,
    tokens: int,
    chunk_delay: float = 0.0,
    chunked: bool = False,
) -> web.StreamResponse:
    """One completion, as JSON or as a stream; `stream=None` does what the request asks.
    `chunked` sends the JSON with chunked encoding and no length, as Go servers do."""
    if not (call.wants_stream if stream is None else stream):
        completion = call.completion(message, finish_reason, tokens)
        if not chunked:
            return web.json_response(completion)
        body = json.dumps(completion).encode()
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(call.request)
        for start in range(0, len(body), 1000):
            await response.write(body[start : start + 1000])
        await response.write_eof()
        return response
    response = await _open_sse(call.request)
    await _send_events(response, call.chunks(deltas, finish_reason, tokens), chunk_delay)
    return await _finish_sse(response)


class Behaviour(Protocol):
    async def respond(self, call: ChatCall) -> web.StreamResponse: ...


@dataclass(frozen=True)
class Reply:
    """An assistant text reply; `content=None` echoes the last user message."""

    content: str | None = None
    stream: bool | None = None  # None: stream when the request asks to
    chunk_delay: float = 0.0
    chunks: list[str] | None = None  # explicit stream pieces; their join is the content
    chunked: bool = False  # a whole body in chunked encoding, without a Content-Length

    def __post_init__(self) -> None:
        if self.chunks is not None and self.content not in (None, "".join(self.chunks)):
            raise ValueError("content must equal ''.join(chunks) when both are given")

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        pieces = self.chunks
        content = "".join(pieces) if pieces is not None else self.content
        if content is None:
            content = call.echo_text
        return await _answer(
            call,
            self.stream,
            message={"role": "assistant", "content": content, "refusal": None},
            deltas=_content_deltas(pieces if pieces is not None else _split_words(content)),
            finish_reason="stop",
            tokens=_word_count(content),
            chunk_delay=self.chunk_delay,
            chunked=self.chunked,
        )


@dataclass(frozen=True)
class ToolCall:
    """An assistant message calling one function; streamed in argument fragments."""

    name: str
    arguments: dict[str, Any] | str
    stream: bool | None = None
    call_id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        arguments = (
            self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)
        )
        function = {"name": self.name, "arguments": arguments}
        tool_call = {"id": self.call_id, "type": "function", "function": function}
        # OpenAI opens with the id, the name and empty arguments, then sends fragments.
        opening = {**tool_call, "index": 0, "function": {**function, "arguments": ""}}
        deltas = [{"role": "assistant", "content": None, "tool_calls": [opening]}]
        deltas += [
            {"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}
            for fragment in _split_evenly(arguments, _TOOL_ARGUMENT_FRAGMENTS)
        ]
        return await _answer(
            call,
            self.stream,
            message={"role": "assistant", "content": None, "tool_calls": [tool_call]},
            deltas=deltas,
            finish_reason="tool_calls",
            tokens=_word_count(arguments) + 1,
        )


@dataclass(frozen=True)
class ToolCalls:
    """An assistant message calling several functions at once (parallel tool calls), its
    text first when `content` is given; streamed call after call, each opening with its
    id and name and then its arguments in fragments."""

    calls: tuple[tuple[str, dict[str, Any] | str], ...]
    content: str | None = None
    stream: bool | None = None

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        tool_calls: list[dict[str, Any]] = []
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": self.content}]
        for index, (name, arguments) in enumerate(self.calls):
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            function = {"name": name, "arguments": text}
            tool_call = {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                         "function": function}
            tool_calls.append(tool_call)
            opening = {**tool_call, "index": index, "function": {**function, "arguments": ""}}
            deltas.append({"tool_calls": [opening]})
            deltas += [
                {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
                for fragment in _split_evenly(text, _TOOL_ARGUMENT_FRAGMENTS)
            ]
        return await _answer(
            call,
            self.stream,
            message={"role": "assistant", "content": self.content, "tool_calls": tool_calls},
            deltas=deltas,
            finish_reason="tool_calls",
            tokens=sum(_word_count(c["function"]["arguments"]) + 1 for c in tool_calls),
        )


def _unanswered_tool_calls(messages: list[Any]) -> str | None:
    """Why the request's trailing tool results do not answer the assistant's calls before
    them (OpenAI refuses such a request), or None when they do."""
    results: list[dict[str, Any]] = []
    position = len(messages) - 1
    while position >= 0 and isinstance(messages[position], dict) and (
            messages[position].get("role") == "tool"):
        results.insert(0, messages[position])
        position -= 1
    if not results:
        return "the last message is not a tool result"
    asked = messages[position] if position >= 0 else None
    calls = asked.get("tool_calls") if isinstance(asked, dict) else None
    if not isinstance(asked, dict) or asked.get("role") != "assistant" or not calls:
        return "messages with role 'tool' must be a response to a preceding message with " \
               "'tool_calls'"
    call_ids = [c.get("id") for c in calls if isinstance(c, dict)]
    result_ids = [r.get("tool_call_id") for r in results]
    if sorted(map(str, call_ids)) != sorted(map(str, result_ids)):
        return (f"an assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id' (calls {call_ids}, results {result_ids})")
    return None


@dataclass(frozen=True)
class AnswerToolResult:
    """The answer a model gives on seeing its tool results: `content`, or (None) `prefix`
    followed by the last tool result's text. A request that does not end with tool results
    answering every call of the assistant message before them gets a 400."""

    content: str | None = None
    prefix: str = "tool said: "
    stream: bool | None = None

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        sent = call.payload.get("messages")
        messages: list[Any] = sent if isinstance(sent, list) else []
        problem = _unanswered_tool_calls(messages)
        if problem is not None:
            return web.json_response(error_body(problem, 400), status=400)
        content = self.content
        if content is None:
            content = self.prefix + _message_text(messages[-1].get("content"))
        return await Reply(content, self.stream).respond(call)


def offers_tool(payload: dict[str, Any], name: str) -> bool:
    """Whether a request lets the model call the function `name`."""
    tools = payload.get("tools")
    if payload.get("tool_choice") == "none" or not isinstance(tools, list):
        return False
    return any(
        isinstance(tool, dict) and isinstance(tool.get("function"), dict)
        and tool["function"].get("name") == name
        for tool in tools
    )


@dataclass(frozen=True)
class ToolCallWhileOffered:
    """A model that calls `name` whenever the request lets it (the tool declared and
    tool_choice not "none"), and otherwise answers `otherwise`."""

    name: str
    arguments: dict[str, Any] | str
    otherwise: str = "answered without the tool"

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        if offers_tool(call.payload, self.name):
            return await ToolCall(self.name, self.arguments).respond(call)
        return await Reply(self.otherwise).respond(call)


@dataclass(frozen=True)
class ErrorReply:
    """An error status with OpenAI's error body, or `body` (a str is sent as text/plain)."""

    status: int
    body: Any = None

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        if isinstance(self.body, str):
            return web.Response(status=self.status, text=self.body)
        body = (
            self.body
            if self.body is not None
            else error_body(f"fake upstream error {self.status}", self.status)
        )
        return web.json_response(body, status=self.status)


@dataclass(frozen=True)
class Stall:
    """Send nothing for `seconds`, then the default reply (if the client is still there)."""

    seconds: float

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        await asyncio.sleep(self.seconds)
        return await Reply().respond(call)


@dataclass(frozen=True)
class DropMidStream:
    """Send `after_chunks` SSE events, then close the TCP connection without [DONE]."""

    after_chunks: int = 2

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        pieces = [f"partial {index} " for index in range(self.after_chunks)]
        events = call.chunks(_content_deltas(pieces), "stop", self.after_chunks)
        response = await _open_sse(call.request)
        await _send_events(response, events[: self.after_chunks])
        transport = call.request.transport
        if transport is not None:  # None: the client left already, nothing to drop
            transport.abort()
        return response


@dataclass(frozen=True)
class RawEvents:
    """A stream of these SSE events exactly as given (malformed ones included), then
    [DONE]."""

    events: list[Any]

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        response = await _open_sse(call.request)
        await _send_events(response, self.events)
        return await _finish_sse(response)


@dataclass(frozen=True)
class JsonReply:
    body: Any
    status: int = 200

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        return web.json_response(self.body, status=self.status)


class FakeUpstream:
    """The server; see the module docstring. Thread-safe: tests and handlers share it."""

    models = ("fake-model", "fake-core-model")

    def __init__(self, *, port: int = 0, embedding_dim: int = 8) -> None:
        self.port = port  # 0: any free port, known once started
        self.embedding_dim = embedding_dim
        self._changed = threading.Condition()  # guards _requests and _behaviours
        self._requests: list[RecordedRequest] = []
        self._behaviours: deque[Behaviour] = deque()
        # Calls for these models are answered by their behaviour every time, before the
        # one-shot queue is consulted (a core model played by the test).
        self._by_model: dict[str, Behaviour] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="fake-upstream", daemon=True
        )
        self._thread.start()
        self._runner = asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(10)
        self.port = self._runner.addresses[0][1]
        return self

    def stop(self) -> None:
        if self._loop is None or self._runner is None or self._thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        self._loop = self._runner = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    # --- recording -------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._changed:
            return list(self._requests)

    @property
    def last_json(self) -> Any:
        with self._changed:
            return self._requests[-1].json if self._requests else None

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until `count` requests were recorded (for work the proxy does in background)."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._requests) >= count, timeout):
                raise TimeoutError(f"{len(self._requests)} of {count} requests after {timeout}s")
            return list(self._requests)

    def reset(self) -> None:
        with self._changed:
            self._requests.clear()
            self._behaviours.clear()
            self._by_model.clear()

    # --- behaviours for POST /v1/chat/completions, consumed in order -----------------

    def answer_model(self, model: str, behaviour: Behaviour) -> Self:
        """Answer every call naming `model` with `behaviour` (not consumed)."""
        with self._changed:
            self._by_model[model] = behaviour
        return self

    def enqueue(self, behaviour: Behaviour) -> Self:
        with self._changed:
            self._behaviours.append(behaviour)
        return self

    def reply(
        self,
        content: str | None = None,
        *,
        stream: bool | None = None,
        chunk_delay: float = 0.0,
        chunks: list[str] | None = None,
    ) -> Self:
        return self.enqueue(Reply(content, stream, chunk_delay, chunks))

    def tool_call(
        self, name: str, arguments: dict[str, Any] | str, *, stream: bool | None = None
    ) -> Self:
        return self.enqueue(ToolCall(name, arguments, stream))

    def tool_calls(
        self,
        calls: list[tuple[str, dict[str, Any] | str]],
        *,
        content: str | None = None,
        stream: bool | None = None,
    ) -> Self:
        return self.enqueue(ToolCalls(tuple(calls), content, stream))

    def answer_tool_result(
        self, content: str | None = None, *, prefix: str = "tool said: ",
        stream: bool | None = None,
    ) -> Self:
        return self.enqueue(AnswerToolResult(content, prefix, stream))

    def tool_call_while_offered(
        self, name: str, arguments: dict[str, Any] | str, *,
        otherwise: str = "answered without the tool", times: int = 1,
    ) -> Self:
        for _ in range(times):
            self.enqueue(ToolCallWhileOffered(name, arguments, otherwise))
        return self

    def error(self, status: int, body: Any = None) -> Self:
        return self.enqueue(ErrorReply(status, body))

    def stall(self, seconds: float) -> Self:
        return self.enqueue(Stall(seconds))

    def drop_mid_stream(self, after_chunks: int = 2) -> Self:
        return self.enqueue(DropMidStream(after_chunks))

    def json(self, body: Any, status: int = 200) -> Self:
        return self.enqueue(JsonReply(body, status))

    def raw_events(self, events: list[Any]) -> Self:
        return self.enqueue(RawEvents(events))

    # --- the server ------------------------------------------------------------------

    async def _serve(self) -> web.AppRunner:
        app = web.Application(client_max_size=_MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # handler_cancellation: a stalled handler ends when its client gives up.
        # TCP_NODELAY needs no code here: aiohttp sets it on every accepted connection.
        runner = web.AppRunner(
            app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=_SHUTDOWN_TIMEOUT_SECONDS,
        )
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self.port).start()
        return runner

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        recorded = RecordedRequest(
            method=request.method,
            path=request.rel_url.raw_path,
            query=request.rel_url.raw_query_string,  # as sent
            headers={name.lower(): value for name, value in request.headers.items()},
            body=body,
            json=parsed,
        )
        with self._changed:
            self._requests.append(recorded)
            self._changed.notify_all()
        return await self._route(request, recorded)

    async def _route(self, request: web.Request, recorded: RecordedRequest) -> web.StreamResponse:
        path = request.path
        if not path.startswith("/v1/"):
            return web.json_response(error_body(f"no route {path}", 404), status=404)
        if (request.method, path) == ("POST", "/v1/chat/completions"):
            return await self._chat(request, recorded.json)
        if (request.method, path) == ("GET", "/v1/models"):
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models
            ]
            return web.json_response({"object": "list", "data": data})
        if (request.method, path) == ("POST", "/v1/embeddings"):
            return self._embeddings(recorded.json)
        if path.endswith("/stream-echo"):
            response = await _open_sse(request)
            await _send_events(response, [{"index": index, "path": path} for index in range(3)])
            return await _finish_sse(response)
        return web.json_response(
            {
                "method": recorded.method,
                "path": recorded.path,
                "query": recorded.query,
                "headers": recorded.headers,
                "body": recorded.body.decode("utf-8", "replace"),
            }
        )

    async def _chat(self, request: web.Request, payload: Any) -> web.StreamResponse:
        if not isinstance(payload, dict):
            return web.json_response(error_body("body must be a JSON object", 400), status=400)
        with self._changed:
            behaviour = self._by_model.get(str(payload.get("model")))
            if behaviour is None:
                behaviour = self._behaviours.popleft() if self._behaviours else Reply()
        return await behaviour.respond(ChatCall(request, payload))

    def _embeddings(self, payload: Any) -> web.Response:
        raw_input = payload.get("input") if isinstance(payload, dict) else None
        if raw_input is None:
            return web.json_response(error_body("input is required", 400), status=400)
        # A string or a token list is one input; a list of those is several.
        is_single = isinstance(raw_input, str) or (
            isinstance(raw_input, list) and all(isinstance(item, int) for item in raw_input)
        )
        inputs = [raw_input] if is_single else raw_input
        texts = [item if isinstance(item, str) else json.dumps(item) for item in inputs]
        as_base64 = payload.get("encoding_format") == "base64"  # the openai SDK's default
        data = []
        for index, text in enumerate(texts):
            vector = embedding_for(text, self.embedding_dim)
            encoded: Any = vector
            if as_base64:
                encoded = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(_word_count(text) for text in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": payload.get("model", "fake-embedding"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the fake upstream until stopped.")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    # SystemExit unwinds the `with`, so SIGTERM stops the server as cleanly as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with FakeUpstream(port=args.port) as fake, contextlib.suppress(KeyboardInterrupt):
        print(fake.base_url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()

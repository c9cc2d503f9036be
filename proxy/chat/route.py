"""POST /v1/chat/completions: validate, let memory prepare the request, relay, remember."""

from __future__ import annotations

import json
import re
from typing import Any

from litestar import Request, Response, post
from litestar.di import NamedDependency

from mnemoproxy.errors import InvalidArgument
from mnemoproxy.proxy.chat.memory import prepare, remember
from mnemoproxy.proxy.chat.memory_tool import MemoryTool, offered_body
from mnemoproxy.proxy.edge.access import authorize, caller
from mnemoproxy.proxy.edge.ids import header_id
from mnemoproxy.proxy.edge.json_body import decode
from mnemoproxy.proxy.edge.metrics import CHAT_ROUTE
from mnemoproxy.proxy.relay.responses import OnReply, relay
from mnemoproxy.proxy.relay.sse import AssistantReply
from mnemoproxy.proxy.relay.upstream import forward_headers
from mnemoproxy.proxy.services import Services

# Why memory took no part in a chat, told in headers (the body goes through untouched): a
# client that forgot X-Agent-Id, or sent it empty, learns it from the first reply.
NO_AGENT = ("no X-Agent-Id header: memory was neither read nor written; send "
            "X-Agent-Id: <agent> to use it")
EMPTY_AGENT = ("X-Agent-Id is empty: memory was neither read nor written; send "
               "X-Agent-Id: <agent> to use it")
MEMORY_OFF = "memory is disabled on this proxy (enabled = false)"
RELAY_ONLY_KEY = ("this key has no agent list: memory was neither read nor written; an "
                  "admin makes keys that reach memory with `mnemoproxy keys add --agents A,B`")


def memory_off(hint: str) -> dict[str, str]:
    return {"X-Memory-Section": "off", "X-Memory-Hint": hint}


# An escaped UTF-16 surrogate; JSON decoding pairs them, and lets a lone one through.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def parse_chat_body(raw: bytes) -> dict[str, Any]:
    """The request as a dict, or InvalidArgument naming what is wrong."""
    body = decode(raw)
    if _SURROGATE_ESCAPE.search(raw):
        try:
            json.dumps(body, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            # The JSON API refuses the same (its decoder is strict); text that is not
            # Unicode cannot be stored, embedded or searched.
            raise InvalidArgument(
                "the request body holds an unpaired UTF-16 surrogate escape (\\ud800 to "
                "\\udfff), which is not text"
            ) from None
    if not isinstance(body, dict):
        raise InvalidArgument("the request body must be a JSON object with a 'messages' list")
    messages = body.get("messages")
    if messages is None:
        raise InvalidArgument(
            "'messages' is required: a list of {role, content} objects", param="messages"
        )
    if not isinstance(messages, list) or not messages:
        raise InvalidArgument("'messages' must be a non-empty list", param="messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidArgument(
                f"messages[{i}] must be an object with 'role' and 'content'", param=f"messages[{i}]"
            )
        if not isinstance(message.get("role"), str):
            raise InvalidArgument(
                f"messages[{i}].role must be a string such as 'user'", param=f"messages[{i}].role"
            )
    if "stream" in body and not isinstance(body["stream"], bool | None):
        raise InvalidArgument("'stream' must be true or false", param="stream")
    return body


@post("/v1/chat/completions", status_code=200, include_in_schema=False)
async def chat_completions(
    request: Request[Any, Any, Any], services: NamedDependency[Services]
) -> Response[Any]:
    raw = await request.body()
    body = parse_chat_body(raw)
    agent_id = header_id(request, "X-Agent-Id")
    skipped: dict[str, str] | None = None
    if agent_id and caller(request).relays_only:
        # A key without an agent list reaches no memory: relayed as without X-Agent-Id.
        agent_id, skipped = "", memory_off(RELAY_ONLY_KEY)
    elif agent_id:
        authorize(request, agent_id)
    session_id = header_id(request, "X-Session-Id") or None

    plan = None
    memory, read_path = services.memory, services.read_path
    if agent_id and memory is not None and read_path is not None:
        plan = await prepare(
            memory,
            read_path,
            services.threads,
            agent_id,
            session_id,
            body,
            deadline=services.settings.memory_read_deadline_seconds,
            metrics=services.metrics,
        )
        if plan.body is not None:
            raw = json.dumps(plan.body, ensure_ascii=False).encode()

    headers = forward_headers(
        request.headers.items(), api_key=services.upstream.api_key, identity_encoding=True
    )
    on_reply: OnReply | None = None
    if plan is not None and memory is not None:
        recorded_plan, recording_memory = plan, memory

        async def on_reply(reply: AssistantReply) -> None:
            await remember(
                recording_memory, recorded_plan, reply,
                wait=services.settings.memory_read_deadline_seconds,
            )

        # memory_tool: the model may search the agent's memory (proxy/chat/memory_tool.py).
        tool_body = offered_body(plan.body or body) if services.settings.memory_tool else None
        if tool_body is not None:
            return await MemoryTool(
                upstream=services.upstream, headers=headers, memory=memory,
                agent_id=plan.agent_id, settings=services.settings, metrics=services.metrics,
                extra_headers=plan.headers, on_reply=on_reply,
            ).answer(tool_body)

    upstream_response = await services.upstream.send(
        "POST", "/v1/chat/completions", headers=headers, content=raw
    )
    services.metrics.upstream[CHAT_ROUTE].observe(upstream_response.waited)
    why_not = skipped or memory_off(MEMORY_OFF if agent_id else EMPTY_AGENT)
    return await relay(upstream_response, extra_headers=plan.headers if plan else why_not,
                       on_reply=on_reply)

"""Reading a streamed chat reply round by round for the memory tool (proxy/chat/memory_tool.py):
each SSE event is relayed, rewritten or held back, so the client sees one reply whatever
number of rounds the proxy ran. Text passes at once; a tool call is held until its name
shows whether it is search_memory (the proxy's) or the client's; the round's end waits
for the decision whether another round follows."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mnemoproxy.proxy.relay.sse import AssistantReply, complete_events

SEARCH_MEMORY = "search_memory"
# Between the texts of two rounds, as the client receives them.
ROUND_SEPARATOR = "\n\n"


@dataclass
class _Call:
    """One tool call of a streamed reply, as its deltas arrive."""

    id: str | None = None
    name: str = ""
    arguments: str = ""
    owner: str = "pending"  # pending (its name could still be search_memory), memory, client
    client_index: int = -1

    def as_delta(self) -> dict[str, Any]:
        """Everything so far in one delta part, for a client call seen late."""
        part: dict[str, Any] = {"index": self.client_index}
        if self.id:
            part["id"] = self.id
        part["type"] = "function"
        part["function"] = {"name": self.name, "arguments": self.arguments}
        return part

    def as_call(self, fallback_id: str) -> dict[str, Any]:
        return {"id": self.id or fallback_id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class ClientReply:
    """The reply as the client receives it, over every round."""

    stream_id: str | None = None  # the first round's; later rounds' chunks carry it too
    content: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage_event: dict[str, Any] | None = None  # the last round's, usage summed
    usages: list[dict[str, Any]] = field(default_factory=list)

    def assistant_reply(self) -> AssistantReply:
        return AssistantReply("".join(self.content), self.calls, self.finish_reason)


class StreamRound:
    """One round's SSE stream, read as it passes: `feed` returns what to relay now."""

    def __init__(self, reply: ClientReply, *, can_continue: bool) -> None:
        self.reply = reply
        self.can_continue = can_continue
        self.first = reply.stream_id is None
        self.text = ""
        self.done = False  # the upstream sent [DONE]
        self.continues = False  # decided at the round's end: another round follows
        self._finished = False
        self._buffer = b""
        self._calls: dict[int, _Call] = {}
        self._client_calls = 0
        self._last: dict[str, Any] = {}  # the last chunk seen, for a made-up one

    def feed(self, chunk: bytes) -> bytes:
        events, self._buffer = complete_events(self._buffer + chunk)
        return b"".join([self._event(event) for event in events])

    def end(self) -> bytes:
        """The stream is over: its last event without a blank line, and the decision."""
        out = [self._event(self._buffer + b"\n\n")] if self._buffer.strip() else []
        self._buffer = b""
        if not self._finished:
            flushed = self._resolve()
            if flushed:
                out.append(event_bytes(self._made_up({"tool_calls": flushed})))
            self._decide()
            self._finish_calls()
        return b"".join(out)

    def memory_calls(self) -> list[dict[str, Any]]:
        calls = [c for c in self._calls.values() if c.owner == "memory"]
        return [c.as_call(f"call_memory_{number}") for number, c in enumerate(calls)]

    # -- events --------------------------------------------------------------------------

    def _event(self, raw: bytes) -> bytes:
        data = b"\n".join(
            line[5:].lstrip() for line in raw.splitlines() if line.startswith(b"data:"))
        if not data:
            return raw  # a comment (keep-alive) or an event of another kind
        if data.strip() == b"[DONE]":
            self.done = True
            return b""
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError):
            return raw
        if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list):
            return raw  # an error event, or something else the client should see
        if self.first and isinstance(payload.get("id"), str) and self.reply.stream_id is None:
            self.reply.stream_id = payload["id"]
        self._last = payload
        choices = payload["choices"]
        if not choices:
            if isinstance(payload.get("usage"), dict):  # the usage event: held to the end
                self.reply.usages.append(payload["usage"])
                self.reply.usage_event = {**payload, "usage": summed_usage(self.reply.usages)}
                if not self.first and self.reply.stream_id:
                    self.reply.usage_event["id"] = self.reply.stream_id
                return b""
            return raw
        outcome = self._choice(choices[0]) if isinstance(choices[0], dict) else "same"
        if outcome == "drop":
            return b""
        if not self.first and self.reply.stream_id and payload.get("id") != self.reply.stream_id:
            payload["id"] = self.reply.stream_id
            outcome = "changed"
        return event_bytes(payload) if outcome == "changed" else raw

    def _choice(self, choice: dict[str, Any]) -> str:
        """Rewrite choice 0 for the client: "same", "changed", or "drop" when nothing is
        left of it to relay."""
        changed = removed = False
        delta = choice.get("delta")
        if isinstance(delta, dict):
            text = delta.get("content")
            if isinstance(text, str) and text:
                if not self.text and self.reply.content:  # a later round's first text
                    delta["content"] = text = ROUND_SEPARATOR + text
                    changed = True
                self.text += text
                self.reply.content.append(text)
            parts = delta.get("tool_calls")
            if isinstance(parts, list):
                relayed = [out for part in parts for out in self._call_part(part)]
                if relayed != parts:
                    changed = removed = True
                    if relayed:
                        delta["tool_calls"] = relayed
                    else:
                        del delta["tool_calls"]
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and not self._finished:
            flushed = self._resolve()
            if flushed:
                if isinstance(delta, dict):
                    delta["tool_calls"] = [*(delta.get("tool_calls") or []), *flushed]
                else:
                    choice["delta"] = {"tool_calls": flushed}
                changed = True
            self._decide()
            self._finish_calls()
            if self.continues:
                choice["finish_reason"] = None
                changed = removed = True
            elif finish == "tool_calls" and not self._client_calls:
                choice["finish_reason"] = "stop"
                changed = True
            self.reply.finish_reason = choice["finish_reason"]
        if removed and choice.get("finish_reason") is None and not _carries(
                choice.get("delta"), role=self.first):
            return "drop"
        return "changed" if changed else "same"

    def _call_part(self, part: Any) -> list[dict[str, Any]]:
        """What the client gets of one tool-call delta part."""
        if not isinstance(part, dict):
            return [part]
        index = part.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = len(self._calls)
        call = self._calls.setdefault(index, _Call())
        if isinstance(part.get("id"), str) and part["id"] and not call.id:
            call.id = part["id"]
        function = part.get("function")
        if isinstance(function, dict):
            if isinstance(function.get("name"), str):
                call.name += function["name"]
            if isinstance(function.get("arguments"), str):
                call.arguments += function["arguments"]
        if call.owner == "client":
            return [{**part, "index": call.client_index}]
        if call.owner == "pending" and call.name and not SEARCH_MEMORY.startswith(call.name):
            self._to_client(call)
            return [call.as_delta()]
        return []

    def _to_client(self, call: _Call) -> None:
        call.owner = "client"
        call.client_index = self._client_calls
        self._client_calls += 1

    def _resolve(self) -> list[dict[str, Any]]:
        """The round's calls are complete: a pending one is search_memory's if that is its
        whole name, else the client's (returned, to be relayed now)."""
        flushed = []
        for call in self._calls.values():
            if call.owner != "pending":
                continue
            if call.name == SEARCH_MEMORY:
                call.owner = "memory"
            else:
                self._to_client(call)
                flushed.append(call.as_delta())
        return flushed

    def _decide(self) -> None:
        self._finished = True
        memory = any(c.owner == "memory" for c in self._calls.values())
        self.continues = memory and not self._client_calls and self.can_continue

    def _finish_calls(self) -> None:
        if not self.continues:
            theirs = sorted((c for c in self._calls.values() if c.owner == "client"),
                            key=lambda c: c.client_index)
            self.reply.calls = [c.as_call(f"call_{c.client_index}") for c in theirs]

    def _made_up(self, delta: dict[str, Any]) -> dict[str, Any]:
        """A chunk carrying `delta`, shaped like the stream's own."""
        chunk: dict[str, Any] = {key: self._last[key] for key in (
            "id", "object", "created", "model") if key in self._last}
        if self.reply.stream_id:
            chunk["id"] = self.reply.stream_id
        chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
        return chunk


def _carries(delta: Any, *, role: bool) -> bool:
    """Whether a delta still holds something for the client; its `role` counts only when
    asked (the first round's: a later round's role repeats what the client has)."""
    if not isinstance(delta, dict):
        return False
    return any(value not in (None, "", []) for key, value in delta.items()
               if role or key != "role")


def summed_usage(usages: list[dict[str, Any]]) -> dict[str, Any]:
    """Token counts added up key by key (nested details too); other values: the last's."""
    total: dict[str, Any] = {}
    for usage in usages:
        for key, value in usage.items():
            before = total.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and isinstance(
                    before, int) and not isinstance(before, bool):
                total[key] = before + value
            elif isinstance(value, dict) and isinstance(before, dict):
                total[key] = summed_usage([before, value])
            else:
                total[key] = value
    return total


def event_bytes(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"

"""Reassembling the assistant's reply from what the upstream sent, streamed or not.

The stream itself is relayed byte for byte; this module only reads a copy (the tee).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# The blank line that ends an SSE event.
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n")


@dataclass
class AssistantReply:
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None

    def as_text(self) -> str:
        """The reply as memory stores it: the text, plus a line per tool call."""
        parts = [self.content] if self.content else []
        for call in self.tool_calls:
            fn = call.get("function", {})
            parts.append(f"[tool call {fn.get('name', '?')}({fn.get('arguments', '')})]")
        return "\n".join(parts)


def reply_from_json(body: bytes) -> AssistantReply | None:
    """The first choice of a non-streaming chat.completion, or None if it is not one."""
    try:
        payload = json.loads(body)
        message = payload["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    tool_calls = message.get("tool_calls") or []
    return AssistantReply(
        content=content if isinstance(content, str) else "",
        tool_calls=[c for c in tool_calls if isinstance(c, dict)],
        finish_reason=payload["choices"][0].get("finish_reason"),
    )


class StreamTee:
    """Fed the SSE bytes as they pass; accumulates choice 0's text and tool calls."""

    def __init__(self) -> None:
        self._buffer = b""
        self._content: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None

    def feed(self, chunk: bytes) -> None:
        events, self._buffer = complete_events(self._buffer + chunk)
        for event in events:
            self._on_event(event)

    def reply(self) -> AssistantReply:
        if self._buffer.strip():  # a last event without its blank line
            self._on_event(self._buffer)
            self._buffer = b""
        calls = [self._calls[i] for i in sorted(self._calls)]
        return AssistantReply("".join(self._content), calls, self._finish)

    def _on_event(self, event: bytes) -> None:
        data = b"".join(
            line[5:].lstrip() for line in event.splitlines() if line.startswith(b"data:")
        )
        if not data or data == b"[DONE]":
            return
        try:
            payload = json.loads(data)
            choice = payload["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            return
        if not isinstance(choice, dict):
            return
        if isinstance(choice.get("finish_reason"), str):
            self._finish = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        text = delta.get("content")
        if isinstance(text, str):
            self._content.append(text)
        parts = delta.get("tool_calls")
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                self._merge_call(part)

    def _merge_call(self, part: dict[str, Any]) -> None:
        index = part.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = len(self._calls)
        call = self._calls.setdefault(
            index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if isinstance(part.get("id"), str) and part["id"]:
            call["id"] = part["id"]
        fn = part.get("function")
        if not isinstance(fn, dict):
            return
        if isinstance(fn.get("name"), str):
            call["function"]["name"] += fn["name"]
        if isinstance(fn.get("arguments"), str):
            call["function"]["arguments"] += fn["arguments"]


def complete_events(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The complete SSE events `buffer` starts with, each with the blank line that ends it,
    and what is left (the start of an event still arriving). One pass: a fast upstream packs
    hundreds of events into one read, and cutting them off one at a time, searching the rest
    again each time, cost time in the square of that."""
    events: list[bytes] = []
    start = 0
    for end in _EVENT_END.finditer(buffer):
        events.append(buffer[start : end.end()])
        start = end.end()
    return events, buffer[start:]

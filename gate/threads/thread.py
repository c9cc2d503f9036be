"""A request's messages as long-thread compression sees them: the system prompt, the turns
after it, what each message costs in tokens, and where the oldest turns may be cut off
(between turns, never between a tool call and its result)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemoproxy.gate.messages import message_text
from mnemoproxy.gate.tokens.counter import count_tokens

# What a message costs beyond its text (role, separators), as chat formats go.
MESSAGE_TOKENS = 4

# A long thread is sent again with every turn: the counts of its texts are remembered, by
# length and hash (a collision would only misjudge one message's size), the latest kept.
_counted: OrderedDict[tuple[int, int], int] = OrderedDict()
COUNTS_KEPT = 65536
COUNT_DIRECTLY = 64  # characters: shorter texts are counted, not looked up


def text_tokens(text: str) -> int:
    if len(text) < COUNT_DIRECTLY:
        return count_tokens(text)
    key = (len(text), hash(text))
    tokens = _counted.get(key)
    if tokens is None:
        tokens = _counted[key] = count_tokens(text)
        if len(_counted) > COUNTS_KEPT:
            _counted.popitem(last=False)
    else:
        _counted.move_to_end(key)
    return tokens


def message_tokens(message: dict[str, Any]) -> int:
    """What a message costs upstream, as far as text tells: its text, its tool calls."""
    tokens = MESSAGE_TOKENS + text_tokens(message_text(message.get("content")))
    for key in ("tool_calls", "function_call"):
        if message.get(key):
            tokens += text_tokens(json.dumps(message[key], ensure_ascii=False))
    return tokens


def digest(messages: Sequence[dict[str, Any]]) -> str:
    """A digest of messages as JSON values (key order aside): equal for the same messages
    however they were serialised."""
    canonical = json.dumps(list(messages), ensure_ascii=False, sort_keys=True,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Thread:
    """A request's messages as compression sees them."""

    messages: list[dict[str, Any]]
    head: int  # the system prompt: messages[:head]
    tokens: list[int]
    starts: list[int]  # where the turns after the first begin (user messages)
    cuts: list[int]  # where the oldest turns may be cut off: messages[head:cut] go
    after: list[int] = field(default_factory=list)  # tokens of messages[i:]

    @classmethod
    def read(cls, messages: list[dict[str, Any]]) -> Thread:
        head = 0
        while head < len(messages) and messages[head].get("role") in ("system", "developer"):
            head += 1
        starts = [i for i in range(head + 1, len(messages)) if messages[i].get("role") == "user"]
        unsafe = _cuts_parting_calls(messages)
        tokens = [message_tokens(m) for m in messages]
        after = [0] * (len(messages) + 1)
        for i in range(len(messages) - 1, -1, -1):
            after[i] = after[i + 1] + tokens[i]
        return cls(messages, head, tokens, starts, [i for i in starts if i not in unsafe], after)

    @property
    def total(self) -> int:
        return self.after[0]

    def turns_before(self, cut: int) -> int:
        return 1 + sum(1 for start in self.starts if start < cut)


# A thread holding more text than this is read (its messages counted) on a thread, not on
# the event loop. Counts are remembered, but a text seen for the first time is counted in
# full, and a pasted blob of one unbroken piece is slow to count. Shorter threads stay on
# the loop, where a hop to a thread would cost more than their (mostly remembered) counts.
COUNT_OFF_LOOP_CHARS = 20_000


async def read_thread(messages: list[dict[str, Any]]) -> Thread:
    characters = 0
    for message in messages:
        characters += len(message_text(message.get("content")))
        if characters > COUNT_OFF_LOOP_CHARS:
            return await asyncio.to_thread(Thread.read, messages)
    return Thread.read(messages)


def _cuts_parting_calls(messages: Sequence[dict[str, Any]]) -> set[int]:
    """Positions where a cut would leave a tool call before it and its result after it."""
    called: dict[str, int] = {}
    last_function_call: int | None = None
    unsafe: set[int] = set()
    for position, message in enumerate(messages):
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    called[call["id"]] = position
        if message.get("function_call"):
            last_function_call = position
        role = message.get("role")
        origin: int | None = None
        if role == "tool":
            call_id = message.get("tool_call_id")
            origin = called.get(call_id) if isinstance(call_id, str) else None
        elif role == "function":
            origin = last_function_call
        if origin is not None:
            unsafe.update(range(origin + 1, position + 1))
    return unsafe

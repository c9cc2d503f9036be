"""What a chat request's messages say about the conversation: its turns and its session.

A turn is one user message and the assistant reply that follows it; turn `i` is the
conversation's i-th user message (0-based). Numbering by position in the history makes
a retried or replayed request land on the same turn, so recording is idempotent.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mnemoproxy.gate import message_text
from mnemoproxy.proxy.relay.sse import AssistantReply


@dataclass(frozen=True)
class IndexedTurn:
    index: int
    user: str
    assistant: str


@dataclass(frozen=True)
class RequestTurns:
    """A request's messages as turns: the completed ones of its history (for backfill) and
    the one being answered, whose `assistant` holds the steps taken so far (tool calls)
    when the request continues after tool results."""

    history: list[IndexedTurn]
    current: IndexedTurn


def read_conversation(messages: Sequence[dict[str, Any]]) -> RequestTurns:
    history: list[IndexedTurn] = []
    index = -1
    user_text: str | None = None
    replies: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            if user_text is not None:
                history.append(IndexedTurn(index, user_text, "\n".join(replies)))
            index += 1
            user_text = message_text(message.get("content"))
            replies = []
        elif role == "assistant" and user_text is not None:
            # Tool results are not kept: they are not what the user or assistant said.
            calls = message.get("tool_calls")
            step = AssistantReply(
                message_text(message.get("content")),
                [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else [],
            ).as_text()
            if step:
                replies.append(step)
    current = IndexedTurn(max(index, 0), user_text or "", "\n".join(replies))
    return RequestTurns(history, current)


# Requests of one message each, from one agent with one system prompt, are one
# conversation while no more than this passes between them.
QUIET_GAP_SECONDS = 30 * 60


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:20]


def _system_prompt(messages: Sequence[dict[str, Any]]) -> str:
    return next(
        (message_text(m.get("content")) for m in messages if m.get("role") == "system"), ""
    )


def session_fingerprint(agent_id: str, messages: Sequence[dict[str, Any]]) -> str:
    """A stable session key when the client sends no X-Session-Id: the same agent, system
    prompt and opening user message mean the same conversation."""
    return "fp-" + _digest(agent_id, _system_prompt(messages), opening_message(messages))


def user_messages(messages: Sequence[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "user")


def family_of(agent_id: str, messages: Sequence[dict[str, Any]]) -> str:
    """The key prefix that the agent's one-message requests with this request's system
    prompt share."""
    return f"one-{_digest(agent_id, _system_prompt(messages))}-"


def one_message_family(agent_id: str, messages: Sequence[dict[str, Any]]) -> str | None:
    """For a request whose only user message is the one being answered (a client that
    sends one message at a time, with no history), the key prefix that the agent's
    requests of this kind with the same system prompt share; None for any other request."""
    if user_messages(messages) != 1:
        return None
    return family_of(agent_id, messages)


def opening_message(messages: Sequence[dict[str, Any]]) -> str:
    return next(
        (message_text(m.get("content")) for m in messages if m.get("role") == "user"), ""
    )


def new_session_key(family: str) -> str:
    return f"{family}{time.time_ns() // 1000:x}"

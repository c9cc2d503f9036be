"""What a chat request's messages say about the conversation: its turns and its session.

A turn is one user message and the assistant reply that follows it; turn `i` is the
conversation's i-th user message (0-based). Numbering by position in the history makes
a retried or replayed request land on the same turn, so recording is idempotent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mnemoproxy.gate import message_text


@dataclass(frozen=True)
class IndexedTurn:
    index: int
    user: str
    assistant: str


def history_turns(messages: Sequence[dict[str, Any]]) -> tuple[list[IndexedTurn], int, str]:
    """Split a request's messages into the completed turns of its history (for backfill)
    and the current turn: returns (history, current turn index, current user text)."""
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
            text = message_text(message.get("content"))
            if text:
                replies.append(text)
    # Messages after the latest user message (tool results, assistant prefill) belong to
    # the turn being answered, so they are not a completed turn of the history.
    current = user_text if user_text is not None else ""
    return history, max(index, 0), current


def session_fingerprint(agent_id: str, messages: Sequence[dict[str, Any]]) -> str:
    """A stable session key when the client sends no X-Session-Id: the same agent, system
    prompt and opening user message mean the same conversation."""
    system = next(
        (message_text(m.get("content")) for m in messages if m.get("role") == "system"), ""
    )
    first_user = next(
        (message_text(m.get("content")) for m in messages if m.get("role") == "user"), ""
    )
    digest = hashlib.sha256("\x1f".join((agent_id, system, first_user)).encode()).hexdigest()
    return "fp-" + digest[:20]

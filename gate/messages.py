"""Reading OpenAI chat messages: the text of a message, and where the latest user one is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a multimodal list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return ""


def latest_user_index(messages: Sequence[dict[str, Any]]) -> int | None:
    """Position in `messages` of the last user message, or None."""
    for pos in range(len(messages) - 1, -1, -1):
        if messages[pos].get("role") == "user":
            return pos
    return None


def continues_after_tools(messages: Sequence[dict[str, Any]]) -> bool:
    """Whether the request carries tool results for the latest user message: the turn's
    continuation after the model called tools, not a new question."""
    position = latest_user_index(messages)
    start = 0 if position is None else position + 1
    return any(m.get("role") in ("tool", "function") for m in messages[start:])


def thread_before(messages: Sequence[dict[str, Any]], position: int, limit: int) -> str:
    """The text of the conversation's user and assistant messages before `position`, at
    most its last `limit` characters: what the latest message may point back at."""
    said: list[str] = []
    length = 0
    for message in reversed(messages[:position]):
        if length >= limit:
            break
        if message.get("role") in ("user", "assistant"):
            text = message_text(message.get("content"))[-(limit - length):]
            said.append(text)
            length += len(text) + 1
    return "\n".join(reversed(said))

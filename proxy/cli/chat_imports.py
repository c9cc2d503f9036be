"""Chat histories from elsewhere, as conversations memory can ingest.

- ChatGPT's data export (`conversations.json`): a list of conversations, each a tree of
  message nodes (`mapping`); the branch the user last saw is the one ending at
  `current_node`, followed up through the parents. Dates come from `create_time`.
- JSON Lines of `{role, content, timestamp?, conversation_id?}`: one conversation per
  `conversation_id` (all lines one conversation without it), in file order.

Each becomes (conversation id, date, [(user, assistant), ...]): consecutive messages of
one side are joined, a user message without a reply gets an empty one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mnemoproxy.errors import InvalidArgument


@dataclass
class ImportedConversation:
    conversation_id: str
    date: datetime | None
    turns: list[tuple[str, str]]


def chatgpt_conversations(data: Any) -> Iterator[ImportedConversation]:
    if not isinstance(data, list):
        raise InvalidArgument("a ChatGPT export's conversations.json is a list of conversations")
    for number, conversation in enumerate(data):
        if not isinstance(conversation, dict) or not isinstance(conversation.get("mapping"), dict):
            raise InvalidArgument(f"conversation {number} has no message mapping")
        mapping: dict[str, Any] = conversation["mapping"]
        node_id = conversation.get("current_node")
        branch: list[dict[str, Any]] = []
        seen: set[str] = set()
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id] or {}
            if isinstance(node.get("message"), dict):
                branch.append(node["message"])
            node_id = node.get("parent")
        messages = [(m.get("author", {}).get("role"), _chatgpt_text(m), m.get("create_time"))
                    for m in reversed(branch)]
        turns = _paired((role, text) for role, text, _ in messages)
        if turns:
            when = conversation.get("create_time") or next(
                (t for _, _, t in messages if t), None)
            key = str(conversation.get("id") or conversation.get("conversation_id")
                      or f"chatgpt-{number}")
            yield ImportedConversation(key, _date(when), turns)


def jsonl_conversations(lines: Iterable[str]) -> Iterator[ImportedConversation]:
    by_id: dict[str, list[tuple[str, str, Any]]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise InvalidArgument(f"line {number} is not JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("content"), str):
            raise InvalidArgument(f"line {number} needs a role and a text content")
        key = str(record.get("conversation_id") or "imported")
        by_id.setdefault(key, []).append(
            (str(record.get("role")), record["content"], record.get("timestamp")))
    for key, messages in by_id.items():
        turns = _paired((role, text) for role, text, _ in messages)
        if turns:
            when = next((t for _, _, t in messages if t), None)
            yield ImportedConversation(key, _date(when), turns)


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content") or {}
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return ""
    return "\n".join(p for p in parts if isinstance(p, str)).strip()


def _paired(messages: Iterable[tuple[Any, str]]) -> list[tuple[str, str]]:
    """User and assistant messages as turns; other roles (system, tool) left out."""
    turns: list[tuple[str, str]] = []
    user: list[str] = []
    reply: list[str] = []
    for role, text in messages:
        if not text:
            continue
        if role == "user":
            if reply:
                turns.append(("\n".join(user), "\n".join(reply)))
                user, reply = [], []
            user.append(text)
        elif role == "assistant" and (user or turns):
            reply.append(text)
    if user or reply:
        turns.append(("\n".join(user), "\n".join(reply)))
    return turns


def _date(value: Any) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None

"""Chat histories from elsewhere, as conversations memory can ingest, and what a file to
import holds.

- ChatGPT's data export (`conversations.json`, or the .zip it comes in): a list of
  conversations, each a tree of message nodes (`mapping`); the branch the user last saw is
  the one ending at `current_node`, followed up through the parents. Dates come from
  `create_time`, the title from `title`.
- JSON Lines of `{role, content, timestamp?, conversation_id?}`: one conversation per
  `conversation_id` (all lines one conversation without it), in file order.
- The export format (`mnemoproxy export`): JSON Lines of records with a `type`.

Each conversation becomes (conversation id, date, title, [(user, assistant), ...]):
consecutive messages of one side are joined, a user message without a reply gets an empty
one. A conversation without an id of its own is named by a hash of its first turn and
date, so importing it again finds it (and adds only what is new).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemoproxy.errors import InvalidArgument

FORMATS = ("export", "jsonl", "chatgpt")
_DESCRIBED = {"export": "an export of this tool (mnemoproxy export)",
              "jsonl": "JSON Lines of {role, content} messages",
              "chatgpt": "ChatGPT's conversations.json"}
CHATGPT_FILE = "conversations.json"
# Record types of the export format (memory/store/management/portable.py).
_EXPORT_TYPES = frozenset({"agent", "session", "fact", "episode", "entity", "document",
                           "procedure"})


@dataclass
class ImportedConversation:
    conversation_id: str
    date: datetime | None
    turns: list[tuple[str, str]]
    title: str = ""


def read_import(path: Path) -> str:
    """The text of a file to import; ChatGPT's .zip gives its conversations.json."""
    data = path.read_bytes()
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            inside = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == CHATGPT_FILE]
            if not inside:
                raise InvalidArgument(f"{path} is a .zip without a {CHATGPT_FILE}: import "
                                      f"ChatGPT's export, or the {CHATGPT_FILE} inside it")
            data = archive.read(inside[0])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidArgument(f"{path} is not UTF-8 text: import a JSON or JSON Lines "
                              "file") from None


def detect_format(text: str) -> str | None:
    """What the text holds, by its shape: one of FORMATS, or None."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            return None
        first = data[0] if isinstance(data, list) and data else None
        return "chatgpt" if isinstance(first, dict) and "mapping" in first else None
    line = next((line for line in stripped.splitlines() if line.strip()), "")
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    if record.get("type") in _EXPORT_TYPES:
        return "export"
    return "jsonl" if "role" in record and "content" in record else None


def chosen_format(text: str, asked: str | None, name: str) -> str:
    """The format to read `name` as: the one asked for, or the one it holds when none was;
    InvalidArgument saying which to use when the two differ, or when it is neither."""
    found = detect_format(text)
    if asked is None:
        if found is None:
            raise InvalidArgument(
                f"cannot tell what {name} holds: it is not {_DESCRIBED['chatgpt']}, "
                f"{_DESCRIBED['jsonl']} nor {_DESCRIBED['export']}; pass --format "
                f"{'|'.join(FORMATS)} to say which it is", param="format")
        return found
    if found is not None and found != asked:
        raise InvalidArgument(
            f"{name} looks like {_DESCRIBED[found]}, not {_DESCRIBED[asked]}: use --format "
            f"{found} (or leave --format out)", param="format")
    return asked


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
            node = mapping[node_id] if isinstance(mapping[node_id], dict) else {}
            if isinstance(node.get("message"), dict):
                branch.append(node["message"])
            node_id = node.get("parent")
        messages = [(_chatgpt_role(m), _chatgpt_text(m), m.get("create_time"))
                    for m in reversed(branch)]
        turns = _paired((role, text) for role, text, _ in messages)
        if turns:
            date = _date(conversation.get("create_time") or next(
                (t for _, _, t in messages if t), None))
            key = str(conversation.get("id") or conversation.get("conversation_id")
                      or _content_key("chatgpt", turns, date))
            title = conversation.get("title")
            yield ImportedConversation(key, date, turns,
                                       " ".join(title.split()) if isinstance(title, str) else "")


def jsonl_conversations(lines: Iterable[str]) -> Iterator[ImportedConversation]:
    by_id: dict[str, list[tuple[str, str, Any]]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise InvalidArgument(f"line {number} is not JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("content"), str):
            raise InvalidArgument(f"line {number} needs a role and a text content")
        key = str(record.get("conversation_id") or "")
        by_id.setdefault(key, []).append(
            (str(record.get("role")), record["content"], record.get("timestamp")))
    for key, messages in by_id.items():
        turns = _paired((role, text) for role, text, _ in messages)
        if turns:
            date = _date(next((t for _, _, t in messages if t), None))
            yield ImportedConversation(key or _content_key("jsonl", turns, date), date, turns)


def _content_key(source: str, turns: list[tuple[str, str]], date: datetime | None) -> str:
    """The id of a conversation that has none: its first turn and date, hashed. The same
    conversation imported again (grown or not) gets the same one."""
    user, assistant = turns[0]
    seed = json.dumps([user, assistant, date.isoformat() if date else None])
    return f"{source}-{hashlib.sha256(seed.encode()).hexdigest()[:16]}"


def _chatgpt_role(message: dict[str, Any]) -> Any:
    author = message.get("author")
    return author.get("role") if isinstance(author, dict) else None


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
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):  # no date a calendar holds
            return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None

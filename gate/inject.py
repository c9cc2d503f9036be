"""Putting the memory block into the request's messages, leaving everything else as sent.

user_prefix (default): the block goes before the text of the latest user message, so
the system prompt stays byte-stable and the upstream's prompt cache keeps working.
system: the block is appended to the first system message (or becomes one).
Tool results and assistant prefill are never touched; the input list is not mutated.
"""

from __future__ import annotations

import copy
from typing import Any

from mnemoproxy.gate.messages import latest_user_index


def inject(messages: list[dict[str, Any]], block: str, mode: str) -> list[dict[str, Any]]:
    out = list(messages)
    if mode == "system":
        return _into_system(out, block)
    position = latest_user_index(out)
    if position is None:
        return _into_system(out, block)
    message = copy.copy(out[position])
    content = message.get("content")
    if isinstance(content, list):
        message["content"] = [{"type": "text", "text": block}, *content]
    elif isinstance(content, str):
        message["content"] = f"{block}\n\n{content}"
    else:
        message["content"] = block
    out[position] = message
    return out


def _into_system(messages: list[dict[str, Any]], block: str) -> list[dict[str, Any]]:
    for position, message in enumerate(messages):
        if message.get("role") not in ("system", "developer"):
            continue
        content = message.get("content")
        updated = copy.copy(message)
        if isinstance(content, str):
            updated["content"] = f"{content}\n\n{block}"
        elif isinstance(content, list):
            updated["content"] = [*content, {"type": "text", "text": block}]
        else:
            updated["content"] = block
        messages[position] = updated
        return messages
    return [{"role": "system", "content": block}, *messages]

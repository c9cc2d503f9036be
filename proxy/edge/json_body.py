"""JSON request bodies, decoded one way on every route: nested at most MAX_JSON_DEPTH deep.

A body nested a few thousand levels deep makes a decoder (json, msgspec) raise
RecursionError, and one nested just under the interpreter's limit decodes and then breaks
whatever walks it later (an encoder, the read path): both were 500s. The depth is judged
on the raw bytes before anything decodes them, the same check for the chat route, the
fast relay, the typed routes (Litestar decodes through `JsonRequest.json`), document
uploads and imports. Requests need a few levels (a tool's JSON schema a dozen or so).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from litestar import Request

from mnemoproxy.errors import InvalidArgument

MAX_JSON_DEPTH = 100
# What is left of a body once its strings are gone: its brackets, openers as 1 and
# closers as 255 (-1 as a signed byte), everything else deleted.
_LEVELS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def too_deep(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text `raw` nests arrays and objects more than `limit` deep: the
    highest running count of its brackets (outside strings), +1 per opener, -1 per closer,
    summed in C. Most bodies hold fewer brackets than the limit in all and stop at once."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    steps = _outside_strings(raw).translate(_LEVELS, _NOT_BRACKETS)
    levels = np.cumsum(np.frombuffer(steps, dtype=np.int8), dtype=np.int32)
    return bool(len(levels)) and int(levels.max()) > limit


def _outside_strings(raw: bytes) -> bytes:
    """The JSON text with its strings' contents taken out (their brackets are text, not
    structure): with escaped backslashes and escaped quotes gone, every quote left opens
    or closes a string, so the text outside strings is every other piece between quotes."""
    plain = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(plain.split(b'"')[::2])


def require_shallow(raw: bytes, what: str = "the request body") -> None:
    if too_deep(raw):
        raise InvalidArgument(
            f"{what} nests JSON more than {MAX_JSON_DEPTH} levels deep; send a flatter "
            "document", param="body")


def decode(raw: bytes, what: str = "the request body") -> Any:
    """`raw` as JSON, or InvalidArgument saying what is wrong with it."""
    require_shallow(raw, what)
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{what} is not valid JSON ({exc})", param="body") from None


class JsonRequest(Request[Any, Any, Any]):
    """Litestar's request, whose JSON body (every typed `data` parameter) is judged for its
    depth before it is decoded."""

    async def json(self) -> Any:
        require_shallow(await self.body())
        return await super().json()

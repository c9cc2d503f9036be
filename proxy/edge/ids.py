"""Agent and session ids as the memory layer keys them, whichever door they come through.

A header value reaches the server as bytes that the ASGI server decodes as latin-1, while a
JSON body is UTF-8: "josé" in X-Agent-Id would otherwise be another agent than "josé" in
/memory/ingest. Both are read as UTF-8 text and put in Unicode's composed form (NFC), so
the two spellings a keyboard can produce of "é" are one agent too.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from litestar import Request

from mnemoproxy.errors import InvalidArgument

MAX_ID_CHARS = 256


def normalised_id(value: str) -> str:
    return unicodedata.normalize("NFC", value)


def header_id(request: Request[Any, Any, Any], name: str) -> str:
    """The id a header carries ("" when absent), as UTF-8 text in NFC."""
    # Decoded before it is stripped: read as latin-1, the last byte of "à" (C3 A0) or "ą"
    # (C4 85) is a blank, and stripping it first broke the UTF-8 ("voilà" got a 400).
    raw = request.headers.get(name, "")
    try:
        value = raw.encode("latin-1").decode("utf-8").strip()
    except UnicodeError:
        raise InvalidArgument(f"{name} is not valid UTF-8 text", param=name) from None
    if len(value) > MAX_ID_CHARS:
        raise InvalidArgument(f"{name} is longer than {MAX_ID_CHARS} characters", param=name)
    return normalised_id(value)

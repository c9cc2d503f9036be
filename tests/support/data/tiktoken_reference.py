"""tiktoken's own o200k_base, offline: the reference our token counter is checked against
(tests/gate/test_gate_tokens.py, and every text at hand by
`python -m tests.tools.check_token_counts`)."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable
from unittest import mock

import tiktoken
import tiktoken.load

from mnemoproxy.gate.tokens.o200k import ranks_path

# Contexts in which a character's class decides the pieces: after a letter, before a
# contraction, between digits, after a space, before a line break.
CODE_POINT_CONTEXTS = "a{0}b A{0}'S 1{0}2 x {0}{0}a'{0} {0}\n"


def o200k() -> tiktoken.Encoding:
    """tiktoken's encoding, its pattern and merges. The rank file it would download is
    served from the package our counter reads it from, and tiktoken checks its sha256
    against the hash it publishes before using it."""
    ranks_file = gzip.decompress(ranks_path().read_bytes())
    with (
        mock.patch.object(tiktoken.load, "read_file", lambda blobpath: ranks_file),
        mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": ""}),  # no cache: this file
    ):
        return tiktoken.get_encoding("o200k_base")


def code_point_texts(points: Iterable[int], per_text: int = 64) -> list[str]:
    """Texts holding each code point in CODE_POINT_CONTEXTS, `per_text` points a text."""
    chars = [chr(point) for point in points if not 0xD800 <= point <= 0xDFFF]
    return [
        "".join(CODE_POINT_CONTEXTS.format(char) for char in chars[at:at + per_text])
        for at in range(0, len(chars), per_text)
    ]

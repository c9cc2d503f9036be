"""Words for comparing texts loosely: lower-cased, stop-words out, crudely stemmed.

Enough to tell whether a distilled fact ("User lives in Lisbon") restates what the user
said ("I live in Lisbon now") and which sentences of a message share a question's words;
not a linguistic analysis.
"""

from __future__ import annotations

import re
from functools import lru_cache

from mnemoproxy.memory.search.query_terms import STOP_WORDS

WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A crude stem of a lower-cased word: "careers" -> "career", "visited" -> "visit"."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """The stems of `text`'s words that are not stop-words."""
    return {stem(w) for w in WORD.findall(text.lower()) if w not in STOP_WORDS}

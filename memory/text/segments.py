"""Text in scripts written without spaces between words (Chinese, Japanese, Thai; Korean
spaces its phrases but glues particles on), cut so that full-text search can match it.

The index holds such text one character a token (`spaced`); a query looks for each pair
of neighbouring characters as a two-token phrase (`unspaced_terms`): "旺财" finds
"我家的狗叫旺财" without a dictionary of words, and a longer name matches pair by pair.
Both stores do the same: SQLite through a function its connections register, PostgreSQL
through the same expression in SQL (`SPACED_SQL`).
"""

from __future__ import annotations

import re
from itertools import pairwise

# Han (with its extension A and compatibility forms), kana, Hangul syllables, Thai.
UNSPACED_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0e7f"
_UNSPACED = re.compile(f"[{UNSPACED_CLASS}]")
_RUN = re.compile(f"[{UNSPACED_CLASS}]+")
# The name SQLite's connections know the cut by.
SQL_FUNCTION = "mnemo_spaced"


def spaced(text: str | None) -> str | None:
    """`text` with a space on each side of every character of an unspaced script."""
    if not text or _UNSPACED.search(text) is None:
        return text
    return _UNSPACED.sub(lambda match: f" {match.group()} ", text)


def has_unspaced(text: str) -> bool:
    return _UNSPACED.search(text) is not None


def unspaced_terms(word: str) -> list[str]:
    """The search terms of a word holding unspaced script: each pair of neighbouring
    characters of such a run as a phrase ("狗 叫"), a lone character alone, and the
    word's other parts as they are ("iPhone15" stays one term beside "手机")."""
    terms: list[str] = []
    position = 0
    for run in _RUN.finditer(word):
        if run.start() > position:
            terms.append(word[position : run.start()])
        chars = run.group()
        terms += [f"{a} {b}" for a, b in pairwise(chars)] or [chars]
        position = run.end()
    if position < len(word):
        terms.append(word[position:])
    return terms

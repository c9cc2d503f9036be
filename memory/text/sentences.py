"""Sentences by their ends, read in one pass: what excerpts and document chunks cut at.

A sentence ends after a run of . ! or ? (with the closing quotes or brackets that follow
it) when whitespace or the text's end comes next, and at every line break. The end is
matched from the first mark of a run only (a lookbehind) and without backtracking
(possessive), so a run of a hundred thousand dots is read once; a pattern that matched
"everything up to an end" instead would scan a long unpunctuated text again from every
position it could start at ("a" * n + ".x" took minutes). What lies between two ends is a
sentence, so no text is ever left out of one.
"""

from __future__ import annotations

import re

SENTENCE_END = re.compile(r"(?<![.!?])[.!?]++[\"'”’)\]]*+(?=\s|\Z)|\n")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text` holding more than whitespace, in order; a
    sentence's span includes its end mark (and the line break that ended it)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for end in SENTENCE_END.finditer(text):
        if not text[start:end.end()].isspace() and end.end() > start:
            spans.append((start, end.end()))
        start = end.end()
    if start < len(text) and not text[start:].isspace():
        spans.append((start, len(text)))
    return spans


def sentences(text: str) -> list[str]:
    """The sentences of `text`, each stripped, blank ones left out."""
    return [text[start:end].strip() for start, end in sentence_spans(text)]

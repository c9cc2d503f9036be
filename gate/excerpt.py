"""Excerpts, not whole messages: the sentences of a long message that answer the question.

A chat message averages a few hundred tokens, most of them beside the point: whole, three
or four fill a memory block. A long message contributes the sentences that share the most
(and the rarest) words with the question, with a neighbouring sentence when room allows,
in their original order and marked "…" where text was left out; short messages stay
whole. Rarity is judged within the candidates at hand, so a name every candidate mentions
("Caroline: ...") weighs little and a word only one of them holds weighs most.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from mnemoproxy.memory import CHATTER, STOP_WORDS, WORD, sentence_spans, stem

ELLIPSIS = "…"
CHARS_PER_TOKEN = 3.8
# Words that tell no sentence apart from another.
_UNTELLING = STOP_WORDS | CHATTER


@lru_cache(maxsize=65_536)
def term(word: str) -> str | None:
    """A lower-cased word as an excerpt compares it: its stem, or None for a word too common
    to tell sentences apart."""
    return None if word in _UNTELLING else stem(word)


def terms(text: str) -> set[str]:
    """The stems of `text`'s content words."""
    return {s for w in WORD.findall(text.lower()) if (s := term(w)) is not None}


@dataclass(frozen=True)
class Query:
    """The question's terms, weighted by how rare they are among the candidate texts."""

    weights: dict[str, float]
    # Words that start with one of the terms: only those are stemmed and looked up, which
    # spares stemming every word of every candidate.
    pattern: re.Pattern[str] | None

    @classmethod
    def of(cls, question: str, candidates: Sequence[str]) -> Query:
        wanted = terms(question)
        if not wanted:
            return cls({}, None)
        pattern = re.compile(
            r"\b(?:" + "|".join(re.escape(t) for t in sorted(wanted)) + r")\w*", re.IGNORECASE
        )
        query = cls(dict.fromkeys(wanted, 1.0), pattern)
        holding: Counter[str] = Counter()
        for text in candidates:
            holding.update(query.terms_in(text))
        pool = max(1, len(candidates))
        weights = {t: math.log(1.0 + pool / (1.0 + holding[t])) for t in wanted}
        return cls(weights, pattern)

    def terms_in(self, text: str) -> set[str]:
        return {term for _, term in self.occurrences(text)}

    def score(self, text: str) -> float:
        return sum(self.weights[t] for t in self.terms_in(text))

    def sentence_scores(self, text: str, spans: Sequence[tuple[int, int]]) -> list[float]:
        """The score of each sentence (its (start, end) in `text`), from one pass over the
        text."""
        scores = [0.0] * len(spans)
        found: dict[int, set[str]] = {}  # only the sentences holding a term: few of many
        starts = [start for start, _ in spans]
        for at, term in self.occurrences(text):
            found.setdefault(bisect_right(starts, at) - 1, set()).add(term)
        for sentence, terms in found.items():
            scores[sentence] = sum(self.weights[t] for t in terms)
        return scores

    def occurrences(self, text: str) -> list[tuple[int, str]]:
        """(start, term) of each word of `text` whose stem is one of the terms, in order."""
        if self.pattern is None:
            return []
        if len(text) >= FIND_FROM:
            found = _found_by_find(text, self.weights)
            if found is not None:
                return found
        return [(match.start(), word_term) for match in self.pattern.finditer(text)
                if (word_term := term(match.group().lower())) in self.weights]


# From this length on, a text's words holding a term are found by searching its
# lower-cased copy for each term (str.find, in C) rather than by the pattern, which tries
# its alternatives at every position: for a 100k-character message 2-3 ms a read become
# ~0.2, and a stored message that long is a candidate again on every read that finds it.
FIND_FROM = 2000
_WORD_RUN = re.compile(r"\w*")
# str.lower() writes a final sigma as ς, re's case-insensitive match takes σ, ς and Σ alike.
_SIGMAS = str.maketrans("ς", "σ")


def _is_word(char: str) -> bool:
    """re's \\w for one character of a str pattern."""
    return char.isalnum() or char == "_"


def _found_by_find(text: str, weights: dict[str, float]) -> list[tuple[int, str]] | None:
    """What the term pattern `\\b(?:term|...)\\w*` (case-insensitive) finds in `text`, kept
    where the stem of the word found is a term: (start, term), in order. None when `text`
    lower-cases to another length (a dotted capital I), where positions would not match.

    The pattern matches a whole word (a run of \\w) that starts with a term, and such a word
    counts when stem(word.lower()) is a term, a prefix of word.lower(): so the words to
    check are those at whose start a term occurs in the lower-cased text (σ and ς taken
    alike), and each counts by the same test."""
    lowered = text.lower()
    if len(lowered) != len(text):
        return None
    lowered = lowered.translate(_SIGMAS)
    checked: set[int] = set()
    found: list[tuple[int, str]] = []
    for wanted in weights:
        sought = wanted.translate(_SIGMAS)
        at = lowered.find(sought)
        while at != -1:
            if at not in checked and _is_word(text[at]) and (
                at == 0 or not _is_word(text[at - 1])
            ):
                checked.add(at)
                end = _WORD_RUN.match(text, at).end()  # type: ignore[union-attr]
                if (stemmed := term(text[at:end].lower())) in weights:
                    found.append((at, stemmed))
            at = lowered.find(sought, at + 1)
    found.sort()
    return found


def excerpt(text: str, query: Query, max_tokens: int) -> str:
    """`text` whole when it fits in `max_tokens`; else its best sentences for `query` (the
    best one, then its neighbours while they fit), "…" marking what was left out. A text
    none of whose sentences shares a word with the question keeps its opening.

    Sizes are judged by characters (CHARS_PER_TOKEN, a little under English's average):
    the planner counts the real tokens of what it keeps, and this runs on every candidate
    considered for a block."""
    flat = " ".join(text.split())
    room = int(max_tokens * CHARS_PER_TOKEN)
    if len(flat) <= room:
        return flat
    spans = sentence_spans(text)
    if not spans:
        return _cut(flat, room)
    scores = query.sentence_scores(text, spans)
    parts = [text[start:end].strip() for start, end in spans]
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    if scores[best] <= 0:
        best = 0
    chosen = {best}
    used = len(parts[best])
    if used > room:
        return _cut(parts[best], room, lead=best > 0)
    # Grow around the best sentence: the better-scoring neighbour first, then the other.
    low, high = best - 1, best + 1
    while low >= 0 or high < len(parts):
        order = sorted(
            (i for i in (low, high) if 0 <= i < len(parts)), key=lambda i: -scores[i]
        )
        grown = False
        for i in order:
            cost = len(parts[i]) + 1
            if used + cost <= room:
                chosen.add(i)
                used += cost
                grown = True
                if i == low:
                    low -= 1
                else:
                    high += 1
                break
        if not grown:
            break
    return _join(parts, sorted(chosen))


def _join(parts: Sequence[str], chosen: Sequence[int]) -> str:
    out: list[str] = []
    if chosen[0] > 0:
        out.append(ELLIPSIS)
    previous = chosen[0] - 1
    for i in chosen:
        if i != previous + 1:
            out.append(ELLIPSIS)
        out.append(" ".join(parts[i].split()))
        previous = i
    if chosen[-1] < len(parts) - 1:
        out.append(ELLIPSIS)
    return " ".join(out)


def _cut(text: str, room: int, *, lead: bool = False) -> str:
    """The opening of one over-long sentence, by whole words, within `room` characters."""
    head = " ".join(text[:room].split()[:-1]) or text[:room]
    return f"{ELLIPSIS} {head} {ELLIPSIS}" if lead else f"{head} {ELLIPSIS}"

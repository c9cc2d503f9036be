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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mnemoproxy.gate.tokens import count_tokens

ELLIPSIS = "…"
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# A break after ., ! or ? followed by a space, and at every line break.
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+(?=\s|$)|\n|$)")
# Words too common to say what a sentence is about.
_STOP = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being both but by can could did do does doing during each few for from had has have
    having he her here hers him his how i if in into is it its just me more most my no nor
    not now of on once only or other our out over own same she should so some such than
    that the their them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours s t don ll ve re d m get got like really""".split()  # noqa: SIM905
)
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


def stem(word: str) -> str:
    """A crude stem, enough to meet "careers" with "career" and "visited" with "visit"."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """The stems of `text`'s content words, in order, repeats kept."""
    return [stem(w) for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP]


@dataclass(frozen=True)
class Query:
    """The question's terms, weighted by how rare they are among the candidate texts."""

    weights: dict[str, float]

    @classmethod
    def of(cls, question: str, candidates: Sequence[str]) -> Query:
        wanted = set(terms(question))
        holding: Counter[str] = Counter()
        for text in candidates:
            holding.update(wanted & set(terms(text)))
        pool = max(1, len(candidates))
        return cls({t: math.log(1.0 + pool / (1.0 + holding[t])) for t in wanted})

    def score(self, sentence_terms: Sequence[str]) -> float:
        return sum(self.weights.get(t, 0.0) for t in set(sentence_terms))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def excerpt(text: str, query: Query, max_tokens: int) -> str:
    """`text` whole when it fits in `max_tokens`; else its best sentences for `query` (the
    best one, then its neighbours while they fit), "…" marking what was left out. A text
    none of whose sentences shares a word with the question keeps its opening."""
    flat = " ".join(text.split())
    if count_tokens(flat) <= max_tokens:
        return flat
    parts = sentences(text)
    if not parts:
        return _cut(flat, max_tokens)
    scores = [query.score(terms(part)) for part in parts]
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    if scores[best] <= 0:
        best = 0
    chosen = {best}
    used = count_tokens(parts[best])
    if used > max_tokens:
        return _cut(parts[best], max_tokens, lead=best > 0)
    # Grow around the best sentence: the better-scoring neighbour first, then the other.
    low, high = best - 1, best + 1
    while low >= 0 or high < len(parts):
        order = sorted(
            (i for i in (low, high) if 0 <= i < len(parts)), key=lambda i: -scores[i]
        )
        grown = False
        for i in order:
            cost = count_tokens(parts[i]) + 1
            if used + cost <= max_tokens:
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


def _cut(text: str, max_tokens: int, *, lead: bool = False) -> str:
    """The opening of one over-long sentence, by words, within `max_tokens`."""
    words = text.split()
    low, high = 1, len(words)
    while low < high:  # the most words that fit, by bisection on the token count
        middle = (low + high + 1) // 2
        if count_tokens(" ".join(words[:middle])) + 2 <= max_tokens:
            low = middle
        else:
            high = middle - 1
    head = " ".join(words[:low])
    return f"{ELLIPSIS} {head} {ELLIPSIS}" if lead else f"{head} {ELLIPSIS}"

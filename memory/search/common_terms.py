"""Words that say little about an agent's memory because most of it says them.

In one agent's memory a few words occur nearly everywhere: the name of the person the
user talks with, the user's own name, the subject of a whole history. A question that
carries one ("When did Melanie go to the park?") then matches every message by that word
alone, lexically and in its embedding, and the message about the park drowns among them.
BM25's inverse document frequency is meant to discount such words, but the full-text
index's statistics span every agent of the store; these are the agent's own, measured on
a sample of its latest messages and kept until its memory grows.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mnemoproxy.memory.text.words import STOP_WORDS

_WORD = re.compile(r"\w+")

# A word in at least this share of an agent's messages is common to its memory.
COMMON_SHARE = 0.2
SAMPLE_MESSAGES = 500
# Too few messages to tell a common word from a repeated one.
MIN_SAMPLE = 30
REMEASURE_GROWTH = 0.1
CACHED_AGENTS = 4096


class MessageSource(Protocol):
    async def latest_messages(self, agent_id: str, limit: int) -> list[str]: ...


@dataclass
class _Measured:
    items: int
    common: frozenset[str]


class CommonTerms:
    def __init__(self, source: MessageSource) -> None:
        self._source = source
        self._measured: OrderedDict[str, _Measured] = OrderedDict()

    async def of(self, agent_id: str, items: int) -> frozenset[str]:
        """The agent's common words; `items` (its memory's size) decides when to measure
        again."""
        measured = self._measured.get(agent_id)
        if measured is not None and items <= measured.items * (1 + REMEASURE_GROWTH):
            self._measured.move_to_end(agent_id)
            return measured.common
        sample = await self._source.latest_messages(agent_id, SAMPLE_MESSAGES)
        common = common_words(sample)
        self._measured[agent_id] = _Measured(items, common)
        if len(self._measured) > CACHED_AGENTS:
            self._measured.popitem(last=False)
        return common


    def forget(self, agent_id: str) -> None:
        self._measured.pop(agent_id, None)


def common_words(messages: Sequence[str]) -> frozenset[str]:
    if len(messages) < MIN_SAMPLE:
        return frozenset()
    holding: Counter[str] = Counter()
    for text in messages:
        holding.update(set(_WORD.findall(text.lower())))
    for word in STOP_WORDS & holding.keys():
        del holding[word]
    least = COMMON_SHARE * len(messages)
    return frozenset(word for word, count in holding.items() if count >= least)


def names_among(text: str, words: frozenset[str]) -> frozenset[str]:
    """The words of `words` that `text` writes as a name (capitalised, as written there):
    `without` takes them out of the search, but the question is still about that person."""
    return frozenset(
        word for word in _WORD.findall(text) if word[0].isupper() and word.lower() in words
    )


def without(text: str, words: frozenset[str]) -> str:
    """`text` with `words` (and their possessive 's) taken out; `text` itself when that
    would leave no word."""
    if not words:
        return text
    pattern = re.compile(
        r"\b(?:" + "|".join(re.escape(w) for w in sorted(words)) + r")(?:['’]s)?\b",
        re.IGNORECASE,
    )
    stripped = " ".join(pattern.sub(" ", text).split())
    return stripped if re.search(r"\w", stripped) else text

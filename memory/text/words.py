"""Words for comparing texts loosely: lower-cased, stop-words out, crudely stemmed.

Enough to tell whether a distilled fact ("User lives in Lisbon") restates what the user
said ("I live in Lisbon now") and which sentences of a message share a question's words;
not a linguistic analysis.
"""

from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "es", "s", "ly")

# Function words that match nearly every message: they tell no two texts apart, and in a
# full-text query they cost the most.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don did didn doesn isn wasn ll ve re d m
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
# Words chat says everywhere ("I really like it", "got it"): no help in telling which
# sentence of a message answers a question, though a search may still want them.
CHATTER = frozenset({"also", "get", "got", "like", "really"})


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

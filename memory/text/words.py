"""Words for comparing texts loosely: lower-cased, stop-words out, crudely stemmed.

Enough to tell whether a distilled fact ("User lives in Lisbon") restates what the user
said ("I live in Lisbon now") and which sentences of a message share a question's words;
not a linguistic analysis.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any

from mnemoproxy.memory.text.segments import spaced

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


# English verbs whose past forms share no root with the present ("took" and "take").
IRREGULAR = {
    past: base
    for base, forms in (
        ("be", "was were been"), ("begin", "began begun"), ("break", "broke broken"),
        ("bring", "brought"), ("build", "built"), ("buy", "bought"), ("catch", "caught"),
        ("choose", "chose chosen"), ("come", "came"), ("do", "did done"), ("draw", "drew drawn"),
        ("drink", "drank drunk"), ("drive", "drove driven"), ("eat", "ate eaten"),
        ("fall", "fell fallen"), ("feel", "felt"), ("find", "found"), ("fly", "flew flown"),
        ("forget", "forgot forgotten"), ("get", "got gotten"), ("give", "gave given"),
        ("go", "went gone"), ("grow", "grew grown"), ("have", "had"), ("hear", "heard"),
        ("hold", "held"), ("keep", "kept"), ("know", "knew known"), ("leave", "left"),
        ("lose", "lost"), ("make", "made"), ("meet", "met"), ("pay", "paid"),
        ("ride", "rode ridden"), ("run", "ran"), ("say", "said"), ("see", "saw seen"),
        ("sell", "sold"), ("send", "sent"), ("sing", "sang sung"), ("speak", "spoke spoken"),
        ("spend", "spent"), ("swim", "swam swum"), ("take", "took taken"), ("teach", "taught"),
        ("tell", "told"), ("think", "thought"), ("throw", "threw thrown"),
        ("wear", "wore worn"), ("win", "won"), ("write", "wrote written"),
    )
    for past in forms.split()
}
# Counts written as words, for texts that say "three" where others say "3".
_COUNTS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
NUMBER_WORDS = {word: n for n, word in enumerate(_COUNTS.split())} | {
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90, "hundred": 100}


# Snowball's stemmer for each language detect_language names (memory/text/language.py).
SNOWBALL = {"en": "english", "de": "german", "es": "spanish", "fr": "french",
            "pt": "portuguese", "it": "italian", "nl": "dutch", "ru": "russian",
            "el": "greek", "ar": "arabic", "hi": "hindi"}
_STEMMERS: dict[str, Any] = {}
_STEMMERS_LOCK = threading.Lock()  # a Snowball stemmer keeps its state between calls


@lru_cache(maxsize=65_536)
def root(word: str, language: str = "en") -> str:
    """A lower-cased word's root by Snowball's stemmer of its language ("importance" ->
    "import", "recommendations" -> "recommend"): finer than `stem`, for comparing
    paraphrases. A word of a language without a stemmer is its own root."""
    if language == "en" and word in IRREGULAR:
        return IRREGULAR[word]
    algorithm = SNOWBALL.get(language)
    if algorithm is None:
        return word
    with _STEMMERS_LOCK:
        if algorithm not in _STEMMERS:
            import snowballstemmer  # deferred: only grounding compares roots

            _STEMMERS[algorithm] = snowballstemmer.stemmer(algorithm)
        return str(_STEMMERS[algorithm].stemWord(word))


def root_words(text: str, language: str = "en") -> set[str]:
    """The roots of `text`'s words that are not stop-words, counts as digits ("three dogs"
    and "3 dogs" compare equal); in scripts written without spaces, each character."""
    words = WORD.findall((spaced(text) or "").lower())
    return {str(NUMBER_WORDS[w]) if w in NUMBER_WORDS else root(w, language)
            for w in words if w not in STOP_WORDS}


def content_words(text: str) -> set[str]:
    """The stems of `text`'s words that are not stop-words."""
    return {stem(w) for w in WORD.findall(text.lower()) if w not in STOP_WORDS}

"""Which language a text is written in: a cheap guess, good enough to pick word lists.

Scripts decide first (Han without kana is Chinese, kana is Japanese, Hangul Korean,
Cyrillic Russian, Greek, Arabic, Hebrew, Thai, Devanagari); text in the Latin script is
scored by how many of its words are among each language's most frequent ones (wordfreq's
lists, from its registry package). English when nothing tells.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

from mnemoproxy.memory.text.rarity import zipf

LATIN_LANGUAGES = ("en", "de", "es", "fr", "pt", "it", "nl")
# How many of each language's most frequent words a text's words are compared with.
TOP_WORDS = 120
# A text is read this far: the language shows in its first sentences.
MAX_CHARS = 2000
# Words looked up one by one in each language's list, where no frequent word told.
KNOWN_WORDS = 40
# One frequent word is no sign of a language when English knows the text's words as well.
SCANT_FREQUENT = 1
_WORD = re.compile(r"[^\W\d_]+")
_SCRIPTS = (
    ("ja", re.compile(r"[\u3040-\u30ff]")),  # kana: Japanese, whatever Han it also holds
    ("ko", re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")),
    ("zh", re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]")),
    ("ru", re.compile(r"[\u0400-\u04ff]")),
    ("el", re.compile(r"[\u0370-\u03ff]")),
    ("ar", re.compile(r"[\u0600-\u06ff]")),
    ("he", re.compile(r"[\u0590-\u05ff]")),
    ("th", re.compile(r"[\u0e00-\u0e7f]")),
    ("hi", re.compile(r"[\u0900-\u097f]")),
)
# Where a script shows in at least this share of a text's letters, it is that script's.
SCRIPT_SHARE = 0.2


@cache
def _frequent(language: str) -> frozenset[str]:
    from wordfreq import top_n_list  # deferred: its lists load on first use

    return frozenset(top_n_list(language, TOP_WORDS))


def script_language(word: str) -> str | None:
    """The language a word's script tells (None for the Latin script: many languages)."""
    for language, script in _SCRIPTS:
        if script.search(word):
            return language
    return None


# Scripts a language writes besides its own: Japanese writes Han characters.
ALSO_WRITES = {"ja": frozenset({"zh"})}


def word_languages(word: str, text_language: str, latin: str) -> tuple[str, ...]:
    """The languages a word of a text may be read in: its script's, and the text's own
    where that language writes the script too ("一番" in a Japanese question);
    `latin` (the text's Latin-script language) for a word in the Latin script."""
    language = script_language(word)
    if language is None:
        return (latin,)
    if language in ALSO_WRITES.get(text_language, ()):
        return (text_language, language)
    return (language,)


def detect_language(text: str) -> str:
    """An ISO 639-1 code: the script's language, or the Latin-script language most of whose
    frequent words the text uses ("en" when none stands out)."""
    sample = text[:MAX_CHARS]
    letters = sum(1 for char in sample if char.isalpha())
    if not letters:
        return "en"
    for language, script in _SCRIPTS:
        if len(script.findall(sample)) >= SCRIPT_SHARE * letters:
            return language
    return latin_language(sample)


def latin_language(text: str) -> str:
    """The Latin-script language whose frequent words `text` uses most (its words in other
    scripts aside); "en" when none stands out."""
    sample = text[:MAX_CHARS]
    # A single letter tells no language: the pieces of "when's", "j'ai", "a", "y" and "e"
    # are frequent words of several.
    words = Counter(word.lower() for word in _WORD.findall(sample)
                    if len(word) > 1 and script_language(word) is None)
    scores = {
        language: sum(count for word, count in words.items() if word in _frequent(language))
        for language in LATIN_LANGUAGES
    }
    top = max(scores.values())
    if top <= SCANT_FREQUENT:
        # A short text may use none of them, or one that another language also writes
        # ("van tyre pressures"): then the language that knows more of its words than
        # English does ("Woher kommen Käsespätzle?"), English on a tie (a name or a
        # loanword is known everywhere).
        sampled = list(words.items())[:KNOWN_WORDS]
        known = {language: scores[language] + sum(
                     count for word, count in sampled if zipf(word, language))
                 for language in LATIN_LANGUAGES}
        best = max(LATIN_LANGUAGES, key=lambda language: (known[language], language == "en"))
        return best if known[best] > known["en"] else "en"
    tied = [language for language in LATIN_LANGUAGES if scores[language] == top]
    if len(tied) > 1 and "en" not in tied:
        # Neighbouring languages share their most frequent words ("que", "de", "entre"):
        # then the text's other words, by how common each is in each language, decide.
        return max(tied, key=lambda language: sum(
            count * (zipf(word, language) or 0.0) for word, count in words.items()))
    best = max(scores, key=lambda language: (scores[language], language == "en"))
    return best if scores[best] > scores["en"] else "en"

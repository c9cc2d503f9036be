"""How common a word is in its language: wordfreq's Zipf scale (log10 of a word's
frequency per billion words: "the" 7.7, "stress" 4.7, "plumber" 3.4, "kibble" 2.5).

A word rare in the language that the agent's memory holds is a name of its own: a pet, a
project, a dish only this user spoke of. wordfreq's "small" lists (about 30k words a
language, words from about Zipf 3 up) are read from the installed package on first use;
a word not in them counts as rare.
"""

from __future__ import annotations

import math
import threading
from functools import lru_cache

# Languages whose words are not separated by spaces: a search term there is a pair of
# neighbouring characters ("旺 财"), looked up as the word it would be ("旺财"); a pair
# that is no word of the language cannot be told (None).
UNSPACED = frozenset({"zh", "ja", "ko", "th"})
_lock = threading.Lock()


@lru_cache(maxsize=16)
def _frequencies(language: str) -> dict[str, float]:
    from wordfreq import available_languages, get_frequency_dict

    with _lock:
        if language not in available_languages(wordlist="small"):
            return {}
        return get_frequency_dict(language, wordlist="small")


def zipf(word: str, language: str) -> float | None:
    """The word's frequency on the Zipf scale (0.0: not among the language's common words),
    or None where it cannot be told (a language without a list; in an unspaced script,
    a pair of characters that is no word)."""
    frequencies = _frequencies(language)
    if not frequencies:
        return None
    unspaced = language in UNSPACED
    frequency = frequencies.get(word.replace(" ", "") if unspaced else word.lower(), 0.0)
    if frequency > 0:
        return math.log10(frequency * 1e9)
    return None if unspaced else 0.0


# English endings and what they stand for ("pricier" is "pricey" made more, "stoves"
# more than one "stove").
ENGLISH_ENDINGS = (("iest", ("y", "ey")), ("ier", ("y", "ey")), ("ies", ("y",)),
                   ("est", ("", "e")), ("ing", ("", "e")), ("ed", ("", "e")),
                   ("er", ("", "e")), ("es", ("",)), ("ly", ("",)), ("s", ("",)))
MIN_STEM = 3


def everyday_zipf(word: str, languages: tuple[str, ...]) -> float | None:
    """The word's highest frequency among the languages it may be read in (a word common
    in either reading is no rare name), or None where none can tell. An English form the
    lists leave out counts as its stem does: "pricier" is as everyday as "pricey"."""
    known = [z for z in (_inflected_zipf(word, language) for language in languages)
             if z is not None]
    return max(known, default=None)


def _inflected_zipf(word: str, language: str) -> float | None:
    found = zipf(word, language)
    if found != 0.0 or language != "en":
        return found
    lowered = word.lower()
    return max((zipf(lowered[: -len(ending)] + stem, language) or 0.0
                for ending, stems in ENGLISH_ENDINGS
                if lowered.endswith(ending) and len(lowered) - len(ending) >= MIN_STEM
                for stem in stems), default=found)

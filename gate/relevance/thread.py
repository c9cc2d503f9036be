"""A follow-up that points back into its own conversation needs no memory.

"What was that chapel you mentioned?", "like I said, I only have 20 minutes", "earlier you
said butter, now oil: which is it?": the request carries the conversation so far, and
what the message points at is in it. Memory would repeat the thread (its turns are
recorded as they happen) or, before they are, bring something else that shares a word.

The message points back into the thread when it points back at what was said (a recall
cue, the user's own words asked back, a thing asked again) without a time before the
conversation ("last month", "last time"), the thread names the thing it points at, and
the message speaks of the thread's topic (a word of it the thread says).
A question about the user's own life ("which of these did I already visit?") is no
pointing back at words: the thread does not hold the user's past, however much of the
topic it shares.

In other languages, read by their lexicon without a parser, a message points back into
the thread when it recalls ("what did you say the dose was?") or says "just now", names
no time before the conversation, and the thread says a third of its content words: a
question that reaches past the thread ("what was my daughter allergic to?", asked while
planning her party) names things the thread does not.
"""

from __future__ import annotations

import re
import unicodedata

from mnemoproxy.gate.excerpt import terms
from mnemoproxy.gate.relevance.languages import Shape, content_of
from mnemoproxy.gate.relevance.scan import CONVERSING, Cues
from mnemoproxy.memory import WORD, has_unspaced, unspaced_terms, zipf

# Cue labels (cues.py) that point back at what was said.
POINTING = ("recall", "transcript", "my_speech", "episode", "back_then")
# "earlier" and "previously" reach back within a conversation as well as before it; "last
# time" and "the other day" (the rest of "back_then"), like a date, point before it.
WITHIN_REACH = ("earlier", "previously")
# A time before the conversation, said anywhere in the message ("I told you a while ago",
# "a few months back you suggested", "you recommended one before, which was it?", "you
# recommended a podcast once").
BEFORE_NOW = re.compile(
    r"\b(?:ago|yesterday|(?:while|days?|weeks?|months?|years?) back"
    r"|last (?:time|night|week|weekend|month|year|summer|winter|spring|autumn|fall)"
    r"|the other (?:day|night|week)|(?:before|once)(?=\s*(?:[,.;:!?\u2014-]|$)))\b",
    re.IGNORECASE)
# A cue's clause runs to the next mark; the thing it points at is named within a few words.
CLAUSE = re.compile(r"[^,.;:!?\n\u2014]*")
POINTED_WORDS = 3
# A cue names its thing next when it ends with, or is followed by, one of these.
NAMING = frozenset({
    "a", "an", "the", "some", "that", "this", "those", "these",
    "my", "your", "our", "his", "her", "their", "about", "of",
})
# Words that point rather than name: saying and recalling ("you mentioned", "remind me",
# "tell me more"), and picking a piece of a reply ("the second option", "that last bit"),
# which the thread says in its own way ("2.", a heading).
POINTING_WORDS = terms(
    "say said says tell told telling mention mentioned recommend recommended suggest "
    "suggested explain explained describe described remind remember recall discuss "
    "discussed talk talked give gave show showed share shared mean meant ask asked write "
    "wrote call called more again back above before earlier chat conversation discussion "
    "decide decided agree agreed settle settled pick picked choose chose "
    "one first second third fourth fifth last next previous other option point tip step "
    "item part bit thing idea suggestion version paragraph line sentence section list "
    "answer example bullet"
)


def points_into_thread(cues: Cues, own_words: str, thread: str) -> str | None:
    """The cue by which the message (its `own_words`, as scanned into `cues`) points back
    at what the conversation before it (`thread`) says, or None."""
    matches = cues.matches
    if (not thread.strip() or "calendar" in matches
            or not matches.get("back_then", "earlier").lower().startswith(WITHIN_REACH)
            or BEFORE_NOW.search(own_words)):
        return None
    if cues.personal.own_past is not None and "transcript" not in matches:
        # What the user did ("what did I pay? I think I told you"), not what they said.
        return None
    pointing = [matches[label] for label in POINTING if label in matches]
    if cues.asked_back is not None:
        pointing.append(cues.asked_back)
    decided = matches.get("preference", "")
    if not CONVERSING.isdisjoint(decided.lower().split()):
        # A decision the conversation made ("what did we decide on for the title?"), not
        # the user's taste ("do I like cilantro?"), which a thread on it does not hold.
        pointing.append(decided)
    if not pointing:
        return None
    said = terms(thread)
    # The thing pointed at ("that chapel you mentioned", "you recommended a podcast",
    # "what you said about the fridge proof") is one the thread names; the rest of the
    # message may ask something new of it ("is it open on Sundays?").
    pointed_at = terms(" ".join(_pointed_at(own_words, cue) for cue in pointing))
    if not pointed_at - POINTING_WORDS <= said:
        return None
    named = terms(own_words) - POINTING_WORDS
    if named and not named & said:
        return None
    return pointing[0]


def _pointed_at(own_words: str, cue: str) -> str:
    """The cue's words, and the thing it goes on to name in its clause ("you recommended
    a | podcast for sleep", "what did I say | my council tax was"): what it points at."""
    lowered = own_words.lower()
    start = lowered.find(cue.lower())
    clause = CLAUSE.match(lowered, start + len(cue)) if start != -1 else None
    following = WORD.findall(clause.group()) if clause else []
    last = WORD.findall(cue.lower())[-1:]
    if following and ((last and last[0] in NAMING) or following[0] in NAMING):
        return " ".join([cue, *following[:POINTED_WORDS]])
    return cue


def unsaid_in_thread(words: list[str], thread: str) -> list[str]:
    """The words (or phrases) of `words` the conversation before the message does not say,
    compared as `follows_in_thread` compares them: what memory holds of them beyond it."""
    if not words or not thread.strip():
        return words
    folded = _folded(thread.lower())
    keys = {word: _folded(word.lower())[:KEY_LETTERS] for word in words if " " not in word}
    said = _said_keys(set(keys.values()), folded)
    return [word for word in words
            if (word.lower() not in folded if " " in word else keys[word] not in said)]


# The share of a message's content words the thread must say, in a language read by its
# lexicon.
THREAD_SHARE = 1 / 3
# Words are compared by their first letters, accents aside: inflections ("capilla",
# "capillas"; "Schmorbraten", "Schmorbratens") differ after them.
KEY_LETTERS = 5
SHORTEST_WORD = 3
EVERYDAY_ZIPF = 5.0


def follows_in_thread(shape: Shape, own_words: str, thread: str, language: str) -> bool:
    """Whether a message in `language`, read into `shape`, points back into the
    conversation before it (`thread`)."""
    if not thread.strip() or shape.before_now or not (shape.recall or shape.reminded
                                                      or shape.within_now):
        return False
    pieces, words = _content_keys(content_of(own_words, language), language)
    said = _said_in(pieces, words, _folded(thread.lower()))
    mine = len(pieces) + len(words)
    return said > 0 and (shape.within_now or said >= THREAD_SHARE * mine)


def _content_keys(text: str, language: str) -> tuple[set[str], set[str]]:
    """The content words of `text` (rarer than everyday ones in `language`) as compared
    across inflections: pairs of characters of unspaced scripts (found anywhere), and
    words (accents stripped, their first KEY_LETTERS letters, found opening a word; a lone
    character, or the digits beside one, whole)."""
    pieces: set[str] = set()
    words: set[str] = set()
    for word in WORD.findall(text.lower()):
        if has_unspaced(word):
            for term in unspaced_terms(word):
                if " " in term:
                    pieces.add(term.replace(" ", ""))
                else:
                    words.add(term)
        elif len(word) >= SHORTEST_WORD and (zipf(word, language) or 0.0) < EVERYDAY_ZIPF:
            words.add(_folded(word)[:KEY_LETTERS])
    return pieces, words


def _said_in(pieces: set[str], words: set[str], thread: str) -> int:
    """How many of the pieces and words the (folded) thread says, in one pass over it for
    the words: a shorter word than KEY_LETTERS only whole."""
    return sum(piece in thread for piece in pieces) + len(_said_keys(words, thread))


def _said_keys(keys: set[str], thread: str) -> set[str]:
    """The keys the (folded) thread says opening a word, in one pass over it: a key
    shorter than KEY_LETTERS only as a whole word."""
    if not keys:
        return set()
    ordered = sorted(keys, key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(" + "|".join(
        re.escape(key) + ("" if len(key) >= KEY_LETTERS else r"(?!\w)") for key in ordered)
        + ")")
    return {match.group(1) for match in pattern.finditer(thread)}


_COMBINING = re.compile("[\u0300-\u036f]+")


def _folded(text: str) -> str:
    """`text` without its accents (Hangul, decomposed on the way, recomposed)."""
    return unicodedata.normalize(
        "NFC", _COMBINING.sub("", unicodedata.normalize("NFD", text)))

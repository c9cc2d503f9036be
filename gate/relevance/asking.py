"""Whether a message only asks: questions and requests, and nothing the user says of
their own ("What's my dog called?", "Remind me of my sister's birthday", "Write a haiku").
A turn that only asked, answered from memory injected for it, says nothing new about the
user: it is not served as memory later (proxy/chat/memory.py marks it)."""

from __future__ import annotations

import re

from mnemoproxy.gate.relevance.cues import word_set
from mnemoproxy.gate.relevance.languages import QUESTION_MARKS
from mnemoproxy.gate.relevance.personal import WH_WORDS

# A sentence opening with one of these asks, whatever mark ends it.
_ASKING_OPENERS = WH_WORDS | word_set(
    "do does did is are was were am can could would will should shall may might have has had "
    "please tell remind recall show give list write explain describe summarize summarise "
    "help suggest recommend find name make draft compose translate"
)
# Words that say nothing: "Thanks! What's my dog called?" only asks.
_SMALL_TALK = word_set("hi hey hello thanks thank ok okay cool great yes no sure please")
# A first-person subject in a clause before the question: "Since I moved to Paris, what
# should I see?" tells something.
_FIRST_PERSON_SUBJECTS = word_set("i i'm im i've i'd i'll we we're we've my our")
_SENTENCE_END = re.compile(r"(?<=[.!?？؟。])\s+|\n+")
_WORD = re.compile(r"[a-z']+")


def only_asks(text: str) -> bool:
    """True when every sentence of `text` asks or makes small talk, and no clause before a
    question's own states something of the user's."""
    asked = False
    for sentence in _SENTENCE_END.split(text.strip().lower()):
        words = _WORD.findall(sentence)
        if not words:
            continue
        if sentence.rstrip().endswith(QUESTION_MARKS):
            clauses = sentence.split(",")
            if any(_FIRST_PERSON_SUBJECTS.intersection(_WORD.findall(c)) for c in clauses[:-1]):
                return False
            asked = True
        elif words[0] in _ASKING_OPENERS:
            asked = True
        elif not set(words) <= _SMALL_TALK:
            return False
    return asked

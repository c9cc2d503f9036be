"""The heuristic gate's scanner: runs the cue patterns (relevance/cues.py) and the agent's
known-entity names over a message and reports what it found.

The text is split into sentences and each is tokenized on its own: patterns then never
span two sentences, spaCy's tokenizer keeps its word cache warm (it stops caching for
the rest of a call after the first contraction). spaCy's Matcher costs about
(patterns x tokens), so the patterns are grouped by anchor word (the rarest word each
needs) and a sentence only meets the groups whose anchors it holds: most sentences meet
none, a 2,000-character message a handful.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemoproxy.gate.relevance.cues import (
    ANCHOR_WORDS,
    CUE_PATTERNS,
    FIRST_PERSON,
    INTERROGATIVES,
    LEADING_FILLERS,
    REQUEST_VERBS,
    SECOND_PERSON,
    anchor_words,
)
from mnemoproxy.gate.relevance.personal import Personal, read_sentence
from mnemoproxy.lazy import LazyResource

# Cues live in the opening request or the closing question of a pasted document;
# scanning only these keeps a 10k-character message nearly as cheap as a short one.
HEAD_CHARS = 2000
TAIL_CHARS = 500
MIN_ENTITY_CHARS = 4
ENTITY_MATCHER_CACHE_SIZE = 32

SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n\s*")
QUOTED = re.compile(r"[\"“‘']([^\"”’'\n]{3,60})[\"”’']")
MAX_NAMES = 8
MIN_NAME_CHARS = 3


def scan_window(text: str) -> str:
    """The part of a message searched for cues: all of it, or its head and tail."""
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        return text
    # The line break ends a sentence, so no pattern spans the cut.
    return f"{text[:HEAD_CHARS]}\n{text[-TAIL_CHARS:]}"


@dataclass
class Cues:
    """What the scanner found: the first matched text per cue label, and the shape of the
    message (question, request, who it speaks of)."""

    matches: dict[str, str] = field(default_factory=dict)
    entity: str | None = None
    is_question: bool = False
    is_request: bool = False
    first_person: bool = False
    second_person: bool = False
    personal: Personal = field(default_factory=Personal)
    # Capitalised words past a sentence's start and quoted phrases: possible names of
    # people, places and things the agent's memory may know.
    names: list[str] = field(default_factory=list)


class CueScanner:
    def __init__(self) -> None:
        import spacy
        from spacy.matcher import Matcher

        self._nlp = spacy.blank("en")
        groups: dict[frozenset[str], Matcher] = {}
        for label, patterns in CUE_PATTERNS.items():
            for pattern in patterns:
                anchors = anchor_words(pattern)
                groups.setdefault(anchors, Matcher(self._nlp.vocab)).add(label, [pattern])
        self._matchers_by_anchor = {
            word: [matcher for anchors, matcher in groups.items() if word in anchors]
            for word in ANCHOR_WORDS
        }
        self._entity_matchers: OrderedDict[frozenset[str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def scan(self, message: str, known_entities: Sequence[str] = ()) -> Cues:
        text = scan_window(message)
        cues = Cues(is_question=text.rstrip().endswith("?"))
        entity_matcher = self._entity_matcher(known_entities)
        words: set[str] = set()
        opening = ""
        cues.names = list(dict.fromkeys(m.group(1) for m in QUOTED.finditer(text)))[:MAX_NAMES]
        for number, sentence in enumerate(SENTENCE_BREAK.split(text)):
            if not sentence:
                continue
            doc = self._nlp.make_doc(sentence)
            # Token objects are made anew on each pass over a Doc: one pass serves all.
            tokens = list(doc)
            lowered = [token.lower_ for token in tokens]
            sentence_words = set(lowered)
            words |= sentence_words
            read_sentence(lowered, cues.personal, first_sentence=number == 0)
            for name in _names(tokens):
                if len(cues.names) < MAX_NAMES and name not in cues.names:
                    cues.names.append(name)
            opening = opening or _first_word(tokens)
            anchors = sentence_words & ANCHOR_WORDS
            if anchors:
                self._match_cues(doc, anchors, cues)
            if entity_matcher is not None and cues.entity is None:
                cues.entity = _first_match(entity_matcher, doc)
        cues.is_question = cues.is_question or opening in INTERROGATIVES
        cues.is_request = opening in REQUEST_VERBS or "please" in words
        cues.first_person = not words.isdisjoint(FIRST_PERSON)
        cues.second_person = not words.isdisjoint(SECOND_PERSON)
        return cues

    def _match_cues(self, doc: Any, anchors: set[str], cues: Cues) -> None:
        matchers = {id(m): m for word in anchors for m in self._matchers_by_anchor[word]}
        found = [match for matcher in matchers.values() for match in matcher(doc)]
        for match_id, start, end in sorted(found, key=lambda match: match[1]):
            cues.matches.setdefault(self._nlp.vocab.strings[match_id], doc[start:end].text)

    def _entity_matcher(self, known_entities: Sequence[str]) -> Any:
        """A PhraseMatcher for the names, cached per distinct set of names."""
        names = frozenset(
            stripped
            for stripped in (name.strip() for name in known_entities)
            if len(stripped) >= MIN_ENTITY_CHARS and stripped[:1].isupper()
        )
        if not names:
            return None
        with self._lock:
            matcher = self._entity_matchers.get(names)
            if matcher is not None:
                self._entity_matchers.move_to_end(names)
                return matcher
        matcher = self._build_entity_matcher(names)
        with self._lock:
            self._entity_matchers[names] = matcher
            if len(self._entity_matchers) > ENTITY_MATCHER_CACHE_SIZE:
                self._entity_matchers.popitem(last=False)
        return matcher

    def _build_entity_matcher(self, names: frozenset[str]) -> Any:
        from spacy.matcher import PhraseMatcher

        # As spelled: "Max" the dog is not "max", "Will" is not "will".
        matcher = PhraseMatcher(self._nlp.vocab, attr="ORTH")
        matcher.add("entity", [self._nlp.make_doc(name) for name in sorted(names)])
        return matcher


def _names(tokens: Sequence[Any]) -> list[str]:
    """Runs of capitalised words that do not open the sentence ("the Natural Park of
    Moncayo", "Caroline's"), without a possessive ending."""
    names: list[str] = []
    run: list[str] = []
    for token in tokens[1:]:
        if token.is_title and token.is_alpha and len(token.text) >= MIN_NAME_CHARS:
            run.append(token.text)
            continue
        if run:
            names.append(" ".join(run))
            run = []
    if run:
        names.append(" ".join(run))
    return names


def _first_match(matcher: Any, doc: Any) -> str | None:
    found = matcher(doc)
    if not found:
        return None
    _, start, end = min(found, key=lambda match: match[1])
    return doc[start:end].text


def _first_word(tokens: Sequence[Any]) -> str:
    for token in tokens:
        word = token.lower_
        if token.is_alpha and word not in LEADING_FILLERS:
            return word
    return ""


_scanner: LazyResource[CueScanner] = LazyResource(CueScanner)


def shared_scanner() -> CueScanner:
    """The process-wide scanner, built on first use (importing spaCy takes about a second)."""
    return _scanner.get()

"""The heuristic gate's scanner: runs the cue patterns (relevance/cues.py) and the agent's
known-entity names over a message's instruction (relevance/payload.py: material it hands
over is not the user speaking) and reports what it found.

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
from itertools import pairwise
from typing import Any

from mnemoproxy.gate.relevance.cues import (
    ANCHOR_WORDS,
    CUE_PATTERNS,
    FIRST_PERSON,
    INTERROGATIVES,
    LEADING_FILLERS,
    MONTHS,
    REQUEST_VERBS,
    SECOND_PERSON,
    WEEKDAYS,
    anchor_words,
)
from mnemoproxy.gate.relevance.payload import split_request
from mnemoproxy.gate.relevance.personal import (
    FRAGMENT_ENDS,
    Personal,
    looks_up,
    read_sentence,
)
from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory import zipf

# Cues live in the opening request or the closing question of a pasted document;
# scanning only these keeps a 10k-character message nearly as cheap as a short one.
HEAD_CHARS = 2000
TAIL_CHARS = 500
HTML_BREAK = re.compile(r"<br\s{0,3}/?>", re.IGNORECASE)
# And of those, the first and last sentences: a long message is mostly material.
HEAD_SENTENCES = 12
TAIL_SENTENCES = 6
# A request this long (sentences, or words) tells its own situation rather than points at it.
PARTICULAR_SENTENCES = 3
PARTICULAR_WORDS = 25
# A sentence this short after a question says why it is asked, rather than asking on.
REASON_WORDS = 12
WORDS_OF = re.compile(r"[^\W\d_]+")
DIGIT = re.compile(r"\d")
# A message's opening word one edit from one of these, and rarer than this in English (no
# word of its own: "wich", "hw", "wen"; not "hat", "two", "way"), is that question word.
QUESTION_WORDS = ("what", "which", "where", "when", "who", "why", "how", "whose")
MISSPELT_ZIPF = 3.6
MAX_QUESTION_WORD_CHARS = 6
MIN_ENTITY_CHARS = 4
ENTITY_MATCHER_CACHE_SIZE = 32

# Sentences, and clauses after a colon or semicolon: "My dad and I argued yesterday: what
# year did the Wall fall?" asks about the Wall.
# A number of one or two digits before a full stop marks an item of a list ("1. ..."); a
# longer one ("port 5000.", "in 1990.") ends its sentence. So does a mark closing a quote
# ('... with just "Noted." Is that a bad sign?').
SENTENCE_BREAK = re.compile(
    r"(?<=[.!?:;])(?<!(?<![0-9])[0-9]\.)(?<!(?<![0-9])[0-9]{2}\.)\s+|(?<=[.!?][\"”’])\s+"
    r"|(?<=[。！？])|\n\s*")
# A quoted phrase opens and closes with the same kind of mark, next to no letter outside
# and no space inside: the apostrophes of "what's" and "j'ai" open nothing.
QUOTED = re.compile(
    r"(?<!\w)(?:\"(\S[^\"\n]{1,58}\S)\"|“(\S[^”\n]{1,58}\S)”|‘(\S[^’\n]{1,58}\S)’"
    r"|'(\S[^'\n]{1,58}\S)')(?!\w)")
MAX_NAMES = 8
MIN_NAME_CHARS = 3
# Days and months are capitalised, but name a time anyone has, not a thing of memory's.
CALENDAR_NAMES = frozenset(f"{WEEKDAYS}|{MONTHS}|may".split("|"))
# Words that follow a name but never the pronoun "I" directly: "World War I and ...".
AFTER_A_NAME = frozenset({"and", "or", "of", "in", "on", "at", "to", "from", "with", "for",
                          "by", "as", "vs"})


def scan_window(text: str) -> str:
    """The part of a message searched for cues: all of it, or its head and tail; a line
    break pasted from a web page as "<br>" is read as the line break it shows."""
    if len(text) > HEAD_CHARS + TAIL_CHARS:
        # The line break ends a sentence, so no pattern spans the cut.
        text = f"{text[:HEAD_CHARS]}\n{text[-TAIL_CHARS:]}"
    return HTML_BREAK.sub("\n", text)


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
    # The message hands over material to work on (quoted, pasted, listed, code): its
    # cues were read in the instruction alone (relevance/payload.py).
    has_payload: bool = False
    # Capitalised words past a sentence's start and quoted phrases: possible names of
    # people, places and things the agent's memory may know.
    names: list[str] = field(default_factory=list)
    # Asked to be reminded of what speaks of no one ("who was the plumber again?"): a
    # refresher anyone might ask, or a thing told before; the matched words.
    asked_back: str | None = None
    # Words that own something, however written ("theo's swimming", "the cabin's wifi"):
    # a person or a thing in particular.
    owners: list[str] = field(default_factory=list)
    # The request brings its own particulars: a number, or more than a short question's
    # worth of sentences or words.
    particulars: bool = False
    # It tells at length (the sentences or words above, numbers aside): a rare word it
    # shares with memory is a topic both touch, not a thing asked after.
    at_length: bool = False
    # The message is one lookup typed as into a search box, with or without its mark
    # ("passport expiry pls", "bus number to work?"), naming nothing capitalised.
    lookup: bool = False
    words: int = 0  # in the instruction's sentences that were read


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
        # The instruction is read where a request says it, at its start and end.
        request = split_request(scan_window(message))
        text = scan_window(request.instruction)
        cues = Cues(is_question=text.rstrip().endswith(("?", "？")),
                    has_payload=request.has_payload)
        entity_matcher = self._entity_matcher(known_entities)
        words: set[str] = set()
        opening = closing = ""
        word_count = 0
        quoted = (next(g for g in m.groups() if g) for m in QUOTED.finditer(text))
        cues.names = list(dict.fromkeys(quoted))[:MAX_NAMES]
        sentences = [s for s in SENTENCE_BREAK.split(text) if s]
        if len(sentences) > HEAD_SENTENCES + TAIL_SENTENCES:
            sentences = sentences[:HEAD_SENTENCES] + sentences[-TAIL_SENTENCES:]
        for number, sentence in enumerate(sentences):
            doc = self._nlp.make_doc(sentence)
            # Token objects are made anew on each pass over a Doc: one pass serves all.
            tokens = list(doc)
            lowered = _question_word_spelled_out(_numerals_read(tokens))
            if len(sentences) == 1 and _first_word(lowered) not in ASKING_OPENERS:
                unmarked = _without_end_marks(lowered)
                cues.lookup = looks_up(unmarked)
                if cues.lookup and len(unmarked) == len(lowered):
                    # Read as the question it is, with its mark.
                    lowered.append("?")
                    cues.is_question = True
            # "Remind me who the plumber was" asks "who was the plumber?"; a question
            # followed by a short word of why it is asked ("what was the ramen place
            # called? want to take my parents") asks as one that ends the message does.
            cues.is_question = cues.is_question or _asks_to_be_reminded(lowered) or (
                number == len(sentences) - 2 and sentence.rstrip().endswith(("?", "？"))
                and 0 < len(WORDS_OF.findall(sentences[-1])) <= REASON_WORDS)
            sentence_words = set(lowered)
            words |= sentence_words
            word_count += sum(map(str.isalpha, lowered))
            read_sentence(lowered, cues.personal, first_sentence=number == 0)
            cues.owners.extend(_owners(lowered))
            for name in _names(tokens):
                if len(cues.names) < MAX_NAMES and name not in cues.names:
                    cues.names.append(name)
            opening = opening or _first_word(lowered)
            closing = next((t.lower_ for t in reversed(tokens) if t.is_alpha), closing)
            anchors = sentence_words & ANCHOR_WORDS
            if anchors:
                # "We discussed this in my book club": a talk the user had with others.
                dropped = EPISODE if _among_the_users_own(lowered) else frozenset()
                self._match_cues(doc, anchors, cues, _clause_only(lowered), dropped)
            if cues.asked_back is None and "recall" not in cues.matches and _asked_again(
                    lowered):
                # "what's on thursdays in that gym split again": a particular asked back,
                # however far "again" closes it.
                cues.asked_back = sentence.strip()
            if entity_matcher is not None and cues.entity is None:
                cues.entity = _first_match(entity_matcher, doc)
        cues.is_question = cues.is_question or opening in INTERROGATIVES or closing in WH_LAST
        cues.is_request = opening in REQUEST_VERBS or "please" in words
        cues.words = word_count
        cues.at_length = len(sentences) >= PARTICULAR_SENTENCES or word_count > PARTICULAR_WORDS
        cues.particulars = cues.at_length or DIGIT.search(text) is not None
        cues.first_person = not words.isdisjoint(FIRST_PERSON)
        cues.second_person = not words.isdisjoint(SECOND_PERSON)
        cues.lookup = cues.lookup and not cues.names
        return cues

    def _match_cues(
        self, doc: Any, anchors: set[str], cues: Cues, left_out: frozenset[str],
        dropped: frozenset[str],
    ) -> None:
        matchers = {id(m): m for word in anchors for m in self._matchers_by_anchor[word]}
        found = [match for matcher in matchers.values() for match in matcher(doc)]
        for match_id, start, end in sorted(found, key=lambda match: match[1]):
            label = self._nlp.vocab.strings[match_id]
            if label in dropped:
                continue
            if label not in left_out:
                cues.matches.setdefault(label, doc[start:end].text)
            elif label in ASKED_BACK_LABELS:
                cues.asked_back = cues.asked_back or doc[start:end].text

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


# Cues that ask of memory only in the clause that asks: a date said in passing ("I have
# a quiz on Monday", "my teammate told me yesterday") is background to a question about
# something else; a date in the question ("what did I do last week?") is not.
CLAUSE_BOUND = frozenset({"calendar", "preference"})
# Of the conversation: "you" and "we" ("last time you suggested ...", "previously, we
# agreed ..."); a time said beside anyone else ("the other day I heard someone say ...")
# tells of the user's day.
CONVERSING = SECOND_PERSON | frozenset({"we", "us", "our"})
# Labels whose cue, left out for speaking of no one, is a thing asked back.
ASKED_BACK_LABELS = frozenset({"recall", "episode"})
# A question asked with its question word last, as chat does: "my mom's birthday is when".
WH_LAST = frozenset({"when", "where", "who", "what", "which", "how"})
PERSONS = FIRST_PERSON | SECOND_PERSON
POSSESSIVE_ENDINGS = frozenset({"'s", "’s"})
# "with my", "in my", "at my": where a talk the user tells of took place, among others.
SETTINGS = frozenset({"with", "in", "at", "among"})
EPISODE = frozenset({"episode"})
# Question words that ask a particular back with "again" ("what's ... again"), and the
# subjects that make "again" a repetition instead.
ASKED_AGAIN = frozenset({"what", "whats", "where", "wheres", "who", "whos", "when", "which"})
SUBJECT_WORDS = frozenset({"i", "we", "you", "it", "he", "she", "they"})
# A message opening with one of these is a question or a request already.
ASKING_OPENERS = INTERROGATIVES | REQUEST_VERBS


def _clause_only(words: Sequence[str]) -> frozenset[str]:
    """The cue labels this sentence cannot carry: the clause-bound ones unless it asks (a
    question or a request), the date cue unless it also speaks of a person, and a request
    to be reminded unless it speaks of someone besides the asking "me"."""
    opening = next((w for w in words if w.isalpha() and w not in LEADING_FILLERS), "")
    asks = bool(words) and (words[-1] in ("?", "？") or opening in INTERROGATIVES
                            or opening in REQUEST_VERBS)
    left_out = set() if asks else set(CLAUSE_BOUND)
    if PERSONS.isdisjoint(words):
        left_out.add("calendar")
    if not asks and CONVERSING.isdisjoint(words):
        left_out.add("back_then")
    if not _speaks_of_someone(words) or _reminded_how_to(words):
        # "Remind me how the electoral college works", "what's the formula for a
        # circle's area again?", "remind me how to convert a recipe to grams": a refresher
        # anyone might ask; the evidence decides. So does "do you remember which
        # philosopher said ...?".
        left_out.add("recall")
        if _remembered_question(words):
            left_out.add("episode")
    return frozenset(left_out)


def _among_the_users_own(words: Sequence[str]) -> bool:
    return any(word in SETTINGS and words[i + 1] == "my" for i, word in enumerate(words[:-1]))


def _remembered_question(words: Sequence[str]) -> bool:
    """Asked whether the model remembers a question's answer ("do you remember which
    philosopher said ...", "remember when the Wall fell?"), not a thing ("do you remember
    the recipe?")."""
    return any(word in ("remember", "recall") and words[i + 1] in INTERROGATIVES
               for i, word in enumerate(words[:-1]))


def _reminded_how_to(words: Sequence[str]) -> bool:
    return any(words[i:i + 4] == ["remind", "me", "how", "to"] for i in range(len(words) - 3))


def _asks_to_be_reminded(words: Sequence[str]) -> bool:
    return any(words[i:i + 2] == ["remind", "me"] and words[i + 2] in INTERROGATIVES
               for i in range(len(words) - 2))


def _asked_again(words: Sequence[str]) -> bool:
    """A question word opening the sentence and "again" closing it, with no one doing
    anything between ("so it never happens again" repeats, it does not ask back)."""
    spoken = [word for word in words if word.isalpha()]
    return (len(spoken) > 2 and spoken[0] in ASKED_AGAIN and spoken[-1] == "again"
            and SUBJECT_WORDS.isdisjoint(spoken))


def _speaks_of_someone(words: Sequence[str]) -> bool:
    """Whether a person word is in the sentence other than the "me" of "remind me" and
    the "you" of "do you remember"."""
    return any(word in PERSONS and not (word == "me" and i > 0 and words[i - 1] == "remind")
               and not (word == "you" and i + 1 < len(words)
                        and words[i + 1] in ("remember", "recall"))
               for i, word in enumerate(words))


def _one_edit_apart(a: str, b: str) -> bool:
    """One letter added, dropped, changed, or two neighbours swapped ("wich", "hw", "waht")."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def _question_word_spelled_out(words: list[str]) -> list[str]:
    """`words` with a misspelt question word that opens them written out ("wich day is
    ..." -> "which day is ..."): one edit from a question word, and no word of its own."""
    at = next((i for i, w in enumerate(words) if w.isalpha()), None)
    if at is None or words[at] in INTERROGATIVES or len(words[at]) > MAX_QUESTION_WORD_CHARS:
        return words
    typed = words[at]
    meant = next((w for w in QUESTION_WORDS if _one_edit_apart(typed, w)), None)
    if meant is None or (zipf(typed, "en") or 0.0) >= MISSPELT_ZIPF:
        return words
    return [*words[:at], meant, *words[at + 1:]]


def _numerals_read(tokens: Sequence[Any]) -> list[str]:
    """The tokens lower-cased, a Roman one closing a name read as the number ("World War
    I?", "Elizabeth I.", "World War I and its causes"): after a capitalised word inside
    the sentence, the pronoun "I" neither ends a clause nor comes before a conjunction or
    a preposition, which need a verb between them and a subject. After an article, "I" is
    the letter ("what did the I stand for?"): no pronoun takes one."""
    words = [token.lower_ for token in tokens]
    for at in range(1, len(tokens)):
        if words[at] == "i" and words[at - 1] in ARTICLES:
            words[at] = "letter"
        if at < 2 or tokens[at].text != "I" or not tokens[at - 1].is_title:
            continue
        following = tokens[at + 1] if at + 1 < len(tokens) else None
        if following is None or following.is_punct or following.lower_ in AFTER_A_NAME:
            words[at] = "1"
    return words


ARTICLES = frozenset({"the", "a", "an"})


def _names(tokens: Sequence[Any]) -> list[str]:
    """Runs of capitalised words that do not open the sentence ("the Natural Park of
    Moncayo", "Caroline's"), without a possessive ending."""
    names: list[str] = []
    run: list[str] = []
    for before, token in pairwise(tokens):
        # A capitalised everyday word after a mark opens a line or a clause ("+ How are
        # you?", "- What kind?"): it names nothing.
        opens = before.is_punct and token.is_stop
        if (token.is_title and token.is_alpha and len(token.text) >= MIN_NAME_CHARS
                and not opens and token.lower_ not in CALENDAR_NAMES):
            run.append(token.text)
            continue
        if run:
            names.append(" ".join(run))
            run = []
    if run:
        names.append(" ".join(run))
    return names


def _owners(words: Sequence[str]) -> list[str]:
    return [word for word, after in pairwise(words)
            if after in POSSESSIVE_ENDINGS and word.isalpha() and word not in PERSONS]


def _first_match(matcher: Any, doc: Any) -> str | None:
    found = matcher(doc)
    if not found:
        return None
    _, start, end = min(found, key=lambda match: match[1])
    return doc[start:end].text


def _without_end_marks(words: list[str]) -> list[str]:
    end = len(words)
    while end and words[end - 1] in FRAGMENT_ENDS:
        end -= 1
    return words[:end]


def _first_word(words: Sequence[str]) -> str:
    return next((w for w in words if w.isalpha() and w not in LEADING_FILLERS), "")


_scanner: LazyResource[CueScanner] = LazyResource(CueScanner)


def shared_scanner() -> CueScanner:
    """The process-wide scanner, built on first use (importing spaCy takes about a second)."""
    return _scanner.get()

"""The episode of a session, by counting: topics are the most frequent content words and
repeated word pairs, the summary is the user's sentences that carry most of those words
(and the facts), entities are capitalised words that do not merely open a sentence."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnemoproxy.memory.distill.rules.facts import FoundFact
from mnemoproxy.memory.distill.rules.lexicon import words
from mnemoproxy.memory.distill.rules.spans import singular
from mnemoproxy.memory.models import EpisodeDraft
from mnemoproxy.memory.text.language import detect_language
from mnemoproxy.memory.text.parsing import MONTHS, WEEKDAYS
from mnemoproxy.memory.text.rarity import zipf

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span
    from spacy.vocab import Vocab

_MAX_TOPICS = 6
_MAX_ENTITIES = 10
_SUMMARY_CHARS = 300
_SUMMARY_SENTENCES = 3
_TOP_TERMS = 12  # the words that say what a session was about, for scoring sentences
_ASSISTANT_WEIGHT = 0.5
# Outside English, a word at least this common in its language is a function word or chat.
COMMON_ZIPF = 5.0
# Scripts without spaces between words: the rules cannot count their words.
UNSPACED_SCRIPTS = frozenset({"zh", "ja", "th"})
# Words of chat that say nothing about what a session was about.
_CHATTER = words(
    "yeah yes yep nope thanks thank hey hi hello lol haha wow cool nice great good awesome "
    "amazing sure okay ok oh ah really just like love know think want got get getting going "
    "feel feeling make made sounds sound glad lot lots thing things stuff way day time "
    "pretty totally definitely maybe bit kind sort also still actually especially "
    "absolutely help happy let tell said say looking look"
    # The frame of a request rather than its subject: "give me some tips", "any ideas?"
    " example examples tip tips idea ideas question questions information info advice "
    "recommendation recommendations suggestion suggestions option options list detail details"
    # Qualities any subject can have.
    " new old best better worse good bad big small long little different same important "
    "specific whole hard easy perfect"
)


# With no tagger, what a word is is read from its neighbours: after these a word is used
# as a thing ("the painting", "for dinner") ...
_BEFORE_A_THING = words(
    "a an the my your our their his her its this these those some any each every no another "
    "of for about with on in at from into by"
)
# ... after these as an action ("to reduce", "you offer", "can address") ...
_BEFORE_AN_ACTION = words(
    "to i you we they he she can could will would should shall may might must 'll 'd n't not "
    "do does did please let 've"
)
# ... after these an -ing or -ed word is an action too ("was telling", "have prescribed") ...
_AUXILIARIES = words("am is are was were be been being 'm 're 's have has had")
# ... and so is a word with one of these right after it ("telling me", "help you").
_OBJECT_PRONOUNS = words("me you us them him her it")
# After these, or an auxiliary, a word is a quality ("so tough", "it's important").
_DEGREES = words("so very too more most less quite pretty really super extremely")
_THING, _ACTION, _AUXILIARY, _OBJECT, _DEGREE = 1, 2, 3, 4, 5


@dataclass(frozen=True, slots=True)
class _Form:
    """What the episode needs to know of a word form; it depends on the form alone."""

    text: str
    term: str | None  # its content term, None for a word that says nothing
    alpha: bool
    lower: bool  # written in lower case
    name_like: bool  # capitalised, could be a proper name (text.is_name_like)
    cue: int  # what it says of the word beside it: _THING, _ACTION, _AUXILIARY, _OBJECT or 0
    inflected: bool  # ends like a verb form: -ing, -ed


# Word form (spaCy orth id) -> its _Form. The same few thousand forms recur in every
# session: looking them up beats asking each token's attributes, and walking a Doc's
# tokens builds a Token object apiece (measured: most of the episode's time). Bounded;
# only the rules' one thread (the helper process) touches it.
_FORMS: dict[int, _Form] = {}
_FORMS_LIMIT = 200_000


def _form(vocab: Vocab, orth: int) -> _Form:
    form = _FORMS.get(orth)
    if form is not None:
        return form
    lexeme = vocab[orth]
    lower = lexeme.lower_
    content = (
        lexeme.is_alpha
        and len(lexeme.orth_) > 2
        and not lexeme.is_stop
        and lower not in _CHATTER
        and singular(lower) not in _CHATTER  # "helps", "tips"
        and not lower.endswith("ly")
    )
    name_like = (
        lexeme.is_title and lexeme.is_alpha and len(lexeme.orth_) > 1 and not lexeme.is_stop
        and lower not in WEEKDAYS and lower not in MONTHS
    )
    cue = (_THING if lower in _BEFORE_A_THING else _ACTION if lower in _BEFORE_AN_ACTION
           else _AUXILIARY if lower in _AUXILIARIES else _OBJECT if lower in _OBJECT_PRONOUNS
           else _DEGREE if lower in _DEGREES else 0)
    form = _Form(lexeme.orth_, singular(lower) if content else None, lexeme.is_alpha,
                 lexeme.is_lower, name_like, cue, lower.endswith(("ing", "ed")))
    if len(_FORMS) >= _FORMS_LIMIT:
        _FORMS.clear()
    _FORMS[orth] = form
    return form


@dataclass(frozen=True, slots=True)
class _Message:
    """A parsed message and, per token, its form and whether it opens a sentence."""

    doc: Doc
    forms: list[_Form]
    sentence_starts: list[bool]

    @classmethod
    def of(cls, doc: Doc) -> _Message:
        from spacy.attrs import ORTH, SENT_START

        rows = doc.to_array([ORTH, SENT_START]).tolist() if len(doc) else []
        return cls(doc, [_form(doc.vocab, orth) for orth, _ in rows],
                   [start == 1 for _, start in rows])

    def terms(self, start: int = 0, end: int | None = None) -> set[str]:
        return {f.term for f in self.forms[start:end] if f.term is not None}


Weights = dict[str, float]


def _ranked(weights: Weights, *, singles_only: bool = False) -> list[tuple[str, float]]:
    """Heaviest first; ties keep the order in which the terms were first said."""
    items = [(t, w) for t, w in weights.items() if not (singles_only and " " in t)]
    return sorted(items, key=lambda item: -item[1])


def _term_weights(
    user: Sequence[_Message], assistant: Sequence[_Message]
) -> tuple[Weights, set[str]]:
    """Content words and adjacent content-word pairs within a sentence, the assistant's
    counting half; and the distinct content words of the user alone."""
    weights: Weights = defaultdict(float)
    user_words: set[str] = set()
    for messages, weight in ((user, 1.0), (assistant, _ASSISTANT_WEIGHT)):
        for message in messages:
            previous: str | None = None
            for form, sentence_start in zip(message.forms, message.sentence_starts,
                                            strict=True):
                term = form.term
                if term is None:
                    previous = None
                    continue
                if sentence_start:
                    previous = None
                weights[term] += weight
                if messages is user:
                    user_words.add(term)
                if previous is not None:
                    weights[f"{previous} {term}"] += weight
                previous = term
    return weights, user_words


@dataclass(frozen=True, slots=True)
class _Uses:
    """How a session uses its words, read from their neighbours: the words used more as
    actions or qualities than as things ("telling", "offer", "important"), and the words
    that mostly stand before another content word rather than end a phrase ("new",
    "social"); a pair's second word may be one of those ("fraud detection pipeline")."""

    actions: set[str]
    modifiers: set[str]


def _uses(messages: Sequence[_Message]) -> _Uses:
    as_thing: Counter[str] = Counter()
    as_action: Counter[str] = Counter()
    as_quality: Counter[str] = Counter()
    before_word: Counter[str] = Counter()
    ending: Counter[str] = Counter()
    for message in messages:
        forms, starts = message.forms, message.sentence_starts
        for i, form in enumerate(forms):
            term = form.term
            if term is None:
                continue
            before = forms[i - 1].cue if i and not starts[i] else 0
            after = forms[i + 1] if i + 1 < len(forms) and not starts[i + 1] else None
            if before == _THING:
                as_thing[term] += 1
            elif before == _ACTION or (before == _AUXILIARY and form.inflected) or (
                after is not None and (after.cue == _OBJECT or (starts[i] and after.cue == _THING))
            ):  # "Write a poem", "Tell me": a request opens on its verb
                as_action[term] += 1
            elif before in (_DEGREE, _AUXILIARY):
                as_quality[term] += 1
            if after is not None and after.term is not None:
                before_word[term] += 1
            else:
                ending[term] += 1
    # A word in -ed is an action or a quality unless it is once used as a thing ("the
    # breed"): "moved", "prescribed".
    past = {t for t in before_word.keys() | ending.keys()
            if t.endswith("ed") and not as_thing[t]}
    not_things = {t for counts in (as_action, as_quality) for t, n in counts.items()
                  if n > as_thing[t]}
    return _Uses(not_things | past,
                 {t for t, n in before_word.items() if n > ending[t]})


def _topics(
    weights: Weights, uses: _Uses, user_words: set[str], reply_terms: Sequence[set[str]]
) -> list[str]:
    """What the session was about, named by its nouns and names: pairs said at least twice
    come first and hide their own words; then single words the user said. Words used as
    actions are left out, and so is a lone word that mostly qualifies another. A pair only
    the assistant said, in every one of several replies, is its boilerplate ("Here is the
    fake upstream's answer")."""
    pairs: list[str] = []
    covered: set[str] = set()
    for term, weight in _ranked(weights):
        if " " not in term or weight < 2:
            continue
        first, second = term.split()
        if covered & {first, second} or {first, second} & uses.actions:
            continue
        if not {first, second} & user_words and len(reply_terms) > 1 and all(
            {first, second} <= said for said in reply_terms
        ):
            continue
        pairs.append(term)
        covered |= {first, second}
    singles = [t for t, _ in _ranked(weights, singles_only=True)
               if t not in covered and t in user_words and t not in uses.actions
               and t not in uses.modifiers]
    return (pairs + singles)[:_MAX_TOPICS]


def _sentence_score(terms: set[str], top_terms: dict[str, float], has_fact: bool) -> float:
    if not terms:
        return 0.0
    overlap = sum(top_terms.get(t, 0.0) for t in terms)
    return overlap + math.log1p(len(terms)) + (3.0 if has_fact else 0.0)


def _spread(user: Sequence[_Message]) -> Counter[str]:
    """In how many of the user's messages each content word occurs."""
    counts: Counter[str] = Counter()
    for message in user:
        counts.update(message.terms())
    return counts


def _summary(user: Sequence[_Message], weights: Weights,
             fact_sentences: set[tuple[int, int]]) -> str:
    # A word in nearly every message (the name of the person spoken to, a speaker's label)
    # is frequent but tells one message from another no better than "thanks": the
    # sentences worth quoting are the ones with the session's frequent *and* telling words.
    spread, messages = _spread(user), max(1, len(user))
    telling = {
        term: math.log1p(weight) * math.log((messages + 1) / max(1, spread[term]))
        for term, weight in _ranked(weights, singles_only=True)
    }
    top_terms = dict(sorted(telling.items(), key=lambda item: -item[1])[:_TOP_TERMS])
    candidates: list[tuple[int, Span, float]] = []  # (position, sentence, its score)
    for message in user:
        for sentence in message.doc.sents:
            forms = message.forms[sentence.start:sentence.end]
            if sum(1 for f in forms if f.alpha) >= 3:
                has_fact = (id(message.doc), sentence.start) in fact_sentences
                terms = message.terms(sentence.start, sentence.end)
                score = _sentence_score(terms, top_terms, has_fact)
                candidates.append((len(candidates), sentence, score))
    ranked = sorted(candidates, key=lambda c: -c[2])
    chosen = sorted(ranked[:_SUMMARY_SENTENCES], key=lambda c: c[0])
    summary = ""
    for _, sentence, _score in chosen:
        text = sentence.text.strip()
        if summary and len(summary) + 1 + len(text) > _SUMMARY_CHARS:
            continue
        summary = f"{summary} {text}".strip()
    if len(summary) > _SUMMARY_CHARS:
        summary = summary[:_SUMMARY_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return summary


_CALENDAR_WORDS = frozenset(WEEKDAYS) | frozenset(MONTHS)


def _entities(user: Sequence[_Message], assistant: Sequence[_Message]) -> list[str]:
    """Runs of capitalised words; a run opening a sentence counts only if the same words
    also appear capitalised mid-sentence (any sentence starts with a capital), and a word
    the session also writes in lower case is an ordinary word capitalised by a list item
    or a heading ("Write", "Explain"), not a name."""
    lower_case = {f.text for message in (*user, *assistant) for f in message.forms if f.lower}
    mid_sentence: Counter[str] = Counter()
    spelled: dict[str, str] = {}
    openers: list[str] = []
    for message in user:
        forms, starts, doc = message.forms, message.sentence_starts, message.doc
        index = 0
        while index < len(forms):
            if not forms[index].name_like:
                index += 1
                continue
            end = index + 1
            while end < len(forms) and forms[end].name_like and not starts[end]:
                end += 1
            text = doc[index:end].text
            key = text.lower()
            ordinary = end - index == 1 and key in lower_case
            if key not in _CALENDAR_WORDS and not ordinary:
                spelled.setdefault(key, text)
                if starts[index]:
                    openers.append(key)
                else:
                    mid_sentence[key] += 1
            index = end
    for key in openers:
        if key in mid_sentence:
            mid_sentence[key] += 1
    return [spelled[key] for key, _ in mid_sentence.most_common(_MAX_ENTITIES)]


def _common(term: str, language: str) -> bool:
    """Whether every word of `term` is among its language's commonest (Zipf >= COMMON_ZIPF:
    "kannst", "para", "делать"): such words say nothing of what a session was about."""
    return all((z := zipf(word, language)) is not None and z >= COMMON_ZIPF
               for word in term.split())


def _plain_episode(user_docs: Sequence[Doc]) -> EpisodeDraft | None:
    """A session in a script written without spaces, which the word counts above cannot
    read: its summary is what the user said first, no topics (its words are still found
    in the transcript, character by character)."""
    said = " ".join(" ".join(doc.text.split()) for doc in user_docs).strip()
    if not said:
        return None
    summary = said if len(said) <= _SUMMARY_CHARS else said[:_SUMMARY_CHARS - 1] + "…"
    return EpisodeDraft(summary=summary, salience=0.3)


def build_episode(
    user_docs: Sequence[Doc], assistant_docs: Sequence[Doc], found: Sequence[FoundFact]
) -> EpisodeDraft | None:
    """None for a session of small talk: no facts and under three distinct content words."""
    language = detect_language(" ".join(doc.text for doc in user_docs))
    if language in UNSPACED_SCRIPTS:
        return _plain_episode(user_docs)
    user = [_Message.of(doc) for doc in user_docs]
    assistant = [_Message.of(doc) for doc in assistant_docs]
    weights, user_words = _term_weights(user, assistant)
    if language != "en":  # the word lists above are English; the language's own commonest
        weights = {t: w for t, w in weights.items() if not _common(t, language)}
        user_words = {t for t in user_words if not _common(t, language)}
    if not found and len(user_words) < 3:
        return None
    facts = [f.fact for f in found]
    decisions = [f.content for f in facts if "decision" in f.tags]
    action_items = [f.content for f in facts if "commitment" in f.tags]
    fact_sentences = {(id(f.sentence.doc), f.sentence.start) for f in found}
    salience = min(0.9, 0.3 + 0.1 * len(facts) + 0.05 * (len(decisions) + len(action_items)))
    return EpisodeDraft(
        summary=_summary(user, weights, fact_sentences),
        topics=_topics(weights, _uses([*user, *assistant]), user_words,
                       [message.terms() for message in assistant]),
        entities=_entities(user, assistant),
        decisions=decisions,
        action_items=action_items,
        salience=round(salience, 2),
    )

"""The episode of a session, by counting: topics are the most frequent content words and
repeated word pairs, the summary is the user's sentences that carry most of those words
(and the facts), entities are capitalised words that do not merely open a sentence."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnemoproxy.memory.distill.rules.facts import FoundFact
from mnemoproxy.memory.distill.rules.lexicon import words
from mnemoproxy.memory.distill.rules.text import MONTHS, WEEKDAYS, is_name_like, singular
from mnemoproxy.memory.models import EpisodeDraft

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span
    from spacy.vocab import Vocab

_MAX_TOPICS = 6
_MAX_ENTITIES = 10
_SUMMARY_CHARS = 300
_SUMMARY_SENTENCES = 3
_TOP_TERMS = 12  # the words that say what a session was about, for scoring sentences
_ASSISTANT_WEIGHT = 0.5
# Words of chat that say nothing about what a session was about.
_CHATTER = words(
    "yeah yes yep nope thanks thank hey hi hello lol haha wow cool nice great good awesome "
    "amazing sure okay ok oh ah really just like love know think want got get getting going "
    "feel feeling make made sounds sound glad lot lots thing things stuff way day time "
    "pretty totally definitely maybe bit kind sort also still actually especially "
    "absolutely help happy let tell said say looking look"
)


# Word form (spaCy orth id) -> its content term, or None for a word that says nothing.
# Whether a word is content depends on its form alone, and the same few thousand forms
# recur in every session: looking them up beats asking each token's attributes.
# Only the rules thread (see memory/distill/rules.py) touches it.
_CONTENT_TERMS: dict[int, str | None] = {}
_CONTENT_TERMS_LIMIT = 200_000


def _content_term(vocab: Vocab, orth: int) -> str | None:
    term = _CONTENT_TERMS.get(orth, "")
    if term != "":
        return term
    lexeme = vocab[orth]
    lower = lexeme.lower_
    content = (
        lexeme.is_alpha
        and len(lexeme.orth_) > 2
        and not lexeme.is_stop
        and lower not in _CHATTER
        and not lower.endswith("ly")
    )
    if len(_CONTENT_TERMS) >= _CONTENT_TERMS_LIMIT:
        _CONTENT_TERMS.clear()
    _CONTENT_TERMS[orth] = found = singular(lower) if content else None
    return found


Weights = dict[str, float]


def _ranked(weights: Weights, *, singles_only: bool = False) -> list[tuple[str, float]]:
    """Heaviest first; ties keep the order in which the terms were first said."""
    items = [(t, w) for t, w in weights.items() if not (singles_only and " " in t)]
    return sorted(items, key=lambda item: -item[1])


def _term_weights(
    user_docs: Sequence[Doc], assistant_docs: Sequence[Doc]
) -> tuple[Weights, set[str]]:
    """Content words and adjacent content-word pairs within a sentence, the assistant's
    counting half; and the distinct content words of the user alone."""
    from spacy.attrs import ORTH, SENT_START

    weights: Weights = defaultdict(float)
    user_words: set[str] = set()
    for docs, weight in ((user_docs, 1.0), (assistant_docs, _ASSISTANT_WEIGHT)):
        for doc in docs:
            previous: str | None = None
            # Plain integers, not Token objects: most of the cost of a walk over tokens.
            for orth, sentence_start in doc.to_array([ORTH, SENT_START]).tolist():
                term = _content_term(doc.vocab, orth)
                if term is None:
                    previous = None
                    continue
                if sentence_start == 1:
                    previous = None
                weights[term] += weight
                if docs is user_docs:
                    user_words.add(term)
                if previous is not None:
                    weights[f"{previous} {term}"] += weight
                previous = term
    return weights, user_words


def _topics(weights: Weights) -> list[str]:
    """Pairs said at least twice come first and hide their own words; then single words."""
    pairs: list[str] = []
    covered: set[str] = set()
    for term, weight in _ranked(weights):
        if " " in term and weight >= 2 and not covered & set(term.split()):
            pairs.append(term)
            covered |= set(term.split())
    singles = [t for t, _ in _ranked(weights, singles_only=True) if t not in covered]
    return (pairs + singles)[:_MAX_TOPICS]


def _sentence_score(sentence: Span, top_terms: dict[str, float], has_fact: bool) -> float:
    vocab = sentence.doc.vocab
    terms = {term for t in sentence if (term := _content_term(vocab, t.orth)) is not None}
    if not terms:
        return 0.0
    overlap = sum(top_terms.get(t, 0.0) for t in terms)
    return overlap + math.log1p(len(terms)) + (3.0 if has_fact else 0.0)


def _spread(user_docs: Sequence[Doc]) -> Counter[str]:
    """In how many of the user's messages each content word occurs."""
    counts: Counter[str] = Counter()
    for doc in user_docs:
        counts.update(
            {term for t in doc if (term := _content_term(doc.vocab, t.orth)) is not None}
        )
    return counts


def _summary(user_docs: Sequence[Doc], weights: Weights,
             fact_sentences: set[tuple[int, int]]) -> str:
    # A word in nearly every message (the name of the person spoken to, a speaker's label)
    # is frequent but tells one message from another no better than "thanks": the
    # sentences worth quoting are the ones with the session's frequent *and* telling words.
    spread, messages = _spread(user_docs), max(1, len(user_docs))
    telling = {
        term: math.log1p(weight) * math.log((messages + 1) / max(1, spread[term]))
        for term, weight in _ranked(weights, singles_only=True)
    }
    top_terms = dict(sorted(telling.items(), key=lambda item: -item[1])[:_TOP_TERMS])
    candidates = [
        (index, sentence)
        for index, sentence in enumerate(s for doc in user_docs for s in doc.sents)
        if sum(1 for t in sentence if t.is_alpha) >= 3
    ]
    ranked = sorted(
        candidates,
        key=lambda c: -_sentence_score(
            c[1], top_terms, (id(c[1].doc), c[1].start) in fact_sentences
        ),
    )
    chosen = sorted(ranked[:_SUMMARY_SENTENCES], key=lambda c: c[0])
    summary = ""
    for _, sentence in chosen:
        text = sentence.text.strip()
        if summary and len(summary) + 1 + len(text) > _SUMMARY_CHARS:
            continue
        summary = f"{summary} {text}".strip()
    if len(summary) > _SUMMARY_CHARS:
        summary = summary[:_SUMMARY_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return summary


def _entities(user_docs: Sequence[Doc], assistant_docs: Sequence[Doc]) -> list[str]:
    """Runs of capitalised words; a run opening a sentence counts only if the same words
    also appear capitalised mid-sentence (any sentence starts with a capital), and a word
    the session also writes in lower case is an ordinary word capitalised by a list item
    or a heading ("Write", "Explain"), not a name."""
    lower_case = {
        token.text for doc in (*user_docs, *assistant_docs) for token in doc if token.is_lower
    }
    mid_sentence: Counter[str] = Counter()
    spelled: dict[str, str] = {}
    openers: list[str] = []
    for doc in user_docs:
        index = 0
        while index < len(doc):
            if not is_name_like(doc[index]):
                index += 1
                continue
            end = index + 1
            while end < len(doc) and is_name_like(doc[end]) and not doc[end].is_sent_start:
                end += 1
            text = doc[index:end].text
            key = text.lower()
            ordinary = end - index == 1 and key in lower_case
            if key not in set(WEEKDAYS) | set(MONTHS) and not ordinary:
                spelled.setdefault(key, text)
                if doc[index].is_sent_start:
                    openers.append(key)
                else:
                    mid_sentence[key] += 1
            index = end
    for key in openers:
        if key in mid_sentence:
            mid_sentence[key] += 1
    return [spelled[key] for key, _ in mid_sentence.most_common(_MAX_ENTITIES)]


def build_episode(
    user_docs: Sequence[Doc], assistant_docs: Sequence[Doc], found: Sequence[FoundFact]
) -> EpisodeDraft | None:
    """None for a session of small talk: no facts and under three distinct content words."""
    weights, user_words = _term_weights(user_docs, assistant_docs)
    if not found and len(user_words) < 3:
        return None
    facts = [f.fact for f in found]
    decisions = [f.content for f in facts if "decision" in f.tags]
    action_items = [f.content for f in facts if "commitment" in f.tags]
    fact_sentences = {(id(f.sentence.doc), f.sentence.start) for f in found}
    salience = min(0.9, 0.3 + 0.1 * len(facts) + 0.05 * (len(decisions) + len(action_items)))
    return EpisodeDraft(
        summary=_summary(user_docs, weights, fact_sentences),
        topics=_topics(weights),
        entities=_entities(user_docs, assistant_docs),
        decisions=decisions,
        action_items=action_items,
        salience=round(salience, 2),
    )

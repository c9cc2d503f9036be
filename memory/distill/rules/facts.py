"""Fact extraction by rules: one spaCy Matcher finds every rule's trigger words; triggers
inside questions, hypotheticals, quotes or reported speech are dropped; the rule's handler
reads the value that follows. Only first-person triggers exist ("I", "my", "we"), so
"my brother lives in Rome" never reaches the location rule."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, cast

from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory.distill.rules import identity, pinned
from mnemoproxy.memory.distill.rules.grammar import Rule, Trigger
from mnemoproxy.memory.distill.rules.lexicon import HEDGES, QUESTION_OPENERS, words
from mnemoproxy.memory.distill.rules.spans import inside_quotes
from mnemoproxy.memory.models import FactDraft
from mnemoproxy.memory.text.parsing import parse, pipeline

if TYPE_CHECKING:
    from spacy.matcher import Matcher
    from spacy.tokens import Doc, Span


def _i_am(trigger: Trigger) -> list[FactDraft]:
    """"I'm ..." opens many facts; the tastes-and-health reader speaks first because
    "I'm allergic" or "I'm a fan of" must not be read as a name or a job."""
    for reader in (pinned.AM_READER, identity.AM_READER):
        facts = reader(trigger)
        if facts is not None:
            return facts
    return []


RULES: dict[str, Rule] = {
    **identity.RULES,
    **pinned.RULES,
    "i_am": Rule([identity.AM_PATTERN], _i_am, reads_negation=True),
}


def _required_words(pattern: Sequence[dict[str, Any]]) -> list[frozenset[str]]:
    """For each token a match of `pattern` cannot do without, the words (LOWER or NORM
    values) it may be: a doc lacking every word of one of them cannot match."""
    required = []
    for token in pattern:
        if token.get("OP") in ("*", "?"):
            continue
        words: set[str] = set()
        for attribute in ("LOWER", "NORM"):
            spec = token.get(attribute)
            if isinstance(spec, str):
                words.add(spec)
            elif isinstance(spec, dict):
                words.update(spec.get("IN", ()))
        if words:
            required.append(frozenset(words))
    return required


@dataclass(frozen=True)
class _RuleMatcher:
    """One rule's patterns in a Matcher of their own, with what each pattern needs: most
    messages hold the words of few rules, and a Matcher's time grows with its patterns
    (one Matcher of every rule was half of the rules' time), so only the rules a message
    can match are run. Greedy LONGEST filters per rule, so the matches are the same."""

    name: str
    matcher: Matcher
    needs: list[list[frozenset[int]]]  # per pattern: word-id sets, one of each present

    def may_match(self, words: set[int]) -> bool:
        for pattern in self.needs:  # plain loops: this runs for every rule of every message
            for ids in pattern:
                if words.isdisjoint(ids):
                    break
            else:
                return True
        return False


def _build_matchers() -> list[_RuleMatcher]:
    from spacy.matcher import Matcher  # deferred: importing spaCy costs about a second

    vocab = pipeline().vocab
    built = []
    for name, rule in RULES.items():
        matcher = Matcher(vocab)
        matcher.add(name, list(rule.patterns), greedy="LONGEST")
        # The fewest words first: the rarest requirement usually rules a message out.
        needs = [sorted((frozenset(vocab.strings.add(w) for w in words)
                         for words in _required_words(pattern)), key=len)
                 for pattern in rule.patterns]
        built.append(_RuleMatcher(name, matcher, needs))
    return built


_MATCHERS = LazyResource(_build_matchers)


def _trigger_spans(doc: Doc) -> list[Span]:
    """Every rule's matches in `doc`, in order of appearance."""
    from spacy.attrs import LOWER, NORM

    # Word ids (string hashes) of every token's lower-case form and norm.
    words = cast("set[int]", set(doc.to_array([LOWER, NORM]).ravel().tolist()))
    spans = [span for rule in _MATCHERS.get() if rule.may_match(words)
             for span in rule.matcher(doc, as_spans=True)]
    return sorted(spans, key=lambda s: (s.start, s.end))


@dataclass(frozen=True)
class FoundFact:
    fact: FactDraft
    sentence: Span


def _clause_start(span: Span) -> int:
    index = span.start
    while index > span.sent.start and not span.doc[index - 1].is_punct:
        index -= 1
    return index


def _is_question(span: Span) -> bool:
    doc, sentence = span.doc, span.sent
    if doc[_clause_start(span)].lower_ in QUESTION_OPENERS:
        return True
    last = sentence[-1]
    if last.text != "?":
        return False
    # "I'm Alice, what's yours?": the question is a later clause, not this one.
    return not any(t.is_punct for t in doc[span.end:last.i])


def _usable(span: Span, rule: Rule, trigger: Trigger) -> bool:
    before = span.doc[span.sent.start:span.start]
    if any(t.lower_ in HEDGES for t in before) or inside_quotes(span[0]):
        return False
    if not rule.allows_questions and _is_question(span):
        return False
    return rule.reads_negation or not trigger.negated


def find_facts(doc: Doc, when: date | None) -> list[FoundFact]:
    """Every fact the user states in `doc`, in order of appearance, each content once."""
    found: list[FoundFact] = []
    seen: set[str] = set()
    for span in _trigger_spans(doc):
        rule = RULES[span.label_]
        trigger = Trigger(span, when)
        if not _usable(span, rule, trigger):
            continue
        for fact in rule.handler(trigger):
            if fact.content not in seen:
                seen.add(fact.content)
                found.append(FoundFact(fact, span.sent))
    return found


_THIRD_PERSON_SUBJECT = re.compile(r"^\s*(?:the\s+)?user(?P<possessive>'s)?\s+", re.IGNORECASE)
_KEPT_ADVERBS = words("no longer also still really now currently usually never not")
# The inverse of third_person for what follows the verb: a fact's "them" is the user
# ("User loves books that make them think").
_THIRD_TO_FIRST = {"them": "me", "their": "my", "theirs": "mine", "themselves": "myself"}
_THIRD_PERSON_OBJECT = re.compile(r"\b(them|their|theirs|themselves)\b", re.IGNORECASE)
_IRREGULAR = {"is": "am", "has": "have", "does": "do", "doesn't": "don't", "isn't": "am not"}


def _first_person_verb(verb: str) -> str:
    lowered = verb.lower()
    if lowered in _IRREGULAR:
        return _IRREGULAR[lowered]
    if lowered.endswith("ies") and len(lowered) > 4:
        return lowered[:-3] + "y"
    if lowered.endswith(("ches", "shes", "sses", "xes", "oes")):
        return lowered[:-2]
    if lowered.endswith("s") and not lowered.endswith("ss"):
        return lowered[:-1]
    return verb


def first_person(statement: str) -> str:
    """"User lives in Paris" -> "I live in Paris", "User's name is Al" -> "my name is Al":
    facts written about the user are read back with the grammar of the user's own words."""
    match = _THIRD_PERSON_SUBJECT.match(statement)
    if match is None:
        return statement
    rest = statement[match.end():]
    if match.group("possessive"):
        return f"my {rest}"
    words = rest.split(" ")
    index = 0
    while index < len(words) - 1 and words[index].lower() in _KEPT_ADVERBS:
        index += 1
    words[index] = _first_person_verb(words[index])
    rest = _THIRD_PERSON_OBJECT.sub(lambda m: _THIRD_TO_FIRST[m.group(0).lower()], " ".join(words))
    return "I " + rest


def slot_for_statement(statement: str) -> str | None:
    for found in find_facts(parse(first_person(statement)), None):
        return found.fact.slot
    return None

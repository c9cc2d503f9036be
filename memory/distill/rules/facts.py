"""Fact extraction by rules: one spaCy Matcher finds every rule's trigger words; triggers
inside questions, hypotheticals, quotes or reported speech are dropped; the rule's handler
reads the value that follows. Only first-person triggers exist ("I", "my", "we"), so
"my brother lives in Rome" never reaches the location rule."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory.distill.rules import identity, pinned
from mnemoproxy.memory.distill.rules.grammar import Rule, Trigger
from mnemoproxy.memory.distill.rules.lexicon import HEDGES, QUESTION_OPENERS, words
from mnemoproxy.memory.distill.rules.text import inside_quotes, parse, pipeline
from mnemoproxy.memory.models import FactDraft

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


def _build_matcher() -> Matcher:
    from spacy.matcher import Matcher  # deferred: importing spaCy costs about a second

    matcher = Matcher(pipeline().vocab)
    for name, rule in RULES.items():
        matcher.add(name, list(rule.patterns), greedy="LONGEST")
    return matcher


_MATCHER = LazyResource(_build_matcher)


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
    for span in sorted(_MATCHER.get()(doc, as_spans=True), key=lambda s: (s.start, s.end)):
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

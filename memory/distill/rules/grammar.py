"""The vocabulary the fact rules are written in: what a matched trigger knows about itself
(its negation, what follows it), Matcher pattern pieces, and FactDraft constructors."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from mnemoproxy.memory.distill.rules.lexicon import (
    ADVERBS,
    CONTEXT_WORDS,
    NEGATIONS,
    TRAILING_FILLERS,
    UNFINISHED_ENDS,
)
from mnemoproxy.memory.distill.rules.spans import is_clause_break
from mnemoproxy.memory.models import FactDraft

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

Pattern = list[dict[str, Any]]

I: dict[str, Any] = {"LOWER": "i"}  # noqa: E741 - the pronoun reads best as itself
I_OR_WE: dict[str, Any] = {"LOWER": {"IN": ["i", "we"]}}
MY: dict[str, Any] = {"LOWER": {"IN": ["my", "our"]}}
ADV: dict[str, Any] = {"LOWER": {"IN": ADVERBS}, "OP": "*"}
BE: dict[str, Any] = {"NORM": {"IN": ["am", "m"]}}


def word(*forms: str) -> dict[str, Any]:
    return {"LOWER": forms[0]} if len(forms) == 1 else {"LOWER": {"IN": list(forms)}}


@dataclass(frozen=True)
class Trigger:
    """The words a rule matched ("I 've been working at"); the value follows `end`."""

    span: Span
    when: date | None

    @property
    def end(self) -> int:
        return self.span.end

    def at(self, offset: int) -> Token | None:
        """The token `offset` places after the trigger, if still in the same sentence."""
        index = self.span.end + offset
        return self.span.doc[index] if index < self.span.sent.end else None

    def followed_by(self, *words: str) -> bool:
        return all(
            (token := self.at(i)) is not None and token.lower_ == w for i, w in enumerate(words)
        )

    @property
    def negated(self) -> bool:
        lowers = [t.lower_ for t in self.span]
        return any(w in NEGATIONS for w in lowers) or (
            "no" in lowers and "longer" not in lowers
        )

    @property
    def no_longer(self) -> bool:
        """"I no longer work at X", "I don't live in X anymore": an ended state."""
        lowers = [t.lower_ for t in self.span]
        if "no" in lowers and "longer" in lowers:
            return True
        return self.negated and any(t.lower_ == "anymore" for t in self.rest_of_clause())

    def rest_of_clause(self) -> Span:
        doc = self.span.doc
        end = self.span.end
        while end < self.span.sent.end and not (doc[end].is_punct and doc[end].text != "-"):
            end += 1
        return doc[self.span.end:end]


Handler = Callable[[Trigger], list[FactDraft]]


@dataclass(frozen=True)
class Rule:
    patterns: Sequence[Pattern]
    handler: Handler
    # Requests are often phrased as questions: "Can you remind me to call Bob tomorrow?"
    allows_questions: bool = False
    # Rules that read "not"/"no longer" themselves; other rules skip negated triggers.
    reads_negation: bool = False


_FIRST_TO_THIRD = {
    "my": "their", "our": "their", "me": "them", "us": "them", "myself": "themselves",
    "mine": "theirs", "i": "they", "we": "they",
}


def third_person(text: str) -> str:
    """A value spoken by the user, made to read from outside: "my kids" -> "their kids"."""
    return re.sub(
        r"\b(my|our|me|us|myself|mine|I|we)\b",
        lambda m: _FIRST_TO_THIRD[m.group(0).lower()],
        text,
        flags=re.IGNORECASE,
    )


def clean_value(span: Span) -> str:
    """A value's text without fillers at its end ("hiking a lot" -> "hiking")."""
    tokens = list(span)
    while tokens and (tokens[-1].lower_ in TRAILING_FILLERS or is_clause_break(tokens[-1])):
        tokens.pop()
    if not tokens:
        return ""
    return span.doc[tokens[0].i:tokens[-1].i + 1].text


def context_bound(value: str, *, addressed: bool = False) -> bool:
    """Whether a value, as the user said it, means something only beside the conversation
    it came from: "try it out", "the options you provided", "places like this", "each
    other", or a clause cut short ("go with the"). With `addressed`, a "you" right after
    the verb is whom an action is for ("send you the slides"), not context."""
    # "Pack-It Cubes" holds no "it" (the tokenizer's "Pack - It" included).
    hyphens_joined = re.sub(r"\s*-\s*", "-", value.lower())
    words = re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", hyphens_joined)
    if addressed and words[1:2] == ["you"]:
        del words[1]
    return (
        not words
        or words[-1] in UNFINISHED_ENDS
        or any(w in CONTEXT_WORDS for w in words)
        or any(a in {"each", "one"} and b in {"other", "another"}
               for a, b in pairwise(words))
    )


def identity(content: str, slot: str, salience: float) -> FactDraft:
    return FactDraft(content=content, kind="identity", salience=salience, slot=slot)


def pinned(
    content: str, slot: str | None, salience: float, tags: Sequence[str] = ()
) -> FactDraft:
    return FactDraft(content=content, kind="pinned", salience=salience, tags=list(tags),
                     slot=slot)


def still(trigger: Trigger, verb: str) -> str:
    """`verb` for a state that holds, "no longer <verb>" for one the user says has ended."""
    return f"no longer {verb}" if trigger.no_longer else verb

"""Token- and span-level helpers of the rule-based distiller: clause breaks, the phrase a
pattern's value runs to, names, quotes and slot keys, over documents parsed by
memory/text/parsing.py."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mnemoproxy.memory.distill.rules.lexicon import CLAUSE_BREAKS
from mnemoproxy.memory.text.parsing import MONTHS, WEEKDAYS

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

QUOTES = frozenset({'"', "“", "”", "«", "»"})


def _is_punct_break(token: Token) -> bool:
    """Punctuation ends a clause, except joining marks: "gluten-free", "AT&T". A dash with
    a space beside it ("again - even") is a break."""
    if token.text == "-":
        before = token.doc[token.i - 1] if token.i > 0 else None
        return bool(token.whitespace_) or (before is not None and bool(before.whitespace_))
    return token.is_punct and token.text not in {"&", "'"}


def is_clause_break(token: Token) -> bool:
    return _is_punct_break(token) or token.lower_ in CLAUSE_BREAKS


def phrase_after(
    doc: Doc, start: int, *, max_tokens: int = 8, breaks: frozenset[str] = CLAUSE_BREAKS
) -> Span | None:
    """The words from `start` up to the end of the clause, or None when the clause is longer
    than `max_tokens` (a long tail is rarely a clean value) or empty."""
    end = start
    sentence_end = doc[start].sent.end if start < len(doc) else start
    while end < sentence_end and not _is_punct_break(doc[end]) and doc[end].lower_ not in breaks:
        end += 1
    if end == start or end - start > max_tokens:
        return None
    return doc[start:end]


def is_name_like(token: Token) -> bool:
    """A capitalised word that could be a proper name (not "I", a weekday or a stop word)."""
    return (
        token.is_title
        and token.is_alpha
        and len(token) > 1
        and not token.is_stop
        and token.lower_ not in WEEKDAYS
        and token.lower_ not in MONTHS
    )


def proper_span(doc: Doc, start: int) -> Span | None:
    """Capitalised words from `start`, joined by "of"/"de"/"&" and one comma ("New York",
    "Bank of America", "Austin, Texas"); None when the word at `start` is not capitalised."""
    end = start
    sentence_end = doc[start].sent.end if start < len(doc) else start
    used_comma = False
    while end < sentence_end:
        token = doc[end]
        if token.is_title or (token.is_upper and len(token) > 1 and token.is_alpha):
            end += 1
            continue
        if token.lower_ == "'s" and end > start and not doc[end - 1].whitespace_:
            end += 1  # "St Mary's", "McDonald's"
            continue
        nxt = doc[end + 1] if end + 1 < sentence_end else None
        # "Austin, Texas" but not "Chicago, I'm open to ...".
        joins_names = nxt is not None and nxt.is_title and nxt.lower_ != "i" and end > start
        if joins_names and token.lower_ in {"of", "de", "del", "la", "upon", "&"}:
            end += 1
        elif joins_names and token.text == "," and not used_comma:
            used_comma = True
            end += 1
        else:
            break
    if end == start or doc[start].is_stop:
        return None
    return doc[start:end]


def mostly_title_case(sentence: Span, apart_from: Span) -> bool:
    """Headline-style text capitalises every word, so capitals say nothing about names.
    Judged on the words other than `apart_from` (the name itself), the sentence's first
    word and "I", which are capitalised in any sentence: "My name is Dana Whitfield" is
    not a headline, "My Name Is Earl" is."""
    words = [t for t in sentence[1:] if t.is_alpha and t.text != "I"
             and not apart_from.start <= t.i < apart_from.end]
    return len(words) >= 2 and sum(t.is_title for t in words) * 2 > len(words)


def inside_quotes(token: Token) -> bool:
    sentence = token.sent
    opened = sum(1 for t in doc_slice(sentence, token.i) if t.text in QUOTES)
    return opened % 2 == 1


def doc_slice(sentence: Span, end: int) -> Span:
    """The part of `sentence` before the token index `end`."""
    return sentence.doc[sentence.start:end]


def singular(word: str) -> str:
    """A crude singular, only for building slot keys ("peanuts" and "peanut" share a slot)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def slot_key(text: str) -> str:
    """A value turned into a slot suffix: lower case, no articles, singular last word."""
    words = [w for w in re.findall(r"[\w'-]+", text.lower()) if w not in {"a", "an", "the"}]
    if words:
        words[-1] = singular(words[-1])
    return " ".join(words)

"""Turning free text into a safe FTS5 query.

Every term is quoted, so whatever the user typed (quotes, *, NEAR, AND/OR/NOT, brackets,
column filters with colons) is matched as plain words, never parsed as FTS syntax. Terms
are OR-ed: BM25 then ranks documents by how many rare query words they contain. Terms
so common that scoring all their matches would cost more than they tell are left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

from mnemoproxy.memory.text.segments import has_unspaced, unspaced_terms
from mnemoproxy.memory.text.words import STOP_WORDS

# Past this many distinct terms a query is a pasted document, not a question; the first
# terms carry the intent and keep the FTS query cheap.
MAX_TERMS = 48
# BM25 scores every document matching any term (FTS5 cannot stop early), at 1-3 us a
# document, so a term found in more documents than this is left out when the query has
# rarer ones (see affordable_terms); when it has not, the documents holding
# every term are scored, or else the latest matches (store/retrieval.py, bm25_candidates).
# Ranking is exact while no query term matches more documents than this.
MATCH_BUDGET = 500
# The terms of one query together may match this many times a term's budget: a budget on
# the sum alone dropped informative terms in mid-sized stores.
TOTAL_BUDGETS = 2
_WORD = re.compile(r"\w+")
# Pairs are read within a clause: "the code, gate 4" pairs nothing across the comma.
_CLAUSE_BREAK = re.compile(r"[^\w\s']+")
MAX_PAIRS = 8

# Casual spellings chat uses for words a question spells out, and back: "my gf and I" answers
# "what did he do with his girlfriend?". Each side also finds the other.
_CASUAL = (
    "girlfriend gf", "boyfriend bf", "mother mom mum", "father dad", "favorite fave fav",
    "favourite fave fav", "picture pic", "pictures pics", "photo pic", "photos pics",
    "puppy pup", "family fam", "video vid", "videos vids", "conversation convo",
    "birthday bday", "kids kiddos", "grandmother grandma", "grandfather grandpa",
)
VARIANTS: dict[str, tuple[str, ...]] = {}
for _group in _CASUAL:
    _forms = _group.split()
    for _form in _forms:
        VARIANTS[_form] = tuple(dict.fromkeys(
            [*VARIANTS.get(_form, ()), *(f for f in _forms if f != _form)]))


def query_terms(text: str) -> list[str]:
    """The distinct lower-cased words of `text`, stop-words dropped unless nothing else is
    left (a query made only of stop-words still deserves an answer), each followed by its
    casual or spelled-out variants."""
    words = list(dict.fromkeys(
        term for word in _WORD.findall(text.lower())
        for term in (unspaced_terms(word) if has_unspaced(word) else (word,))
    ))
    content = [word for word in words if word not in STOP_WORDS] or words
    expanded = [form for word in content for form in (word, *VARIANTS.get(word, ()))]
    return list(dict.fromkeys(expanded))[:MAX_TERMS]


def word_pairs(text: str) -> list[str]:
    """Each two neighbouring content words of `text` within a clause, as a phrase ("gate
    code", "sleep study"): held verbatim, a pair names a thing where each word alone is
    everyday. Words of unspaced scripts are paired already (see query_terms); at most
    MAX_PAIRS, the first."""
    pairs: list[str] = []
    for clause in _CLAUSE_BREAK.split(text.lower()):
        words = clause.split()
        for first, second in pairwise(words):
            if (first not in STOP_WORDS and second not in STOP_WORDS
                    and first.isalpha() and second.isalpha()
                    and not (has_unspaced(first) or has_unspaced(second))):
                pairs.append(f"{first} {second}")
    return list(dict.fromkeys(pairs))[:MAX_PAIRS]


def quoted(term: str) -> str:
    """A term as an FTS5 string (a phrase when it holds a space: two characters of an
    unspaced script): \\w+ never yields a double quote, so nothing to escape."""
    return f'"{term}"'


def affordable_terms(terms: Sequence[str], counts: Sequence[int], budget: int) -> list[str]:
    """The terms worth scoring, in query order: rarest first, each matching at most
    `budget` documents and all of them together at most TOTAL_BUDGETS x `budget`; the
    rarest term found at all is always kept, however common (where counts stop just past
    the budget, those past it tie and the query's first of them is kept).

    A term dropped here is one of the most common in the store, so its IDF is the lowest
    of the query's terms: the ranking loses the least information where it saves the
    most work."""
    found = sorted((count, n) for n, count in enumerate(counts) if count > 0)
    chosen: set[int] = set()
    total = 0
    for count, n in found:
        if chosen and (count > budget or total + count > TOTAL_BUDGETS * budget):
            break
        chosen.add(n)
        total += count
    return [term for n, term in enumerate(terms) if n in chosen]

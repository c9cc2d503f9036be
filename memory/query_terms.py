"""Turning free text into a safe FTS5 query.

Every term is quoted, so whatever the user typed (quotes, *, NEAR, AND/OR/NOT, brackets,
column filters with colons) is matched as plain words, never parsed as FTS syntax. Terms
are OR-ed: BM25 then ranks documents by how many rare query words they contain.
"""

from __future__ import annotations

import re

# Past this many distinct terms a query is a pasted document, not a question; the first
# terms carry the intent and keep the FTS query cheap.
MAX_TERMS = 48
_WORD = re.compile(r"\w+")

# Function words that match nearly every message: dropping them cuts BM25 noise and the
# cost of the OR query (see tests/benchmarks/bench_retrieval.py for the measurement).
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don did didn doesn isn wasn ll ve re d m
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


def query_terms(text: str) -> list[str]:
    """The distinct lower-cased words of `text`, stop-words dropped unless nothing else is
    left (a query made only of stop-words still deserves an answer)."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))
    content = [word for word in words if word not in STOP_WORDS]
    return (content or words)[:MAX_TERMS]


def fts_match_expression(terms: list[str], *, all_terms: bool = False) -> str | None:
    """An FTS5 MATCH expression OR-ing (or AND-ing) the quoted terms; None if there are none."""
    if not terms:
        return None
    # \w+ never yields a double quote, so quoting needs no escaping.
    return (" AND " if all_terms else " OR ").join(f'"{term}"' for term in terms)

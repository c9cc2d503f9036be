"""Full-text search on PostgreSQL: what SQLite's FTS5 and its bm25() do, over the tsvector
column each searchable table keeps (pg_schema.py).

PostgreSQL's ranking functions know no document frequencies, so the ranking adds them: each
query term found in a document counts its IDF among the agent's own rows (BM25's), times how
often the document says it (ts_rank_cd over the term alone: its occurrences, divided by
1 + log of the document's length, then saturating as BM25's term frequency does). The
work is bounded the way FTS5's is (memory/search/query_terms.py): terms are counted no further
than the match budget, only the affordable ones are scored, and when each is too common,
the documents holding them all or else only the latest matches are.
Counting and scoring are per agent: a neighbour's rows never change an agent's ranking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mnemoproxy.memory.search.query_terms import affordable_terms
from mnemoproxy.memory.store.postgres.schema import TEXT_SEARCH_CONFIG

# ts_rank_cd normalisation: divided by 1 + log(document length) (1), then rank / (rank + 1) (32).
_NORMALISATION = 1 | 32


def term_query(placeholder: str = "?") -> str:
    """The tsquery of one term (a word, stemmed as the documents are; or two characters
    of an unspaced script, side by side)."""
    return f"phraseto_tsquery('{TEXT_SEARCH_CONFIG}', {placeholder})"


def any_term(count: int) -> str:
    """The tsquery matching any of `count` terms (each a parameter)."""
    return "(" + " || ".join([term_query()] * count) + ")"


def every_term(count: int) -> str:
    """The tsquery matching all of `count` terms (each a parameter)."""
    return "(" + " && ".join([term_query()] * count) + ")"


def capped_counts(
    conn: Any, table: str, agent_id: str, terms: Sequence[str], cap: int
) -> list[int]:
    counter = (f"(SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE agent_id = ? "
               f"AND fts @@ {term_query()} LIMIT ?) AS matches)")
    row = conn.execute(
        "SELECT " + ", ".join([counter] * len(terms)),
        [value for term in terms for value in (agent_id, term, cap)],
    ).fetchone()
    return [int(count) for count in row]


def ranking(
    conn: Any,
    *,
    table: str,
    agent_id: str,
    terms: Sequence[str],
    visible: str,
    time_column: str,
    since: float | None,
    limit: int,
    match_budget: int,
    agent_rows: int,
) -> list[tuple[int, float]]:
    """(id, score; higher is better) of the agent's best `limit` visible rows of `table`
    matching any of `terms` (`agent_rows`: how many rows the agent has there, for IDF)."""
    counts = capped_counts(conn, table, agent_id, terms, match_budget + 1)
    chosen = affordable_terms(terms, counts, match_budget)
    if not chosen:
        return []
    count_of = dict(zip(terms, counts, strict=True))
    total = max(agent_rows, max(counts))

    def scored(match_terms: Sequence[str], together: bool, latest: bool) -> list[tuple[int, float]]:
        """The ranking over the rows matching any (all, `together`) of `match_terms`, or,
        `latest`, over the agent's latest `match_budget` of them only (one statement)."""
        weights = [math.log(1 + (total - count_of[t] + 0.5) / (count_of[t] + 0.5))
                   for t in match_terms]
        score = " + ".join(f"? * ts_rank_cd(fts, {term_query()}, {_NORMALISATION})"
                           for _ in match_terms)
        matching = f"fts @@ {(every_term if together else any_term)(len(match_terms))}"
        if latest:
            conditions = (f"id IN (SELECT id FROM {table} WHERE agent_id = ? AND {matching} "
                          f"ORDER BY id DESC LIMIT ?) AND {visible}")
            params: list[Any] = [agent_id, *match_terms, match_budget]
        else:
            conditions = f"agent_id = ? AND {visible} AND {matching}"
            params = [agent_id, *match_terms]
        if since is not None:
            conditions += f" AND {time_column} >= ?"
            params.append(since)
        found = conn.execute(
            f"SELECT id, {score} FROM {table} WHERE {conditions} "
            "ORDER BY 2 DESC, id DESC LIMIT ?",
            [*(v for pair in zip(weights, match_terms, strict=True) for v in pair),
             *params, limit],
        )
        return [(int(row[0]), float(row[1])) for row in found]

    if max(count_of[term] for term in chosen) <= match_budget:
        return scored(chosen, False, False)
    # Every term of the query too common to score everywhere: the documents holding all of
    # them, when there are any and few enough; else only the agent's latest matches.
    found_terms = [term for term in terms if count_of[term]]
    if len(found_terms) > 1:
        both = conn.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE agent_id = ? "
            f"AND fts @@ {every_term(len(found_terms))} LIMIT ?) AS matches",
            [agent_id, *found_terms, match_budget + 1]).fetchone()[0]
        if 0 < both <= match_budget:
            return scored(found_terms, True, False)
        if both:
            return scored(found_terms, True, True)
    return scored(chosen[:1], False, True)


# Whether any of an agent's messages says a name (its words in order): (agent, name).
MENTIONED = (f"SELECT 1 FROM transcript WHERE agent_id = ? AND fts @@ "
             f"phraseto_tsquery('{TEXT_SEARCH_CONFIG}', ?) LIMIT 1")

"""Hybrid search: the one retrieval behind the planner, the API and the benchmarks.

BM25 candidates from FTS5 (any of the query's affordable terms, per item type; see
query_terms.MATCH_BUDGET) and nearest neighbours from the agent's usearch index are each
normalised over their candidate pool and blended; optional recency decay and MMR
re-ranking follow. Every item is re-read from SQLite with the agent, kind, time window
and "current fact" filters, so nothing another agent owns, superseded or deleted can be
returned, whatever the vector index holds.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mnemoproxy.errors import InvalidArgument
from mnemoproxy.memory.embedders import Embedder
from mnemoproxy.memory.models import KINDS, Kind
from mnemoproxy.memory.search.common_terms import CommonTerms, names_among, without
from mnemoproxy.memory.search.periods import Period
from mnemoproxy.memory.search.query_terms import MATCH_BUDGET, query_terms
from mnemoproxy.memory.search.vectors import VectorIndexes
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.db import require_agent
from mnemoproxy.memory.store.knowledge.retrieval import StoredItem
from mnemoproxy.memory.store.records import ItemType, item_type_of
from mnemoproxy.memory.text.words import content_words

log = logging.getLogger(__name__)

MAX_TOP_K = 200
# The embedder sees at most this much of a query; longer input is a pasted document.
MAX_EMBED_CHARS = 2000
SECONDS_PER_DAY = 86_400.0
# With recency on, a score is scaled between (1 - weight) for very old items and 1 for new
# ones: age breaks near-ties but cannot bury a strong old match.
RECENCY_WEIGHT = 0.5
DEFAULT_MMR_LAMBDA: float | None = None
FETCH_MARGIN = 10
# A conversation that matches in several places lifts its other lines by this share of
# its best other score: the answer often shares no word with the question.
SESSION_LIFT = 0.3
# A message is also judged by the ones said just before and after it: an answer ("they
# make me feel calm") sits next to the line that names its subject ("do you like having
# turtles?"). The neighbours of the best NEIGHBOUR_SOURCES messages become candidates (a
# neighbour found by neither half starts at 0, and its session lifts it like any
# candidate), and each such pair lends NEIGHBOUR_LIFT of its score to the other. The read
# path asks for this (`neighbours=True`); a plain search returns matches only.
NEIGHBOUR_LIFT = 0.1
NEIGHBOUR_SOURCES = 20
# A fact that says where it was said (fact_sources) and that turn's message that says it best
# are one piece of evidence: each is lifted to FACT_LIFT of the other's score where that
# beats its own. The best FACT_SOURCES facts and messages are paired.
FACT_LIFT = 1.0
FACT_SOURCES = 20
# A name most of the agent's memory says ("When did Melanie go to the park?" in a history
# of Melanie's conversations) is taken out of the search (common_terms.py), yet the question
# is about that person: an item that names them gains NAME_LIFT (more would make the name a
# filter). A line that only speaks *to* the person ("Thanks, Caroline!") is not about them
# and gains nothing (`_naming`), so a reply that greets the user by name is not lifted.
NAME_LIFT = 0.4
# A question that names a time ("on May 3, 2023", "last weekend", "two weeks ago";
# memory/search/periods.py) lifts what was said in that period.
PERIOD_LIFT = 0.3

@dataclass(frozen=True)
class Fusion:
    """How candidates are found and BM25 and vector scores combined (benchmarks vary it;
    callers keep the defaults)."""

    # Vectors carry a little more than words once common words are out of both halves
    # (docs/results/tuning.md has the sweep).
    vector_weight: float = 0.55  # 0: BM25 only; 1: vectors only
    pool: int = 100  # candidates taken from each source before fusing
    match_budget: int = MATCH_BUDGET

    def __post_init__(self) -> None:
        if not 0.0 <= self.vector_weight <= 1.0:
            raise InvalidArgument("vector_weight must be between 0 and 1")
        if self.match_budget < 1:
            raise InvalidArgument("match_budget must be at least 1")


DEFAULT_FUSION = Fusion()
BM25_ONLY = Fusion(vector_weight=0.0)


@dataclass
class SearchResult:
    kind: Kind
    item_id: int
    text: str
    score: float
    components: dict[str, float]
    provenance: dict[str, Any] = field(default_factory=dict)
    at: float | None = None


class Retriever:
    """Hybrid search over one store, its vector indexes and the embedder that filled them."""

    def __init__(self, store: Store, vectors: VectorIndexes, embedder: Embedder) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.common_terms = CommonTerms(store)

    async def search(
        self,
        agent_id: str,
        query: str,
        *,
        kinds: Collection[Kind] | None = None,
        top_k: int = 10,
        days: float | None = None,
        now: float | None = None,
        recency_half_life_days: float | None = None,
        mmr_lambda: float | None = DEFAULT_MMR_LAMBDA,
        fusion: Fusion = DEFAULT_FUSION,
        neighbours: bool = False,
        period: Period | None = None,
    ) -> list[SearchResult]:
        """The agent's items of `kinds` (all when None) best matching `query`, best first;
        [] for a blank query. With `neighbours`, the messages said around the best ones
        compete too (NEIGHBOUR_LIFT): what a block needs, not what a search asks for.
        Items said within `period` gain PERIOD_LIFT.

        Raises InvalidArgument for arguments a caller must fix (kinds, top_k, days, ...)."""
        _validate(agent_id, query, kinds, top_k, days, recency_half_life_days, mmr_lambda)
        text = query.strip()
        if not text:
            return []
        wanted = frozenset(KINDS if kinds is None else kinds)
        now = time.time() if now is None else now
        since = None if days is None else now - days * SECONDS_PER_DAY
        item_types = tuple(dict.fromkeys(item_type_of(kind) for kind in KINDS if kind in wanted))
        pool = max(fusion.pool, top_k)

        # Words most of the agent's memory says match everything: both halves look past them.
        common = await self.common_words(agent_id)
        telling = without(text, common)
        names = names_among(text, common)
        # The query embedding (a thread) and the FTS queries (the reader's thread) overlap.
        bm25, vector = await asyncio.gather(
            self._bm25_scores(agent_id, telling, item_types, since, pool, fusion),
            self._vector_scores(agent_id, telling, item_types, pool, fusion),
        )
        fused = _blend(bm25, vector, fusion.vector_weight)
        # Only the weakest vector-only candidate scores exactly 0: not worth returning.
        ranked = sorted((k for k in fused if fused[k] > 0), key=fused.__getitem__, reverse=True)
        # The re-read drops items that are deleted, superseded, of another kind or outside
        # the window: read a little more than asked, and the rest of the slack only when
        # that was not enough (or all of it at once when recency or MMR will reorder).
        ranked = ranked[: max(top_k * 5, 20)]
        # A name lifts items from anywhere in the ranking: read them all.
        reranked = recency_half_life_days is not None or mmr_lambda is not None or bool(names)
        first = len(ranked) if reranked else top_k + FETCH_MARGIN
        items = await self._fetch(agent_id, ranked[:first], since, wanted)
        if len(items) < top_k and len(ranked) > first:
            items.update(await self._fetch(agent_id, ranked[first:], since, wanted))

        reading = neighbours and "transcript" in wanted
        adjacent = await self._neighbours(agent_id, ranked, items, fused, since) if (
            reading) else {}
        drawn = await self._drawn_from(agent_id, ranked, items, fused, since) if (
            reading) else {}
        if adjacent or drawn:
            known = set(ranked)
            ranked += [key for key in items if key not in known]
        lifts = _session_lifts(items, fused)
        borrowed = _neighbour_lifts(adjacent, fused)
        by_facts = _fact_lifts(drawn, fused)
        facts_of: dict[tuple[ItemType, int], list[int]] = {}
        for fact_key, message_key in drawn.items():
            facts_of.setdefault(message_key, []).append(fact_key[1])
        naming = _naming(names)
        results = []
        for key in ranked:
            item = items.get(key)
            if item is None:
                continue
            components = {"bm25": bm25.get(key, 0.0), "vector": vector.get(key, 0.0),
                          "fused": fused[key]}
            score = fused[key]
            if lifts.get(key):
                components["session"] = lifts[key]
                score += lifts[key]
            if borrowed.get(key):
                components["neighbour"] = borrowed[key]
                score += borrowed[key]
            if by_facts.get(key):
                components["fact"] = by_facts[key]
                score += by_facts[key]
            if key in drawn or key in facts_of:
                item = _with_provenance(item, drawn.get(key), facts_of.get(key))
            if naming is not None and naming(item.text):
                components["name"] = NAME_LIFT
                score += NAME_LIFT
            if period is not None and period.holds(item.at):
                components["period"] = PERIOD_LIFT
                score += PERIOD_LIFT
            if recency_half_life_days is not None and item.at is not None:
                age_days = max(0.0, now - item.at) / SECONDS_PER_DAY
                decay = 0.5 ** (age_days / recency_half_life_days)
                components["recency"] = decay
                score *= 1.0 - RECENCY_WEIGHT + RECENCY_WEIGHT * decay
            results.append(_result(item, score, components))
        results.sort(key=lambda result: result.score, reverse=True)
        if mmr_lambda is not None and len(results) > 1:
            return await self._mmr(agent_id, results, top_k, mmr_lambda)
        return results[:top_k]

    async def common_words(self, agent_id: str) -> frozenset[str]:
        return await self.common_terms.of(agent_id, await self.vectors.size(agent_id))

    async def _neighbours(
        self,
        agent_id: str,
        ranked: list[tuple[ItemType, int]],
        items: dict[tuple[ItemType, int], StoredItem],
        fused: dict[tuple[ItemType, int], float],
        since: float | None,
    ) -> dict[int, list[int]]:
        """The messages said just before and after each of the best NEIGHBOUR_SOURCES
        messages (their ids by the source's id). They join `items`, and `fused` with a
        score of 0 where they were no candidate: a neighbour is worth what it borrows."""
        if NEIGHBOUR_LIFT <= 0.0:
            return {}
        sources = [i for t, i in ranked if t == "transcript" and (t, i) in items]
        adjacent = await self.store.adjacent_messages(
            agent_id, sources[:NEIGHBOUR_SOURCES], since=since
        )
        for near in adjacent.values():
            for message in near:
                key: tuple[ItemType, int] = ("transcript", message.item_id)
                items.setdefault(key, message)
                fused.setdefault(key, 0.0)
        return {source: [m.item_id for m in near] for source, near in adjacent.items()}

    async def _drawn_from(
        self,
        agent_id: str,
        ranked: list[tuple[ItemType, int]],
        items: dict[tuple[ItemType, int], StoredItem],
        fused: dict[tuple[ItemType, int], float],
        since: float | None,
    ) -> dict[tuple[ItemType, int], tuple[ItemType, int]]:
        """Facts that know where they were said, each with the message of its source
        turns that says it best (by the words they share): for the best FACT_SOURCES facts
        and the facts drawn from the best FACT_SOURCES messages. Those facts and messages
        join `items`, and `fused` with a score of 0 where they were no candidate."""
        best = [key for key in ranked if key in items]
        facts = [i for t, i in best if t == "fact" and items[(t, i)].kind == "pinned"]
        messages = [i for t, i in best if t == "transcript"][:FACT_SOURCES]
        facts = list(dict.fromkeys([
            *facts[:FACT_SOURCES], *await self.store.facts_drawn_from(agent_id, messages)]))
        missing: list[tuple[ItemType, int]] = [
            ("fact", i) for i in facts if ("fact", i) not in items]
        if missing:
            items.update(await self._fetch(agent_id, missing, since, frozenset({"pinned"})))
        sources = await self.store.fact_source_messages(
            agent_id, [i for i in facts if ("fact", i) in items], since=since)
        drawn: dict[tuple[ItemType, int], tuple[ItemType, int]] = {}
        for fact_id, said in sources.items():
            fact_key: tuple[ItemType, int] = ("fact", fact_id)
            wanted = content_words(items[fact_key].text)
            message = max(said, key=lambda m: len(wanted & content_words(m.text)))
            key: tuple[ItemType, int] = ("transcript", message.item_id)
            items.setdefault(key, message)
            fused.setdefault(key, 0.0)
            fused.setdefault(fact_key, 0.0)
            drawn[fact_key] = key
        return drawn

    async def _fetch(
        self,
        agent_id: str,
        keys: list[tuple[ItemType, int]],
        since: float | None,
        kinds: frozenset[Kind],
    ) -> dict[tuple[ItemType, int], StoredItem]:
        found = await self.store.fetch_items(agent_id, keys, since=since)
        return {key: item for key, item in found.items() if item.kind in kinds}

    async def _bm25_scores(
        self,
        agent_id: str,
        text: str,
        item_types: tuple[ItemType, ...],
        since: float | None,
        pool: int,
        fusion: Fusion,
    ) -> dict[tuple[ItemType, int], float]:
        terms = query_terms(text)
        if not terms or fusion.vector_weight >= 1.0:
            return {}
        hits = await self.store.bm25_candidates(
            agent_id, terms, item_types, since=since, limit=pool, match_budget=fusion.match_budget
        )
        return {(item_type, item_id): score for item_type, item_id, score in hits}

    async def _vector_scores(
        self,
        agent_id: str,
        text: str,
        item_types: tuple[ItemType, ...],
        pool: int,
        fusion: Fusion,
    ) -> dict[tuple[ItemType, int], float]:
        if fusion.vector_weight <= 0.0:
            return {}
        try:
            query_vector = await self.embedder.embed([text[:MAX_EMBED_CHARS]])
        except Exception:
            # A broken embedder (e.g. an unreachable endpoint) costs the vector half, not
            # the search: BM25 results still come back.
            log.exception("query embedding failed; searching by text only")
            return {}
        query = np.asarray(query_vector[0], dtype=np.float32)
        if "transcript" not in item_types:
            return await self._exact_vector_scores(agent_id, query, item_types, pool)
        # One index holds every item type, transcript messages nearly all of it: a
        # transcript search loses only a few of its `pool` neighbours to the other types.
        hits = await self.vectors.search(agent_id, query, pool)
        return {(t, i): similarity for t, i, similarity in hits if t in item_types}

    async def _exact_vector_scores(
        self,
        agent_id: str,
        query: np.ndarray,
        item_types: tuple[ItemType, ...],
        pool: int,
    ) -> dict[tuple[ItemType, int], float]:
        """Cosine similarity to each of the agent's vectors of `item_types`, the best `pool`.
        For facts and episodes: a few percent of an agent's items, so the index's nearest
        neighbours of every type would hold few of them, and their own vectors number a few
        thousand at most."""
        keys, matrix = await self.store.embedding_matrix(agent_id, self.embedder.name, item_types)
        if not keys:
            return {}
        norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(query))
        similarities = matrix @ query / np.maximum(norms, 1e-12)
        best = np.argsort(-similarities)[:pool]
        return {keys[n]: float(similarities[n]) for n in best}

    async def _mmr(
        self, agent_id: str, results: list[SearchResult], top_k: int, lam: float
    ) -> list[SearchResult]:
        """Maximal marginal relevance: trade a little relevance for not repeating oneself.
        Items without a vector yet count as unlike everything."""
        rows = await self.store.embedding_rows(
            agent_id, self.embedder.name, [result_key(r) for r in results]
        )
        vectors = {(t, i): vector for t, i, vector in rows}
        best = results[0].score or 1.0
        chosen: list[SearchResult] = []
        remaining = list(results)
        while remaining and len(chosen) < top_k:
            def marginal(candidate: SearchResult) -> float:
                mine = vectors.get(result_key(candidate))
                redundancy = max(
                    (float(mine @ theirs) for other in chosen
                     if mine is not None
                     and (theirs := vectors.get(result_key(other))) is not None),
                    default=0.0,
                )
                return lam * candidate.score / best - (1.0 - lam) * redundancy

            pick = max(remaining, key=marginal)
            remaining.remove(pick)
            chosen.append(pick)
        return chosen


def _session_lifts(
    items: dict[tuple[ItemType, int], StoredItem], fused: dict[tuple[ItemType, int], float]
) -> dict[tuple[ItemType, int], float]:
    """What each item gains from its conversation: SESSION_LIFT times the best score of
    another candidate from the same session. A session that matches the question in
    several places is likelier to hold the answer than one stray line that shares a word."""
    by_session: dict[Any, list[tuple[float, tuple[ItemType, int]]]] = {}
    for key, item in items.items():
        session = item.provenance.get("session_id")
        if session is not None:
            by_session.setdefault(session, []).append((fused[key], key))
    lifts: dict[tuple[ItemType, int], float] = {}
    for members in by_session.values():
        if len(members) < 2:
            continue
        members.sort(reverse=True)
        (best, best_key), (second, _) = members[0], members[1]
        for _, key in members:
            lifts[key] = SESSION_LIFT * (second if key == best_key else best)
    return lifts


def _neighbour_lifts(
    neighbours: dict[int, list[int]], fused: dict[tuple[ItemType, int], float]
) -> dict[tuple[ItemType, int], float]:
    """What each message gains from the messages beside it: NEIGHBOUR_LIFT times the best
    score of a neighbour (`neighbours`: message id -> the ids said just before and after
    it, for the best messages; every id scored in `fused`)."""
    lifts: dict[tuple[ItemType, int], float] = {}
    for source, near in neighbours.items():
        source_key: tuple[ItemType, int] = ("transcript", source)
        for neighbour in near:
            neighbour_key: tuple[ItemType, int] = ("transcript", neighbour)
            for to, lender in ((neighbour_key, source_key), (source_key, neighbour_key)):
                lift = NEIGHBOUR_LIFT * fused[lender]
                if lift > lifts.get(to, 0.0):
                    lifts[to] = lift
    return lifts


def _fact_lifts(
    drawn: dict[tuple[ItemType, int], tuple[ItemType, int]],
    fused: dict[tuple[ItemType, int], float],
) -> dict[tuple[ItemType, int], float]:
    """A fact and the message it was drawn from are one piece of evidence found by the words
    of either: each gains what brings it to FACT_LIFT times the other's score."""
    lifts: dict[tuple[ItemType, int], float] = {}
    for fact_key, message_key in drawn.items():
        for to, lender in ((message_key, fact_key), (fact_key, message_key)):
            lift = FACT_LIFT * fused[lender] - fused[to]
            if lift > lifts.get(to, 0.0):
                lifts[to] = lift
    return lifts


def _with_provenance(
    item: StoredItem, source: tuple[ItemType, int] | None, facts: list[int] | None
) -> StoredItem:
    """`item` with where a fact was said (`source_message`) or which facts a message
    states (`facts`) in its provenance: the block shows one of the two."""
    provenance = dict(item.provenance)
    if source is not None:
        provenance["source_message"] = source[1]
    if facts:
        provenance["facts"] = facts
    return replace(item, provenance=provenance)


def _naming(names: frozenset[str]) -> Callable[[str], bool] | None:
    """Whether a text names any of `names` as a whole word, written as the question writes
    it (a capitalised name, not the same word used in lower case), other than as the one
    addressed: a name set off by punctuation after the start of a sentence, a comma or one
    word ("Caroline, ...", "Thanks, Caroline!", "Wow Mel, ...") is who a line speaks to."""
    if not names or NAME_LIFT <= 0.0:
        return None
    named = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")\b")

    def mentions(text: str) -> bool:
        for found in named.finditer(text):
            start = found.start()
            before = text[max(0, start - _ADDRESS_REACH):start]
            opening = _OPENS_ADDRESS if start <= _ADDRESS_REACH else _OPENS_ADDRESS_INSIDE
            if not (_CLOSES_ADDRESS.match(text, found.end()) and opening.search(before)):
                return True
        return False

    return mentions


# What comes before and after a name spoken to: the start of the text or a punctuation
# mark, at most one word ("Wow Mel, ..."), and then a punctuation mark or the end.
_ADDRESS_REACH = 40  # characters looked back
_OPENS_ADDRESS = re.compile(r"(?:^|[,.!?;:…]\s*)(?:[^\W\d_]+\s+)?$")
_OPENS_ADDRESS_INSIDE = re.compile(r"[,.!?;:…]\s*(?:[^\W\d_]+\s+)?$")
_CLOSES_ADDRESS = re.compile(r"\s*(?:[,!?.…]|$)")


def result_key(result: SearchResult) -> tuple[ItemType, int]:
    """Where a result is stored: its table and id."""
    return item_type_of(result.kind), result.item_id


def _blend(
    bm25: dict[tuple[ItemType, int], float],
    vector: dict[tuple[ItemType, int], float],
    vector_weight: float,
) -> dict[tuple[ItemType, int], float]:
    """Weighted sum of BM25 scaled by its best score (so every text match stays above 0)
    and cosine similarity min-max scaled over the vector pool (raw cosines of one model
    bunch up in a narrow band); an item found by one source only gets 0 from the other."""
    best_bm25 = max(bm25.values(), default=1.0) or 1.0
    vector_norm = _min_max(vector)
    return {
        key: (1.0 - vector_weight) * bm25.get(key, 0.0) / best_bm25
        + vector_weight * vector_norm.get(key, 0.0)
        for key in bm25.keys() | vector.keys()
    }


def _min_max(scores: dict[tuple[ItemType, int], float]) -> dict[tuple[ItemType, int], float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def _result(item: StoredItem, score: float, components: dict[str, float]) -> SearchResult:
    return SearchResult(
        item.kind, item.item_id, item.text, score, components, item.provenance, item.at
    )


def _validate(
    agent_id: str,
    query: str,
    kinds: Collection[Kind] | None,
    top_k: int,
    days: float | None,
    half_life: float | None,
    mmr_lambda: float | None,
) -> None:
    require_agent(agent_id)
    if not isinstance(query, str):
        raise InvalidArgument("query must be a string", param="query")
    if kinds is not None and (not kinds or any(kind not in KINDS for kind in kinds)):
        raise InvalidArgument(
            f"kinds must be some of {', '.join(KINDS)}, or left out for all", param="kinds"
        )
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise InvalidArgument(f"top_k must be an integer from 1 to {MAX_TOP_K}", param="top_k")
    for name, value in (("days", days), ("recency_half_life_days", half_life)):
        if value is not None and not (
            isinstance(value, int | float) and math.isfinite(value) and value > 0
        ):
            raise InvalidArgument(f"{name} must be a positive number of days", param=name)
    if mmr_lambda is not None and not 0.0 <= mmr_lambda <= 1.0:
        raise InvalidArgument("mmr_lambda must be between 0 and 1", param="mmr_lambda")

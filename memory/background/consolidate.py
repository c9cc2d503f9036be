"""Consolidation: the pass (scheduled, or on demand) that keeps each agent's memory lean.

One pass works on one agent at a time, in this order; each step is one short write
transaction (the chat path's inserts never wait long) and is idempotent on its own:

1. Promote. A current pinned fact restated in at least PROMOTE_MIN_SOURCES sessions
   (source_count) gains PROMOTION_BOOST salience, capped at 1.0, once: `promoted_at`
   records the promotion and later passes leave the fact alone.
2. Decay and evict. A fact's effective salience is
       salience * 0.5 ** (days since its base time / half-life)
   where the base time is its latest sign of life, max(created_at, updated_at, last_used):
   storing it (an old history imported today is new to memory), a restatement (which only
   ever moves updated_at forward) or being surfaced. It is computed from the
   stored salience at each pass and never written back, so passes do not compound.
   Pinned facts have a half-life of PINNED_HALF_LIFE_DAYS; confirmed ones (source_count >=
   CONFIRMED_SOURCES or use_count >= CONFIRMED_USES) decay at half that speed; identity
   facts do not decay. Current pinned facts whose effective salience is below
   `salience_floor` are soft-deleted (deleted_at): no read returns them any more.
3. Prune. Episodes whose session ended, whose storage and whose last use are all more
   than `episode_retention_days` ago are soft-deleted: retention counts from when memory
   got or last used an episode, so importing an old history does not prune it at once.
   The verbatim transcript is left alone: it is the record memory was distilled from,
   and transcript search still reaches old conversations.
4. Merge. Among the remaining episodes, taken in the order they happened, one whose
   summary is a near-duplicate of an episode kept so far (Jaccard >= 0.8 of their
   normalised word sets) is folded into the earliest such episode (union of topics,
   entities, decisions and action items; highest salience; summed use counts; widest
   time span) and soft-deleted. Kept episodes are never near-duplicates of each other,
   so a second pass finds nothing to merge.

What a pass changed is written to the processing log as one "consolidated" event per
agent, with the ids (and, for evicted facts, the content and decayed salience); a pass
that changes nothing writes nothing, so running twice at the same `now` leaves the
second run without effect. Agents never mix: every statement names one agent.

Cost: steps 1-3 are one UPDATE each over the agent's rows; step 4 reads the summaries
once and finds near-duplicates with an exact prefix filter (in a worker thread) instead
of comparing every pair (tests/benchmarks/memory/bench_consolidate.py measures a pass).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from mnemoproxy.errors import InvalidArgument
from mnemoproxy.memory.store.db import require_agent
from mnemoproxy.memory.write.facts import NEAR_DUPLICATE_JACCARD, normalise

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from mnemoproxy.memory.store import Store

SECONDS_PER_DAY = 86_400.0
PINNED_HALF_LIFE_DAYS = 90.0
CONFIRMED_SOURCES = 3
CONFIRMED_USES = 5
PROMOTE_MIN_SOURCES = 3
PROMOTION_BOOST = 0.1
CONSOLIDATED_EVENT = "consolidated"


@dataclass
class ConsolidationReport:
    agents: int = 0
    facts_evicted: int = 0
    episodes_merged: int = 0  # episodes folded into another one (and deleted)
    episodes_pruned: int = 0
    facts_promoted: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def effective_salience(
    kind: str,
    salience: float,
    base_time: float,
    source_count: int,
    use_count: int,
    *,
    now: float,
) -> float:
    """A fact's salience as of `now`, decayed since `base_time` (its last reinforcement)."""
    if kind == "identity":
        return salience
    half_life = PINNED_HALF_LIFE_DAYS
    if source_count >= CONFIRMED_SOURCES or use_count >= CONFIRMED_USES:
        half_life *= 2
    age_days = max(0.0, now - base_time) / SECONDS_PER_DAY
    return float(salience * 0.5 ** (age_days / half_life))


def near_duplicate_groups(
    summaries: Sequence[tuple[int, str]], threshold: float = NEAR_DUPLICATE_JACCARD
) -> dict[int, list[int]]:
    """{kept id: [ids of its near-duplicates]} for (id, summary) pairs in the order the
    episodes happened: each summary joins the earliest kept one it near-duplicates, or
    is kept itself.

    Comparing every pair would be quadratic; this is the exact PPJoin filter instead.
    With each word set ordered rarest word first, two sets with Jaccard >= t share a word
    among the first |x| - ceil(t|x|) + 1 of each (the prefix), so only kept sets indexed
    under a word of the prefix are candidates, and a candidate whose shared words so far
    plus the words left after the match cannot reach the needed overlap is dropped."""
    word_sets = [(episode_id, normalise(text).split()) for episode_id, text in summaries]
    frequency = Counter(word for _, words in word_sets for word in set(words))
    kept: list[tuple[int, frozenset[str]]] = []  # (episode id, words), by rank
    # word -> (rank of a kept set with the word in its prefix, the word's position there)
    index: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
    groups: dict[int, list[int]] = {}
    for episode_id, words in word_sets:
        ordered = sorted(set(words), key=lambda word: (frequency[word], word))
        if not ordered:
            continue
        # A hair under t*|x| so float error can only lengthen the prefix, never miss a pair.
        prefix = ordered[: len(ordered) - math.ceil(threshold * len(ordered) - 1e-9) + 1]
        rank = _earliest_match(ordered, prefix, kept, index, threshold)
        if rank is not None:
            groups.setdefault(kept[rank][0], []).append(episode_id)
            continue
        for position, word in enumerate(prefix):
            index[word].append((len(kept), position))
        kept.append((episode_id, frozenset(ordered)))
    return groups


def _earliest_match(
    ordered: list[str],
    prefix: list[str],
    kept: list[tuple[int, frozenset[str]]],
    index: defaultdict[str, list[tuple[int, int]]],
    threshold: float,
) -> int | None:
    size = len(ordered)
    # o / (a + b - o) >= t  <=>  o >= t / (1 + t) * (a + b); a hair lower against float error.
    overlap_share = threshold / (1 + threshold)
    shared: dict[int, int] = {}  # candidate rank -> prefix words shared so far; -1: ruled out
    for position, word in enumerate(prefix):
        for rank, other_position in index.get(word, ()):
            so_far = shared.get(rank, 0)
            if so_far < 0:
                continue
            other_size = len(kept[rank][1])
            # Shared so far, this word, and at best every word after it in the shorter rest.
            best = so_far + 1 + min(size - position, other_size - other_position) - 1
            enough = best >= overlap_share * (size + other_size) - 1e-9
            shared[rank] = so_far + 1 if enough else -1
    words = frozenset(ordered)
    for rank in sorted(rank for rank, so_far in shared.items() if so_far > 0):
        other = kept[rank][1]
        common = len(words & other)
        if common / (size + len(other) - common) >= threshold:
            return rank
    return None


async def consolidate(
    store: Store,
    *,
    salience_floor: float,
    episode_retention_days: int,
    now: float | None = None,
    agent_id: str | None = None,
) -> ConsolidationReport:
    """One consolidation pass over `agent_id`, or over every agent when it is None."""
    if not 0.0 <= salience_floor <= 1.0:
        raise InvalidArgument("salience_floor must be between 0 and 1", param="salience_floor")
    if episode_retention_days <= 0:
        raise InvalidArgument(
            "episode_retention_days must be a positive number of days",
            param="episode_retention_days",
        )
    started = time.perf_counter()
    now = time.time() if now is None else now
    agents = [require_agent(agent_id)] if agent_id is not None else await store.agent_ids()
    report = ConsolidationReport(agents=len(agents))
    for agent in agents:
        try:
            await _consolidate_agent(
                store, agent, report,
                salience_floor=salience_floor,
                ended_before=now - episode_retention_days * SECONDS_PER_DAY,
                now=now,
            )
        except Exception:
            if agent_id is not None:
                raise
            # One agent's bad row must not stop every other agent's consolidation.
            log.exception("consolidating agent %s failed; the others go on", agent)
    report.seconds = time.perf_counter() - started
    return report


async def _consolidate_agent(
    store: Store,
    agent_id: str,
    report: ConsolidationReport,
    *,
    salience_floor: float,
    ended_before: float,
    now: float,
) -> None:
    promoted = await store.promote_confirmed_facts(
        agent_id, min_sources=PROMOTE_MIN_SOURCES, boost=PROMOTION_BOOST, at=now
    )
    evicted = await store.evict_faded_facts(
        agent_id,
        salience_now=partial(effective_salience, now=now),
        floor=salience_floor,
        at=now,
    )
    pruned = await store.prune_episodes(agent_id, ended_before=ended_before, at=now)
    summaries = await store.episode_summaries(agent_id)
    # Pure CPU work: in a thread, so the event loop keeps serving chats meanwhile.
    groups = await asyncio.to_thread(near_duplicate_groups, summaries)
    merged = await store.merge_episodes(agent_id, groups, at=now) if groups else {}

    report.facts_promoted += len(promoted)
    report.facts_evicted += len(evicted)
    report.episodes_pruned += len(pruned)
    report.episodes_merged += sum(len(ids) for ids in merged.values())
    if promoted or evicted or pruned or merged:
        await store.log_event(
            agent_id,
            CONSOLIDATED_EVENT,
            {
                "facts_promoted": promoted,
                "facts_evicted": evicted,
                "episodes_pruned": pruned,
                "episodes_merged": [[kept, ids] for kept, ids in merged.items()],
                "salience_floor": salience_floor,
            },
            at=now,
        )

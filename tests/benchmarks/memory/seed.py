"""Bulk seeding of one agent's memory for the benchmarks, through the store's own methods.

`seed_data_dir` fills a fresh data dir with N items for one agent: transcript messages
mostly (sessions of SESSION_TURNS turns written with `add_transcript`), plus pinned and
identity facts, episodes and known entities, then embeds everything with
`memory.drain()` (the embedding worker's own batches and index upserts) and closes it,
so that a proxy process can open the folder afterwards. Texts are generated from a small
English grammar over names, places and activities, so that full-text statistics, the
gate's cues and the embedder see something like real conversation; the same seed gives
the same corpus.

The message sets below go with that corpus: MEMORY_QUESTIONS fire the gate's lexical
rules, PLAIN_PROMPTS do not (and are not questions, so no retrieval probe runs either).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mnemoproxy.memory import Memory
from mnemoproxy.memory.models import EpisodeDraft, FactDraft
from mnemoproxy.memory.store.records import TranscriptMessage
from tests.support.servers.proxy_server import make_settings
from tests.support.servers.raw_store import raw

SESSION_TURNS = 50  # turns per seeded session: 100 transcript messages
EMBED_CHUNK = 10_000  # messages inserted between two drains (the progress granularity)
IDENTITY_FACTS = 12
SECONDS_PER_DAY = 86_400

# Called as progress(stage, done, total) while seeding.
Progress = Callable[[str, int, int], None]

PEOPLE = (
    "Maria", "Tom", "Aisha", "Kenji", "Lucia", "Omar", "Priya", "Jonas", "Elena", "Marcus",
    "Sofia", "Diego", "Hannah", "Ravi", "Chloe", "Mateo", "Ingrid", "Kwame", "Yuki", "Nora",
)
PLACES = (
    "Lisbon", "Berlin", "Kyoto", "Toronto", "Nairobi", "Oslo", "Lima", "Seoul", "Porto",
    "Denver", "Marseille", "Krakow", "Austin", "Hanoi", "Dublin", "Tucson", "Bergen", "Cusco",
)
ACTIVITIES = (
    "went hiking", "tried rock climbing", "baked sourdough bread", "painted the kitchen",
    "started learning Portuguese", "fixed the old bicycle", "planted tomatoes",
    "ran a half marathon", "visited the science museum", "repaired the leaking roof",
    "adopted a rescue dog", "signed up for pottery classes", "built a bookshelf",
    "cooked a Thai curry", "went kayaking", "watched the meteor shower", "moved apartments",
    "interviewed for a new job", "played chess at the park", "organised a birthday party",
)
TIMES = (
    "last weekend", "on Saturday", "yesterday", "two weeks ago", "in March", "this morning",
    "last summer", "over the holidays", "on Friday night", "a few days ago",
)
FEELINGS = (
    "exhausting but fun", "a total disaster", "surprisingly relaxing", "harder than expected",
    "the best day in ages", "a bit boring", "really inspiring", "stressful", "wonderful",
)
FOLLOW_UPS = (
    "How did {person} feel about it?", "Would you do it again?", "What was the hardest part?",
    "Did you take any photos?", "Are you planning to go back to {place}?",
    "What made you decide to try it?", "How long did it take?",
)
FOODS = ("green tea", "spicy ramen", "dark chocolate", "oat milk", "mango", "black coffee")
JOBS = ("a nurse", "a data engineer", "a carpenter", "a teacher", "an architect", "a chef")
# One user message in FACT_SHARE states something about the user that the rule-based
# distiller turns into a fact, as people do now and then in conversation.
FACT_SHARE = 0.2
FACT_STATEMENTS = (
    "By the way, I live in {place} now.", "I work as {job}.", "I really love {food}.",
    "My favourite drink is {food}.", "My sister {person} just started a new job.",
    "I decided to visit {place} with {person} next month.",
)

MEMORY_QUESTIONS = (
    "What did I tell you about my sister's trip to Lisbon?",
    "Do you remember when I went kayaking with Maria?",
    "Where do I live?",
    "What's my job?",
    "Remind me what we discussed about the bookshelf last time.",
    "What did we talk about last weekend?",
    "Did I mention Kenji before?",
    "What is my favourite drink?",
    "What did we decide about the birthday party?",
    "Can you recall what I said about the half marathon?",
)
PLAIN_PROMPTS = (
    "Write a haiku about autumn.",
    "Explain how a TCP handshake works in three sentences.",
    "Translate 'good morning, how are you' into Spanish.",
    "Give me a regex that matches ISO 8601 dates.",
    "Summarise the plot of Hamlet in two lines.",
    "Write a limerick about a cat who loves jazz.",
    "List five prime numbers larger than one hundred.",
    "Convert 72 degrees Fahrenheit to Celsius and show the formula.",
    "Draft a polite email declining a meeting invitation.",
    "Describe the water cycle for a ten-year-old.",
)


def printed_progress(tag: str) -> Progress:
    """A Progress that prints one line per step, e.g. "[read path] transcript 10,000/97,000"."""
    return lambda stage, done, total: print(f"[{tag}]   {stage} {done:,}/{total:,}", flush=True)


@dataclass(frozen=True)
class SeedReport:
    agent_id: str
    transcript: int
    facts: int
    episodes: int
    insert_seconds: float
    embed_seconds: float

    @property
    def items(self) -> int:
        return self.transcript + self.facts + self.episodes


def corpus_sizes(items: int) -> tuple[int, int, int]:
    """(transcript messages, facts, episodes) for `items` in all: 1% facts, 2% episodes."""
    facts = max(IDENTITY_FACTS, items // 100)
    episodes = max(1, items // 50)
    return max(0, items - facts - episodes), facts, episodes


class TextMaker:
    """Seeded generator of the corpus's sentences."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)

    def _pick(self, words: tuple[str, ...]) -> str:
        return self.rng.choice(words)

    def user_text(self) -> str:
        if self.rng.random() < FACT_SHARE:
            return self._pick(FACT_STATEMENTS).format(
                place=self._pick(PLACES), job=self._pick(JOBS), food=self._pick(FOODS),
                person=self._pick(PEOPLE),
            )
        return (
            f"I {self._pick(ACTIVITIES)} with {self._pick(PEOPLE)} {self._pick(TIMES)} "
            f"near {self._pick(PLACES)}; it was {self._pick(FEELINGS)}, "
            f"and it cost about {self.rng.randint(5, 400)} euros."
        )

    def assistant_text(self) -> str:
        follow_up = self._pick(FOLLOW_UPS).format(
            person=self._pick(PEOPLE), place=self._pick(PLACES)
        )
        return f"That sounds {self._pick(FEELINGS)}! {follow_up}"

    def turn(self) -> tuple[str, str]:
        return self.user_text(), self.assistant_text()

    def fact(self, number: int) -> FactDraft:
        if number < IDENTITY_FACTS:
            statements = (
                f"User lives in {self._pick(PLACES)}", f"User works as {self._pick(JOBS)}",
                f"User's sister is {self._pick(PEOPLE)}", f"User was born in {self._pick(PLACES)}",
            )
            return FactDraft(statements[number % len(statements)], "identity", 0.9)
        content = self.rng.choice((
            f"User likes {self._pick(FOODS)}",
            f"User plans to visit {self._pick(PLACES)} with {self._pick(PEOPLE)}",
            f"User {self._pick(ACTIVITIES)} {self._pick(TIMES)} (note {number})",
        ))
        return FactDraft(content, "pinned", round(self.rng.uniform(0.3, 0.9), 2))

    def episode(self) -> EpisodeDraft:
        person, place, activity = self._pick(PEOPLE), self._pick(PLACES), self._pick(ACTIVITIES)
        return EpisodeDraft(
            summary=f"The user {activity} with {person} in {place} and found it "
            f"{self._pick(FEELINGS)}; they decided to try again {self._pick(TIMES)}.",
            topics=[activity.split()[-1]],
            entities=[person, place],
            salience=round(self.rng.uniform(0.3, 0.8), 2),
        )


async def seed_store(
    memory: Memory,
    agent_id: str,
    items: int,
    *,
    seed: int = 7,
    now: float | None = None,
    progress: Progress | None = None,
) -> SeedReport:
    """Add about `items` items for `agent_id` to an open memory and embed them; the
    transcript spreads over the year before `now`."""
    store = memory.store
    report = progress or (lambda stage, done, total: None)
    maker = TextMaker(seed)
    now = time.time() if now is None else now
    transcript, facts, episodes = corpus_sizes(items)
    started = time.perf_counter()
    embed_seconds = 0.0

    async def drain() -> None:
        nonlocal embed_seconds
        before = time.perf_counter()
        await memory.drain()
        embed_seconds += time.perf_counter() - before

    await store.upsert_entities(agent_id, [*PEOPLE, *PLACES], now)
    for number in range(facts):
        await store.insert_fact(agent_id, maker.fact(number), at=now - number * 600)
    for number in range(episodes):
        ended = now - number * 3_600
        await store.add_episode(agent_id, maker.episode(), started_at=ended - 1_800,
                                ended_at=ended, at=ended)
    report("facts and episodes", facts + episodes, facts + episodes)
    await drain()

    sessions = max(1, -(-transcript // (2 * SESSION_TURNS)))
    spacing = 365 * SECONDS_PER_DAY / sessions
    written = drained = 0
    for session_number in range(sessions):
        start = now - (sessions - session_number) * spacing
        session_id = await store.session(agent_id, f"seed-{session_number}", start)
        messages: list[TranscriptMessage] = []
        for turn_index in range(SESSION_TURNS):
            user, assistant = maker.turn()
            at = start + turn_index * 60
            messages += [TranscriptMessage(turn_index, "user", user, at),
                         TranscriptMessage(turn_index, "assistant", assistant, at + 1)]
        written += await store.add_transcript(
            agent_id, session_id, messages[: transcript - written]
        )
        if written - drained >= EMBED_CHUNK or written >= transcript:
            await drain()
            drained = written
            report("transcript", written, transcript)
    return SeedReport(
        agent_id, written, facts, episodes,
        time.perf_counter() - started - embed_seconds, embed_seconds,
    )


async def seed_data_dir(
    data_dir: str | Path,
    agent_id: str,
    items: int,
    *,
    backend: str = "wordllama",
    seed: int = 7,
    progress: Progress | None = None,
) -> SeedReport:
    """Seed a data dir as `seed_store` does, with memory opened on `backend` vectors and
    closed afterwards (indexes flushed), ready for a proxy to open."""
    settings = make_settings(data_dir=str(data_dir), embedding_backend=backend)
    memory = await Memory.open(settings, background=False)
    try:
        return await seed_store(memory, agent_id, items, seed=seed, progress=progress)
    finally:
        await memory.close()
        if settings.store_url:
            # The planner's statistics, as autovacuum gathers them after a bulk load (its
            # first look comes up to a minute later; measuring before it would time plans
            # made for empty tables).
            with raw(settings.store_url) as db:
                db.execute("ANALYZE")

"""The relevance gate's contract: what it is asked, what it answers.

Kept apart from the gates themselves so the heuristic, the LLM gate and their callers
share one vocabulary without importing each other.
"""

from __future__ import annotations

import bisect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, get_args

from mnemoproxy.memory import CoreModel, Kind

__all__ = [
    "SECTIONS",
    "Confidence",
    "CoreModel",
    "Evidence",
    "Gate",
    "GateContext",
    "GateDecision",
    "Probe",
    "Section",
]

# A section is the kind of memory a message needs (or a procedure, for a how-to question
# one of the agent's procedures answers), or none.
Section = Literal[Kind, "procedure", "none"]
SECTIONS: tuple[Section, ...] = get_args(Section)

# How sure the gate is that memory helps: a low one gets a small block (the few best
# items), a high one the whole budget.
Confidence = Literal["high", "medium", "low"]


# An adverb of manner ("etymologically", "colloquially"): how a question is put, never the
# thing memory knows.
ADVERB_ENDING = "ally"
ADVERB_MIN_CHARS = 8


# A word memory holds tells of the user where memory holds it this many times more often
# than its size alone would (its commonness in the language, over as many words): in a
# large memory an everyday-ish word turns up by chance.
SURPRISE = 4.0
# Words more common than this ("time", "good", "people") tell nothing however often memory
# holds them.
EVERYDAY_ZIPF = 6.0


# A contraction typed without its apostrophe ("whats", "dont", "im", "youre") is the
# function words it joins, however rarely a dictionary spells it so; the endings are
# joined only to the words they contract, so "shell", "shed" and "well" stay nouns.
_CONTRACTED = {
    "s": "what where who how when why that there here it he she let",
    "nt": "do does did is was are were has have had could would should ca wo ai",
    "m": "i", "ve": "i you we they", "d": "i you they", "ll": "you they", "re": "you they",
}
UNAPOSTROPHISED = frozenset(
    word + ending for ending, words in _CONTRACTED.items() for word in words.split())


def _names_nothing(word: str) -> bool:
    return word.isdigit() or word in UNAPOSTROPHISED or (
        len(word) >= ADVERB_MIN_CHARS and word.endswith(ADVERB_ENDING))


@dataclass(frozen=True)
class Evidence:
    """What retrieval says about a message, against this agent's memory only.

    similarity: the cosine similarity of the message's nearest item in the agent's memory.
    reference: the same for the gate's reference prompts (requests anyone might send),
    sorted: the agent's own yardstick of "merely on a topic memory also touches".
    names: names from the message (people, places, titles) found in the retrieved items.
    name_share: the largest share of the retrieved items one of those names occurs in (1.0
    for a name the agent's memory says throughout): a name most of them mention is central
    to what memory holds on the question.
    document: the largest share of the message's content words that one retrieved document
    chunk holds (in its text, title or heading), over `document_words` content words.
    words: how many of the agent's items hold each of the message's own words (its
    instruction's search words, the agent's common words aside), counted up to a cap;
    phrases: the same for each pair of its neighbouring words, side by side;
    items: how many items the agent has; size: about how many words they hold together
    (0 where unknown).
    """

    similarity: float
    reference: Sequence[float] = ()
    names: Sequence[str] = ()
    name_share: float = 0.0
    document: float = 0.0
    document_words: int = 0
    words: Mapping[str, int] = field(default_factory=dict)
    items: int = 0
    # How common each of `words` is in the message's language (the Zipf scale; None where
    # that cannot be told, as for unspaced scripts).
    commonness: Mapping[str, float | None] = field(default_factory=dict)
    size: float = 0.0
    phrases: Mapping[str, int] = field(default_factory=dict)

    def phrases_held(self, share: float, least: int) -> list[str]:
        """The pairs of the message's neighbouring words memory holds side by side in a
        few items (at most `share` of them, or `least`) and beyond chance: "gate code",
        "sleep study", a thing named where each word alone is common. A phrase is no more
        common than its rarer word, so chance is reckoned from that word's commonness;
        one with an everyday word ("last week", "make us") names nothing."""
        limit = max(least, share * self.items)
        held = []
        for phrase, count in self.phrases.items():
            if not 0 < count <= limit:
                continue
            found = [self.commonness.get(word) for word in phrase.split()]
            known = [c for c in found if c is not None]
            if len(known) == len(found) and (
                    max(known) >= EVERYDAY_ZIPF or not self.beyond_chance(count, min(known))):
                continue
            held.append(phrase)
        return held

    def words_held(self, below: float, share: float, least: int) -> list[str]:
        """The message's words memory holds that are less common than `below` in the
        language and held beyond chance (see beyond_chance), numbers and adverbs aside;
        a word whose commonness cannot be told (a pair of characters that is no word)
        only where memory holds it rarely (see rare_words_held)."""
        limit = max(least, share * self.items)
        return [
            word for word, count in self.words.items()
            if count > 0 and not _names_nothing(word) and (
                ((commonness := self.commonness.get(word)) is not None and commonness < below
                 and self.beyond_chance(count, commonness))
                or (commonness is None and count <= limit)
            )
        ]

    def beyond_chance(self, count: int, commonness: float) -> bool:
        """Whether memory holds a word of this commonness (Zipf: log10 of its uses per
        billion words) in `count` items more often than chance would, given its size."""
        expected = self.size * 10 ** (commonness - 9)
        return count >= SURPRISE * expected

    def rare_words_held(
        self, share: float, least: int, below: float, unknown: bool = True
    ) -> list[str]:
        """The message's words memory holds in only a few items (at most `share` of them,
        or `least`) that are also less common than `below` in the language: a named
        thing, a distinctive phrase, rather than a topic or an everyday word. A number or
        an adverb is no name; a word whose commonness cannot be told counts as `unknown` says."""
        limit = max(least, share * self.items)

        def uncommon(word: str) -> bool:
            commonness = self.commonness.get(word)
            return unknown if commonness is None else commonness < below

        return [
            word for word, count in self.words.items()
            if 0 < count <= limit and not _names_nothing(word) and uncommon(word)
        ]

    def held_in_each(
        self, groups: Sequence[Sequence[str]], below: float, share: float, least: int
    ) -> list[str]:
        """For each group of the message's words, one that memory holds in a few items (at
        most `share` of them, or `least`) and that is less common than `below` in the
        language, or short of everyday and held beyond chance ("sleep study" in a small
        memory; unknown commonness: the count alone decides); [] unless every group has
        one."""
        limit = max(least, share * self.items)
        held: list[str] = []
        for group in groups:
            # Things set against each other are different things: "100 pounds of rocks or
            # 100 pounds of feathers" compares one held word with itself.
            found = next((
                word for word in group
                if word not in held
                and 0 < (count := self.words.get(word, 0)) <= limit and not _names_nothing(word)
                and ((c := self.commonness.get(word)) is None or c < below
                     or (c < EVERYDAY_ZIPF and self.beyond_chance(count, c)))
            ), None)
            if found is None:
                return []
            held.append(found)
        return held

    @property
    def standing(self) -> float:
        """The share of the reference prompts whose best match the message's beats."""
        if not self.reference:
            return 1.0 if self.similarity > 0 else 0.0
        return bisect.bisect_right(self.reference, self.similarity) / len(self.reference)

    def beats(self, share: float, margin: float = 0.0) -> bool:
        """Whether the message's best match beats the reference prompts' at this share
        (0.5 the median, 1.0 the best of them), by `margin`."""
        if not self.reference:
            return self.similarity > margin
        position = min(len(self.reference) - 1, int(share * (len(self.reference) - 1)))
        return self.similarity >= self.reference[position] + margin


# Given the names the message mentions, the evidence memory holds for it.
Probe = Callable[[Sequence[str]], Awaitable[Evidence]]


@dataclass(frozen=True)
class GateDecision:
    """Which part of memory to inject, how sure the gate is, and a short human-readable why
    (for logs, the preview and the X-Memory-* headers)."""

    section: Section
    reason: str
    confidence: Confidence = "high"

    @property
    def inject(self) -> bool:
        return self.section != "none"


@dataclass
class GateContext:
    """What the gate may use besides the message.

    known_entities: names the agent's memory knows (people, pets, projects); a mention
    is a memory cue. probe: retrieval against the agent's memory (see Evidence); None
    when the caller has no store to ask. documents: the agent holds documents (a knowledge
    base), so any question may be one of them answers. language: the message's. thread:
    the conversation before the message (relevance/thread.py), the last of it.
    """

    known_entities: Sequence[str] = ()
    probe: Probe | None = None
    documents: bool = False
    # The language the message's own words are in (ISO 639-1): English is read by the
    # full cue patterns, other languages by their lexicon (relevance/languages.py).
    language: str = "en"
    thread: str = ""


class Gate(Protocol):
    async def decide(self, message: str, context: GateContext) -> GateDecision: ...

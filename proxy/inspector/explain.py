"""Why search found a result, in words a person reads: how it compares with the best
result, which of the query's words it holds, how close it is in meaning, and what lifted
it (its conversation, a neighbour, a name, the time asked about). The raw scores stay
beside it for whoever wants them, never as the headline.

A result's components come from memory's hybrid search: `bm25` (the query's words, by
full-text rank), `vector` (the cosine similarity of meaning), and lifts: `session`,
`neighbour`, `name`, `period`, `recency`."""

from __future__ import annotations

from dataclasses import dataclass

from mnemoproxy.memory import STOP_WORDS, WORD, SearchResult, stem

SHOWN_WORDS = 6
# Cosine similarities of meaning, from the closest band down.
_MEANING = ((0.6, "very close in meaning"), (0.4, "close in meaning"),
            (0.25, "related in meaning"))
_LIFTS = {
    "session": "from a conversation that matches as a whole",
    "neighbour": "said right next to a strong match",
    "name": "names someone or something memory knows",
    "period": "said in the time the query names",
    "recency": "recent",
}


@dataclass(frozen=True)
class Explanation:
    strength: str  # "best match", "strong match", "partial match", "weak match"
    reasons: list[str]


def explain(result: SearchResult, query: str, best_score: float) -> Explanation:
    share = result.score / best_score if best_score > 0 else 0.0
    strength = ("best match" if share >= 0.999 else "strong match" if share >= 0.75
                else "partial match" if share >= 0.4 else "weak match")
    reasons: list[str] = []
    words = shared_words(query, result.text)
    if words:
        reasons.append("holds " + ", ".join(f"“{w}”" for w in words))
    elif result.components.get("bm25", 0.0) <= 0:
        reasons.append("shares none of the query's words")
    closeness = result.components.get("vector", 0.0)
    meaning = next((said for low, said in _MEANING if closeness >= low), None)
    if meaning:
        reasons.append(meaning)
    reasons += [said for name, said in _LIFTS.items() if result.components.get(name)]
    return Explanation(strength, reasons)


def shared_words(query: str, text: str) -> list[str]:
    """The query's words (not stop words) that `text` holds in some form, as the query
    spells them, at most SHOWN_WORDS."""
    held = {stem(word) for word in WORD.findall(text.lower())}
    found: list[str] = []
    for word in WORD.findall(query):
        lowered = word.lower()
        if (lowered not in STOP_WORDS and stem(lowered) in held
                and word not in found and len(found) < SHOWN_WORDS):
            found.append(word)
    return found

"""Choosing what memory goes into one request, under a token budget, and rendering it.

Identity facts come first (short, and nearly always useful once memory is injected at
all). Then every candidate competes on its hybrid score: facts and episodes do not push
conversation out by kind, only by rank. A
long message contributes an excerpt (gate/excerpt.py), so the budget holds many pieces of
evidence instead of three or four messages; a line that repeats one already chosen is
skipped.

Conversations are shown grouped, newest first, each under its date and the newest marked
latest: when two disagree ("I live in Berlin" then "I moved to Paris") the model reads
the current one first and knows it is current. The rendered block, fence and header
included, never exceeds the budget.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from mnemoproxy.gate.excerpt import Query, excerpt
from mnemoproxy.gate.fence import FENCE_CLOSE, FENCE_OPEN, fenced, looks_like_instructions, quoted
from mnemoproxy.gate.relevance.types import GateDecision
from mnemoproxy.gate.tokens.counter import count_tokens
from mnemoproxy.memory import Fact, Kind, SearchResult, content_words
from mnemoproxy.text_templates import text_templates

TEMPLATES = Path(__file__).parent / "templates"

# Most tokens one message or summary contributes: a sentence or two, enough for an answer
# and short enough that the block holds many pieces of evidence.
EXCERPT_TOKENS = 50
# A document chunk (150-300 tokens) contributes a longer excerpt: a passage of reference
# text says less per sentence than a chat line (see tests/benchmarks/quality/bench_documents.py).
DOCUMENT_EXCERPT_TOKENS = 80
# A fact stands for its turn when it holds at least this share of the question's weight
# that the turn's excerpt holds.
CARRY_SHARE = 0.75
RESTATED_SHARE = 0.5
# How a fact shown in place of the turn it was drawn from is labelled in its conversation.
DRAWN_SPEAKER = "noted"
# A line's bullet and label; a conversation's date line.
LINE_OVERHEAD = 4
GROUP_OVERHEAD = 8
MIN_LINE_TOKENS = 12


@dataclass
class PlannedItem:
    kind: Kind
    item_id: int
    line: str
    score: float
    at: float | None = None
    group: str = ""  # the conversation it belongs to (facts: none)
    speaker: str = ""  # user | assistant | summary (facts: none)
    position: tuple[int, int] = (0, 0)  # (turn, user before assistant) within it
    # For a message or summary: the question its excerpt is cut for, cut only when the
    # item is considered for the block (most candidates never are).
    query: Query | None = None
    flagged: bool = False  # reads like instructions: shown quoted (gate/fence.py)
    label: str = ""  # a document chunk: its document's title and heading path
    excerpt_tokens: int = EXCERPT_TOKENS
    # A fact drawn from this message: one piece of evidence in two forms, of which the
    # block shows the shorter that keeps the question's words (`settle`).
    drawn: PlannedItem | None = None

    @property
    def shown(self) -> str:
        """The line as the block shows it."""
        line = quoted(self.line) if self.flagged else self.line
        return f"[{self.label}] {line}" if self.label else line

    def settle(self) -> None:
        if self.query is None:
            return
        query, self.query = self.query, None
        self.line = excerpt(self.line, query, self.excerpt_tokens)
        fact, self.drawn = self.drawn, None
        if fact is not None and _carries(fact.line, self.line, query):
            self.line, self.flagged = fact.line, fact.flagged
            self.kind, self.item_id, self.speaker = fact.kind, fact.item_id, DRAWN_SPEAKER


@dataclass
class MemoryBlock:
    text: str
    tokens: int
    items: list[PlannedItem] = field(default_factory=list)
    procedures: int = 0  # how many procedures it shows (they are not items)


class Procedure(Protocol):
    """A procedure as the block shows it (memory's StoredProcedure is one)."""

    @property
    def name(self) -> str: ...

    @property
    def applies_when(self) -> str: ...

    @property
    def steps(self) -> list[str]: ...


@dataclass(frozen=True)
class ShownProcedure:
    """A procedure fenced for the block: text that reads like instructions to a model (an
    override phrase, a role marker) quoted."""

    name: str
    applies_when: str
    steps: list[str]

    @classmethod
    def of(cls, procedure: Procedure, suspicious: str) -> ShownProcedure | None:
        texts = [procedure.name, procedure.applies_when, *procedure.steps]
        flagged = any(looks_like_instructions(t) for t in texts)
        if flagged and suspicious == "omit":
            return None

        def show(text: str) -> str:
            return quoted(fenced(text)) if flagged and text else fenced(text)

        return cls(show(procedure.name), show(procedure.applies_when),
                   [show(step) for step in procedure.steps])


def _carries(fact: str, turn: str, query: Query) -> bool:
    """Whether a fact can stand for the excerpt of the turn it was drawn from: it is
    shorter, keeps nearly as much of the question as the excerpt (the turn where the fact
    would lose a detail asked for), judged by the question's words weighted by their
    rarity (a name every line holds weighs little), and restates the excerpt rather than
    sums it up ("likes hotels with unique features" for the rooftop pool and the hot tub
    the user asked about): it keeps RESTATED_SHARE of the excerpt's words."""
    said = content_words(turn)
    return (count_tokens(fact) < count_tokens(turn)
            and query.score(fact) >= CARRY_SHARE * query.score(turn)
            and len(said & content_words(fact)) >= RESTATED_SHARE * len(said))


def _date(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d") if ts else ""


def _key(text: str) -> str:
    return " ".join(text.lower().replace("…", " ").split())


def _group(result: SearchResult) -> str:
    session = result.provenance.get("session_id")
    return f"session:{session}" if session is not None else f"{result.kind}:{result.item_id}"


def document_label(provenance: dict[str, object]) -> str:
    """Where a document chunk comes from, as the block names it: "Title › Heading (p. 3)"."""
    title = str(provenance.get("title") or "document")
    heading = str(provenance.get("heading") or "")
    label = f"{title} › {heading}" if heading else title
    page = provenance.get("page")
    return f"{label} (p. {page})" if page else label


def candidates(
    results: Sequence[SearchResult], question: str = "", *, suspicious: str = "quote"
) -> list[PlannedItem]:
    """Every kind competes on the hybrid score: a summary or a fact goes before a message
    only when it matches better (measured: leading with the gate's section displaced
    evidence). Messages and summaries become excerpts for `question`. A fact and the
    message it was drawn from are one candidate, at the better rank of the two, shown in
    one form. Text that reads like instructions is flagged, or left out with
    `suspicious="omit"`."""
    query = Query.of(question, [r.text for r in results])
    messages = {r.item_id: r for r in results if r.kind == "transcript"}
    # The best-ranked fact drawn from each message among the results.
    drawn: dict[int, SearchResult] = {}
    for r in results:
        source = r.provenance.get("source_message")
        if r.kind == "pinned" and source in messages:
            drawn.setdefault(int(source), r)
    folded = {(r.kind, r.item_id) for r in drawn.values()}
    items: list[PlannedItem] = []
    seen: set[tuple[Kind, int]] = set()
    for result in results:
        if result.kind == "identity":  # identity facts are added whole, apart
            continue
        if (result.kind, result.item_id) in folded:
            message = messages[int(result.provenance["source_message"])]
            if drawn[message.item_id] is not result:
                continue  # another fact stands for that message
            result = message  # the pair goes in at the fact's rank
        key = (result.kind, result.item_id)
        if key in seen:
            continue
        seen.add(key)
        item = _planned(result, query, suspicious)
        if item is None:
            continue
        fact = drawn.get(result.item_id) if result.kind == "transcript" else None
        if fact is not None:
            seen.add((fact.kind, fact.item_id))
            item.drawn = _planned(fact, query, suspicious)
        items.append(item)
    return items


def _planned(result: SearchResult, query: Query, suspicious: str) -> PlannedItem | None:
    """A search result as a candidate line (None: left out as suspicious)."""
    flagged = looks_like_instructions(result.text)
    if flagged and suspicious == "omit":
        return None
    text = fenced(result.text)
    if result.kind == "document":
        label = document_label(result.provenance)
        flagged = flagged or looks_like_instructions(label)
        if flagged and suspicious == "omit":
            return None
        return PlannedItem(
            "document", result.item_id, text, result.score, result.at, query=query,
            flagged=flagged, label=fenced(label), excerpt_tokens=DOCUMENT_EXCERPT_TOKENS)
    if result.kind == "pinned":
        return PlannedItem("pinned", result.item_id, text, result.score, result.at,
                           flagged=flagged)
    speaker = "summary" if result.kind == "episode" else (
        "user" if result.provenance.get("role") == "user" else "assistant"
    )
    position = (int(result.provenance.get("turn_index", -1)), speaker != "user")
    return PlannedItem(result.kind, result.item_id, text, result.score, result.at,
                       _group(result), speaker, position, query, flagged)


class Planner:
    def __init__(
        self, *, budget_tokens: int, suspicious: str = "quote",
        template: str = "memory_block.j2",
    ) -> None:
        self.budget = budget_tokens
        self.suspicious = suspicious
        env = text_templates(TEMPLATES)
        self._template = env.get_template(template)

    def plan(
        self,
        identity_facts: Sequence[Fact],
        results: Sequence[SearchResult],
        decision: GateDecision,
        now: float | None = None,
        *,
        budget: int | None = None,
        question: str = "",
        procedures: Sequence[Procedure] = (),
    ) -> MemoryBlock | None:
        """The block for this request from the agent's identity facts and the hybrid search
        `results` (every kind, best first), within `budget` tokens (default: all of the
        planner's), or None when the gate said none or nothing fits. `procedures` that
        answer a how-to question go first, whole (the best ones that fit)."""
        if not decision.inject:
            return None
        now = time.time() if now is None else now
        identity = [
            PlannedItem("identity", f.id, fenced(f.content), f.salience,
                        flagged=looks_like_instructions(f.content))
            for f in identity_facts
            if self.suspicious != "omit" or not looks_like_instructions(f.content)
        ]
        ranked = candidates(results, question, suspicious=self.suspicious)
        shown = [s for p in procedures if (s := ShownProcedure.of(p, self.suspicious))]
        return self.fit(identity, ranked, now, budget=budget, procedures=shown)

    def fit(
        self,
        identity: Sequence[PlannedItem],
        ranked: Sequence[PlannedItem],
        now: float,
        *,
        budget: int | None = None,
        procedures: Sequence[ShownProcedure] = (),
    ) -> MemoryBlock | None:
        """Fill by rank under the budget, skipping repeats, then trim until the render
        fits."""
        budget = self.budget if budget is None else min(budget, self.budget)
        shown = list(procedures)
        while shown and count_tokens(self._render([], now, shown)) > budget:
            shown.pop()  # the last is the worst match
        chosen: list[PlannedItem] = []
        keys: list[str] = []
        groups: set[str] = set()
        # A conversation shown by its summary alone, until a line of its own comes in.
        summaries: dict[str, tuple[PlannedItem, int]] = {}
        used = count_tokens(self._render([], now, shown))
        for item in [*identity, *ranked]:
            if budget - used < MIN_LINE_TOKENS:
                break  # nothing more fits
            if item.speaker == "summary" and item.group in groups:
                continue  # the conversation's own words are in already
            item.settle()
            key = _key(item.line)
            summary = summaries.get(item.group) if item.speaker != "summary" else None
            repeats = [other for other in keys if key in other or other in key]
            if not key or (repeats and (summary is None or repeats != [_key(summary[0].line)])):
                continue  # a repeat of a line already chosen (not of the summary it displaces)
            cost = count_tokens(item.shown) + LINE_OVERHEAD
            if item.group and item.group not in groups:
                cost += GROUP_OVERHEAD
            if summary is not None and used - summary[1] + cost + GROUP_OVERHEAD <= budget:
                # The conversation's own words come in: its summary gives way to them.
                at = chosen.index(summary[0])
                del chosen[at], keys[at], summaries[item.group]
                used -= summary[1]
                cost += GROUP_OVERHEAD  # the summary had paid for the date line
            elif repeats:
                continue  # it would repeat the summary, which stays
            if used + cost > budget:
                continue
            if item.speaker == "summary" and item.group not in groups:
                summaries[item.group] = (item, cost)
            chosen.append(item)
            keys.append(key)
            groups.add(item.group)
            used += cost
        while chosen or shown:
            text = self._render(chosen, now, shown)
            tokens = count_tokens(text)
            if tokens <= budget:
                return MemoryBlock(text, tokens, chosen, len(shown))
            if not chosen:
                return None
            chosen.pop()  # the last chosen is the lowest ranked
        return None

    def _render(
        self, items: Sequence[PlannedItem], now: float,
        procedures: Sequence[ShownProcedure] = (),
    ) -> str:
        by_kind: dict[str, list[PlannedItem]] = {}
        conversations: dict[str, list[PlannedItem]] = {}
        for item in items:
            if item.group:
                conversations.setdefault(item.group, []).append(item)
            else:
                by_kind.setdefault(item.kind, []).append(item)
        # Conversations newest first, each in the order it was said (its summary, which
        # has no turn of its own, first).
        ordered = sorted(
            conversations.values(),
            key=lambda lines: max((i.at or 0.0) for i in lines),
            reverse=True,
        )
        groups = [
            {
                "date": _date(max((i.at or 0.0) for i in lines)),
                "lines": [
                    f"{i.speaker}: {i.shown}"
                    for i in sorted(lines, key=lambda i: (i.at or 0.0, i.position))
                ],
            }
            for lines in ordered
        ]
        return self._template.render(
            today=datetime.fromtimestamp(now, UTC).strftime("%A, %Y-%m-%d"),
            fence_open=FENCE_OPEN,
            fence_close=FENCE_CLOSE,
            identity=[i.shown for i in by_kind.get("identity", [])],
            pinned=[i.shown for i in by_kind.get("pinned", [])],
            documents=[i.shown for i in by_kind.get("document", [])],
            procedures=procedures,
            conversations=groups,
        ).strip()

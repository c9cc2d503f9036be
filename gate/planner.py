"""Choosing what memory goes into one request, under a token budget, and rendering it.

Identity facts come first (they are short and nearly always useful once memory is
injected at all), then the gate's section by score, then the other sections' items
whose evidence is strong, until `memory_budget_tokens` would be exceeded. The rendered
block, fence and header included, never exceeds the budget.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import jinja2

from mnemoproxy.gate.relevance.types import GateDecision
from mnemoproxy.gate.tokens import count_tokens
from mnemoproxy.memory import Fact, Kind, SearchResult

TEMPLATES = Path(__file__).parent / "templates"
FENCE_OPEN = "<recalled_memory>"
FENCE_CLOSE = "</recalled_memory>"

# The kind each gate section leads with (identity facts are always added apart).
PRIMARY_KIND: dict[str, Kind] = {
    "identity": "pinned",
    "pinned": "pinned",
    "episode": "episode",
    "transcript": "transcript",
}
# How many of the gate's own section's best items go first, whatever their score.
PRIMARY_LEAD = 3


@dataclass
class PlannedItem:
    kind: Kind
    item_id: int
    line: str
    score: float
    at: float | None = None


@dataclass
class MemoryBlock:
    text: str
    tokens: int
    items: list[PlannedItem] = field(default_factory=list)


def _fenced_safe(text: str) -> str:
    """Memory text must not be able to close the fence and speak as instructions."""
    return " ".join(text.replace(FENCE_CLOSE, "").replace(FENCE_OPEN, "").split())


def _date(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d") if ts else ""


def _line(result: SearchResult) -> str:
    """One search result as a line of the block."""
    text = _fenced_safe(result.text)
    if result.kind in ("identity", "pinned"):
        return text
    date = _date(result.at)
    if result.kind == "episode":
        return f"[{date}] {text}" if date else text
    role = result.provenance.get("role", "")
    speaker = "user" if role == "user" else "assistant"
    return (f"[{date}] " if date else "") + f"{speaker}: {text}"


def candidates(results: Sequence[SearchResult], decision: GateDecision) -> list[PlannedItem]:
    """The gate's section leads with its best few items; after them, every section's
    items compete on the hybrid score, so the budget goes where the evidence is."""
    primary_kind = PRIMARY_KIND.get(decision.section, "episode")
    primary = [r for r in results if r.kind == primary_kind]
    items: list[PlannedItem] = []
    seen: set[tuple[Kind, int]] = set()
    for result in [*primary[:PRIMARY_LEAD], *results]:
        key = (result.kind, result.item_id)
        if key in seen or result.kind == "identity":  # identity facts are added whole, apart
            continue
        seen.add(key)
        items.append(
            PlannedItem(result.kind, result.item_id, _line(result), result.score, result.at)
        )
    return items


class Planner:
    def __init__(self, *, budget_tokens: int, template: str = "memory_block.j2") -> None:
        self.budget = budget_tokens
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(TEMPLATES),
            autoescape=False,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._template = env.get_template(template)

    def plan(
        self,
        identity_facts: Sequence[Fact],
        results: Sequence[SearchResult],
        decision: GateDecision,
        now: float | None = None,
        *,
        budget: int | None = None,
    ) -> MemoryBlock | None:
        """The block for this request from the agent's identity facts and the hybrid search
        `results` (every kind, best first), within `budget` tokens (default: all of the
        planner's), or None when the gate said none or nothing fits."""
        if not decision.inject:
            return None
        now = time.time() if now is None else now
        identity = [
            PlannedItem("identity", f.id, _fenced_safe(f.content), f.salience)
            for f in identity_facts
        ]
        return self.fit(identity, candidates(results, decision), now, budget=budget)

    def fit(
        self,
        identity: Sequence[PlannedItem],
        ranked: Sequence[PlannedItem],
        now: float,
        *,
        budget: int | None = None,
    ) -> MemoryBlock | None:
        """Greedy fill by rank under the budget, then trim until the render fits."""
        budget = self.budget if budget is None else min(budget, self.budget)
        chosen: list[PlannedItem] = []
        used = count_tokens(self._render([], now))
        for item in [*identity, *ranked]:
            cost = count_tokens(item.line) + 3  # the bullet, the newline, a section header
            if used + cost > budget:
                continue
            chosen.append(item)
            used += cost
        while chosen:
            text = self._render(chosen, now)
            tokens = count_tokens(text)
            if tokens <= budget:
                return MemoryBlock(text, tokens, chosen)
            chosen.pop()  # the last chosen is the lowest ranked
        return None

    def _render(self, items: Sequence[PlannedItem], now: float) -> str:
        by_kind: dict[str, list[PlannedItem]] = {}
        for item in items:
            by_kind.setdefault(item.kind, []).append(item)
        # Conversation lines read best in time order; facts in rank order.
        for kind in ("episode", "transcript"):
            by_kind.get(kind, []).sort(key=lambda i: i.at or 0.0)
        return self._template.render(
            today=datetime.fromtimestamp(now, UTC).strftime("%A, %Y-%m-%d"),
            fence_open=FENCE_OPEN,
            fence_close=FENCE_CLOSE,
            identity=[i.line for i in by_kind.get("identity", [])],
            pinned=[i.line for i in by_kind.get("pinned", [])],
            episodes=[i.line for i in by_kind.get("episode", [])],
            transcript=[i.line for i in by_kind.get("transcript", [])],
        ).strip()

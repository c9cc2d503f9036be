"""Time expressions in a user's words ("tomorrow", "next Friday", "in 3 days", "May 10"),
found with a spaCy Matcher and rewritten as absolute ISO dates relative to when they were
said, so that a commitment stored today still means the same thing next month.

Conventions (the phrases are ambiguous; these are the readings we commit to):
a bare or "next" weekday is the first such day after today; "this <weekday>" may be today;
"next week" is the week starting on the following Monday; a month and day without a year
is the next such date on or after today, except after "last"/"ago" style past phrases.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING

from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory.text.parsing import MONTHS, WEEKDAYS, pipeline
from mnemoproxy.memory.text.words import NUMBER_WORDS

if TYPE_CHECKING:
    from spacy.matcher import Matcher
    from spacy.tokens import Span

_NUMBER_WORDS = {"a": 1, "an": 1} | {w: n for w, n in NUMBER_WORDS.items() if 0 < n <= 12}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_UNITS = [u + s for u in _UNIT_DAYS for s in ("", "s")]
_PREPOSITIONS = ["on", "by", "before", "until", "till", "for"]

_PREP = {"LOWER": {"IN": _PREPOSITIONS}, "OP": "?"}
_RANGE_OPENERS = {"from", "since", "between", "after", "to"}
_AMOUNT = {"LOWER": {"IN": [*_NUMBER_WORDS, *map(str, range(1, 100))]}}
_DAY_NUMBER = {"TEXT": {"REGEX": r"^(0?[1-9]|[12]\d|3[01])(st|nd|rd|th)?$"}}
_YEAR = {"TEXT": {"REGEX": r"^(19|20)\d\d$"}}
_MONTH = {"LOWER": {"IN": list(MONTHS)}}
_TWO_DIGITS = {"TEXT": {"REGEX": r"^\d\d$"}}
_IN_OR_BY = {"LOWER": {"IN": ["in", "by"]}, "OP": "?"}
_PATTERNS: dict[str, list[list[dict]]] = {
    "DAY_WORD": [
        [_PREP, {"LOWER": {"IN": ["today", "tonight", "tomorrow", "tmrw", "yesterday"]}}],
        [_PREP, {"LOWER": "later"}, {"LOWER": "today"}],
        [_PREP, {"LOWER": "the"}, {"LOWER": "day"}, {"LOWER": "after"}, {"LOWER": "tomorrow"}],
    ],
    "WEEKDAY": [
        [_PREP, {"LOWER": {"IN": ["this", "next", "last", "coming"]}, "OP": "?"},
         {"LOWER": {"IN": list(WEEKDAYS)}}],
    ],
    "PERIOD": [
        [_PREP, {"LOWER": {"IN": ["this", "next", "last"]}},
         {"LOWER": {"IN": ["week", "weekend", "month", "year"]}}],
    ],
    "IN_AMOUNT": [[{"LOWER": {"IN": ["in", "within"]}}, _AMOUNT, {"LOWER": {"IN": _UNITS}}]],
    "AGO": [[_AMOUNT, {"LOWER": {"IN": _UNITS}}, {"LOWER": "ago"}]],
    "MONTH_YEAR": [
        [{"LOWER": {"IN": ["in", "during", "by", "since", "until", "till", "before", "after"]},
          "OP": "?"}, _MONTH, {"ORTH": ",", "OP": "?"}, _YEAR],
    ],
    "MONTH_DAY": [[_PREP, _MONTH, _DAY_NUMBER, {"ORTH": ",", "OP": "?"}, {**_YEAR, "OP": "?"}]],
    "DAY_MONTH": [
        [_PREP, {"LOWER": "the", "OP": "?"}, _DAY_NUMBER, {"LOWER": "of", "OP": "?"}, _MONTH,
         {"ORTH": ",", "OP": "?"}, {**_YEAR, "OP": "?"}],
    ],
    # Dates already absolute, as the rewrite below writes them, so a stored fact reads back
    # with the same slot: "on 2024-05-08", "in the week of 2024-05-13", "in 2024-06", "in 2025".
    "ISO": [
        [_PREP, _YEAR, {"ORTH": "-"}, _TWO_DIGITS, {"ORTH": "-"}, _TWO_DIGITS],
        [_IN_OR_BY, {"LOWER": "the"}, {"LOWER": "week"}, {"LOWER": "of"}, _YEAR, {"ORTH": "-"},
         _TWO_DIGITS, {"ORTH": "-"}, _TWO_DIGITS],
        [_IN_OR_BY, _YEAR, {"ORTH": "-"}, _TWO_DIGITS],
        [{"LOWER": {"IN": ["in", "by"]}}, _YEAR],
    ],
}


def _build_matcher() -> Matcher:
    from spacy.matcher import Matcher  # deferred with the rest of spaCy

    matcher = Matcher(pipeline().vocab)
    for label, patterns in _PATTERNS.items():
        matcher.add(label, patterns, greedy="LONGEST")
    return matcher


_MATCHER = LazyResource(_build_matcher)


@dataclass(frozen=True)
class TimeExpression:
    span: Span
    label: str


def find_time_expressions(span: Span) -> list[TimeExpression]:
    """Time expressions inside `span`, left to right, without overlaps."""
    from spacy.util import filter_spans

    matches = _MATCHER.get()(span.doc[span.start:span.end], as_spans=True)
    return [TimeExpression(s, s.label_) for s in sorted(filter_spans(matches))]


def _words(span: Span) -> list[str]:
    return [t.lower_ for t in span]


def _amount(word: str) -> int:
    return _NUMBER_WORDS.get(word) or int(word)


def _day_number(text: str) -> int:
    return int(text.rstrip("stndrh"))


def _next_weekday(today: date, weekday: int, *, include_today: bool) -> date:
    ahead = (weekday - today.weekday()) % 7
    if ahead == 0 and not include_today:
        ahead = 7
    return today + timedelta(days=ahead)


def _month_day(today: date, month: int, day: int, year: int | None) -> date | None:
    try:
        found = date(year or today.year, month, day)
        if year is None and found < today:
            found = date(today.year + 1, month, day)
    except ValueError:  # "February 30"
        return None
    return found


def resolve(expr: TimeExpression, today: date) -> str | None:
    """The ISO phrase for one expression ("2024-05-08", "the week of 2024-05-13")."""
    words = [w for w in _words(expr.span) if w not in _PREPOSITIONS]
    label = expr.label
    if label == "DAY_WORD":
        offset = {"yesterday": -1, "tomorrow": 1, "tmrw": 1, "after": 2}
        return (today + timedelta(days=next((offset[w] for w in words if w in offset), 0)))\
            .isoformat()
    if label == "WEEKDAY":
        weekday = WEEKDAYS.index(words[-1])
        if words[0] == "last":
            return (today - timedelta(days=(today.weekday() - weekday) % 7 or 7)).isoformat()
        return _next_weekday(today, weekday, include_today=words[0] == "this").isoformat()
    if label == "PERIOD":
        shift = {"this": 0, "next": 1, "last": -1}[words[0]]
        unit = words[1]
        if unit == "weekend":
            return (_next_weekday(today, 5, include_today=True) + timedelta(weeks=shift))\
                .isoformat()
        if unit == "week":
            monday = today - timedelta(days=today.weekday()) + timedelta(weeks=shift)
            return f"the week of {monday.isoformat()}"
        if unit == "month":
            month_index = today.year * 12 + today.month - 1 + shift
            return f"{month_index // 12:04d}-{month_index % 12 + 1:02d}"
        return str(today.year + shift)
    if label in {"IN_AMOUNT", "AGO"}:
        if label == "AGO":  # "3 days ago"
            words = words[:-1]
        days = _amount(words[-2]) * _UNIT_DAYS[words[-1].rstrip("s")]
        return (today + timedelta(days=-days if label == "AGO" else days)).isoformat()
    if label == "MONTH_YEAR":
        month = next(MONTHS.index(w) + 1 for w in words if w in MONTHS)
        return f"{int(words[-1]):04d}-{month:02d}"
    if label in {"MONTH_DAY", "DAY_MONTH"}:
        month = next(MONTHS.index(w) + 1 for w in words if w in MONTHS)
        numbers = [t.text for t in expr.span if t.text[:1].isdigit()]
        year = int(numbers[1]) if len(numbers) > 1 else None
        found = _month_day(today, month, _day_number(numbers[0]), year)
        return found.isoformat() if found else None
    # Already absolute: its words without the preposition, the date itself unspaced.
    tokens = [t for t in expr.span if t.lower_ not in {*_PREPOSITIONS, "in"}]
    date_at = next(n for n, t in enumerate(tokens) if t.text[:1].isdigit())
    words = [t.text for t in tokens[:date_at]]
    return " ".join([*words, "".join(t.text for t in tokens[date_at:])])


def rewrite_with_dates(span: Span, when: date | None) -> tuple[str, bool]:
    """`span`'s text with every time expression made absolute ("call mom tomorrow" ->
    "call mom on 2024-05-08"), and whether it held any. Without `when` the words stay."""
    expressions = find_time_expressions(span)
    if not expressions or when is None:
        return span.text, bool(expressions)
    parts: list[str] = []
    cursor = span.start
    for expr in expressions:
        parts.append(span.doc[cursor:expr.span.start].text_with_ws)
        resolved = resolve(expr, when)
        if resolved is None:
            parts.append(expr.span.text_with_ws)
        else:
            first = expr.span[0].lower_
            preposition = first if first in {"by", "before", "until", "till"} else "on"
            if resolved.startswith("the week") or len(resolved) < 10:
                preposition = "by" if preposition != "on" else "in"
            before = span.doc[expr.span.start - 1].lower_ if expr.span.start > 0 else ""
            if before in _RANGE_OPENERS:  # "from March 22nd": "from 2025-03-22", no "on"
                preposition = ""
            parts.append(f"{preposition} {resolved}{expr.span[-1].whitespace_}".lstrip())
        cursor = expr.span.end
    parts.append(span.doc[cursor:span.end].text)
    return "".join(parts).strip(), True


def without_dates(span: Span) -> str:
    """`span`'s text with its time expressions removed, for slot keys."""
    kept = set(range(span.start, span.end))
    for expr in find_time_expressions(span):
        start = expr.span.start
        if start > span.start and span.doc[start - 1].lower_ in _RANGE_OPENERS:
            start -= 1  # "from Friday to Sunday" goes whole
        kept -= set(range(start, expr.span.end))
    return " ".join(t.text for t in span if t.i in kept)

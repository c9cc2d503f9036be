"""The period a question asks about: "what did I do last weekend?", "who did Maria have
dinner with on May 3, 2023?", "what happened in July 2023?", "the event two weeks ago".

The same time expressions the rule distiller reads (memory/text/dates.py), read
as a question reads them: about the past unless it says "next" or "tomorrow" ("on
Friday" is the last Friday, "on May 3" the last May 3). The period is wider than the day
named: a conversation often tells of a day after it (yesterday's dinner), and a date
said loosely is a day or two off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from mnemoproxy.memory.text.dates import find_time_expressions, resolve
from mnemoproxy.memory.text.parsing import MONTHS, WEEKDAYS, parse

# Only questions with one of these are parsed at all: most questions name no time.
_MAY_NAME_TIME = re.compile(
    r"\d|\b(?:today|tonight|tomorrow|yesterday|week|weekend|month|year|ago|"
    + "|".join(WEEKDAYS + MONTHS) + r")\b",
    re.IGNORECASE,
)
_FUTURE_WORDS = {"next", "coming", "tomorrow", "tmrw", "in", "within"}
# How far past the named span the period reaches, before and after (days).
_SLACK_BEFORE = 1
_SLACK_AFTER = 3
_AGO_SLACK = {"day": 0, "week": 3, "month": 10, "year": 60}


@dataclass(frozen=True)
class Period:
    """[start, end) in Unix seconds."""

    start: float
    end: float

    def holds(self, at: float | None) -> bool:
        return at is not None and self.start <= at < self.end


def period_asked(question: str, now: float) -> Period | None:
    """The period `question` names (a date with its year before any other: "last weekend
    before April 10, 2023"), or None."""
    if not _MAY_NAME_TIME.search(question):
        return None
    doc = parse(question[:1000])
    today = datetime.fromtimestamp(now, UTC).date()
    found = find_time_expressions(doc[0:len(doc)])
    dated = [e for e in found if any(t.text.isdigit() and len(t.text) == 4 for t in e.span)]
    for expr in dated + [e for e in found if e not in dated]:
        resolved = resolve(expr, today)
        days = _days_of(resolved) if resolved is not None else None
        if days is None:
            continue
        words = {t.lower_ for t in expr.span}
        first, last = days
        if "weekend" in words:
            last = first + timedelta(days=1)  # Saturday and Sunday
        if first > today and not words & _FUTURE_WORDS:
            first, last = _in_the_past(expr.label, first, last)
        if first > today:
            return None  # "my plans for next week": said before, whenever that was
        # "Two weeks ago" is said of anything from ten days to three weeks back.
        loose = max((_AGO_SLACK.get(w.rstrip("s"), 0) for w in words), default=0) if (
            expr.label == "AGO") else 0
        return Period(_seconds(first - timedelta(days=_SLACK_BEFORE + loose)),
                      _seconds(last + timedelta(days=_SLACK_AFTER + loose + 1)))
    return None


def _days_of(resolved: str) -> tuple[date, date] | None:
    """The first and last day an ISO phrase names: a day, "the week of" a Monday, a month
    ("2024-06") or a year ("2025")."""
    text = resolved.removeprefix("the week of ")
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return (day, day + timedelta(days=6)) if text != resolved else (day, day)
        if len(text) == 7:
            first = date(int(text[:4]), int(text[5:]), 1)
            following = date(first.year + first.month // 12, first.month % 12 + 1, 1)
            return first, following - timedelta(days=1)
        if len(text) == 4:
            return date(int(text), 1, 1), date(int(text), 12, 31)
    except ValueError:
        return None
    return None


def _in_the_past(label: str, first: date, last: date) -> tuple[date, date]:
    """A date the distiller's conventions put ahead ("on Friday", "May 3"), as a question
    about what happened means it: the last one."""
    if label == "WEEKDAY":
        return first - timedelta(days=7), last - timedelta(days=7)
    if label in {"MONTH_DAY", "DAY_MONTH"}:
        try:
            return first.replace(year=first.year - 1), last.replace(year=last.year - 1)
        except ValueError:  # February 29
            return first - timedelta(days=365), last - timedelta(days=365)
    return first, last


def _seconds(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()

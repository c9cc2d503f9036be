"""The period a question asks about, read as a question reads time: about the past."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from mnemoproxy.memory.search.periods import period_asked

# A Thursday.
NOW = datetime(2026, 11, 26, 15, 0, tzinfo=UTC).timestamp()


def days(question: str) -> tuple[date, date] | None:
    period = period_asked(question, NOW)
    if period is None:
        return None
    return (datetime.fromtimestamp(period.start, UTC).date(),
            datetime.fromtimestamp(period.end, UTC).date())


@pytest.mark.parametrize(("question", "first", "end"), [
    # A day, from the day before to three days after (told of "yesterday", said loosely).
    ("Who did Maria have dinner with on May 3, 2023?", "2023-05-02", "2023-05-07"),
    ("What did Gina find on 1 February, 2023?", "2023-01-31", "2023-02-05"),
    ("What did I eat yesterday?", "2026-11-24", "2026-11-29"),
    # Without a year or a "next", a date is the last one, not the coming one.
    ("What did we talk about on May 3?", "2026-05-02", "2026-05-07"),
    ("What did I buy on Friday?", "2026-11-19", "2026-11-24"),
    # A month, a year, a weekend.
    ("What did Mel paint in July 2023?", "2023-06-30", "2023-08-04"),
    ("How often did I go to the beach in 2023?", "2022-12-31", "2024-01-04"),
    ("What did I do last weekend?", "2026-11-20", "2026-11-26"),
    # "Two weeks ago" is said loosely: days either side.
    ("Where was the event I went to two weeks ago?", "2026-11-08", "2026-11-19"),
    # A date with its year wins over a relative one.
    ("What did Maria do last weekend before April 10, 2023?", "2023-04-09", "2023-04-14"),
])
def test_the_period_a_question_names(question: str, first: str, end: str) -> None:
    assert days(question) == (date.fromisoformat(first), date.fromisoformat(end))


@pytest.mark.parametrize("question", [
    "How are you?",
    "What's my plan for next week?",  # said before, whenever that was
    "How many of the 3 books did I finish?",
    "What time is it in May?",
])
def test_no_period(question: str) -> None:
    assert days(question) is None

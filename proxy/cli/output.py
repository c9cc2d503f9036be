"""How the memory commands show what they did, one style per command: a sentence or a table
for people (dates as "3 hours ago", scores to two decimals, counts in words: "1 turn",
"2 turns", tables as wide as the terminal), or, with --json, the proxy's JSON as it came,
for scripts. Progress bars go to standard error, so they never mix with the output."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

MINUTE, HOUR, DAY = 60, 3600, 86400
# Words whose plural is not the word and an s.
_PLURALS = {"entity": "entities"}


def count(number: int, noun: str) -> str:
    """`count(1, "turn")` is "1 turn", `count(2, "turn")` "2 turns"."""
    return f"{number} {noun if number == 1 else plural(noun)}"


def counts(numbers: dict[str, Any], nouns: Iterable[str]) -> str:
    """"2 facts, 1 episode": each noun counted from `numbers`, keyed by its plural."""
    return ", ".join(count(int(numbers.get(plural(noun)) or 0), noun) for noun in nouns)


def plural(noun: str) -> str:
    return _PLURALS.get(noun, noun + "s")


def ago(moment: float | None, now: float | None = None) -> str:
    """A time as people say it: "just now", "5 minutes ago", "yesterday", "3 days ago",
    then the date ("2024-05-08")."""
    if moment is None:
        return "never"
    elapsed = (time.time() if now is None else now) - moment
    if elapsed < 0 or elapsed >= 7 * DAY:
        return datetime.fromtimestamp(moment).strftime("%Y-%m-%d")
    if elapsed < MINUTE:
        return "just now"
    if elapsed < HOUR:
        return count(int(elapsed // MINUTE), "minute") + " ago"
    if elapsed < DAY:
        return count(int(elapsed // HOUR), "hour") + " ago"
    days = int(elapsed // DAY)
    return "yesterday" if days == 1 else f"{days} days ago"


def score(value: float) -> str:
    return f"{value:.2f}"


def one_line(text: str, limit: int = 200) -> str:
    """A text on one line, cut at `limit` characters (a table cell, a title)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class Output:
    """Where a command writes: its result to standard output, notes and progress to
    standard error; JSON instead of text with --json."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.console = Console(highlight=False)
        self.notes = Console(stderr=True, highlight=False)

    def json(self, value: Any) -> None:
        sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def result(self, answer: Any, words: str) -> None:
        """A command's result: the proxy's `answer` with --json, else `words`."""
        if self.as_json:
            self.json(answer)
        else:
            self.say(words)

    def say(self, text: str) -> None:
        """A sentence for people (standard output)."""
        self.console.print(text, markup=False, soft_wrap=True)

    def note(self, text: str) -> None:
        """A remark beside the result (standard error): where a file went, what failed."""
        self.notes.print(text, markup=False, soft_wrap=True)

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[str]],
              numeric: Sequence[str] = ()) -> None:
        """A table as wide as the terminal: long cells wrap, numbers align right."""
        table = Table(box=None, header_style="bold", pad_edge=False, expand=False)
        for header in headers:
            table.add_column(header, justify="right" if header in numeric else "left",
                             overflow="fold")
        for row in rows:
            table.add_row(*row)
        self.console.print(table)

    def progress(self) -> Progress:
        """A progress bar on standard error; silent when that is not a terminal."""
        return Progress(console=self.notes, transient=True,
                        disable=self.as_json or not self.notes.is_terminal)

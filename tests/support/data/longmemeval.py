"""Loader for the LongMemEval development slice (../shared/eval-data/longmemeval_dev.json.gz).

120 questions of LongMemEval_S (20 per question type, no abstention questions), each with
its own haystack of about 50 sessions. Like LoCoMo, the data stays in the shared folder
beside the checkout; `available()` tells benchmarks to skip when it is absent.

The haystack's sessions are not always listed in date order: `LmeQuestion.sessions` is
sorted by date (stably), so ingesting them in order replays the user's history as it
happened. Dates are naive in the data ("2023/05/30 (Tue) 23:40"); they are kept naive here
and a benchmark decides what clock they belong to.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PATH = REPO_ROOT.parent / "shared" / "eval-data" / "longmemeval_dev.json.gz"
QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
_DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


@dataclass(frozen=True)
class LmeTurn:
    role: str  # user | assistant
    content: str
    has_answer: bool  # the turn holds evidence for the question


@dataclass(frozen=True)
class LmeSession:
    session_id: str
    date: datetime
    turns: list[LmeTurn]

    def exchanges(self) -> list[tuple[str, str]]:
        """The session as (user, assistant) pairs, the shape chat memory stores. A message
        without its partner (a session opening with the assistant, two user messages in a
        row) becomes a pair with an empty side, so no text is lost or merged."""
        pairs: list[tuple[str, str]] = []
        pending_user: str | None = None
        for turn in self.turns:
            if turn.role == "user":
                if pending_user is not None:
                    pairs.append((pending_user, ""))
                pending_user = turn.content
            else:
                pairs.append((pending_user or "", turn.content))
                pending_user = None
        if pending_user is not None:
            pairs.append((pending_user, ""))
        return [(user, assistant) for user, assistant in pairs if user.strip() or assistant.strip()]


@dataclass(frozen=True)
class LmeQuestion:
    question_id: str
    question_type: str
    question: str
    answer: str  # a few answers are numbers in the data: kept as their str()
    date: datetime  # when the question is asked
    sessions: list[LmeSession]  # the haystack, in date order
    answer_session_ids: list[str]

    @property
    def evidence(self) -> list[LmeTurn]:
        return [turn for session in self.sessions for turn in session.turns if turn.has_answer]


def data_path() -> Path:
    return Path(os.environ.get("MNEMO_LONGMEMEVAL_PATH", DEFAULT_PATH))


def available() -> bool:
    return data_path().is_file()


def unavailable_message() -> str:
    return (
        f"LongMemEval data not found at {data_path()}: put longmemeval_dev.json.gz in "
        "../shared/eval-data/ (or set MNEMO_LONGMEMEVAL_PATH); skipping."
    )


def parse_date(text: str) -> datetime:
    return datetime.strptime(" ".join(text.split()), _DATE_FORMAT)


@cache
def load(path: Path | None = None) -> list[LmeQuestion]:
    with gzip.open(path or data_path(), "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    return [_question(entry) for entry in raw]


def _question(entry: dict[str, Any]) -> LmeQuestion:
    sessions = [
        LmeSession(
            session_id=str(session_id),
            date=parse_date(date),
            turns=[
                LmeTurn(str(t["role"]), str(t["content"]), bool(t.get("has_answer", False)))
                for t in turns
            ],
        )
        for session_id, date, turns in zip(
            entry["haystack_session_ids"],
            entry["haystack_dates"],
            entry["haystack_sessions"],
            strict=True,
        )
    ]
    sessions.sort(key=lambda session: session.date)  # stable: same-minute sessions keep order
    return LmeQuestion(
        question_id=str(entry["question_id"]),
        question_type=str(entry["question_type"]),
        question=str(entry["question"]),
        answer=str(entry["answer"]),
        date=parse_date(entry["question_date"]),
        sessions=sessions,
        answer_session_ids=[str(s) for s in entry.get("answer_session_ids", [])],
    )

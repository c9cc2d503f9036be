"""Loader for the LoCoMo benchmark (../shared/eval-data/locomo10.json), shared by benchmarks.

The data set's licence forbids copying it into the repository: it is read from the shared
folder beside the checkout, and `available()` tells benchmarks to skip when it is absent.
Malformed evidence ids are repaired where unambiguous ("D8:6; D9:17" -> two ids,
"D:11:26" -> "D11:26", "D30:05" -> "D30:5"); ids naming no turn are dropped.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PATH = REPO_ROOT.parent / "shared" / "eval-data" / "locomo10.json"
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                  5: "adversarial"}
RETRIEVAL_CATEGORIES = (1, 2, 3, 4)  # category 5 asks about things never said

_EVIDENCE_ID = re.compile(r"D:?(\d+):0*(\d+)")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M%p on %d %B, %Y")


@dataclass(frozen=True)
class LocomoTurn:
    dia_id: str  # "D<session>:<turn>", turn 1-based
    session: int
    index: int  # 0-based position in its session
    speaker: str
    text: str
    at: datetime  # the session's date (turns carry no time of their own)
    caption: str | None = None  # BLIP caption of a shared image

    def labelled(self) -> str:
        """The turn as the benchmark's reference BM25 indexes it: "speaker: text"."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class LocomoSession:
    number: int
    date: datetime
    turns: list[LocomoTurn]
    # The data set's annotated facts of the session, per speaker: "Caroline attended ...".
    observations: dict[str, list[str]] = field(default_factory=dict)
    # The same with the turns each was drawn from: (fact, dia_ids) per speaker.
    sourced: dict[str, list[tuple[str, tuple[str, ...]]]] = field(default_factory=dict)
    summary: str = ""  # the data set's summary of the session


@dataclass(frozen=True)
class LocomoQuestion:
    question: str
    answer: str
    category: int
    evidence: list[str]  # repaired dia_ids, each naming a real turn


@dataclass(frozen=True)
class LocomoSample:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[LocomoSession]
    questions: list[LocomoQuestion] = field(default_factory=list)

    @property
    def turns(self) -> list[LocomoTurn]:
        return [turn for session in self.sessions for turn in session.turns]


def data_path() -> Path:
    return Path(os.environ.get("MNEMO_LOCOMO_PATH", DEFAULT_PATH))


def available() -> bool:
    return data_path().is_file()


def unavailable_message() -> str:
    return (
        f"LoCoMo data not found at {data_path()}: put locomo10.json in ../shared/eval-data/ "
        "(or set MNEMO_LOCOMO_PATH); skipping."
    )


@cache
def load(path: Path | None = None) -> list[LocomoSample]:
    raw = json.loads((path or data_path()).read_text(encoding="utf-8"))
    return [_sample(entry, number) for number, entry in enumerate(raw)]


def parse_session_date(text: str) -> datetime:
    cleaned = " ".join(text.split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
    raise ValueError(f"unrecognised LoCoMo session date {text!r}")


def repair_evidence(raw: list[str], known: set[str]) -> list[str]:
    """Split, normalise and keep only evidence ids that name a turn, in order, once each."""
    repaired: list[str] = []
    for entry in raw:
        for session, turn in _EVIDENCE_ID.findall(str(entry)):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id in known and dia_id not in repaired:
                repaired.append(dia_id)
    return repaired


def _sample(entry: dict[str, Any], number: int) -> LocomoSample:
    conversation = entry["conversation"]
    sessions = []
    session_numbers = sorted(
        int(key.split("_")[1]) for key in conversation
        if re.fullmatch(r"session_\d+", key) and conversation[key]
    )
    for session_number in session_numbers:
        date = parse_session_date(conversation[f"session_{session_number}_date_time"])
        turns = [
            LocomoTurn(
                dia_id=turn["dia_id"], session=session_number, index=index,
                speaker=turn["speaker"], text=turn["text"], at=date,
                caption=turn.get("blip_caption"),
            )
            for index, turn in enumerate(conversation[f"session_{session_number}"])
        ]
        annotated = entry.get("observation", {}).get(f"session_{session_number}_observation", {})
        observations = {
            str(speaker): [str(item[0]) for item in items if item]
            for speaker, items in annotated.items()
        }
        known_here = {turn.dia_id for turn in turns}
        sourced = {
            str(speaker): [(str(item[0]), tuple(repair_evidence(
                [str(i) for i in item[1:]], known_here))) for item in items if item]
            for speaker, items in annotated.items()
        }
        summary = str(entry.get("session_summary", {}).get(
            f"session_{session_number}_summary", ""))
        sessions.append(LocomoSession(session_number, date, turns, observations, sourced,
                                      summary))
    known = {turn.dia_id for session in sessions for turn in session.turns}
    questions = [
        LocomoQuestion(
            question=qa["question"],
            answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
            category=int(qa["category"]),
            evidence=repair_evidence(qa.get("evidence", []), known),
        )
        for qa in entry["qa"]
    ]
    return LocomoSample(
        sample_id=str(entry.get("sample_id", f"sample-{number}")),
        speaker_a=conversation["speaker_a"],
        speaker_b=conversation["speaker_b"],
        sessions=sessions,
        questions=questions,
    )

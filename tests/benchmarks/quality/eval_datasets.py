"""The evaluation's data, dated and shaped for the HTTP API: what make eval ingests and asks.

Every question and prompt carries its split. The development data the proxy was tuned on
is `dev`; the rest is cut once, by a hash of each item's id, into `tune` (what tuning may
look at) and `held` (kept untouched until a result is reported):

- longmemeval: the 120-question LongMemEval slice, one agent per question (dev).
- oracle: 270 more LongMemEval questions with only their evidence sessions (tune / held).
- locomo: LoCoMo's ten conversations, one agent each (dev).
- personal: our own first-person questions in new wordings, each with the small history
  that answers it (tune / held).
- multilingual: our own personas in nine languages, six facts each asked back, and
  generic requests in the same languages (tune / held).
- generic prompts, asked of an agent with a big memory: the Vicuna questions (dev) and our
  own requests of the kinds that fool a gate: payloads, role-play, translation, advice
  that says "I" (tune / held).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.blackbox import Evidence, History, Session, norm
from tests.support.data import locomo, longmemeval
from tests.support.data.generic_prompts import vicuna_prompts

DATA = Path(__file__).with_name("data")
ORACLE_PATH = longmemeval.DEFAULT_PATH.with_name("longmemeval_oracle_dev.json.gz")
GENERIC = "generic"


def split_of(key: str) -> str:
    """`tune` or `held`, fixed by the item's id: the same cut on every run and machine."""
    return "held" if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 2 else "tune"


@dataclass(frozen=True)
class Probe:
    agent_id: str
    group: str  # the row of the table: question type or kind, with its split
    question: str
    evidence: tuple[Evidence, ...] = ()
    answer: str = ""
    # The conversation the question comes after (OpenAI messages), when it is a follow-up.
    thread: tuple[dict[str, str], ...] = ()

    @property
    def generic(self) -> bool:
        return self.group.startswith(GENERIC)


@dataclass(frozen=True)
class Plan:
    dataset: str
    histories: list[History]
    probes: list[Probe]  # questions, then generic prompts (groups starting "generic")
    order: Sequence[str]  # the question rows, in this order first


# --- dates ---------------------------------------------------------------------------------


def shift_to(day: date, target: date) -> timedelta:
    """Whole days, so that calendar dates keep their distances ("3 days ago" stays true) and
    times of day stay as the data has them. Naive dates are taken as UTC."""
    return timedelta(days=(target - day).days)


def shifted(moment: datetime, shift: timedelta) -> datetime:
    return (moment + shift).replace(tzinfo=UTC)


_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")
_MONTH = "|".join(_MONTH_NAMES)
_DATE_IN_TEXT = re.compile(
    rf"\b(?:(?P<m1>{_MONTH}) (?P<d1>\d{{1,2}})(?:st|nd|rd|th)?,? (?P<y1>\d{{4}})"
    rf"|(?P<d2>\d{{1,2}}) (?P<m2>{_MONTH}),? (?P<y2>\d{{4}})"
    rf"|(?P<m3>{_MONTH}),? (?P<y3>\d{{4}})"
    rf"|(?P<y4>(?:19|20)\d\d))\b"
)


def dates_shifted(text: str, shift: timedelta) -> str:
    """`text` with the dates it names ("May 3, 2023", "27 March, 2022", "July 2023",
    "2023") moved as the history they ask about was moved, so a question still names the
    days its answer was said on."""

    def moved(match: re.Match[str]) -> str:
        g = match.groupdict()
        if g["y1"] or g["y2"]:
            month, day, year = (g["m1"], g["d1"], g["y1"]) if g["y1"] else (
                g["m2"], g["d2"], g["y2"])
            new = datetime(int(year), _MONTH_NAMES.index(month) + 1, int(day)) + shift
            name = _MONTH_NAMES[new.month - 1]
            return f"{name} {new.day}, {new.year}" if g["y1"] else f"{new.day} {name}, {new.year}"
        if g["y3"]:
            middle = datetime(int(g["y3"]), _MONTH_NAMES.index(g["m3"]) + 1, 15) + shift
            return f"{_MONTH_NAMES[middle.month - 1]} {middle.year}"
        return str(int(g["y4"]) + round(shift.days / 365.25))

    return _DATE_IN_TEXT.sub(moved, text)


# --- LongMemEval: the slice and the oracle questions ---------------------------------------


def _lme_history(q: longmemeval.LmeQuestion, today: date) -> History:
    shift = shift_to(q.date.date(), today)
    sessions = [
        # The position keeps conversation ids unique even if a session id repeats.
        Session(f"s{n:02d}-{s.session_id}", shifted(s.date, shift), s.exchanges())
        for n, s in enumerate(q.sessions)
    ]
    return History(q.question_id, [s for s in sessions if s.turns])


def _lme_probe(q: longmemeval.LmeQuestion, group: str) -> Probe:
    evidence = tuple(Evidence(norm(t.content)) for t in q.evidence)
    return Probe(q.question_id, group, q.question, evidence, q.answer)


def limited(questions: Sequence[Any], limit: int | None, kind: Any) -> list[Any]:
    """The first `limit` questions of each kind (all of them without a limit)."""
    taken: Counter[str] = Counter()
    chosen = []
    for q in questions:
        if limit is None or taken[kind(q)] < limit:
            taken[kind(q)] += 1
            chosen.append(q)
    return chosen


def longmemeval_plan(limit: int | None, today: date, generic: list[Probe]) -> Plan:
    """One agent per question (agent id = question id); its question falls on today."""
    questions = limited(longmemeval.load(), limit, lambda q: q.question_type)
    histories = [_lme_history(q, today) for q in questions]
    probes = [_lme_probe(q, q.question_type) for q in questions]
    generic = [replace(p, agent_id=histories[0].agent_id) for p in generic]
    return Plan("longmemeval", histories, probes + generic, longmemeval.QUESTION_TYPES)


def oracle_plan(limit: int | None, today: date) -> Plan:
    """LongMemEval's oracle questions: each with only its evidence sessions; abstention
    questions (the history never says) are asked too: the gate should still fire."""
    questions = [q for q in longmemeval.load(ORACLE_PATH)]

    def kind(q: longmemeval.LmeQuestion) -> str:
        abstention = "abstention" if q.question_id.endswith("_abs") else q.question_type
        return f"{abstention} [{split_of(q.question_id)}]"

    questions = limited(questions, limit, kind)
    order = [f"{t} [{s}]" for s in ("tune", "held")
             for t in (*longmemeval.QUESTION_TYPES, "abstention")]
    return Plan("oracle", [_lme_history(q, today) for q in questions],
                [_lme_probe(q, kind(q)) for q in questions], order)


# --- LoCoMo --------------------------------------------------------------------------------


def locomo_pairs(session: locomo.LocomoSession) -> list[tuple[str, str]]:
    """Consecutive utterances as (user, assistant), each "speaker: text" (the form the
    benchmark's own BM25 indexes)."""
    texts = [turn.labelled() for turn in session.turns]
    return [(texts[i], texts[i + 1] if i + 1 < len(texts) else "")
            for i in range(0, len(texts), 2)]


def facts_drawn(sample: locomo.LocomoSample) -> dict[str, tuple[str, ...]]:
    """The first speaker's annotated facts by the turn each was drawn from, as a capable
    core model writes them (tests/support/servers/annotated_core_model.py), normalised."""
    drawn: dict[str, list[str]] = {}
    name = re.compile(rf"\b{re.escape(sample.speaker_a)}\b")
    for session in sample.sessions:
        for text, dia_ids in session.sourced.get(sample.speaker_a, []):
            for dia_id in dia_ids:
                drawn.setdefault(dia_id, []).append(norm(name.sub("User", text)))
    return {dia_id: tuple(texts) for dia_id, texts in drawn.items()}


def category_name(category: int) -> str:
    return f"{category} {locomo.CATEGORY_NAMES[category]}"


def locomo_plan(limit: int | None, today: date, generic: list[Probe],
                split: str | None = None) -> Plan:
    """One agent per conversation (agent id = sample id); its last session was yesterday.
    Categories 1-4, questions with evidence; with `limit`, the first so many per category
    and only the conversations they need (and the first, for the generic prompts); with
    `split`, only the conversations of that split (split_of their id)."""
    histories: list[History] = []
    probes: list[Probe] = []
    per_category: Counter[int] = Counter()
    for sample in locomo.load():
        if split is not None and split_of(sample.sample_id) != split:
            continue
        shift = shift_to(sample.sessions[-1].date.date(), today - timedelta(days=1))
        turns = {t.dia_id: t for t in sample.turns}
        drawn = facts_drawn(sample)
        asked = []
        for q in sample.questions:
            if q.category not in locomo.RETRIEVAL_CATEGORIES or not q.evidence:
                continue
            if limit is not None and per_category[q.category] >= limit:
                continue
            per_category[q.category] += 1
            evidence = tuple(Evidence(norm(turns[d].labelled()), drawn.get(d, ()))
                             for d in q.evidence)
            asked.append(Probe(sample.sample_id, category_name(q.category),
                               dates_shifted(q.question, shift), evidence, q.answer))
        if asked or not histories:
            sessions = [Session(f"session_{s.number}", shifted(s.date, shift), locomo_pairs(s))
                        for s in sample.sessions]
            histories.append(History(sample.sample_id, sessions))
        probes += asked
    generic = [replace(p, agent_id=histories[0].agent_id) for p in generic]
    order = [category_name(c) for c in locomo.RETRIEVAL_CATEGORIES]
    return Plan("locomo", histories, probes + generic, order)


# --- our own data: personal questions, multilingual personas, generic requests ------------


def _read_jsonl(name: str) -> list[dict[str, Any]]:
    """Every record of data/<name>.jsonl and of its later batches, <name>_2.jsonl, ..."""
    paths = sorted(DATA.glob(f"{name}*.jsonl"))
    return [json.loads(line) for path in paths
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _own_history(agent_id: str, sessions: list[dict[str, Any]], today: date) -> History:
    """A history of our own: its last session was yesterday, the others as far before as
    the data dates them."""
    days = [date.fromisoformat(s["date"]) for s in sessions]
    shift = shift_to(max(days), today - timedelta(days=1))
    return History(agent_id, [
        Session(f"s{n:02d}", shifted(datetime.combine(day, datetime.min.time()), shift)
                + timedelta(hours=12),
                [(t["user"], t.get("assistant", "")) for t in s["turns"]])
        for n, (day, s) in enumerate(zip(days, sessions, strict=True))
    ])


def _evidence(sessions: list[dict[str, Any]], where: list[list[int]]) -> tuple[Evidence, ...]:
    return tuple(Evidence(norm(sessions[s]["turns"][t]["user"])) for s, t in where)


def personal_plan(today: date) -> Plan:
    """First-person questions about the user's own past, each with the history that
    answers it (one agent per question)."""
    items = _read_jsonl("personal_questions")
    histories, probes = [], []
    for item in items:
        agent = f"personal-{item['id']}"
        histories.append(_own_history(agent, item["sessions"], today))
        probes.append(Probe(agent, f"{item['kind']} [{split_of(item['id'])}]",
                            item["question"], _evidence(item["sessions"], item["evidence"]),
                            item.get("answer", ""), tuple(item.get("thread", ()))))
    kinds = sorted({item["kind"] for item in items})
    order = [f"{k} [{s}]" for s in ("tune", "held") for k in kinds]
    return Plan("personal", histories, probes, order)


LANGUAGES = ("en", "de", "es", "fr", "ru", "zh", "ja", "ko", "pt")


def multilingual_plan(today: date) -> Plan:
    """Personas in nine languages: six facts said in passing, asked back in the same
    language, and generic requests in that language asked of the same agent (either may
    come after a thread of the running conversation)."""
    personas = _read_jsonl("multilingual")
    histories, probes, generic = [], [], []
    for persona in personas:
        agent = f"ml-{persona['id']}"
        split = split_of(persona["id"])
        histories.append(_own_history(agent, persona["sessions"], today))
        for q in persona["questions"]:
            probes.append(Probe(agent, f"{persona['language']} [{split}]", q["question"],
                                _evidence(persona["sessions"], q["evidence"]), q["answer"],
                                tuple(q.get("thread", ()))))
        for g in persona["generic"]:
            generic.append(Probe(agent, f"{GENERIC}: {persona['language']} [{split}]",
                                 g["prompt"], thread=tuple(g.get("thread", ()))))
    order = [f"{lang} [{s}]" for s in ("tune", "held") for lang in LANGUAGES]
    return Plan("multilingual", histories, probes + generic, order)


def generic_probes(paths: Sequence[Path] = ()) -> list[Probe]:
    """Requests anyone could send, by kind and split (the agent is set per plan): the
    Vicuna questions and our own, or, given `paths`, the prompts of those files alone
    (JSON Lines of id, kind and prompt: an instruction set of one's own, kept outside the
    repository)."""
    if paths:
        items = [json.loads(line) for path in paths
                 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        probes = []
    else:
        items = _read_jsonl("generic_prompts")
        probes = [Probe("", f"{GENERIC}: vicuna [dev]", p) for p in vicuna_prompts()]
    probes += [Probe("", f"{GENERIC}: {item['kind']} [{split_of(item['id'])}]",
                     item["prompt"], thread=tuple(item.get("thread", ()))) for item in items]
    return probes


def oracle_available() -> bool:
    return ORACLE_PATH.is_file()

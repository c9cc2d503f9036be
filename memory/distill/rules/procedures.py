"""Procedures a session taught: a named way of doing something, step by step.

Found two ways, from the words alone:
- the user teaching one: a lead-in that names it ("here's how I deploy the app:", "to
  deploy the app, first ...", "my steps for a release:") followed by a list of two or more
  steps (numbered "1. ... 2. ...", or bulleted lines), or by a "first ..., then ...,
  finally ..." sequence;
- the assistant carrying one out for the user: a numbered or bulleted list of two or more
  steps in the reply to a "how do I ...", "how to ...", "what are the steps to ..." question,
  named by the question.

The steps are the session's own words, cut at their markers; nothing is paraphrased.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemoproxy.memory.models import ProcedureDraft, Turn

MIN_STEPS = 2
MAX_STEPS = 20
MAX_STEP_CHARS = 300
MAX_NAME_CHARS = 120

# These run on whole messages in the helper process, which no call timeout watches: each
# is linear in the text. A line's blanks are spaces and tabs (whitespace that could span
# lines made every one of a run of newlines scan the rest), runs are possessive, and a
# name is read for at most NAME_SCAN characters before its closing comma.
NAME_SCAN = 4 * MAX_NAME_CHARS
_LIST_LINE = re.compile(r"^[^\S\n]*+(?:\d{1,2}[.)]|[-*•])[^\S\n]++(\S[^\n]*)", re.MULTILINE)
_INLINE_NUMBER = re.compile(r"(?:^|(?<=\s))(\d{1,2})[.)]\s+")
_SEQUENCE_START = re.compile(r"\bfirst(?:ly)?\b,?\s*+", re.IGNORECASE)
_SEQUENCE_NEXT = re.compile(
    r"(?:[,;.]\s*+|(?<![\s,;.])\s++|(?<![\s,;.]))(?:\band\s++)?"
    r"\b(?:then|next|after that|afterwards|finally|lastly)\b,?\s*+",
    re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
# A name in a lead-in or a question.
_TEACHING = (
    re.compile(r"\b(?:here'?s|here is|this is) how (?:i|we|you) (?P<name>[^:.!?\n]+)", re.I),
    re.compile(r"\b(?:my|our|the) (?:steps|process|procedure|routine|recipe|checklist) "
               r"(?:for|to) (?P<name>[^:.!?\n]+)", re.I),
    re.compile(r"\bhow to (?P<name>[^:.!?\n,]+)", re.I),
    re.compile(r"(?:^|[.!?]\s++)(?:so,?\s+)?(?:in order )?to "
               rf"(?P<name>[^:.!?\n,]{{1,{NAME_SCAN}}}+)[,:]", re.I),
    re.compile(rf"\bwhen(?:ever)? (?:i|we) (?P<name>[^:.!?\n,]{{1,{NAME_SCAN}}}+)[,:]", re.I),
)
_QUESTION = (
    re.compile(r"\bhow (?:do|can|should|would|could) (?:i|we|you|one) (?P<name>[^?.!\n]+)",
               re.I),
    re.compile(r"\bhow to (?P<name>[^?.!\n]+)", re.I),
    re.compile(r"\b(?:what are )?the steps (?:to|for) (?P<name>[^?.!\n]+)", re.I),
    re.compile(r"\bwalk me through (?P<name>[^?.!\n]+)", re.I),
)
_CONDITION = re.compile(r"\b(?P<when>(?:when(?:ever)?|if|before|after|each time) [^,:.!?\n]+)",
                        re.I)
# From the first of a run only: a run of dots not at the end is read once.
_TRAILING = re.compile(r"(?<![\s,;:.!?])[\s,;:.!?]++$")
_NAME_OPENING = re.compile(r"^(?:usually|always|normally|just)\s+", re.I)
_NAME_CLOSING = re.compile(r"\s(?:now|again|these days|nowadays|today)$", re.I)


def find_procedures(turns: Sequence[Turn]) -> list[ProcedureDraft]:
    """The procedures the session's turns teach, at most one per turn side, the later of
    two with the same name kept."""
    found: dict[str, ProcedureDraft] = {}
    for turn in turns:
        for draft in (_taught(turn.user), _answered(turn.user, turn.assistant)):
            if draft is not None:
                found.pop(draft.name.casefold(), None)
                found[draft.name.casefold()] = draft
    return list(found.values())


def _taught(text: str) -> ProcedureDraft | None:
    """A procedure the user spells out, named by its lead-in."""
    steps, lead = _steps(text)
    if steps is None:
        return None
    name = _name(lead, _TEACHING)
    if name is None:
        return None
    return ProcedureDraft(name, steps, _condition(lead, name))


def _answered(question: str, reply: str) -> ProcedureDraft | None:
    """Steps the assistant gives in answer to a how-to question, named by the question."""
    name = _name(question, _QUESTION)
    if name is None:
        return None
    steps = _list_steps(reply)
    if steps is None:
        return None
    return ProcedureDraft(name, steps, _condition(question, name))


def _steps(text: str) -> tuple[list[str] | None, str]:
    """(the steps of `text`, the text before them), or (None, "")."""
    for find in (_list_steps_with_lead, _sequence_steps):
        steps, lead = find(text)
        if steps is not None:
            return steps, lead
    return None, ""


def _list_steps(text: str) -> list[str] | None:
    return _list_steps_with_lead(text)[0]


def _list_steps_with_lead(text: str) -> tuple[list[str] | None, str]:
    lines = list(_LIST_LINE.finditer(text))
    if len(lines) >= MIN_STEPS:
        return _clean([m.group(1).rstrip() for m in lines]), text[: lines[0].start()]
    # "1. Pull the branch 2. Run the tests 3. Tag it" on one line: numbers 1, 2, 3 ...
    marks = [m for m in _INLINE_NUMBER.finditer(text)]
    run: list[re.Match[str]] = []
    for mark in marks:
        if int(mark.group(1)) == len(run) + 1:
            run.append(mark)
        elif int(mark.group(1)) == 1:
            run = [mark]
    if len(run) < MIN_STEPS:
        return None, ""
    ends = [m.start() for m in run[1:]] + [_end_of_last(text, run[-1].end())]
    return (_clean([text[m.end():end] for m, end in zip(run, ends, strict=True)]),
            text[: run[0].start()])


def _end_of_last(text: str, start: int) -> int:
    newline = text.find("\n", start)
    return len(text) if newline < 0 else newline


def _sequence_steps(text: str) -> tuple[list[str] | None, str]:
    """"first A, then B, and finally C" -> [A, B, C]."""
    start = _SEQUENCE_START.search(text)
    if start is None:
        return None, ""
    rest = text[start.end():]
    pieces = _SEQUENCE_NEXT.split(rest)
    if len(pieces) < MIN_STEPS:
        return None, ""
    last = pieces[-1]
    end = _SENTENCE_END.search(last)
    pieces[-1] = last[: end.start()] if end else last
    steps = _clean(pieces)
    return (steps if steps is not None else None), text[: start.start()]


def _clean(pieces: Sequence[str]) -> list[str] | None:
    steps = []
    for piece in pieces[:MAX_STEPS]:
        step = _TRAILING.sub("", " ".join(piece.split()))
        if step and len(step) <= MAX_STEP_CHARS:
            steps.append(step[0].upper() + step[1:])
    return steps if len(steps) >= MIN_STEPS else None


def _name(text: str, patterns: Sequence[re.Pattern[str]]) -> str | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match is None:
            continue
        name = _TRAILING.sub("", " ".join(match.group("name").split()))
        # "deploy the app, first ..." is cut at its comma; "... when it breaks" stays out.
        name = _CONDITION.sub("", name).strip(" ,")
        name = _NAME_CLOSING.sub("", _NAME_OPENING.sub("", name))
        if 2 <= len(name) <= MAX_NAME_CHARS:
            return name
    return None


def _condition(text: str, name: str) -> str:
    match = _CONDITION.search(text)
    if match is not None:
        return _TRAILING.sub("", match.group("when"))
    return f"to {name}"

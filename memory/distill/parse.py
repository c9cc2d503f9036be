"""The JSON shape the core model is asked for, and a forgiving reader for what comes back.

Models wrap JSON in code fences, prepend prose or a <think> block, leave trailing commas,
quote numbers and flatten lists. Everything unambiguous is repaired here; what cannot be
read raises `DistillError` with a reason, so the caller can retry or dead-letter.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from mnemoproxy.errors import DistillError
from mnemoproxy.memory.models import (
    Distillation,
    EpisodeDraft,
    FactDraft,
    FactKind,
    ProcedureDraft,
)

MAX_ITEM_CHARS = 500
DEFAULT_SALIENCE = 0.5
# Identity facts are the always-on core of an agent's memory; they should outlast the decay
# and eviction that ordinary pinned facts go through.
IDENTITY_SALIENCE = 0.9
TOP_LEVEL_KEYS = ("episode", "pinned_candidates", "identity_facts")
# Asked for too, but optional in a reply (an answer without it is read as before).
PROCEDURES_KEY = "procedures"
# Each "{" in the reply is a possible start of the answer; a cap keeps a brace-heavy
# garbage reply from costing quadratic time.
MAX_OBJECT_STARTS = 64
# A cut-off reply is closed at one of its last this many value boundaries.
MAX_REPAIR_TRIES = 200

_SALIENCE: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
# Bounds on every list and string: a server that turns the schema into a grammar
# (llama.cpp, vLLM) cannot loop inside a string or a list until its context is full, and
# an answer within them fits core_max_tokens.
MAX_SUMMARY_CHARS = 400
MAX_FACT_CHARS = 160
MAX_LABEL_CHARS = 60
MAX_LABELS = 6
MAX_FACTS = 8
MAX_PROCEDURES = 3
MAX_PROCEDURE_STEPS = 12
MAX_STEP_CHARS = 200
MIN_PROCEDURE_STEPS = 2


def _strings(max_items: int, max_chars: int) -> dict[str, Any]:
    return {
        "type": "array",
        "maxItems": max_items,
        "items": {"type": "string", "maxLength": max_chars},
    }


# The turns a fact was said in, by the numbers the prompt gives them ("[Turn 3]").
MAX_SOURCE_TURNS = 6
_TURNS = {"type": "array", "maxItems": MAX_SOURCE_TURNS,
          "items": {"type": "integer", "minimum": 1}}


def distillation_schema(max_facts: int = MAX_FACTS) -> dict[str, Any]:
    """The answer's JSON Schema, written so that strict structured-output modes accept it:
    every property required, no extras. `max_facts` bounds each fact list (a shorter
    second request after an answer that ran out asks for fewer)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [*TOP_LEVEL_KEYS, PROCEDURES_KEY],
        "properties": {
            "episode": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "summary", "topics", "entities", "decisions", "action_items", "salience"
                ],
                "properties": {
                    "summary": {"type": "string", "maxLength": MAX_SUMMARY_CHARS},
                    "topics": _strings(MAX_LABELS, MAX_LABEL_CHARS),
                    "entities": _strings(MAX_LABELS * 2, MAX_LABEL_CHARS),
                    "decisions": _strings(MAX_LABELS, MAX_FACT_CHARS),
                    "action_items": _strings(MAX_LABELS, MAX_FACT_CHARS),
                    "salience": _SALIENCE,
                },
            },
            "pinned_candidates": {
                "type": "array",
                "maxItems": max_facts,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["content", "salience", "tags", "turns"],
                    "properties": {
                        "content": {"type": "string", "maxLength": MAX_FACT_CHARS},
                        "salience": _SALIENCE,
                        "tags": _strings(4, 30),
                        "turns": _TURNS,
                    },
                },
            },
            "identity_facts": {
                "type": "array",
                "maxItems": max_facts,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["content", "turns"],
                    "properties": {
                        "content": {"type": "string", "maxLength": MAX_FACT_CHARS},
                        "turns": _TURNS,
                    },
                },
            },
            PROCEDURES_KEY: {
                "type": "array",
                "maxItems": MAX_PROCEDURES,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name", "applies_when", "steps"],
                    "properties": {
                        "name": {"type": "string", "maxLength": MAX_LABEL_CHARS * 2},
                        "applies_when": {"type": "string", "maxLength": MAX_FACT_CHARS},
                        "steps": _strings(MAX_PROCEDURE_STEPS, MAX_STEP_CHARS),
                    },
                },
            },
        },
    }


DISTILLATION_SCHEMA: dict[str, Any] = distillation_schema()

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_FENCED_BLOCK = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_FACT_TEXT_KEYS = ("content", "fact", "text")
_DECODER = json.JSONDecoder()


def parse_distillation(text: str, *, truncated: bool = False) -> Distillation:
    """Read a core-model reply into a `Distillation`; raise `DistillError` if it is unusable.

    A reply with the expected keys but nothing in them is a valid "nothing worth keeping"
    answer and gives an empty `Distillation`. A `truncated` reply (the model ran out of
    tokens) is closed after its last complete value: what was finished is kept.
    """
    if truncated:
        text = close_truncated(text)
    data = _extract_object(text)
    episode = _episode(data.get("episode"))
    identity = _facts(data.get("identity_facts"), kind="identity", salience=IDENTITY_SALIENCE)
    pinned = _facts(data.get("pinned_candidates"), kind="pinned", salience=DEFAULT_SALIENCE)
    identity_keys = {_dedupe_key(fact.content) for fact in identity}
    # A statement the model filed under both headings is kept once, as identity.
    pinned = [fact for fact in pinned if _dedupe_key(fact.content) not in identity_keys]
    procedures = _procedures(data.get(PROCEDURES_KEY))
    if procedures:
        episode = episode or EpisodeDraft("")
        episode.procedures = procedures
    return Distillation(episode=episode, pinned=pinned, identity=identity)


def _extract_object(text: str) -> dict[str, Any]:
    if not isinstance(text, str) or not text.strip():
        raise DistillError("the reply was empty")
    body = _THINK_BLOCK.sub("", text).strip()
    if not body:
        raise DistillError("the reply held only a <think> block and no answer")
    found_other_object = False
    for candidate in _candidate_objects(body):
        if any(key in candidate for key in TOP_LEVEL_KEYS):
            return candidate
        found_other_object = True
    if found_other_object:
        raise DistillError(
            f"the reply's JSON has none of the keys {', '.join(TOP_LEVEL_KEYS)}: {_preview(body)}"
        )
    raise DistillError(f"no JSON object could be read from the reply: {_preview(body)}")


def close_truncated(text: str) -> str:
    """A reply cut off mid-answer, closed after its last complete value: the text up to the
    last comma or opening bracket outside a string, plus the brackets still open there.
    The text itself when it already parses, or when no such point exists."""
    start = text.find("{")
    if start < 0:
        return text
    body = text[start:]
    try:
        json.loads(body)
        return text
    except ValueError:
        pass
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (where to cut, the closers needed there)
    for index, char, quoted in _json_chars(body):
        if quoted:
            continue
        if char in "{[":
            stack.append("}" if char == "{" else "]")
            cuts.append((index + 1, "".join(reversed(stack))))
        elif char in "}]" and stack:
            stack.pop()
        elif char == ",":
            cuts.append((index, "".join(reversed(stack))))
    for cut, closers in reversed(cuts[-MAX_REPAIR_TRIES:]):
        candidate = body[:cut].rstrip().rstrip(",") + closers
        try:
            json.loads(candidate)
        except ValueError:
            continue
        return candidate
    return text


def _candidate_objects(body: str) -> Iterator[dict[str, Any]]:
    """Yield every JSON object found in the reply, most likely answer first: fenced blocks,
    then each object starting at a "{", in order (the whole reply when it is bare JSON)."""
    for match in _FENCED_BLOCK.finditer(body):
        fenced = _loads_object(match.group(1).strip())
        if fenced is not None:
            yield fenced
    starts = [index for index, char in enumerate(body) if char == "{"][:MAX_OBJECT_STARTS]
    for start in starts:
        embedded = _object_at(body, start)
        if embedded is not None:
            yield embedded


def _object_at(body: str, start: int) -> dict[str, Any] | None:
    try:
        value, _ = _DECODER.raw_decode(body, start)
    except json.JSONDecodeError as exc:
        # Only a trailing comma is worth the slower repair; any other error means this
        # brace does not open the answer.
        if not _follows_trailing_comma(body, exc.pos):
            return None
        end = _balanced_end(body, start)
        return None if end is None else _loads_object(body[start : end + 1])
    return value if isinstance(value, dict) else None


def _follows_trailing_comma(text: str, position: int) -> bool:
    if position >= len(text) or text[position] not in "}]":
        return False
    index = position - 1
    while index >= 0 and text[index].isspace():
        index -= 1
    return index >= 0 and text[index] == ","


def _loads_object(text: str) -> dict[str, Any] | None:
    for attempt in (text, _drop_trailing_commas(text)):
        try:
            value = json.loads(attempt)
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def _json_chars(text: str, start: int = 0) -> Iterator[tuple[int, str, bool]]:
    """(index, char, inside a JSON string) for each character from `start`; the quotes
    that open and close a string count as outside it."""
    in_string = False
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                yield index, char, False
                continue
            yield index, char, True
            continue
        if char == '"':
            in_string = True
        yield index, char, False


def _balanced_end(text: str, start: int) -> int | None:
    """Index of the brace closing the one at `start`, skipping braces inside JSON strings."""
    depth = 0
    for index, char, quoted in _json_chars(text, start):
        if quoted:
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def _drop_trailing_commas(text: str) -> str:
    """Remove commas that directly precede a closing } or ], leaving strings untouched."""
    out: list[str] = []
    for _, char, quoted in _json_chars(text):
        if not quoted and char in "}]" and out:
            # Drop a comma left pending before the whitespace that led here.
            pending = len(out) - 1
            while pending >= 0 and out[pending].isspace():
                pending -= 1
            if pending >= 0 and out[pending] == ",":
                del out[pending]
        out.append(char)
    return "".join(out)


def _episode(value: Any) -> EpisodeDraft | None:
    if isinstance(value, str):
        value = {"summary": value}
    if not isinstance(value, dict):
        return None
    summary = _text(value.get("summary"))
    if not summary:
        return None
    return EpisodeDraft(
        summary=summary,
        topics=_string_list(value.get("topics")),
        entities=_string_list(value.get("entities")),
        decisions=_string_list(value.get("decisions")),
        action_items=_string_list(value.get("action_items")),
        salience=_salience(value.get("salience"), DEFAULT_SALIENCE),
    )


def _procedures(value: Any) -> list[ProcedureDraft]:
    """Named procedures with two or more steps; a malformed one is skipped, and the later
    of two with the same name kept."""
    found: dict[str, ProcedureDraft] = {}
    for item in _as_list(value)[:MAX_PROCEDURES]:
        if not isinstance(item, dict):
            continue
        name = _clean_item(item.get("name"))
        steps = _string_list(item.get("steps"))[:MAX_PROCEDURE_STEPS]
        if name is None or len(steps) < MIN_PROCEDURE_STEPS:
            continue
        found.pop(_dedupe_key(name), None)
        found[_dedupe_key(name)] = ProcedureDraft(
            name, steps, _clean_item(item.get("applies_when")) or "")
    return list(found.values())


def _facts(value: Any, *, kind: FactKind, salience: float) -> list[FactDraft]:
    facts: list[FactDraft] = []
    seen: set[str] = set()
    for item in _as_list(value):
        turns: tuple[int, ...] = ()
        if isinstance(item, dict):
            content = _clean_item(next((item[k] for k in _FACT_TEXT_KEYS if k in item), None))
            fact_salience = _salience(item.get("salience"), salience)
            tags = _string_list(item.get("tags"))
            turns = _turn_positions(item.get("turns"))
        else:
            content, fact_salience, tags = _clean_item(item), salience, []
        if content is None or _dedupe_key(content) in seen:
            continue
        seen.add(_dedupe_key(content))
        facts.append(FactDraft(content=content, kind=kind, salience=fact_salience, tags=tags,
                               source_turns=turns))
    return facts


def _turn_positions(value: Any) -> tuple[int, ...]:
    """Turn numbers as the prompt gives them (1 is the first; "3" or 3.0 read as 3) as
    positions from 0; anything else is left out."""
    positions: list[int] = []
    for item in _as_list(value)[:MAX_SOURCE_TURNS]:
        text = _text(item)
        number = float(text) if re.fullmatch(r"\d{1,6}(?:\.0*)?", text) else 0
        if number >= 1 and int(number) - 1 not in positions:
            positions.append(int(number) - 1)
    return tuple(sorted(positions))


def _string_list(value: Any) -> list[str]:
    items: list[str] = []
    seen: set[str] = set()
    for item in _as_list(value):
        cleaned = _clean_item(item)
        if cleaned is not None and _dedupe_key(cleaned) not in seen:
            seen.add(_dedupe_key(cleaned))
            items.append(cleaned)
    return items


def _as_list(value: Any) -> list[Any]:
    """A lone value where a list was expected is a list of one; null is an empty list."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    # Numbers are unambiguous as text ("tags": [2024]); objects and booleans are not.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def _clean_item(value: Any) -> str | None:
    text = _text(value)
    if not text or len(text) > MAX_ITEM_CHARS:
        return None
    return text


def _salience(value: Any, default: float) -> float:
    if isinstance(value, bool):
        return default
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return default
    if not isinstance(value, int | float) or math.isnan(value):
        return default
    return min(1.0, max(0.0, float(value)))


def _dedupe_key(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".!")


def _preview(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")

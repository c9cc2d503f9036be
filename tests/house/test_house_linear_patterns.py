"""No stored or sent text can stall the proxy: every regular expression of the code that
sees user text (each module-level pattern under gate/, memory/, proxy/ and config/, the
patterns built at run time, and the functions that apply them) gets through adversarial
texts of 100,000 characters within a time bound. Python's `re` holds the interpreter while
it matches, so a pattern that backtracks quadratically on one stored message (a run of
newlines, "a" * n + ".x") would block every request of the proxy, not only its own.

The inputs: a short unit repeated to 100k characters between a head and a tail (Hypothesis
draws them from the characters and openings such patterns trip on), and the named shapes
that once froze the proxy."""

from __future__ import annotations

import importlib
import pkgutil
import re
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import mnemoproxy

SIZE = 100_000
# Per pattern and text; a linear pattern takes a few milliseconds on 100k characters, a
# quadratic one minutes.
BOUND_SECONDS = 1.0
PACKAGES = ("config", "gate", "memory", "proxy")
# Patterns only ever matched at one position (re.match after a name found by another
# pattern), never scanned along a text: they are timed as they are used.
MATCHED_AT_ONE_POSITION = frozenset({"mnemoproxy.memory.search.hybrid._CLOSES_ADDRESS"})

NAMED = {
    "newlines": "\n" * SIZE,
    "spaces": " " * SIZE,
    "crlf": "\r\n" * (SIZE // 2),
    "space-newline": " \n" * (SIZE // 2),
    "a then .x": "a" * SIZE + ".x",
    "a. then @": "a." * (SIZE // 2) + "@",
    "digits": "1" * SIZE,
    "digit-dot": "1." * (SIZE // 2),
    "digit-space": "1 " * (SIZE // 2),
    "digit-dash": "1-" * (SIZE // 2),
    "dots": "." * SIZE + "x",
    "colons": ":" * SIZE,
    "hex-colon": "a:" * (SIZE // 2),
    "upper": "A" * SIZE,
    "word-space": "word " * (SIZE // 5),
    "mixed": "a \n\t.1-@:" * (SIZE // 10),
    "system": "system " * (SIZE // 7),
    "role-lines": "\nsystem" * (SIZE // 7),
    "open tags": "<a " * (SIZE // 3),
    "open tag names": "<a" * (SIZE // 2),
    "open comments": "<!--" * (SIZE // 4),
    "marked sections": "<![" * (SIZE // 3),
    "open quotes": '<a b="' * (SIZE // 6),
    "closing tags": "</a " * (SIZE // 4),
}
_UNIT_CHARS = "\n\r\t a.@:1-_/'\"<>#*AZ,!?()[]"
units = st.text(st.sampled_from(_UNIT_CHARS), min_size=1, max_size=4) | st.sampled_from(
    ["when i ", "how to ", "then ", "a@", "[a](", "system ", "# x ", "- a\n"])
tails = st.text(st.sampled_from(_UNIT_CHARS + "x"), max_size=3)
# Openings that make a pattern start its long match: a heading, a list item, a lead-in.
heads = st.sampled_from(["", "# a", "- a", "1. a", "here's how I ", "to ", "x@", "first ",
                         "system", "DEVELOPER", "a.b"])


class TooSlow(Exception):
    pass


def _alarm(*_: object) -> None:
    raise TooSlow


def module_patterns() -> Iterator[tuple[str, re.Pattern[Any]]]:
    """Every compiled pattern a module of the package keeps at its top level (alone, or in
    a tuple, list or dict of them)."""
    seen: set[int] = set()
    for package in PACKAGES:
        root = importlib.import_module(f"mnemoproxy.{package}")
        modules = [root.__name__, *(m.name for m in pkgutil.walk_packages(
            root.__path__, f"{root.__name__}."))]
        for name in modules:
            module = importlib.import_module(name)
            for attribute, value in vars(module).items():
                values = value.values() if isinstance(value, dict) else (
                    value if isinstance(value, tuple | list) else (value,))
                for item in values:
                    found = item[0] if isinstance(item, tuple) and item else item
                    if isinstance(found, re.Pattern) and id(found) not in seen:
                        seen.add(id(found))
                        yield f"{name}.{attribute}", found


def built_patterns() -> Iterator[tuple[str, re.Pattern[Any]]]:
    """The patterns made at run time from words: an excerpt's terms, the token counter's."""
    from mnemoproxy.gate.excerpt import Query
    from mnemoproxy.gate.tokens.o200k import pattern

    query = Query.of("where does my sister work as a nurse?", ["My sister is a nurse."])
    assert query.pattern is not None
    yield "gate.excerpt.Query.pattern", query.pattern
    yield "gate.tokens.o200k.pattern", pattern()


def text_functions() -> Iterator[tuple[str, Callable[[str], object]]]:
    """The functions that apply the patterns to whole stored or sent texts."""
    from mnemoproxy.gate import looks_like_instructions
    from mnemoproxy.gate.excerpt import Query, excerpt, sentence_spans
    from mnemoproxy.gate.fence import fenced
    from mnemoproxy.memory import Turn
    from mnemoproxy.memory.distill.rules.procedures import find_procedures
    from mnemoproxy.memory.write.documents import parse_document
    from mnemoproxy.memory.write.pii import redact_pii
    from mnemoproxy.memory.write.redact import redact_secrets

    query = Query.of("what did I say about the system?", ["system"])

    def document(media_type: str) -> Callable[[str], object]:
        def parse(text: str) -> object:
            try:
                return parse_document(text, media_type)
            except mnemoproxy.errors.MnemoError:  # nothing to store, or too many chunks
                return None
        return parse

    yield "gate.looks_like_instructions", looks_like_instructions
    yield "gate.fence.fenced", fenced
    yield "gate.excerpt.sentence_spans", sentence_spans
    yield "gate.excerpt.excerpt", lambda text: excerpt(text, query, 200)
    yield "memory.write.pii.redact_pii", redact_pii
    yield "memory.write.redact.redact_secrets", redact_secrets
    yield "memory.distill.rules.find_procedures", lambda text: find_procedures(
        [Turn(text, text)])
    # text/html too: the standard library's parser (Python 3.11.7 here) is quadratic on
    # unfinished tags ("<a " * n, CVE-2025-6069) unless given complete ones.
    for media_type in ("text/plain", "text/markdown", "text/html"):
        yield f"memory.write.documents.parse_document({media_type})", document(media_type)


PATTERNS = [*module_patterns(), *built_patterns()]
FUNCTIONS = list(text_functions())


def _timed(label: str, run: Callable[[], object], shape: str) -> float:
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, BOUND_SECONDS * 5)
    started = time.perf_counter()
    try:
        run()
    except TooSlow:
        pytest.fail(f"{label} takes more than {BOUND_SECONDS * 5:g} s on {shape}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    took = time.perf_counter() - started
    assert took < BOUND_SECONDS, f"{label} took {took:.2f} s on {shape}"
    return took


def _scan_all(label: str, pattern: re.Pattern[Any], text: str) -> None:
    subject: Any = text.encode("utf-8") if isinstance(pattern.pattern, bytes) else text
    if label in MATCHED_AT_ONE_POSITION:
        pattern.match(subject)
        return
    for _ in pattern.finditer(subject):
        pass


def test_the_patterns_are_found() -> None:
    names = {name for name, _ in PATTERNS}
    # The ones that once froze the proxy are among them.
    assert {"mnemoproxy.gate.fence._ROLE_MARKER", "mnemoproxy.memory.text.sentences.SENTENCE_END",
            "mnemoproxy.memory.write.pii._EMAIL"} <= names
    assert len(PATTERNS) > 60


@pytest.mark.parametrize("shape", list(NAMED))
def test_every_pattern_scans_a_named_100k_text_in_linear_time(shape: str) -> None:
    text = NAMED[shape]
    for label, pattern in PATTERNS:
        _timed(label, lambda p=pattern, n=label: _scan_all(n, p, text), shape)


@pytest.mark.parametrize("shape", list(NAMED))
def test_every_text_function_reads_a_named_100k_text_in_linear_time(shape: str) -> None:
    text = NAMED[shape]
    for label, function in FUNCTIONS:
        _timed(label, lambda f=function: f(text), shape)


@settings(max_examples=25, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(head=heads, unit=units, tail=tails)
@example(head="", unit="\n", tail=":")
@example(head="", unit="a.", tail="@")
@example(head="", unit="\n ", tail="system:")
@example(head="# a", unit=" ", tail="b")
@example(head="", unit="when i ", tail="")
def test_every_pattern_and_function_scans_any_repeated_unit_in_linear_time(
    head: str, unit: str, tail: str
) -> None:
    text = head + (unit * (SIZE // len(unit) + 1))[:SIZE] + tail
    shape = f"{head!r} + {unit!r} * {SIZE // len(unit)} + {tail!r}"
    for label, pattern in PATTERNS:
        _timed(label, lambda p=pattern, n=label: _scan_all(n, p, text), shape)
    for label, function in FUNCTIONS:
        _timed(label, lambda f=function: f(text), shape)

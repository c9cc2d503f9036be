"""A conversation sent again (an export imported twice, a history ingested in overlapping
parts): the turns at the start of what arrives that the conversation already holds, in
the same order, are recognised and skipped, so nothing is stored twice.

    stored:   a b c d          arrives: a b c d e f  ->  2 new (e f): the conversation grew
    stored:   a b c d          arrives: c d          ->  nothing new: a part sent again
    stored:   a b c d          arrives: e f          ->  2 new: the next part
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from mnemoproxy.memory.store.records import TranscriptMessage


def stored_turns(messages: Sequence[TranscriptMessage]) -> list[tuple[str, str]]:
    """A session's transcript as (user, assistant) turns, in turn order."""
    turns: dict[int, list[str]] = {}
    for message in messages:
        texts = turns.setdefault(message.turn_index, ["", ""])
        texts[0 if message.role == "user" else 1] = message.content
    return [(user, assistant) for _, (user, assistant) in sorted(turns.items())]


def known_prefix(stored: Sequence[Hashable], arriving: Sequence[Hashable]) -> int:
    """How many items at the start of `arriving` occur, in that order and together,
    somewhere in `stored`. Knuth-Morris-Pratt: linear in both lengths, however repetitive
    the conversation (a naive scan is quadratic on runs of the same turn)."""
    if not stored or not arriving:
        return 0
    fallback = [0] * len(arriving)
    matched = 0
    for i in range(1, len(arriving)):
        while matched and arriving[i] != arriving[matched]:
            matched = fallback[matched - 1]
        if arriving[i] == arriving[matched]:
            matched += 1
        fallback[i] = matched
    best = matched = 0
    for item in stored:
        while matched and item != arriving[matched]:
            matched = fallback[matched - 1]
        if item == arriving[matched]:
            matched += 1
        best = max(best, matched)
        if matched == len(arriving):
            break
    return best

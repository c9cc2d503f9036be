"""How many tokens byte-pair encoding makes of one piece of text, by tiktoken's rule.

A piece that is itself a token is one token. Otherwise its bytes start as one part each,
and the adjacent pair of parts whose joined bytes have the lowest rank (the leftmost such
pair on a tie) is joined, again and again, until no joined pair is a token; the parts left
are the tokens. tiktoken rescans every pair after each join, quadratic in the piece's
length; here the candidate pairs wait in a heap, so a long run of symbols with no space
in it (a ruler of "=" signs, a base64 blob) costs n log n instead.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping


def merged_count(piece: bytes, ranks: Mapping[bytes, int]) -> int:
    """Number of tokens `piece` encodes to under the byte-pair `ranks` (token -> rank)."""
    if piece in ranks or len(piece) < 2:
        return 1 if piece else 0
    size = len(piece)
    # Parts are named by the offset they start at: `after[s]` is where the part starting
    # at s ends (the next part's start), `before[s]` where the previous part starts.
    after = list(range(1, size + 2))
    before = list(range(-1, size))
    joined_away = bytearray(size)
    get = ranks.get
    # (rank, start, end) of each joinable pair; a pair stays valid while its start is a
    # part's start and the part after that part still ends at `end`.
    pairs = [(rank, start, start + 2) for start in range(size - 1)
             if (rank := get(piece[start:start + 2])) is not None]
    heapq.heapify(pairs)
    parts = size
    while pairs:
        _, start, end = heapq.heappop(pairs)
        if joined_away[start] or after[start] >= end or after[after[start]] != end:
            continue  # stale: one of its parts has been joined since
        joined_away[after[start]] = 1
        after[start] = end
        if end < size:
            before[end] = start
            following = after[end]
            if (rank := get(piece[start:following])) is not None:
                heapq.heappush(pairs, (rank, start, following))
        previous = before[start]
        if previous >= 0 and (rank := get(piece[previous:end])) is not None:
            heapq.heappush(pairs, (rank, previous, end))
        parts -= 1
    return parts

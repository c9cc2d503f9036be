"""Stream events a broken or hostile upstream has sent."""

from __future__ import annotations

# Shapes a broken or hostile upstream has sent; each must leave the reply readable.
MALFORMED_DELTAS = [
    {"choices": [{"delta": "str"}]},
    {"choices": [{"delta": {"tool_calls": 5}}]},
    {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": 7}}]}}]},
    {"choices": [{"delta": {"tool_calls": [{"index": "a", "function": "f"}]}}]},
    {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": 3}, {"index": None}]}}]},
    {"choices": [{"delta": {"content": {"nested": [[[[1]]]]}}, "finish_reason": 1}]},
    {"choices": "x"},
    [1, 2, 3],
]

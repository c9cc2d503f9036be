"""The tee that reassembles an assistant reply from SSE bytes split anywhere."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemoproxy.proxy.relay.sse import StreamTee, complete_events, reply_from_json
from tests.support.servers.malformed_events import MALFORMED_DELTAS


def _event(delta: dict, finish: str | None = None) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


STREAM = (
    _event({"role": "assistant", "content": ""})
    + _event({"content": "Hel"})
    + _event({"content": "lo ✓"})
    + _event({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}]})
    + _event({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]})
    + _event({"tool_calls": [{"index": 0, "function": {"arguments": " 1}"}}]})
    + _event({}, "tool_calls")
    + b": keep-alive comment\n\n"
    + b"data: [DONE]\n\n"
)


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_reassembly_is_independent_of_chunk_boundaries(cuts):
    tee = StreamTee()
    bounds = [0, *sorted(cuts), len(STREAM)]
    for start, end in itertools.pairwise(bounds):
        tee.feed(STREAM[start:end])
    reply = tee.reply()
    assert reply.content == "Hello ✓"
    assert reply.tool_calls == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]
    assert reply.finish_reason == "tool_calls"
    assert "[tool call f(" in reply.as_text()


def test_crlf_events_and_garbage_are_tolerated():
    tee = StreamTee()
    tee.feed(b'data: {"choices": [{"delta": {"content": "a"}}]}\r\n\r\n')
    tee.feed(b"data: not json\n\n")
    tee.feed(b'data: {"choices": []}\n\n')
    assert tee.reply().content == "a"


def test_reply_from_json():
    body = json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
    ).encode()
    assert reply_from_json(body).content == "hi"
    assert reply_from_json(b"{}") is None
    assert reply_from_json(b"nope") is None


@pytest.mark.parametrize("event", MALFORMED_DELTAS)
def test_malformed_deltas_are_skipped(event):
    tee = StreamTee()
    tee.feed(b'data: {"choices": [{"delta": {"content": "a"}}]}\n\n')
    tee.feed(f"data: {json.dumps(event)}\n\n".encode())
    tee.feed(b'data: {"choices": [{"delta": {"content": "b"}}]}\n\n')
    assert tee.reply().content == "ab"


def test_complete_events_keep_their_blank_line_and_leave_the_unfinished_one():
    events, rest = complete_events(b"data: 1\n\ndata: 2\r\n\r\n: ping\n\ndata: 3\n")
    assert events == [b"data: 1\n\n", b"data: 2\r\n\r\n", b": ping\n\n"]
    assert rest == b"data: 3\n"
    assert complete_events(b"") == ([], b"")


def test_a_whole_long_stream_in_one_read_is_reassembled():
    words = [f"w{n} " for n in range(5000)]
    tee = StreamTee()
    tee.feed(b"".join(_event({"content": word}) for word in words) + b"data: [DONE]\n\n")
    assert tee.reply().content == "".join(words)

"""What reading a copy of a streamed reply costs the proxy (proxy/relay/sse.py's StreamTee).

    python -m tests.benchmarks.relay.bench_stream_tee

Every streamed chat with memory passes through the tee, which reassembles the reply to
remember it. A stream of N chat.completion.chunk events is fed whole in one read (what a
fast upstream, or a busy proxy that reads late, hands over) and in 1,400-byte reads (one
packet each); both should cost time in proportion to N.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

from mnemoproxy.proxy.relay.sse import StreamTee

READ_BYTES = 1400


def stream_of(events: int) -> bytes:
    chunks = (
        {"id": "chatcmpl-1", "object": "chat.completion.chunk",
         "choices": [{"index": 0, "delta": {"content": f"word{n} "}, "finish_reason": None}]}
        for n in range(events)
    )
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + (
        b"data: [DONE]\n\n")


def seconds_to_read(stream: bytes, read_bytes: int, rounds: int) -> float:
    """Best of `rounds`: the least disturbed by whatever else the machine runs."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        tee = StreamTee()
        for start in range(0, len(stream), read_bytes):
            tee.feed(stream[start : start + read_bytes])
        tee.reply()
        best = min(best, time.perf_counter() - started)
    return best


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[100, 500, 2000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    rows = []
    print(f"{'events':>7} {'KiB':>6} {'one read ms':>12} {'packet reads ms':>16} {'µs/event':>9}")
    for events in args.events:
        stream = stream_of(events)
        whole = seconds_to_read(stream, len(stream), args.rounds)
        packets = seconds_to_read(stream, READ_BYTES, args.rounds)
        rows.append({"events": events, "one_read_ms": whole * 1000,
                     "packet_reads_ms": packets * 1000})
        print(f"{events:>7} {len(stream) // 1024:>6} {whole * 1000:>12.2f} "
              f"{packets * 1000:>16.2f} {whole / events * 1e6:>9.2f}")
    return {"rows": rows}


if __name__ == "__main__":
    main()

"""What the memory tool (memory_tool = true) adds to a chat request, against the fake upstream.

    python -m tests.benchmarks.relay.bench_memory_tool [--requests N] [--embedding-backend B]

Two proxy processes in front of one fake upstream (in this process, in a thread, so each
request can script the model): memory_tool off and on, each data_dir seeded with the same
conversations through /memory/ingest. Requests carry X-Agent-Id and a prompt the gate
leaves alone (no block), and are interleaved round by round:

- off: the tool is not offered (the baseline);
- on, no call: the tool is offered, the model answers at once;
- on, one search: the model calls search_memory, the proxy searches and asks again.

Non-streaming: the whole reply. Streaming: the time to the first byte of answer text (the
first non-empty content delta), and to the end. The fake model answers at once, so "one
search" minus "no call" is what the proxy adds for one tool round (a second upstream
exchange on loopback, the search, the re-serialised request); with a real model add its
time to write the call and to read the longer prompt. Wall-clock figures on a shared
machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support.servers.fake_upstream import FakeUpstream, Reply, ToolCall
from tests.support.servers.processes import proxy_process

AGENT = "bench-tool-agent"
PROMPT = "Write a haiku about autumn."
ANSWER = "Leaves fall on the path, a quiet amber hush, the year exhales slow."
HISTORY = [
    ("I just adopted a tortoise called Pemberton.", "Congratulations on Pemberton!"),
    ("My sister Ana is moving to Lisbon in June.", "Exciting news for Ana."),
    ("I work as a data engineer at Acme, mostly on Spark jobs.", "Sounds like fun work."),
    ("Our team offsite is in Porto next spring.", "Porto is lovely in spring."),
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def seed(root: str) -> None:
    for number, (user, assistant) in enumerate(HISTORY):
        response = httpx.post(root + "/memory/ingest", timeout=120, json={
            "agent_id": AGENT, "conversation_id": f"c{number}",
            "turns": [{"user": user, "assistant": assistant}],
        })
        response.raise_for_status()


def timed(client: httpx.Client, root: str, stream: bool) -> tuple[float, float]:
    """Seconds to the first answer text (the whole reply when not streaming) and to the
    end."""
    body = {"model": "fake-model", "stream": stream,
            "messages": [{"role": "user", "content": PROMPT}]}
    started = time.perf_counter()
    if not stream:
        response = client.post(root + "/v1/chat/completions", json=body,
                               headers={"X-Agent-Id": AGENT})
        response.raise_for_status()
        assert response.json()["choices"][0]["message"]["content"] == ANSWER
        elapsed = time.perf_counter() - started
        return elapsed, elapsed
    first = None
    text = []
    with client.stream("POST", root + "/v1/chat/completions", json=body,
                       headers={"X-Agent-Id": AGENT}) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            piece = (choices[0].get("delta") or {}).get("content")
            if piece:
                first = first if first is not None else time.perf_counter() - started
                text.append(piece)
    assert "".join(text) == ANSWER, text
    return first or 0.0, time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200, help="per case and mode")
    parser.add_argument("--embedding-backend", default="wordllama")
    args = parser.parse_args(argv)
    backend = ["--embedding-backend", args.embedding_backend]
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeUpstream() as fake,
        proxy_process(fake.base_url, Path(tmp) / "off", *backend) as off,
        proxy_process(fake.base_url, Path(tmp) / "on", *backend, "--memory-tool", "true") as on,
        httpx.Client(timeout=60) as client,
    ):
        for root in (off, on):
            seed(root)

        def answer() -> None:
            fake.enqueue(Reply(ANSWER))

        def search_then_answer() -> None:
            fake.enqueue(ToolCall("search_memory", {"query": "user's pets"}))
            fake.enqueue(Reply(ANSWER))

        cases: dict[str, tuple[str, Callable[[], None]]] = {
            "off": (off, answer),
            "on, no call": (on, answer),
            "on, one search": (on, search_then_answer),
        }
        samples: dict[tuple[str, bool], list[tuple[float, float]]] = {
            (name, stream): [] for name in cases for stream in (False, True)}
        for stream in (False, True):  # warm-up: indexes loaded, connections open
            for root, script in cases.values():
                for _ in range(5):
                    script()
                    timed(client, root, stream)
        for _ in range(args.requests):
            for stream in (False, True):
                for name, (root, script) in cases.items():
                    script()
                    samples[name, stream].append(timed(client, root, stream))
        searched = [r for r in fake.requests if r.json and any(
            m.get("role") == "tool" for m in r.json.get("messages", []))]
        assert searched, "no request carried a search result"
        rows = []
        for (name, stream), values in samples.items():
            firsts = [v[0] * 1000 for v in values]
            ends = [v[1] * 1000 for v in values]
            rows.append({
                "mode": "stream" if stream else "json", "case": name,
                "first_text_p50_ms": statistics.median(firsts),
                "first_text_p90_ms": percentile(firsts, 0.9),
                "end_p50_ms": statistics.median(ends),
            })
    by = {(r["mode"], r["case"]): r for r in rows}
    added = {
        mode: {
            "offering the tool (p50 ms)": by[mode, "on, no call"]["first_text_p50_ms"]
            - by[mode, "off"]["first_text_p50_ms"],
            "one search round (p50 ms)": by[mode, "on, one search"]["first_text_p50_ms"]
            - by[mode, "on, no call"]["first_text_p50_ms"],
        }
        for mode in ("json", "stream")
    }
    print(f"\nmemory tool, {args.requests} requests per row, concurrency 1, "
          f"embedding {args.embedding_backend}")
    print(f"{'mode':<7} {'case':<15} {'first text p50':>14} {'p90':>9} {'end p50':>9}")
    for r in rows:
        print(f"{r['mode']:<7} {r['case']:<15} {r['first_text_p50_ms']:>12.2f}ms "
              f"{r['first_text_p90_ms']:>7.2f}ms {r['end_p50_ms']:>7.2f}ms")
    for mode, figures in added.items():
        print(f"added ({mode}): " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items()))
    return {"rows": rows, "added": added}


if __name__ == "__main__":
    main()

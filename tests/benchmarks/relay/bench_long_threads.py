"""What long-thread compression (context_budget_tokens) saves and what it costs, against the
fake upstream.

    python -m tests.benchmarks.relay.bench_long_threads [--requests N] [--messages M] [--budget B]

Three proxy processes in front of one fake upstream (in this process, in a thread, so the
core model's answers can be scripted): compression off, on without a core model
(extractive summaries) and on with the fake upstream as core model. Every request
carries X-Agent-Id; the thread is M messages (a system prompt, then user and assistant
turns of 40-120 words each, about 100 tokens a message) and one more question.

Savings: the tokens of the messages the upstream received for the M-message thread, off
and on; and over a conversation growing by one turn a request from M/2 to M messages,
the tokens sent in total, how often the summary was written, and the share of requests
whose bytes up to the end of the summary equal the previous request's (an upstream
prompt cache serves that prefix).

Latency (p50 / p90 of the whole request, concurrency 1, rounds interleaved): the
M-message thread with compression off; on, the session's summary reused (the steady
state: counting tokens, a digest and one SQLite read), against off; on, a summary
written (a new agent each request: extractive, or one call to the core model, which
answers at once here, plus a SQLite write), against off with a new agent each request
(whose backfilled turns are stored before the reply either way). With a real core model
add its time to read the compressed messages and write the summary (once per half a
budget of new conversation). Wall-clock figures on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from mnemoproxy.gate.threads.summaries import SUMMARY_CLOSE
from mnemoproxy.gate.threads.thread import message_tokens
from tests.support.servers.fake_upstream import FakeUpstream, Reply
from tests.support.servers.processes import proxy_process

AGENT = "bench-thread-agent"
SUMMARY = (
    "The user is planning a month of travel through Spain and Portugal by train.\n"
    "The assistant suggested routes, budgets and quiet places to stay in each city.\n"
    "Open: the user still has to choose between Porto and Braga for the last week."
)
WORDS = (
    "train", "station", "museum", "cathedral", "river", "garden", "market", "cafe", "ticket",
    "hotel", "budget", "morning", "afternoon", "evening", "walk", "quiet", "square", "bridge",
    "castle", "beach", "tapas", "pastry", "wine", "tour", "guide", "booking", "luggage",
    "platform", "delay", "route", "map", "coast", "valley", "village", "festival", "concert",
    "gallery", "palace", "tower", "harbour", "ferry", "bus", "tram", "metro", "old", "town",
    "view", "sunset",
)


def sentence(rng: random.Random, words: int) -> str:
    picked = [rng.choice(WORDS) for _ in range(words)]
    return " ".join(picked).capitalize() + "."


def message(rng: random.Random, role: str, number: int) -> dict[str, str]:
    body = " ".join(sentence(rng, rng.randint(8, 16)) for _ in range(rng.randint(4, 8)))
    lead = "Question" if role == "user" else "Answer"
    return {"role": role, "content": f"{lead} {number}: {body}"}


def conversation(messages: int, seed: int = 7) -> list[dict[str, str]]:
    """A system prompt and `messages` turns' worth of alternating user and assistant
    messages, ending with a user message."""
    rng = random.Random(seed)
    out = [{"role": "system", "content": "You are a careful travel planner. Be concise."}]
    for i in range(messages):
        out.append(message(rng, "user" if i % 2 == 0 else "assistant", i // 2))
    if out[-1]["role"] != "user":
        out.append(message(rng, "user", messages // 2))
    return out


def tokens(messages: list[dict[str, Any]]) -> int:
    return sum(message_tokens(m) for m in messages)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def send(client: httpx.Client, root: str, messages: list[dict[str, Any]],
         agent: str) -> tuple[float, httpx.Response]:
    """One request of a one-session agent (a new agent, not a new session, for a new
    thread: an agent's second session would have its first distilled at once, noise here)."""
    started = time.perf_counter()
    response = client.post(root + "/v1/chat/completions",
                           json={"model": "fake-model", "messages": messages},
                           headers={"X-Agent-Id": agent, "X-Session-Id": "thread"})
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed, response


def growing(client: httpx.Client, root: str, fake: FakeUpstream, full: list[dict[str, Any]],
            core: bool) -> dict[str, Any]:
    """The thread sent as it grows from half to all of its messages, one turn a request."""
    start = len(full) // 2 | 1  # a system prompt and whole turns, ending on a user message
    sent_tokens = client_tokens = written = stable = requests = 0
    previous: bytes | None = None
    for end in range(start, len(full) + 1, 2):
        if core:
            fake.enqueue(Reply(SUMMARY))  # taken by the core model only when it is asked
        messages = full[:end]
        # When the summary is reused, the chat's reply takes the scripted answer instead.
        _, response = send(client, root, messages, AGENT + "-growing")
        body = fake.requests[-1].body
        requests += 1
        client_tokens += tokens(messages)
        sent_tokens += tokens(fake.requests[-1].json["messages"])
        how = response.headers.get("X-Context-Summary", "")
        written += how in ("extractive", "core_model", "fallback")
        if how == "reused" and previous is not None:
            end_of_summary = previous.find(SUMMARY_CLOSE.encode()) + len(SUMMARY_CLOSE)
            stable += body[:end_of_summary] == previous[:end_of_summary]
        previous = body
    return {"requests": requests, "client_tokens": client_tokens, "sent_tokens": sent_tokens,
            "summaries_written": written, "prefix_stable": stable}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=100, help="per latency case")
    parser.add_argument("--messages", type=int, default=300, help="messages in the thread")
    parser.add_argument("--budget", type=int, default=8000, help="context_budget_tokens")
    parser.add_argument("--embedding-backend", default="hashing")
    args = parser.parse_args(argv)
    full = conversation(args.messages)
    common = ["--embedding-backend", args.embedding_backend,
              "--summary-debounce-seconds", "3600"]
    budget = ["--context-budget-tokens", str(args.budget)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeUpstream() as fake,
        proxy_process(fake.base_url, Path(tmp) / "off", *common) as off,
        proxy_process(fake.base_url, Path(tmp) / "extractive", *common, *budget) as extractive,
        proxy_process(fake.base_url, Path(tmp) / "core", *common, *budget,
                      "--core-model", "fake-core-model",
                      "--core-context-tokens", "131072") as core,
        httpx.Client(timeout=120) as client,
    ):
        # Savings on the whole thread.
        before = tokens(full)
        after: dict[str, int] = {}
        for name, root in (("extractive", extractive), ("core_model", core)):
            if name == "core_model":
                fake.enqueue(Reply(SUMMARY))
            _, response = send(client, root, full, AGENT)
            assert response.headers["X-Context-Summary"] == name, response.headers
            after[name] = tokens(fake.requests[-1].json["messages"])
            assert after[name] == before - int(response.headers["X-Context-Tokens-Saved"])
        grown = {
            "extractive": growing(client, extractive, fake, full, core=False),
            "core_model": growing(client, core, fake, full, core=True),
        }

        # Latency, interleaved.
        # Each case against its baseline: an agent whose turns are stored (the reuse), or a
        # new agent each request (its 100 backfilled turns are stored before the reply).
        cases = {
            "off": (off, False, None, None),
            "reused (extractive)": (extractive, False, "reused", "off"),
            "reused (core model)": (core, False, "reused", "off"),
            "off, new agent": (off, True, None, None),
            "written (extractive)": (extractive, True, "extractive", "off, new agent"),
            "written (core model)": (core, True, "core_model", "off, new agent"),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        # The reuses first, then the writes: a new agent's backfilled turns are embedded in
        # the background, which would weigh on whichever request came next.
        for new_agents in (False, True):
            for round_ in range(-5, args.requests):  # the first 5 rounds warm up
                for name, (root, new_agent, expected, _) in cases.items():
                    if new_agent != new_agents:
                        continue
                    agent = f"{AGENT}-{round_}" if new_agent else AGENT
                    if name == "written (core model)":
                        fake.enqueue(Reply(SUMMARY))
                    elapsed, response = send(client, root, full, agent)
                    assert response.headers.get("X-Context-Summary") == expected, (name,
                                                                                   response)
                    if round_ >= 0:
                        samples[name].append(elapsed * 1000)
    p50 = {name: statistics.median(values) for name, values in samples.items()}
    rows = [{"case": name, "p50_ms": p50[name], "p90_ms": percentile(values, 0.9),
             "added_p50_ms": p50[name] - p50[cases[name][3]] if cases[name][3] else 0.0}
            for name, values in samples.items()]
    print(f"\nlong threads: {args.messages}-message thread ({before} tokens), budget "
          f"{args.budget}, {args.requests} requests per case, concurrency 1")
    for name, value in after.items():
        print(f"tokens sent, {name}: {before} -> {value} ({100 * (1 - value / before):.0f}% saved)")
    for name, figures in grown.items():
        saved = 1 - figures["sent_tokens"] / figures["client_tokens"]
        print(f"growing {len(full) // 2} -> {len(full)} messages ({figures['requests']} "
              f"requests), {name}: {figures['client_tokens']} -> {figures['sent_tokens']} "
              f"tokens ({100 * saved:.0f}% saved), summary written {figures['summaries_written']}"
              f" times, prefix byte-stable in {figures['prefix_stable']} of "
              f"{figures['requests'] - figures['summaries_written']} reuses")
    print(f"{'case':<22} {'p50':>9} {'p90':>9} {'added p50':>10}")
    for row in rows:
        print(f"{row['case']:<22} {row['p50_ms']:>7.2f}ms {row['p90_ms']:>7.2f}ms "
              f"{row['added_p50_ms']:>8.2f}ms")
    return {"tokens_before": before, "tokens_after": after, "growing": grown, "rows": rows,
            "argv": json.dumps(vars(args))}


if __name__ == "__main__":
    main()

"""Write-side throughput, and what recording adds to a chat completion.

    python -m tests.benchmarks.relay.bench_ingest
    python -m tests.benchmarks.relay.bench_ingest --conversations 4 --turns 10 --requests 20

1. Ingest: conversations sent to `POST /memory/ingest` of a real proxy process (default
   settings: rule-based distiller, wordllama embeddings), `--parallel` requests at a
   time; each request records the turns and distils the conversation before it answers.
   Reported: turns/s until the last response, and turns/s until GET /health shows every
   transcript message, fact and episode embedded (target >= 2000 turns/s); the CPU time
   the proxy's processes spent per turn meanwhile (the proxy and its helper
   process: less sensitive than turns/s to other work on the machine), and the helper
   process's memory. One untimed conversation of another agent goes first: the
   distiller's and the embedder's first use (models loaded, in the helper process too:
   a second or so of CPU) is start-up, not throughput.
2. The wordllama embedder alone: texts/s in batches of 256, in this process.
3. Recording latency: chat completions through the same proxy with X-Agent-Id for a fresh
   agent whose gate says none, against the same request without X-Agent-Id, interleaved
   one by one. Recording runs after the reply is sent, so the difference is what the
   read path's gate costs, plus noise, plus whatever background work competes for the two
   cores: each request opens a new conversation, so recording it also distils the
   previous one at once (the agent moved on) and embeds its turn.

Wall-clock figures on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from mnemoproxy.memory.embedders import make_embedder
from tests.benchmarks.memory.bench_embeddings import embedding_rate
from tests.benchmarks.memory.seed import TextMaker
from tests.benchmarks.relay.bench_proxy import percentile
from tests.support.report import run_as_script
from tests.support.servers.backends import add_store_backend_argument, store_backend
from tests.support.servers.processes import (
    cpu_seconds,
    fake_upstream_process,
    process_tree,
    resident_mib,
    running_proxy,
)

TARGET_TURNS_PER_S = 2000.0
CONVERSATIONS_PER_AGENT = 5
EMBED_BATCH = 256
HEALTH_POLL_SECONDS = 0.05
EMBEDDING_WAIT_LIMIT_S = 300.0
WARM_UP_TURNS = 10
RECORDING_PROMPT = "Write a haiku about autumn, number {n}."


def _conversations(count: int, turns: int, round_: int = 0) -> list[dict[str, Any]]:
    """`count` conversations of `turns` turns, five per agent; each round its own agents
    (the same texts: rounds compare like with like)."""
    maker = TextMaker(seed=11)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    bodies = []
    for number in range(count):
        day = start + timedelta(days=number)
        pairs = [maker.turn() for _ in range(turns)]
        bodies.append({
            "agent_id": f"ingest-agent-{round_}-{number // CONVERSATIONS_PER_AGENT}",
            "conversation_id": f"conversation-{number}",
            "session_date": day.isoformat(),
            "turns": [{"user": user, "assistant": reply} for user, reply in pairs],
        })
    return bodies


async def _memory_status(session: aiohttp.ClientSession, root: str) -> dict[str, Any]:
    async with session.get(root + "/health") as response:
        memory: dict[str, Any] = (await response.json())["memory"]
        return memory


def _all_embedded(memory: dict[str, Any]) -> bool:
    searchable = memory["transcript_messages"] + memory["facts"] + memory["episodes"]
    return bool(memory["embedded_items"] >= searchable)


async def _warm_up(root: str, proxy_pid: int) -> None:
    body = {**_conversations(1, WARM_UP_TURNS)[0], "agent_id": "warm-up-agent"}
    await _ingest(root, [body], 1, proxy_pid)


async def _ingest(
    root: str, bodies: list[dict[str, Any]], parallel: int, proxy_pid: int
) -> dict[str, Any]:
    turns = sum(len(body["turns"]) for body in bodies)
    # Processes that exit meanwhile take their CPU time with them; none is expected to.
    cpu_before = cpu_seconds(process_tree(proxy_pid))
    latencies: list[float] = []
    gate = asyncio.Semaphore(parallel)
    async with aiohttp.ClientSession() as session:

        async def send(body: dict[str, Any]) -> None:
            async with gate:
                sent = time.perf_counter()
                async with session.post(root + "/memory/ingest", json=body) as response:
                    reply = await response.json()
                    if response.status != 200 or reply["turns_ingested"] != len(body["turns"]):
                        raise RuntimeError(f"ingest failed ({response.status}): {reply}")
                latencies.append(time.perf_counter() - sent)

        started = time.perf_counter()
        await asyncio.gather(*(send(body) for body in bodies))
        answered = time.perf_counter() - started
        memory = await _memory_status(session, root)
        while not _all_embedded(memory):
            if time.perf_counter() - started > EMBEDDING_WAIT_LIMIT_S:
                raise RuntimeError(f"embeddings unfinished after {EMBEDDING_WAIT_LIMIT_S} s")
            await asyncio.sleep(HEALTH_POLL_SECONDS)
            memory = await _memory_status(session, root)
        embedded = time.perf_counter() - started
    cpu = cpu_seconds(process_tree(proxy_pid)) - cpu_before
    helpers = process_tree(proxy_pid)[1:]  # the helper process
    return {
        "conversations": len(bodies),
        "turns": turns,
        "parallel": parallel,
        "request_p50_ms": 1000 * statistics.median(latencies),
        "answered_s": answered,
        "turns_per_s_answered": turns / answered,
        "embedded_s": embedded,
        "turns_per_s_embedded": turns / embedded,
        "proxy_cpu_ms_per_turn": 1000 * cpu / turns,
        "helper_process_private_mib": sum(
            resident_mib(pid)["private_anonymous_mib"] for pid in helpers
        ),
        "facts": memory["facts"],
        "episodes": memory["episodes"],
        "embedded_items": memory["embedded_items"],
    }


def _median_round(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median turns/s (until every item is embedded), with every
    round's figure beside it."""
    ranked = sorted(rounds, key=lambda r: r["turns_per_s_embedded"])
    return {**ranked[len(ranked) // 2],
            "rounds_turns_per_s": [round(r["turns_per_s_embedded"]) for r in rounds]}


def _embedding_rate(texts: list[str], seconds: float) -> dict[str, Any]:
    embedder = make_embedder("wordllama")
    embedder.encode(texts[:EMBED_BATCH])  # loads the model outside the clock
    return {
        "embedder": embedder.name,
        "batch": EMBED_BATCH,
        "mean_words": round(statistics.mean(len(t.split()) for t in texts), 1),
        "texts_per_s": embedding_rate(embedder, texts, EMBED_BATCH, seconds),
    }


async def _chat(
    session: aiohttp.ClientSession, url: str, text: str, headers: dict[str, str]
) -> tuple[float, str]:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": text}]}
    started = time.perf_counter()
    async with session.post(url, json=body, headers=headers) as response:
        await response.read()
        return time.perf_counter() - started, response.headers.get("X-Memory-Section", "")


async def _recording_latency(root: str, requests: int) -> dict[str, Any]:
    url = root + "/v1/chat/completions"
    agent = {"X-Agent-Id": "recording-agent"}
    timings: dict[str, list[float]] = {"with agent": [], "without agent": []}
    sections: list[str] = []
    async with aiohttp.ClientSession() as session:
        for n in range(-10, requests):  # the first ten warm both paths up, untimed
            # A new opening message is a new session: every request records a new turn.
            text = RECORDING_PROMPT.format(n=n)
            order = [("with agent", agent), ("without agent", {})]
            for label, headers in order if n % 2 else reversed(order):
                seconds, section = await _chat(session, url, text, headers)
                if n >= 0:
                    timings[label].append(seconds)
                    if headers:
                        sections.append(section)
    row: dict[str, Any] = {"requests_each": requests}
    for label, values in timings.items():
        row[f"{label} p50_ms"] = 1000 * statistics.median(values)
        row[f"{label} p99_ms"] = 1000 * percentile(values, 0.99)
    row["added_p50_ms"] = row["with agent p50_ms"] - row["without agent p50_ms"]
    row["added_p99_ms"] = row["with agent p99_ms"] - row["without agent p99_ms"]
    row["gate_said_none"] = f"{sections.count('none')}/{len(sections)}"
    return row


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=60,
                        help="conversations to ingest (3,000 turns: a steadier figure)")
    parser.add_argument("--turns", type=int, default=50, help="turns per conversation")
    parser.add_argument("--parallel", type=int, default=4, help="ingest requests at a time")
    parser.add_argument("--rounds", type=int, default=3,
                        help="ingests of the conversations (new agents each); the median "
                             "round is reported: one round lasts about two seconds, and a "
                             "burst of other work on the machine moves it by a tenth")
    parser.add_argument("--requests", type=int, default=200,
                        help="chat completions with and without X-Agent-Id each")
    parser.add_argument("--embed-seconds", type=float, default=2.0,
                        help="how long to time the embedder")
    add_store_backend_argument(parser)
    args = parser.parse_args(argv)
    print("[ingest] embedding speed of wordllama", flush=True)
    texts = [turn["user"] for body in _conversations(args.conversations, args.turns)
             for turn in body["turns"]]
    embedding = _embedding_rate(texts, args.embed_seconds)
    with store_backend(args.store_backend), \
            tempfile.TemporaryDirectory(prefix="mnemo-bench-ingest-") as folder, \
            fake_upstream_process() as upstream, \
            running_proxy(upstream, Path(folder) / "data") as (root, proxy):
        print(f"[ingest] {args.conversations} conversations x {args.turns} turns, "
             f"{args.parallel} at a time", flush=True)
        asyncio.run(_warm_up(root, proxy.pid))
        rounds = [asyncio.run(_ingest(root, _conversations(args.conversations, args.turns, n),
                                      args.parallel, proxy.pid))
                  for n in range(args.rounds)]
        ingest = _median_round(rounds)
        print(f"[ingest] recording latency, {args.requests} chat completions each way",
              flush=True)
        recording = asyncio.run(_recording_latency(root, args.requests))
    print(_table(ingest, embedding, recording))
    return {
        "summary": _summary(ingest, embedding, recording),
        "ingest": ingest,
        "embedder": embedding,
        "recording": recording,
    }


def _summary(
    ingest: dict[str, Any], embedding: dict[str, Any], recording: dict[str, Any]
) -> list[dict[str, str]]:
    target = f">= {TARGET_TURNS_PER_S:g} turns/s"
    return [
        {"figure": f"ingest, until the last response (the median of "
                   f"{len(ingest['rounds_turns_per_s'])} rounds)", "target": target,
         "value": f"{ingest['turns_per_s_answered']:.0f} turns/s"},
        {"figure": "ingest, until every item is embedded", "target": target,
         "value": f"{ingest['turns_per_s_embedded']:.0f} turns/s (rounds: "
                  + ", ".join(f"{r:,}" for r in ingest["rounds_turns_per_s"]) + ")"},
        {"figure": "proxy CPU time per ingested turn (its processes together)", "target": "",
         "value": f"{ingest['proxy_cpu_ms_per_turn']:.2f} ms"},
        {"figure": f"{embedding['embedder']} embedding speed", "target": "",
         "value": f"{embedding['texts_per_s']:.0f} texts/s"},
        {"figure": "latency recording adds to a chat completion (gate none)", "target": "~0 ms",
         "value": f"p50 {recording['added_p50_ms']:+.2f} ms, "
                  f"p99 {recording['added_p99_ms']:+.2f} ms"},
    ]


def _table(ingest: dict[str, Any], embedding: dict[str, Any], recording: dict[str, Any]) -> str:
    return "\n".join([
        f"POST /memory/ingest: {ingest['conversations']} conversations, {ingest['turns']} turns, "
        f"{ingest['parallel']} at a time (target >= {TARGET_TURNS_PER_S:g} turns/s; "
        "shared 2-core machine: noisy)",
        f"  answered in {ingest['answered_s']:.2f} s: {ingest['turns_per_s_answered']:.0f} turns/s"
        f" (request p50 {ingest['request_p50_ms']:.0f} ms)",
        f"  embedded in {ingest['embedded_s']:.2f} s: {ingest['turns_per_s_embedded']:.0f} turns/s"
        f" (the store then: {ingest['embedded_items']} vectors; {ingest['facts']} facts, "
        f"{ingest['episodes']} episodes)",
        f"  (the median of {len(ingest['rounds_turns_per_s'])} rounds, until embedded: "
        + ", ".join(f"{r:,}" for r in ingest["rounds_turns_per_s"]) + " turns/s)",
        f"  proxy CPU {ingest['proxy_cpu_ms_per_turn']:.2f} ms per turn; helper process "
        f"{ingest['helper_process_private_mib']:.0f} MiB private",
        f"{embedding['embedder']}: {embedding['texts_per_s']:.0f} texts/s in batches of "
        f"{embedding['batch']} (~{embedding['mean_words']} words each)",
        f"chat completion, fresh agent, gate none ({recording['gate_said_none']}) vs no agent, "
        f"{recording['requests_each']} each, interleaved:",
        f"  with X-Agent-Id    p50 {recording['with agent p50_ms']:.2f} ms  "
        f"p99 {recording['with agent p99_ms']:.2f} ms",
        f"  without            p50 {recording['without agent p50_ms']:.2f} ms  "
        f"p99 {recording['without agent p99_ms']:.2f} ms",
        f"  added              p50 {recording['added_p50_ms']:.2f} ms  "
        f"p99 {recording['added_p99_ms']:.2f} ms",
    ])


if __name__ == "__main__":
    run_as_script(main)

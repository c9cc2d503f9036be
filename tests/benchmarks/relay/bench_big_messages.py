"""What a very large message costs the proxy on every later turn: a pasted 100k-character
prose document, base64 blob or one long "word", against the fake upstream.

    python -m tests.benchmarks.relay.bench_big_messages
    python -m tests.benchmarks.relay.bench_big_messages --rounds 6 --kinds prose word --chars 50000

Users paste logs, blobs and documents into chats, and a client re-sends the whole history
with every turn, so whatever the proxy does in proportion to a message's size is paid
again on every turn. Two proxy processes (--embedding-backend hashing, distillation
debounced out of the way) in front of one fake upstream process: memory with defaults,
and memory with long-thread compression (--context-budget-tokens 16000, which a 100k
paste exceeds: its turn is summarised and the summary reused). For each kind of paste:

- history: the paste in the conversation's first user message, then a turn more each
  round (the latest message a memory question or a plain prompt, alternately). The same
  body goes to the fake upstream directly and through each proxy, interleaved;
- stored: the agent's memory holds the paste (recorded from the history case); short
  memory questions in a new session, each read's candidates including the paste;
- latest: the paste is the latest message (a new agent each round): paid once per paste,
  not per turn, shown for scale.

Per case: the proxy's added latency (p50 / p99 of proxied minus direct, same body), the
memory read's time as the proxy measures it (its mnemoproxy_memory_read_seconds
histogram, one request at a time) and the proxy process's CPU per request (which other
processes' load does not inflate). Wall-clock figures on a shared 2-core machine are
noisy; CPU and read times less so.
"""

from __future__ import annotations

import argparse
import base64
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.benchmarks.memory.seed import MEMORY_QUESTIONS, PLAIN_PROMPTS
from tests.benchmarks.relay.bench_proxy import percentile
from tests.support.servers.processes import cpu_seconds, fake_upstream_process, running_proxy

CHARS = 100_000
# Words a memory question asks about: the prose holds them, so search finds the paste.
TOPICAL = ("lisbon", "sister", "kayaking", "maria", "bookshelf", "birthday", "party",
           "marathon", "kenji", "drink", "weekend", "trip", "job")
_READ_SUM = re.compile(rb"^mnemoproxy_memory_read_seconds_sum (\S+)$", re.MULTILINE)


def prose(chars: int, seed: int = 7) -> str:
    """Sentence-like text with many distinct words (a pasted document or log)."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9)))
                  for _ in range(5000)] + list(TOPICAL) * 20
    words: list[str] = []
    length = 0
    while length < chars:
        word = rng.choice(vocabulary)
        if rng.random() < 0.07:
            word += "."
        elif rng.random() < 0.01:
            word += "\n"
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:chars]


def base64_blob(chars: int, seed: int = 7) -> str:
    """One line of base64 (a pasted file or image), no spaces in it."""
    raw = random.Random(seed).randbytes(chars * 3 // 4 + 3)
    return base64.b64encode(raw).decode()[:chars]


def long_word(chars: int, seed: int = 7) -> str:
    """One "word" of random lower-case letters: a single piece for the tokenizer."""
    return "".join(random.Random(seed).choices("abcdefghijklmnopqrstuvwxyz", k=chars))


def repeated(chars: int, seed: int = 7) -> str:
    """One letter repeated: a single piece whose byte-pair merges are the most work."""
    return "a" * chars


KINDS: dict[str, Callable[[int], str]] = {
    "prose": prose, "base64": base64_blob, "word": long_word, "repeat": repeated,
}


def latest_questions(rounds: int) -> list[str]:
    """A memory question and a plain prompt, alternately."""
    return [(MEMORY_QUESTIONS if i % 2 == 0 else PLAIN_PROMPTS)[(i // 2) % 10]
            for i in range(rounds)]


class Target:
    """Somewhere to send a chat: the fake upstream directly, or a proxy (whose memory read
    time and CPU are read around each request)."""

    def __init__(self, name: str, base: str, root: str | None = None, pid: int | None = None):
        self.name, self.base, self.root, self.pid = name, base, root, pid

    def read_seconds(self, client: httpx.Client) -> float:
        if self.root is None:
            return 0.0
        found = _READ_SUM.search(client.get(self.root + "/metrics").content)
        return float(found.group(1)) if found else 0.0

    def send(self, client: httpx.Client, messages: list[dict[str, Any]], agent: str,
             session: str) -> dict[str, float]:
        read_before = self.read_seconds(client)
        cpu_before = cpu_seconds([self.pid]) if self.pid else 0.0
        started = time.perf_counter()
        response = client.post(self.base + "/chat/completions",
                               json={"model": "fake-model", "messages": messages},
                               headers={"X-Agent-Id": agent, "X-Session-Id": session})
        wall = time.perf_counter() - started
        response.raise_for_status()
        cpu = cpu_seconds([self.pid]) - cpu_before if self.pid else 0.0
        return {"wall": wall, "cpu": cpu, "read": self.read_seconds(client) - read_before,
                "injected": float(response.headers.get("X-Memory-Section", "none") != "none")}


def opening(paste: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a helpful assistant. Be concise."},
        {"role": "user", "content": f"Here is what I have, have a look:\n\n{paste}"},
    ]


def run_case(client: httpx.Client, direct: Target, proxies: list[Target],
             bodies: list[tuple[list[dict[str, Any]], str, str]],
             samples: dict[str, list[dict[str, float]]], case: str, warm: int = 1) -> None:
    """Each body to every target in turn (the order rotating per body); the first `warm`
    bodies are not counted."""
    targets = [direct, *proxies]
    for n, (messages, agent, session) in enumerate(bodies):
        shift = n % len(targets)
        for target in targets[shift:] + targets[:shift]:
            figures = target.send(client, messages, agent, session)
            if n >= warm:
                samples.setdefault(f"{case}|{target.name}", []).append(figures)


def wait_idle(client: httpx.Client, roots: list[str], agents: list[str],
              seconds: float = 60) -> None:
    """Until every proxy has distilled the agents' first sessions (their second ones wait
    for the debounce) and embedded what it was sent."""
    deadline = time.monotonic() + seconds
    for root in roots:
        while time.monotonic() < deadline:
            health = client.get(root + "/health").json()["memory"]
            items = health["transcript_messages"] + health["facts"] + health["episodes"]
            episodes = {a["id"]: a["episodes"] for a in client.get(root + "/agents").json()[
                "agents"]}
            if all(episodes.get(agent, 0) >= 1 for agent in agents) and (
                    health["embedded_items"] >= items):
                break
            time.sleep(0.2)
        else:
            print(f"warning: {root} still distilling or embedding after {seconds:.0f} s")


def rows_of(samples: dict[str, list[dict[str, float]]], proxies: list[Target]) -> list[dict]:
    rows = []
    for key, values in samples.items():
        case, target = key.split("|")
        if target == "direct":
            continue
        direct = samples[f"{case}|direct"]
        added = [1000 * (p["wall"] - d["wall"]) for p, d in zip(values, direct, strict=True)]
        rows.append({
            "case": case, "proxy": target, "requests": len(values),
            "direct_p50_ms": 1000 * statistics.median(d["wall"] for d in direct),
            "added_p50_ms": statistics.median(added), "added_p99_ms": percentile(added, 0.99),
            "read_p50_ms": 1000 * statistics.median(v["read"] for v in values),
            "read_p99_ms": 1000 * percentile([v["read"] for v in values], 0.99),
            "cpu_ms": 1000 * statistics.mean(v["cpu"] for v in values),
            "injected": statistics.mean(v["injected"] for v in values),
        })
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=CHARS, help="size of each paste")
    parser.add_argument("--rounds", type=int, default=16, help="requests per case and kind")
    parser.add_argument("--kinds", nargs="*", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--embedding-backend", default="hashing")
    parser.add_argument("--latest", type=int, default=2,
                        help="rounds of the paste-as-latest-message case (0: skip it)")
    args = parser.parse_args(argv)
    common = ["--embedding-backend", args.embedding_backend,
              "--summary-debounce-seconds", "3600"]
    started = time.perf_counter()
    samples: dict[str, list[dict[str, float]]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="mnemo-bench-big-") as tmp,
        fake_upstream_process() as fake,
        running_proxy(fake, Path(tmp) / "memory", *common) as (memory_root, memory_proc),
        running_proxy(fake, Path(tmp) / "threads", *common,
                      "--context-budget-tokens", "16000") as (threads_root, threads_proc),
        httpx.Client(timeout=120) as client,
    ):
        direct = Target("direct", fake)
        proxies = [Target("memory", memory_root + "/v1", memory_root, memory_proc.pid),
                   Target("memory+threads", threads_root + "/v1", threads_root,
                          threads_proc.pid)]
        roots = [memory_root, threads_root]
        phases = {"start": time.perf_counter() - started}
        pastes = {kind: KINDS[kind](args.chars) for kind in args.kinds}
        for kind, paste in pastes.items():
            agent = f"big-{kind}"
            messages = opening(paste)
            bodies = []
            for n, question in enumerate(latest_questions(args.rounds + 1)):
                reply = "I have read it." if n == 0 else f"Answer {n}: noted, and here it is."
                messages = [*messages, {"role": "assistant", "content": reply},
                            {"role": "user", "content": question}]
                bodies.append((messages, agent, "first"))
            run_case(client, direct, proxies, bodies, samples, f"history, {kind}")
        # The turns recorded above, the paste among them, distilled (a new session of each
        # agent distils its first) and embedded before the stored case is timed.
        for kind in pastes:
            for target in proxies:
                target.send(client, [{"role": "user", "content": "Hello again."}],
                            f"big-{kind}", "second")
        phases["history"] = time.perf_counter() - started - sum(phases.values())
        wait_idle(client, roots, [f"big-{kind}" for kind in pastes])
        phases["distil"] = time.perf_counter() - started - sum(phases.values())
        for kind in pastes:
            bodies = [([{"role": "user", "content": question}], f"big-{kind}", "second")
                      for question in [*MEMORY_QUESTIONS] * 3][: args.rounds + 1]
            run_case(client, direct, proxies, bodies, samples, f"stored, {kind}")
        if args.latest:
            for kind, paste in pastes.items():
                bodies = [(opening(paste) if n % 2 else [opening(paste)[1]],
                           f"big-latest-{kind}-{n}", "only") for n in range(args.latest + 1)]
                run_case(client, direct, proxies, bodies, samples, f"latest, {kind}")
        phases["stored+latest"] = time.perf_counter() - started - sum(phases.values())
    rows = rows_of(samples, proxies)
    print("phases (s): " + ", ".join(f"{name} {value:.1f}" for name, value in phases.items()))
    print(f"\nbig messages: {args.chars:,}-character pastes, {args.rounds} requests a case "
          f"(latest: {args.latest}), concurrency 1, {time.perf_counter() - started:.0f} s")
    print(f"{'case':<18} {'proxy':<15} {'direct p50':>10} {'added p50':>10} {'added p99':>10}"
          f" {'read p50':>9} {'read p99':>9} {'cpu/req':>8} {'inject':>6}")
    for r in rows:
        print(f"{r['case']:<18} {r['proxy']:<15} {r['direct_p50_ms']:>8.2f}ms "
              f"{r['added_p50_ms']:>8.2f}ms {r['added_p99_ms']:>8.2f}ms {r['read_p50_ms']:>7.2f}ms"
              f" {r['read_p99_ms']:>7.2f}ms {r['cpu_ms']:>6.1f}ms {r['injected']:>6.0%}")
    summary = [
        {"figure": f"added latency, {r['case']} ({r['proxy']})",
         "value": f"p50 {r['added_p50_ms']:.1f} ms, p99 {r['added_p99_ms']:.1f} ms "
                  f"(read p50 {r['read_p50_ms']:.1f} ms)", "target": ""}
        for r in rows if not r["case"].startswith("latest")
    ]
    return {"summary": summary, "rows": rows}


if __name__ == "__main__":
    main()

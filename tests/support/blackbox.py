"""Driving a real proxy from outside, as a user does: its console script, its HTTP API, the
openai SDK, and a fake upstream that shows what the model would have received.

Nothing here imports the proxy's own packages: benchmarks built on this module keep
working whatever the package layout behind `mnemoproxy serve` and the documented API.

    with FakeUpstream() as fake, running_proxy(fake.base_url, data_dir, {}) as url:
        ingest(url, [History("alice", [Session("intro", when, [("Hi, I'm Alice", "Hi!")])])],
               skip_extraction=False)
        wait_for_embeddings(url)
        reply = Asker(url, fake).ask("alice", "What's my name?")
        reply.block   # the text inside <recalled_memory>, as the upstream received it
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import httpx
import openai

from tests.support.servers.backends import store_url_for
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.ports import free_port

FENCE_OPEN, FENCE_CLOSE = "<recalled_memory>", "</recalled_memory>"
INGEST_CLIENTS = 4  # concurrent ingest requests, each for a different agent
# The fake upstream answers every question with this status: the proxy remembers only
# successful replies, so asking leaves an agent's memory as it was ingested. (With the
# fake's echo, each reply would carry the whole block back into memory, where the next
# question would find it.)
UNANSWERED_STATUS = 422
TAG_HEADER = "X-Eval-Request"  # relayed upstream as it is: finds each question's request
PROXY_START_SECONDS = 120.0
PROXY_STOP_SECONDS = 60.0  # shutdown distils whatever is pending: allow it time
EMBEDDING_STALL_SECONDS = 20.0  # no embedding progress this long: stop waiting


# --- the proxy process --------------------------------------------------------------------


def console_script() -> Path:
    """`mnemoproxy` beside this interpreter: the entry point a user runs."""
    script = Path(sys.executable).parent / "mnemoproxy"
    if not script.exists():
        raise SystemExit(f"{script} not found: run `make install` to install the console script")
    return script


def setting_flags(settings: dict[str, str]) -> list[str]:
    """{"memory_budget_tokens": "1200"} -> ["--memory-budget-tokens", "1200"]."""
    return [arg for name, value in settings.items()
            for arg in ("--" + name.replace("_", "-"), value)]


@contextmanager
def running_proxy(upstream_url: str, data_dir: Path, settings: dict[str, str]) -> Iterator[str]:
    """`mnemoproxy serve` on a free port until the block ends (then SIGTERM); yields its
    root URL. The working directory is `data_dir`, so no stray mnemoproxy.toml is read;
    MNEMO_* variables of the environment do apply."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [str(console_script()), "serve", "--port", str(port), "--data-dir", str(data_dir),
            "--upstream-url", upstream_url, "--log-level", "warning", *setting_flags(settings)]
    # --store-backend postgres (tests/support/servers/backends.py)
    store_url = store_url_for(str(data_dir))
    if store_url and "store_url" not in settings:
        args += ["--store-url", store_url]
    # The log goes to a file: a pipe nobody reads would block the proxy once full.
    with (data_dir / "proxy.log").open("w+b") as log:
        proc = subprocess.Popen(args, cwd=data_dir, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_up(url, proc, log)
            yield url
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(PROXY_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    deadline = time.monotonic() + PROXY_START_SECONDS
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    log.seek(0)
    tail = log.read()[-3000:].decode(errors="replace")
    state = f"exited with {proc.returncode}" if proc.poll() is not None else "did not answer"
    raise RuntimeError(f"the proxy {state} at {url}/health; its log ends with:\n{tail}")


def health(url: str) -> dict[str, Any]:
    """The store's counts from GET /health (`memory`)."""
    body = httpx.get(url + "/health", timeout=30).json()
    memory = body.get("memory") if isinstance(body, dict) else None
    return memory if isinstance(memory, dict) else {}


def preview(url: str, agent_id: str, question: str,
            thread: Sequence[dict[str, str]] = ()) -> dict[str, Any]:
    """POST /memory/preview for one user message (after the conversation `thread`, if
    any): the gate's decision and its reason."""
    body = {"agent_id": agent_id,
            "messages": [*thread, {"role": "user", "content": question}]}
    answer = httpx.post(url + "/memory/preview", json=body, timeout=60).json()
    return answer if isinstance(answer, dict) else {}


def wait_for_embeddings(url: str) -> dict[str, Any]:
    """Wait until the background embedder has caught up, as a user coming back later finds
    the store: every stored item embedded, or no progress for EMBEDDING_STALL_SECONDS.
    Returns the last /health counts, so a caller can see which it was."""
    last, last_change = -1, time.monotonic()
    while True:
        status = health(url)
        items = sum(int(status.get(k, 0)) for k in ("transcript_messages", "facts", "episodes"))
        embedded = int(status.get("embedded_items", 0))
        if embedded >= items:
            return status
        if embedded != last:
            last, last_change = embedded, time.monotonic()
        elif time.monotonic() - last_change > EMBEDDING_STALL_SECONDS:
            return status
        time.sleep(0.5)


# --- seeding memory -----------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    conversation_id: str
    date: datetime  # timezone-aware
    turns: list[tuple[str, str]]  # (user, assistant)


@dataclass(frozen=True)
class History:
    agent_id: str
    sessions: list[Session]  # in date order


def ingest(
    url: str,
    histories: Sequence[History],
    *,
    skip_extraction: bool,
    advance: Callable[[], None] = lambda: None,
    distilled: Counter[str] | None = None,
) -> int:
    """POST /memory/ingest every history, one session per request in order, INGEST_CLIENTS
    agents at a time; `advance` is called after each session. Returns the turns ingested;
    `distilled` sums the counts of each answer's distillation (facts_added, ...)."""

    lock = threading.Lock()

    def one(history: History) -> int:
        turns = 0
        with httpx.Client(base_url=url, timeout=600) as http:
            for session in history.sessions:
                body = {
                    "agent_id": history.agent_id,
                    "conversation_id": session.conversation_id,
                    "session_date": session.date.isoformat(),
                    "turns": [{"user": u, "assistant": a} for u, a in session.turns],
                    "skip_extraction": skip_extraction,
                }
                response = http.post("/memory/ingest", json=body)
                if response.status_code != 200:
                    raise RuntimeError(
                        f"ingest for {history.agent_id} failed ({response.status_code}): "
                        f"{response.text[:500]}"
                    )
                answer = response.json()
                turns += int(answer.get("turns_ingested", 0))
                if distilled is not None:
                    with lock:
                        distilled.update({k: v for k, v in answer.get("distillation", {}).items()
                                          if isinstance(v, int)})
                advance()
        return turns

    with ThreadPoolExecutor(INGEST_CLIENTS) as pool:
        return sum(pool.map(one, histories))


# --- asking -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """What memory did for one question: the response headers and the block the upstream
    received (None when there was none)."""

    section: str  # X-Memory-Section; "error": the read failed or missed its deadline
    tokens: int
    items: int
    block: str | None


class Asker:
    """Asks through the openai SDK, one question at a time, and reads what the fake
    upstream received for it."""

    def __init__(self, proxy_url: str, fake: FakeUpstream) -> None:
        self.fake = fake
        self.client = openai.OpenAI(base_url=proxy_url + "/v1", api_key="sk-eval", max_retries=0)
        self.asked = 0

    def ask(self, agent_id: str, question: str,
            thread: Sequence[dict[str, str]] = ()) -> Reply:
        """`question` as the latest message, after the conversation `thread` if any."""
        self.asked += 1
        tag = str(self.asked)
        self.fake.error(UNANSWERED_STATUS)
        client = self.client.with_options(default_headers={"X-Agent-Id": agent_id})
        messages: list[Any] = [*thread, {"role": "user", "content": question}]
        try:
            raw = client.chat.completions.with_raw_response.create(
                model="m",
                messages=messages,
                extra_headers={TAG_HEADER: tag},
            )
            headers = raw.headers
        except openai.APIStatusError as exc:
            if exc.status_code != UNANSWERED_STATUS:
                raise
            headers = exc.response.headers
        return Reply(
            section=headers.get("x-memory-section", "(absent)"),
            tokens=int(headers.get("x-memory-tokens") or 0),
            items=int(headers.get("x-memory-items") or 0),
            block=fenced_block(self._received(tag).get("messages", [])),
        )

    def _received(self, tag: str) -> dict[str, Any]:
        for request in reversed(self.fake.requests):
            if request.headers.get(TAG_HEADER.lower()) == tag and isinstance(request.json, dict):
                return request.json
        raise RuntimeError(f"the fake upstream never received question {tag}")


def fenced_block(messages: Sequence[dict[str, Any]]) -> str | None:
    """The text inside the memory fence, from whichever message carries it (the latest
    user message with injection = user_prefix, a system message with injection = system)."""
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts = [str(p.get("text", "")) for p in content if isinstance(p, dict)]
        else:
            parts = [content if isinstance(content, str) else ""]
        for text in parts:
            start = text.find(FENCE_OPEN)
            end = text.find(FENCE_CLOSE, start + 1)
            if start >= 0 and end > start:
                return text[start + len(FENCE_OPEN) : end]
    return None


def block_sections(block: str) -> Counter[str]:
    """Bullet lines per section heading of a block ("earlier messages, verbatim" -> 12)."""
    counts: Counter[str] = Counter()
    heading = "(no heading)"
    for line in block.splitlines():
        stripped = line.strip()
        if stripped.startswith("- "):
            counts[heading] += 1
        elif stripped.endswith(":") and len(stripped) < 60:
            heading = stripped.rstrip(":").lower()
    return counts


# --- evidence in a block ---------------------------------------------------------------

# An evidence turn is in the block when any stretch of this many of its characters is
# (the data's own definition: "a 60-character excerpt inside what the upstream received"),
# so a block that quotes the part of a long message that matters counts.
EXCERPT_CHARS = 60
_SPACE = re.compile(r"\s+")


def norm(text: str) -> str:
    """Whitespace collapsed, lower case: the block reflows text, evidence is matched as read."""
    return _SPACE.sub(" ", text).strip().lower()


@dataclass(frozen=True)
class Evidence:
    text: str  # the evidence turn, normalised
    # Facts drawn from the turn, normalised: the turn counts as delivered when one of them
    # is in the block, whole or by any EXCERPT_CHARS-long stretch.
    drawn: tuple[str, ...] = ()

    def found(self, block: str) -> bool:
        """Any EXCERPT_CHARS-long stretch of the turn (all of a shorter one) in the block,
        or of a fact drawn from it."""
        return any(_stretch_in(text, block) for text in (self.text, *self.drawn))


def _stretch_in(text: str, block: str) -> bool:
    if len(text) <= EXCERPT_CHARS:
        return text in block
    return any(
        text[start : start + EXCERPT_CHARS] in block
        for start in range(len(text) - EXCERPT_CHARS + 1)
    )

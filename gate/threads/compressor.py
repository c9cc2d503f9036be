"""Long threads (`context_budget_tokens`): a chat request whose history exceeds the budget
has its oldest turns replaced by a running summary, kept per session and reused, so that
the compressed prefix stays byte-stable for the upstream's prompt cache.

The request's messages are read as the system prompt (the leading system or developer
messages, never touched) and turns: a turn starts at a user message and holds what
follows up to the next one (replies, tool calls, tool results). The oldest turns are cut
only between turns, and never where a tool call sent before the cut is answered after it,
so a call and its result are never parted. The latest turn is never compressed.

- Under the budget (o200k tokens of the messages' text, tool calls included): the request
  goes out as sent, byte for byte.
- Over it: the session's stored summary is reused when the request still begins with the
  very messages it summarises (their digest) and the result fits. Otherwise a new summary
  covers more turns: the fewest whose replacement brings the request down to half the
  budget (COMPRESS_TO), so the next requests of the growing thread fit again under the
  same prefix and the summary changes once per half a budget of new conversation, not
  with every turn.
- The summary is written by the core model (its previous summary extended with the newly
  compressed messages, in parts when they do not fit its context) when `core_model` is
  set and not capped for the day, within `core_timeout_seconds`; otherwise, or when that
  fails, extractively: the opening of each compressed message with its role, the
  thread's first lines and its latest that fit `context_summary_tokens`. Either way it is
  at most `context_summary_tokens` (and a quarter of the budget), scrubbed as stored text
  is, and sent as a system message right after the system prompt, fenced and marked as a
  record of what was said rather than instructions (text in it that reads like
  instructions is flagged, as in the memory block).

The memory block is placed afterwards, into the compressed messages (proxy/chat/memory.py):
it is never summarised, and it never enters a stored summary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemoproxy.errors import CoreModelCapped
from mnemoproxy.gate.fence import looks_like_instructions, quoted
from mnemoproxy.gate.threads.summaries import (
    EXTRACT_CHARS,
    EXTRACT_MIN_CHARS,
    OPENING_LINES,
    SHORT_EXTRACT_CHARS,
    core_line,
    extract_line,
    has_words,
    safe_line,
    summary_content,
)
from mnemoproxy.gate.threads.thread import MESSAGE_TOKENS, Thread, digest, read_thread
from mnemoproxy.gate.tokens.counter import count_tokens
from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory import CoreModel, Memory, ThreadSummary
from mnemoproxy.text_templates import text_templates

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parents[1] / "templates"
# After compressing, the request fills at most this share of the budget (when it can).
COMPRESS_TO = 0.5
# The core model's prompt is sized by characters (its tokenizer is unknown here; fewer
# characters a token than English averages).
CHARS_PER_TOKEN = 3
MIN_PART_CHARS = 2000
WORDS_PER_TOKEN = 0.7

# A summary is at most this share of the budget (and context_summary_tokens).
SUMMARY_SHARE = 0.25

_SENTENCE_MARKS = ".!?…"


@dataclass(frozen=True)
class Compression:
    """What compression did to one request: the messages to send (None: as sent), the
    turns the summary stands for, the tokens that saved, and how the summary came about
    (reused, core_model, extractive, fallback; error when compression failed; empty when
    nothing was compressed)."""

    messages: list[dict[str, Any]] | None = None
    turns: int = 0
    saved: int = 0
    summary: str = ""

    def headers(self) -> dict[str, str]:
        headers = {
            "X-Context-Compressed-Turns": str(self.turns),
            "X-Context-Tokens-Saved": str(self.saved),
        }
        if self.summary:
            headers["X-Context-Summary"] = self.summary
        return headers


class _Prompts:
    def __init__(self) -> None:
        environment = text_templates(TEMPLATES)
        self.system = environment.get_template("thread_summary_system.j2")
        self.user = environment.get_template("thread_summary_user.j2")


_prompts: LazyResource[_Prompts] = LazyResource(_Prompts)


class ThreadCompressor:
    """Compresses the long threads of one memory's agents (see the module docstring)."""

    def __init__(
        self,
        memory: Memory,
        *,
        budget_tokens: int,
        summary_tokens: int = 1000,
        core_timeout: float = 60.0,
        core_context_tokens: int = 4096,
    ) -> None:
        self.memory = memory
        self.budget = budget_tokens
        self.summary_cap = max(1, min(summary_tokens, int(budget_tokens * SUMMARY_SHARE)))
        self.core_timeout = core_timeout
        self.core_context_tokens = core_context_tokens
        self._frame_tokens = count_tokens(summary_content("", 1000)) + MESSAGE_TOKENS

    @classmethod
    def for_memory(cls, memory: Memory) -> ThreadCompressor | None:
        """The compressor `memory.settings` asks for, or None (context_budget_tokens 0)."""
        settings = memory.settings
        if not settings.context_budget_tokens:
            return None
        return cls(
            memory,
            budget_tokens=settings.context_budget_tokens,
            summary_tokens=settings.context_summary_tokens,
            core_timeout=settings.core_timeout_seconds,
            core_context_tokens=settings.core_context_tokens,
        )

    async def compress(
        self, agent_id: str, session_key: str, messages: list[dict[str, Any]]
    ) -> Compression:
        """The request's messages within the budget where compression can bring them there,
        as sent otherwise. Never raises: a failure sends the messages as they were."""
        try:
            return await self._compress(agent_id, session_key, messages)
        except Exception as exc:  # fail open: the chat goes through as sent
            log.warning(
                "compressing the long thread of agent %s failed, sending it as it is: %r",
                agent_id, exc,
            )
            return Compression(summary="error")

    async def _compress(
        self, agent_id: str, session_key: str, messages: list[dict[str, Any]]
    ) -> Compression:
        thread = await read_thread(messages)
        if thread.total <= self.budget or not thread.cuts:
            return Compression()
        head = thread.head
        stored = await self.memory.thread_summary(agent_id, session_key)
        start = head  # messages[head:start] are what a valid stored summary stands for
        if stored is not None:
            cut = head + stored.covered
            if cut in thread.cuts and digest(messages[head:cut]) == stored.digest:
                reused = self._apply(thread, stored, "reused")
                if thread.total - reused.saved <= self.budget or cut == thread.cuts[-1]:
                    return reused
                start = cut
            else:
                stored = None  # another history (edited, branched): summarised afresh
        head_tokens = thread.total - thread.after[head]
        target = int(self.budget * COMPRESS_TO)
        room = head_tokens + self.summary_cap + self._frame_tokens
        cut = next(
            (c for c in thread.cuts if c > start and room + thread.after[c] <= target),
            thread.cuts[-1],
        )
        summary = await self._summarise(thread, start, cut, stored)
        if self._apply(thread, summary, summary.author).saved <= 0:
            return Compression()  # the summary would cost what it replaces
        kept = await self.memory.save_thread_summary(agent_id, session_key, summary)
        compression = self._apply(thread, kept, kept.author)
        log.info(
            "long thread of agent %s: %d turns summarised (%s), %d tokens saved",
            agent_id, compression.turns, kept.author, compression.saved,
        )
        return compression

    def _apply(self, thread: Thread, summary: ThreadSummary, how: str) -> Compression:
        head = thread.head
        cut = head + summary.covered
        role = thread.messages[head - 1].get("role") if head else "system"
        content = summary_content(summary.summary, summary.turns)
        messages = [
            *thread.messages[:head],
            {"role": role, "content": content},
            *thread.messages[cut:],
        ]
        replaced = thread.after[head] - thread.after[cut]
        saved = replaced - count_tokens(content) - MESSAGE_TOKENS
        return Compression(messages, turns=summary.turns, saved=saved, summary=how)

    async def _summarise(
        self, thread: Thread, start: int, cut: int, previous: ThreadSummary | None
    ) -> ThreadSummary:
        head = thread.head
        covered = thread.messages[head:cut]

        def summary(text: str, author: str) -> ThreadSummary:
            return ThreadSummary(cut - head, thread.turns_before(cut), digest(covered), text,
                                 author)

        core = self.memory.summary_model
        if core is None:
            return summary(self.extractive(covered), "extractive")
        try:
            async with asyncio.timeout(self.core_timeout):
                text = await self._core_summary(
                    core,
                    thread.messages[start:cut] if previous is not None else covered,
                    previous.summary if previous is not None else None,
                )
            return summary(text, "core_model")
        except CoreModelCapped:
            log.info("long thread summarised extractively: the core model is capped for today")
        except TimeoutError:
            log.warning(
                "the core model did not summarise a long thread within %.0f s "
                "(core_timeout_seconds); summarised extractively", self.core_timeout,
            )
        except Exception as exc:
            log.warning("the core model could not summarise a long thread (%r); summarised "
                        "extractively", exc)
        return summary(self.extractive(covered), "fallback")

    # -- extractive --------------------------------------------------------------------------

    def extractive(self, messages: Sequence[dict[str, Any]]) -> str:
        """Each message's opening with its role, one line each (its first sentence alone
        when the openings do not fit); when even those do not all fit, the thread's first
        lines and as many of its latest as do. Lines are made only as far as they can be
        used: the cost follows the summary's size, not the thread's."""
        room = self.summary_cap - self._frame_tokens

        def line_of(message: dict[str, Any], short: bool) -> tuple[str, int]:
            chars, least = (SHORT_EXTRACT_CHARS, 0) if short else (EXTRACT_CHARS,
                                                                   EXTRACT_MIN_CHARS)
            line = extract_line(message, chars, least)
            return line, count_tokens(line) + 1 if line else 0

        for short in (False, True):
            lines: list[str] = []
            used = 0
            for message in messages:
                line, cost = line_of(message, short)
                used += cost
                if used > room:
                    break
                if line:
                    lines.append(line)
            else:
                return "\n".join(lines)
        used = 16  # the marker's line
        opening: list[str] = []
        position = 0
        while position < len(messages) and len(opening) < OPENING_LINES:
            line, cost = line_of(messages[position], True)
            if used + cost > room:
                break
            position += 1
            if line:
                opening.append(line)
                used += cost
        latest: list[str] = []
        left_out = 0
        for back in range(len(messages) - 1, position - 1, -1):
            line, cost = line_of(messages[back], True)
            if used + cost > room:
                left_out = sum(1 for m in messages[position:back + 1] if has_words(m))
                break
            if line:
                latest.append(line)
                used += cost
        return "\n".join([*opening, f"… ({left_out} messages left out)", *reversed(latest)])

    # -- the core model ----------------------------------------------------------------------

    async def _core_summary(
        self, core: CoreModel, messages: Sequence[dict[str, Any]], previous: str | None
    ) -> str:
        """The summary written by the core model: `previous` extended with `messages`, one
        call per part of them that fits the core model's context."""
        prompts = _prompts.get()
        system = prompts.system.render(max_words=int(self.summary_cap * WORDS_PER_TOKEN)).strip()
        said = [m for m in map(core_line, messages) if m is not None]
        summary = previous
        for part in self._parts(said, len(system)):
            user = prompts.user.render(previous=summary, messages=part).strip()
            answer = await core.complete(
                [{"role": "system", "content": system}, {"role": "user", "content": user}],
                timeout=self.core_timeout,
                max_tokens=self.summary_cap,
            )
            text = self._cleaned(answer.text, truncated=answer.truncated)
            if not text:
                raise ValueError("the core model answered with no summary")
            summary = text
        if summary is None:
            raise ValueError("nothing to summarise")
        return summary

    def _parts(self, said: list[dict[str, str]], frame_chars: int) -> list[list[dict[str, str]]]:
        budget = max(
            MIN_PART_CHARS,
            (self.core_context_tokens - 2 * self.summary_cap) * CHARS_PER_TOKEN - frame_chars,
        )
        parts: list[list[dict[str, str]]] = [[]]
        used = 0
        for message in said:
            size = len(message["text"]) + len(message["role"]) + 4
            if parts[-1] and used + size > budget:
                parts.append([])
                used = 0
            parts[-1].append(message)
            used += size
        return parts

    def _cleaned(self, text: str, *, truncated: bool) -> str:
        """The core model's summary as it may be sent: one safe line per line, an unfinished
        last sentence dropped, within the summary's tokens."""
        if truncated:
            end = max(text.rfind(mark) for mark in _SENTENCE_MARKS)
            text = text[: end + 1] if end >= 0 else text
        lines = [safe_line(line) for line in text.splitlines()]
        lines = [quoted(line) if looks_like_instructions(line) else line for line in lines if line]
        room = self.summary_cap - self._frame_tokens
        kept: list[str] = []
        used = 0
        for line in lines:
            cost = count_tokens(line) + 1
            if used + cost > room:
                break
            kept.append(line)
            used += cost
        return "\n".join(kept)



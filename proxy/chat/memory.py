"""Memory as the chat route sees it: read before forwarding, record after replying.

Both directions fail open: a memory error forwards the request without memory (and is
logged), and a turn is recorded before its reply completes, but a store slower than the
read deadline finishes in the background rather than hold the reply longer.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from mnemoproxy.gate import ReadPath, ThreadCompressor, memory_headers
from mnemoproxy.memory import NEXT_TURN, Memory, Turn
from mnemoproxy.proxy.chat.conversation import (
    QUIET_GAP_SECONDS,
    family_of,
    new_session_key,
    one_message_family,
    opening_message,
    read_conversation,
    session_fingerprint,
    user_messages,
)
from mnemoproxy.proxy.edge.metrics import Metrics
from mnemoproxy.proxy.relay.sse import AssistantReply

log = logging.getLogger(__name__)


@dataclass
class MemoryPlan:
    """What memory decided for one chat request: the body to forward (None = unchanged),
    the response headers that say what was injected, and what to remember afterwards."""

    agent_id: str
    session_key: str
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)
    # The request carries no history: its turn goes after what its session holds.
    appends: bool = False
    restates_memory: bool = False  # it only asked, and memory was injected to answer


async def session_of(
    memory: Memory, agent_id: str, session_id: str | None, messages: list[dict[str, Any]]
) -> tuple[str, bool]:
    """The request's session key, and whether its turn is appended to the session: the
    client's X-Session-Id; for a request of one message (no history), the session of the
    agent's latest such request with the same system prompt while the gap since it is
    quiet enough, else a new one; else the fingerprint of the conversation's opening."""
    if session_id:
        return session_id, False
    family = one_message_family(agent_id, messages)
    if family is None:
        key = session_fingerprint(agent_id, messages)
        if user_messages(messages) == 2:
            # The first time a conversation comes with its history (a chat UI's second
            # message): its opening went in as a one-message request, and moves here.
            try:
                await memory.continue_opening(
                    agent_id, family_of(agent_id, messages), key, opening_message(messages),
                    QUIET_GAP_SECONDS)
            except Exception as exc:  # the opening stays where it is: stored twice
                log.warning("moving the opening of agent %s's conversation failed: %r",
                            agent_id, exc)
        return key, False
    try:
        recent = await memory.recent_session(agent_id, family, QUIET_GAP_SECONDS)
    except Exception as exc:  # fail open: a session of its own, as the request was
        log.warning("finding the session of agent %s failed: %r", agent_id, exc)
        return session_fingerprint(agent_id, messages), False
    return recent or new_session_key(family), True


async def prepare(
    memory: Memory,
    read_path: ReadPath,
    threads: ThreadCompressor | None,
    agent_id: str,
    session_id: str | None,
    body: dict[str, Any],
    *,
    deadline: float,
    metrics: Metrics,
) -> MemoryPlan:
    """The request with its long thread compressed (context_budget_tokens, gate/threads/)
    and the agent's memory injected, or as it was when neither is needed; memory that
    fails or is not ready within `deadline` seconds is left out. How each read went is
    counted in `metrics` (and shown by /health): a busy machine makes reads miss their
    deadline, and that must be visible and rare."""
    messages = body["messages"]
    session_key, appends = await session_of(memory, agent_id, session_id, messages)
    plan = MemoryPlan(agent_id=agent_id, session_key=session_key, request=body, appends=appends)
    # Long threads first (context_budget_tokens): the memory block then goes into the
    # compressed messages, so it is never summarised away.
    context: dict[str, str] = {}
    if threads is not None:
        compression = await threads.compress(agent_id, plan.session_key, messages)
        context = compression.headers()
        if compression.messages is not None:
            messages = compression.messages
            plan.body = {**body, "messages": messages}
    try:
        with metrics.read_seconds.time():
            async with asyncio.timeout(deadline):
                result = await read_path.prepare(agent_id, messages)
    except TimeoutError:
        metrics.reads["deadline_missed"].inc()
        log.warning(
            "memory read for agent %s missed its %.2f s deadline (memory_read_deadline_seconds);"
            " forwarding without memory", agent_id, deadline,
        )
        plan.headers = {**memory_headers("error"), "X-Memory-Error": "deadline", **context}
        return plan
    except Exception as exc:  # fail open: the chat must go through without memory
        metrics.reads["failed"].inc()
        log.warning(
            "memory read failed for agent %s, forwarding without memory: %r", agent_id, exc
        )
        plan.headers = {**memory_headers("error"), "X-Memory-Error": "read_failed", **context}
        return plan
    plan.headers = {**result.headers(), **context}
    plan.restates_memory = result.restates_memory
    metrics.gate_decisions[result.decision.section].inc()
    if result.messages is not None and result.block is not None:
        metrics.reads["injected"].inc()
        metrics.injected_tokens.inc(result.block.tokens)
        plan.body = {**body, "messages": result.messages}
        memory.note_used(agent_id, result.used)
        log.info(
            "memory for agent %s: %s (%s), %d items, %d tokens",
            agent_id, result.decision.section, result.decision.confidence,
            len(result.block.items), result.block.tokens,
        )
    else:
        metrics.reads["not_needed"].inc()
    return plan


async def remember(
    memory: Memory, plan: MemoryPlan, reply: AssistantReply, *, wait: float
) -> None:
    """Record the turn just answered, and any earlier turns of the conversation memory never
    saw, before the reply is completed (waiting at most `wait` seconds). A reply that only
    calls tools has not answered yet: its turn is recorded, calls included, with the answer
    that follows the tool results."""
    conversation = read_conversation(plan.request["messages"])
    turns = [(t.index, Turn(t.user, t.assistant)) for t in conversation.history]
    if reply.content or not reply.tool_calls:
        current = conversation.current
        answer = "\n".join(part for part in (current.assistant, reply.as_text()) if part)
        index = NEXT_TURN if plan.appends else current.index
        turns.append((index, Turn(current.user, answer, restates_memory=plan.restates_memory)))
    if turns:
        await memory.record_within(plan.agent_id, plan.session_key, turns, wait)

"""Conversations become memory: turns are recorded as pending signals, and each session is
distilled (debounced) into an episode, pinned facts and identity facts.

Nothing pending is lost: signals live in SQLite until a distillation succeeds, and a
failed one is retried with backoff, then dead-lettered with its reason after
`distill_max_attempts`. Every outcome is written to the processing log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from mnemoproxy.errors import MnemoError
from mnemoproxy.memory.core_model.breaker import CircuitBreaker
from mnemoproxy.memory.distill.protocol import Distiller
from mnemoproxy.memory.models import NEXT_TURN, Change, FactDraft, SessionInput, Turn
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.conversations.distillations import SessionDistillation
from mnemoproxy.memory.store.records import PendingSignal
from mnemoproxy.memory.write.debounce import DebounceScheduler
from mnemoproxy.memory.write.facts import plan_fact_updates
from mnemoproxy.memory.write.pii import redact_pii
from mnemoproxy.memory.write.redact import redact_secrets
from mnemoproxy.memory.write.reimport import known_prefix, stored_turns

log = logging.getLogger(__name__)

# First retry after this many seconds, doubling per attempt, capped.
RETRY_BASE_SECONDS = 5.0
RETRY_CAP_SECONDS = 600.0
RECENT_EPISODES_FOR_CONTEXT = 3
# Replicas distilling side by side (`claims`): a session's claim lasts this long and is
# renewed every third of it while its distillation runs; a process that met another's
# claim looks again this long after it would run out.
CLAIM_LEASE_SECONDS = 15.0
CLAIM_RETRY_MARGIN_SECONDS = 0.5


@dataclass(frozen=True)
class Claims:
    """Several processes distil (replicas on one PostgreSQL database): each session is
    claimed before it is distilled (memory/store/claims.py); `holder` names this process."""

    holder: str
    lease_seconds: float = CLAIM_LEASE_SECONDS


@dataclass
class DistillOutcome:
    """What one distillation did, as the ingest API reports it."""

    status: str  # distilled | nothing_pending | skipped | failed | dead_lettered | deferred
    reason: str | None = None
    episode_id: int | None = None
    facts_added: int = 0
    facts_merged: int = 0
    facts_superseded: int = 0
    facts_historical: int = 0
    facts_ungrounded: int = 0  # proposed by the distiller, dropped: the user never said so
    identity_facts: int = 0
    turns: int = 0
    retry_in_seconds: float | None = None
    # Distilled, but not by the configured distiller: why (the core model was capped).
    fallback: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class IngestResult:
    session_id: int
    turns_ingested: int
    # What the ingest did to the conversation: "new", "updated" (turns added to one memory
    # held already) or "unchanged" (it held every turn sent).
    conversation: Change = "new"
    turns_skipped: int = 0  # sent, and held already
    distillation: DistillOutcome = field(default_factory=lambda: DistillOutcome("skipped"))


class WritePath:
    def __init__(
        self,
        store: Store,
        distiller: Distiller,
        *,
        debounce_seconds: float,
        max_attempts: int,
        identity_max_facts: int,
        max_backfill_turns: int = 100,
        redact_pii: bool = False,
        assign_slots: Callable[[list[FactDraft]], Awaitable[None]] | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.store = store
        self.max_backfill_turns = max_backfill_turns
        self.redact_pii = redact_pii
        self.distiller = distiller
        self.max_attempts = max_attempts
        self.identity_max_facts = identity_max_facts
        self.assign_slots = assign_slots
        self.breaker = breaker or CircuitBreaker()
        self.scheduler = DebounceScheduler(debounce_seconds, self._scheduled_run)
        self.claims: Claims | None = None  # set when other processes distil beside this one
        # Distillations since start-up by outcome: a status, or "fallback" for one distilled
        # by the rules standing in for the core model (/health and /metrics show them).
        self.outcomes: Counter[str] = Counter()
        # (agent, session) -> (highest pending signal id, pending signals) at the last
        # notice_pending; None before the first.
        self._pending_marks: dict[tuple[str, int], tuple[int, int]] | None = None

    async def start(self) -> int:
        """Re-arm every session that still has pending signals (after a restart or crash)."""
        sessions = await self.store.sessions_with_pending_signals()
        for agent_id, session_id, _ in sessions:
            self.scheduler.arm(agent_id, session_id, 0)
        if sessions:
            log.info("re-armed %d sessions with pending signals", len(sessions))
        return len(sessions)

    async def notice_pending(self) -> int:
        """For the process that owns the background work among several (workers > 1): the
        sessions whose pending turns changed since the last look, recorded by any process,
        are (re)armed as turns recorded here arm them: the agent's latest session (by its
        latest turn) `summary_debounce_seconds` from now, an earlier one at once (its agent
        moved on). The first look arms every pending session at once, as `start` does.
        Returns how many were (re)armed."""
        marks = await self.store.pending_session_marks()  # oldest latest turn first
        seen = {(agent, session): (last, count) for agent, session, last, count in marks}
        latest = {agent: session for agent, session, _, _ in marks}
        armed = 0
        for agent, session, last, count in marks:
            if self._pending_marks is None:
                self.scheduler.arm(agent, session, 0)
            elif self._pending_marks.get((agent, session)) == (last, count):
                continue
            elif latest[agent] == session:
                self.scheduler.touch(agent, session)
            else:
                self.scheduler.arm(agent, session, 0)
            armed += 1
        if self._pending_marks is None and marks:
            log.info("armed %d sessions with pending signals", len(marks))
        self._pending_marks = seen
        return armed

    async def close(self, timeout: float = 10.0) -> None:
        await self.scheduler.close(timeout)

    async def retry_dead_letters(self, agent_id: str | None = None) -> tuple[int, int]:
        """Put dead-lettered sessions (of one agent, or all) back in the queue, each given
        `distill_max_attempts` tries again, and distil them in the background: after the
        cause was fixed (a core model back, a bug mended). Returns (sessions, turns)."""
        requeued = await self.store.requeue_dead_signals(agent_id)
        for (agent, session_id), turns in requeued.items():
            await self.store.log_event(
                agent, "dead_letter_retried", {"signals": turns}, session_id=session_id
            )
            self.scheduler.arm(agent, session_id, 0)
        if requeued:
            log.info("re-queued %d dead-lettered sessions", len(requeued))
        return len(requeued), sum(requeued.values())

    # -- recording ----------------------------------------------------------------------

    async def record(
        self,
        agent_id: str,
        session_key: str,
        turns: Sequence[tuple[int, Turn]],
    ) -> int:
        """Store turns (the current one, plus any earlier ones of the conversation that were
        never seen) verbatim and as pending signals, then (re)arm the session's debounce.
        Idempotent on (agent, session, turn index). Returns how many turns were new."""
        # Every request carries the whole history: what the session already holds is
        # skipped (one read) before any work (redaction, inserts) is spent on it; the
        # rest is one write transaction, session included.
        known, first_new = await self.store.session_progress(agent_id, session_key)
        fresh = [(i, t) for i, t in turns if i >= first_new or i == NEXT_TURN]
        if known is not None and not fresh:
            self.scheduler.touch(agent_id, known)
            return 0
        # The last turn is the one just answered; before it, at most max_backfill_turns of
        # the history memory never saw (one request can carry tens of thousands).
        if len(fresh) > self.max_backfill_turns + 1:
            log.info(
                "session %r of %s: recording the latest %d of %d earlier turns never seen "
                "(max_backfill_turns)", session_key, agent_id, self.max_backfill_turns,
                len(fresh) - 1,
            )
            fresh = fresh[-(self.max_backfill_turns + 1) :]
        at = next((t.at for _, t in turns if t.at is not None), None)
        session_id, added = await self.store.record_turns(
            agent_id, session_key, self._as_stored(fresh), started_at=_ts(at)
        )
        self.scheduler.touch(agent_id, session_id)
        return added

    def _as_stored(
        self, turns: Sequence[tuple[int, Turn]], default: datetime | None = None
    ) -> list[tuple[int, Turn]]:
        """Every turn as it is stored: credentials redacted (memory is replayed into later
        prompts, so a pasted key must not travel with it), personal data too with
        redact_pii, and with a time: its own, else the default, else now."""
        return _stamped(turns, self.scrub, default)

    def scrub(self, text: str) -> str:
        """Text as memory may store it: credentials redacted, personal data too with
        redact_pii. Every way in goes through here (chat, ingest, facts by hand, imports)."""
        text = redact_secrets(text)
        return redact_pii(text) if self.redact_pii else text

    async def ingest(
        self,
        agent_id: str,
        conversation_id: str,
        turns: Sequence[Turn],
        *,
        session_date: datetime | None,
        skip_extraction: bool,
        title: str = "",
    ) -> IngestResult:
        """Seed memory with a whole conversation and distil it now (awaited). The turns at
        the start of `turns` that the conversation already holds are skipped
        (memory/write/reimport.py): the same conversation ingested again adds nothing, a
        longer one only what is new. `title` names the session (an import's)."""
        started = time.perf_counter()
        latest = await self.store.latest_session(agent_id)
        known, first_index = await self.store.session_progress(agent_id, conversation_id)
        arriving = self._as_stored(list(enumerate(turns)), default=session_date)
        skipped = 0
        if known is not None:
            stored = stored_turns(await self.store.session_transcript(agent_id, known))
            skipped = known_prefix(stored, [(t.user, t.assistant) for _, t in arriving])
        fresh = [(first_index + n, turn) for n, (_, turn) in enumerate(arriving[skipped:])]
        session_id, added = await self.store.record_turns(
            agent_id,
            conversation_id,
            fresh,
            started_at=_ts(session_date),
            queue_signals=not skip_extraction,
        )
        if title:
            await self.store.name_session(agent_id, session_id, self.scrub(title))
        if latest is not None and latest[0] != session_id:
            # The agent moved on from its previous session: that one is distilled now.
            self.scheduler.fire_now(agent_id, latest[0])
        change: Change = "new" if known is None else "updated" if added else "unchanged"
        result = IngestResult(session_id, added, conversation=change,
                              turns_skipped=len(turns) - added)
        if not skip_extraction:
            result.distillation = await self.distil_now(agent_id, session_id, session_date)
        log.info(
            "ingested %d of %d turns into session %s (%r) of %s; distillation %s; %.2f s",
            added, len(turns), session_id, conversation_id, agent_id,
            result.distillation.status, time.perf_counter() - started,
        )
        return result

    # -- distilling ---------------------------------------------------------------------

    async def distil_now(
        self, agent_id: str, session_id: int, session_date: datetime | None = None
    ) -> DistillOutcome:
        outcome: list[DistillOutcome] = []

        async def run(agent: str, session: int) -> None:
            outcome.append(await self.distil_session(agent, session, session_date))

        await self.scheduler.run_now(agent_id, session_id, run)
        return outcome[0] if outcome else DistillOutcome("nothing_pending")

    async def _scheduled_run(self, agent_id: str, session_id: int) -> None:
        claims = self.claims
        if claims is None:
            await self.distil_session(agent_id, session_id)
            return
        now = time.time()
        held_until = await self.store.claim_distillation(
            agent_id, session_id, claims.holder, until=now + claims.lease_seconds, now=now)
        if held_until is not None:
            # Another process distils it now: look again once its lease would run out (a
            # holder that died stops renewing it; one that finished leaves nothing pending).
            self.scheduler.arm(agent_id, session_id,
                               max(held_until - now, 0.0) + CLAIM_RETRY_MARGIN_SECONDS)
            return
        renewing = asyncio.get_running_loop().create_task(
            self._renew_claim(agent_id, session_id, claims))
        try:
            await self.distil_session(agent_id, session_id)
        finally:
            renewing.cancel()
            await self.store.release_distillation(session_id, claims.holder)

    async def _renew_claim(self, agent_id: str, session_id: int, claims: Claims) -> None:
        while True:
            await asyncio.sleep(claims.lease_seconds / 3)
            now = time.time()
            try:
                await self.store.claim_distillation(
                    agent_id, session_id, claims.holder, until=now + claims.lease_seconds,
                    now=now)
            except Exception:  # the next renewal tries again; the lease has time left
                log.exception("renewing the claim on session %s of %s failed",
                              session_id, agent_id)

    async def distil_session(
        self, agent_id: str, session_id: int, session_date: datetime | None = None
    ) -> DistillOutcome:
        outcome = await self._distil(agent_id, session_id, session_date)
        self.outcomes["fallback" if outcome.fallback else outcome.status] += 1
        return outcome

    async def _distil(
        self, agent_id: str, session_id: int, session_date: datetime | None
    ) -> DistillOutcome:
        signals = await self.store.pending_signals(agent_id, session_id)
        if not signals:
            return DistillOutcome("nothing_pending", "no pending turns in this session")
        ids = [s.id for s in signals]
        if not self.breaker.allow():
            wait = max(self.breaker.retry_in, 1.0)
            self.scheduler.arm(agent_id, session_id, wait)
            return DistillOutcome(
                "deferred",
                "the core model failed repeatedly (circuit open); retrying later",
                retry_in_seconds=wait,
            )
        started = time.perf_counter()
        try:
            context = await self._session_input(agent_id, signals, str(session_id), session_date)
        except Exception as exc:
            # A turn the session cannot be built from (a date out of range, say) counts an
            # attempt and ends in a dead letter like any other failure, never a loop.
            log.exception("reading session %s of %s for distillation failed", session_id, agent_id)
            return await self._failed(agent_id, session_id, ids, repr(exc))
        try:
            distillation = await self.distiller.distill(context)
        except MnemoError as exc:  # the core model's failure: the breaker counts it
            self.breaker.record_failure()
            return await self._failed(agent_id, session_id, ids, exc.message)
        except Exception as exc:  # a distiller bug or input it cannot take
            log.exception("distilling session %s of %s raised", session_id, agent_id)
            return await self._failed(agent_id, session_id, ids, repr(exc))
        if distillation.fallback is None:  # the rules standing in say nothing of the model
            self.breaker.record_success()
        drafts = [*distillation.identity, *distillation.pinned]
        first_at = signals[0].at
        last_at = max((t.at.timestamp() for t in context.turns if t.at), default=first_at)
        try:
            if self.assign_slots is not None:
                await self.assign_slots(drafts)
            applied = await self.store.apply_distillation(
                agent_id,
                SessionDistillation(
                    session_id=session_id,
                    signal_ids=ids,
                    started_at=first_at,
                    ended_at=last_at,
                    episode=distillation.episode,
                    facts=drafts,
                    turn_indexes=[s.turn_index for s in signals],
                ),
                plan_facts=plan_fact_updates,
                identity_max=self.identity_max_facts,
                log_detail={
                    "turns": len(signals),
                    "seconds": round(time.perf_counter() - started, 3),
                },
            )
        except Exception as exc:  # nothing of it was written: the session is tried again
            log.exception("storing the distillation of session %s of %s failed",
                          session_id, agent_id)
            return await self._failed(agent_id, session_id, ids, repr(exc))
        if applied is None:
            log.info("session %s of %s was distilled meanwhile by another process, or "
                     "forgotten: this distillation is dropped", session_id, agent_id)
            return DistillOutcome("nothing_pending", "distilled meanwhile by another process")
        outcome = DistillOutcome(
            "distilled",
            **asdict(applied),
            facts_ungrounded=distillation.ungrounded,
            turns=len(signals),
            fallback=distillation.fallback,
        )
        if applied.episode_id is None and not drafts:
            outcome.reason = "nothing worth remembering in this session"
        log.info(
            "distilled session %s of %s (%d turns): episode %s, facts %d added, %d merged,"
            " %d superseded, %d as history, %d dropped as ungrounded; %.2f s%s",
            session_id, agent_id, len(signals), applied.episode_id, applied.facts_added,
            applied.facts_merged, applied.facts_superseded, applied.facts_historical,
            distillation.ungrounded, time.perf_counter() - started,
            f" ({distillation.fallback})" if distillation.fallback else "",
        )
        return outcome

    async def _session_input(
        self,
        agent_id: str,
        signals: list[PendingSignal],
        session_id: str,
        session_date: datetime | None,
    ) -> SessionInput:
        turns = [
            Turn(s.user_text, s.assistant_text, datetime.fromtimestamp(s.at, UTC)) for s in signals
        ]
        return SessionInput(
            agent_id=agent_id,
            session_id=session_id,
            turns=turns,
            session_date=session_date or turns[0].at,
            known_identity=[
                f.content for f in await self.store.current_facts(agent_id, "identity")
            ],
            recent_episodes=[
                e.summary
                for e in await self.store.recent_episodes(agent_id, RECENT_EPISODES_FOR_CONTEXT)
            ],
        )

    async def _failed(
        self, agent_id: str, session_id: int, ids: list[int], reason: str
    ) -> DistillOutcome:
        attempts = await self.store.bump_signal_attempts(agent_id, ids, reason)
        if attempts >= self.max_attempts:
            await self.store.dead_letter_signals(agent_id, ids, reason)
            await self.store.log_event(
                agent_id,
                "dead_lettered",
                {"reason": reason, "attempts": attempts, "signals": len(ids)},
                session_id=session_id,
            )
            log.warning("session %s of %s dead-lettered: %s", session_id, agent_id, reason)
            return DistillOutcome("dead_lettered", reason)
        wait = min(RETRY_CAP_SECONDS, RETRY_BASE_SECONDS * 2 ** (attempts - 1))
        self.scheduler.arm(agent_id, session_id, wait)
        await self.store.log_event(
            agent_id,
            "distill_failed",
            {"reason": reason, "attempts": attempts, "retry_in_seconds": wait},
            session_id=session_id,
        )
        log.warning(
            "distilling session %s of %s failed (%s); retry in %ss",
            session_id,
            agent_id,
            reason,
            wait,
        )
        return DistillOutcome("failed", reason, retry_in_seconds=wait)


def _ts(moment: datetime | None) -> float | None:
    return moment.timestamp() if moment is not None else None


def _stamped(
    turns: Sequence[tuple[int, Turn]], scrub: Callable[[str], str], default: datetime | None
) -> list[tuple[int, Turn]]:
    now = datetime.now(UTC)
    return [(i, Turn(scrub(t.user), scrub(t.assistant), t.at or default or now, t.restates_memory))
            for i, t in turns]

"""Store SQL for conversations as they arrive: verbatim transcript messages and the
pending signals that queue turns for distillation (durable across restarts)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from mnemoproxy.memory.models import NEXT_TURN, Turn
from mnemoproxy.memory.store.conversations.sessions import touch_session, upsert_session
from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.records import (
    PENDING_SIGNAL_COLUMNS,
    PendingSignal,
    TranscriptMessage,
)


class TurnQueries(Database):
    # -- transcript --------------------------------------------------------------------

    async def add_transcript(
        self, agent_id: str, session_id: int, messages: Sequence[TranscriptMessage]
    ) -> int:
        """Store verbatim messages; ones already stored are ignored. Returns how many were new."""
        require_agent(agent_id)
        if not messages:
            return 0
        rows = [(agent_id, session_id, m.turn_index, m.role, m.content, m.at) for m in messages]
        last = max(m.at for m in messages)

        def write(db: sqlite3.Connection) -> int:
            cursor = db.executemany(
                "INSERT OR IGNORE INTO transcript "
                "(agent_id, session_id, turn_index, role, content, at) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            added = cursor.rowcount  # summed over the statements; ignored rows count 0
            touch_session(db, agent_id, session_id, last)
            return added

        added = await self._write_in_one_hop(write)
        if added:
            self.content_changed.set()
        return added

    async def record_turns(
        self,
        agent_id: str,
        session_key: str,
        turns: Sequence[tuple[int, Turn]],
        *,
        started_at: float | None = None,
        queue_signals: bool = True,
    ) -> tuple[int, int]:
        """The write path's hot-path insert, one transaction: the agent and the session
        (created on first sight, `started_at` or the first turn's time), each
        (turn_index, turn) as its two verbatim messages and, with `queue_signals`, a pending
        signal for distillation. Turns already stored are skipped. A turn without a time is
        stamped now; one at NEXT_TURN takes the index after the session's last turn (the
        same turn sent again, the last one's). Returns (session_id, how many turns were
        new)."""
        require_agent(agent_id)
        now = time.time()
        stamped = [(i, t, t.at.timestamp() if t.at is not None else now) for i, t in turns]
        first = stamped[0][2] if stamped else now
        last = max((at for _, _, at in stamped), default=None)

        def write(db: sqlite3.Connection) -> tuple[int, int]:
            session_id = upsert_session(
                db, agent_id, session_key, first if started_at is None else started_at, last
            )
            if not stamped:
                return session_id, 0
            numbered = _numbered(db, agent_id, session_id, stamped)
            cursor = db.executemany(
                "INSERT OR IGNORE INTO transcript (agent_id, session_id, turn_index, role, "
                "content, at, restates_memory) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (agent_id, session_id, i, role, text, at, int(t.restates_memory))
                    for i, t, at in numbered
                    for role, text in (("user", t.user), ("assistant", t.assistant))
                ],
            )
            # A turn is its two messages, stored together or not at all.
            new_turns = cursor.rowcount // 2
            if queue_signals and new_turns:
                db.executemany(
                    "INSERT OR IGNORE INTO pending_signals (agent_id, session_id, "
                    "turn_index, user_text, assistant_text, at) VALUES (?, ?, ?, ?, ?, ?)",
                    [(agent_id, session_id, i, t.user, t.assistant, at) for i, t, at in numbered],
                )
            return session_id, new_turns

        session_id, new_turns = await self._write_in_one_hop(write)
        if new_turns:
            self.content_changed.set()
        return session_id, new_turns

    async def latest_messages(self, agent_id: str, limit: int) -> list[str]:
        """The texts of the agent's latest `limit` messages, newest first."""
        rows = await self._fetchall(
            "SELECT content FROM transcript WHERE agent_id = ? ORDER BY at DESC LIMIT ?",
            (require_agent(agent_id), limit),
        )
        return [r[0] for r in rows]

    async def session_transcript(self, agent_id: str, session_id: int) -> list[TranscriptMessage]:
        rows = await self._fetchall(
            "SELECT turn_index, role, content, at, retracted_at IS NOT NULL FROM transcript "
            "WHERE agent_id = ? AND session_id = ? "
            "ORDER BY turn_index, CASE role WHEN 'user' THEN 0 ELSE 1 END",
            (require_agent(agent_id), session_id),
        )
        return [TranscriptMessage(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows]

    # -- pending signals (the debounced write path's durable queue) -------------------------

    async def add_pending_signal(
        self,
        agent_id: str,
        session_id: int,
        turn_index: int,
        user_text: str,
        assistant_text: str,
        at: float | None = None,
    ) -> bool:
        """Queue one turn for distillation; False when that turn was already queued."""
        require_agent(agent_id)
        queued_at = time.time() if at is None else at

        def write(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                "INSERT OR IGNORE INTO pending_signals "
                "(agent_id, session_id, turn_index, user_text, assistant_text, at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (agent_id, session_id, turn_index, user_text, assistant_text, queued_at),
            )
            added = cursor.rowcount == 1
            touch_session(db, agent_id, session_id, queued_at)
            return added

        return await self._write_in_one_hop(write)

    async def pending_signals(self, agent_id: str, session_id: int) -> list[PendingSignal]:
        rows = await self._fetchall(
            f"SELECT {PENDING_SIGNAL_COLUMNS} FROM pending_signals "
            "WHERE agent_id = ? AND session_id = ? "
            "AND status = 'pending' ORDER BY turn_index",
            (require_agent(agent_id), session_id),
        )
        return [PendingSignal.from_row(r) for r in rows]

    async def sessions_with_pending_signals(self) -> list[tuple[str, int, float]]:
        """(agent_id, session_id, last signal time) of every session with work left, for the
        start-up re-arm; the only read that spans agents, and it returns only ids."""
        rows = await self._fetchall(
            "SELECT agent_id, session_id, MAX(at) FROM pending_signals "
            "WHERE status = 'pending' GROUP BY agent_id, session_id ORDER BY MAX(at)"
        )
        return [(r[0], r[1], r[2]) for r in rows]

    async def mark_signals_done(self, agent_id: str, signal_ids: Sequence[int]) -> None:
        await self._set_signal_status(agent_id, signal_ids, "done", None)

    async def dead_letter_signals(
        self, agent_id: str, signal_ids: Sequence[int], reason: str
    ) -> None:
        await self._set_signal_status(agent_id, signal_ids, "dead", reason)

    async def requeue_dead_signals(self, agent_id: str | None) -> dict[tuple[str, int], int]:
        """Dead-lettered turns (of one agent, or all) back to pending with their attempts
        reset; how many per (agent, session)."""
        if agent_id is not None:
            require_agent(agent_id)
        async with self._write() as db:
            cursor = await db.execute(
                "UPDATE pending_signals SET status = 'pending', attempts = 0 "
                "WHERE status = 'dead' AND (CAST(? AS TEXT) IS NULL OR agent_id = ?) "
                "RETURNING agent_id, session_id",
                (agent_id, agent_id),
            )
            rows = await cursor.fetchall()
        counts: dict[tuple[str, int], int] = {}
        for agent, session in rows:
            counts[(agent, session)] = counts.get((agent, session), 0) + 1
        return counts

    async def bump_signal_attempts(
        self, agent_id: str, signal_ids: Sequence[int], error: str
    ) -> int:
        """Record a failed attempt; returns the highest attempt count among the signals."""
        require_agent(agent_id)
        marks = _placeholders(signal_ids)
        async with self._write() as db:
            cursor = await db.execute(
                f"UPDATE pending_signals SET attempts = attempts + 1, last_error = ? "
                f"WHERE agent_id = ? AND id IN ({marks}) RETURNING attempts",
                (error, agent_id, *signal_ids),
            )
            return max((row[0] for row in await cursor.fetchall()), default=0)

    async def _set_signal_status(
        self, agent_id: str, signal_ids: Sequence[int], status: str, error: str | None
    ) -> None:
        require_agent(agent_id)
        await self._write_in_one_hop(
            lambda db: set_signal_status_rows(db, agent_id, signal_ids, status, error)
        )


def set_signal_status_rows(
    db: sqlite3.Connection,
    agent_id: str,
    signal_ids: Sequence[int],
    status: str,
    error: str | None,
) -> None:
    db.execute(
        f"UPDATE pending_signals SET status = ?, last_error = COALESCE(?, last_error) "
        f"WHERE agent_id = ? AND id IN ({_placeholders(signal_ids)})",
        (status, error, agent_id, *signal_ids),
    )


def _placeholders(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values)) or "NULL"


def _numbered(
    db: sqlite3.Connection, agent_id: str, session_id: int,
    turns: list[tuple[int, Turn, float]],
) -> list[tuple[int, Turn, float]]:
    """`turns` with NEXT_TURN replaced by the index after the session's last turn, read in
    the writing transaction so requests recorded at once still get one index each. A turn
    whose user message is the last one's again is that turn: a retried request is stored
    once."""
    if all(i != NEXT_TURN for i, _, _ in turns):
        return turns
    last = db.execute(
        "SELECT turn_index, content FROM transcript WHERE agent_id = ? AND session_id = ? "
        "AND role = 'user' ORDER BY turn_index DESC LIMIT 1", (agent_id, session_id),
    ).fetchone()
    following = 0 if last is None else int(last[0]) + 1
    numbered = []
    for i, turn, at in turns:
        if i == NEXT_TURN:
            if last is not None and turn.user == last[1]:
                i = int(last[0])
            else:
                i, following = following, following + 1
        numbered.append((i, turn, at))
    return numbered

"""Store SQL for long threads: each session's running summary of the turns compressed out of
its chat requests (context_budget_tokens; the compression itself is gate/threads/compressor.py).

One row per (agent, session key): the summary as it was sent, how many of the
conversation's messages (after its system prompt) it stands for, a digest of those
messages (a request whose history differs gets a new summary, never another's), and who
wrote it. The row is a cache for prompt caching, not memory: it is not searched, exported
or distilled, and it goes when its session or agent is forgotten (forget.py).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from mnemoproxy.memory.store.conversations.sessions import upsert_agent
from mnemoproxy.memory.store.db import Database, require_agent


@dataclass(frozen=True)
class ThreadSummary:
    """`covered` messages after the system prompt (`turns` turns, whose canonical JSON hashes
    to `digest`) summarised as `summary`, written by `author` (core_model, extractive or
    fallback: extractive because the core model could not)."""

    covered: int
    turns: int
    digest: str
    summary: str
    author: str


class ThreadQueries(Database):
    async def thread_summary(self, agent_id: str, session_key: str) -> ThreadSummary | None:
        row = await self._fetchone(
            "SELECT covered, turns, digest, summary, author FROM thread_summaries "
            "WHERE agent_id = ? AND session_key = ?",
            (require_agent(agent_id), session_key),
        )
        if row is None:
            return None
        return ThreadSummary(int(row[0]), int(row[1]), str(row[2]), str(row[3]), str(row[4]))

    async def save_thread_summary(
        self, agent_id: str, session_key: str, summary: ThreadSummary
    ) -> None:
        """Keep `summary` as the session's (replacing the one before). The agent is created
        if new, so that forgetting it always finds (and removes) the row."""
        require_agent(agent_id)
        now = time.time()

        def write(db: sqlite3.Connection) -> None:
            upsert_agent(db, agent_id, now)
            db.execute(
                "INSERT INTO thread_summaries (agent_id, session_key, covered, turns, digest, "
                "summary, author, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (agent_id, session_key) DO UPDATE SET covered = excluded.covered, "
                "turns = excluded.turns, digest = excluded.digest, summary = excluded.summary, "
                "author = excluded.author, updated_at = excluded.updated_at",
                (agent_id, session_key, summary.covered, summary.turns, summary.digest,
                 summary.summary, summary.author, now, now),
            )

        await self._write_in_one_hop(write)

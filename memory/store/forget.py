"""Store SQL for forgetting an agent completely.

Everything else in the store deletes softly (a row marked deleted stays for history);
forgetting is the one hard delete, and it leaves nothing behind: every row of the agent in
every table, its full-text entries (FTS5 keeps deleted tokens in old segments until they
are merged, so the indexes are optimised), and the pages that held its text (VACUUM
rewrites the file without free pages, and the WAL is checkpointed and truncated).
"""

from __future__ import annotations

from mnemoproxy.memory.store.db import Database, require_agent

# Per item table: its type name in the embedding tables, and its FTS mirror.
_ITEMS = (("transcript", "transcript"), ("facts", "fact"), ("episodes", "episode"))


class ForgetQueries(Database):
    async def forget_agent(self, agent_id: str) -> dict[str, int] | None:
        """Delete every trace of the agent; returns what was deleted (None: no such agent)."""
        require_agent(agent_id)
        async with self._write() as db:
            counts: dict[str, int] = {}
            for table in ("transcript", "facts", "episodes", "sessions"):
                cursor = await db.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE agent_id = ?", (agent_id,))
                row = await cursor.fetchone()
                counts[table] = int(row[0]) if row else 0
            cursor = await db.execute("SELECT 1 FROM agents WHERE id = ?", (agent_id,))
            if await cursor.fetchone() is None and not any(counts.values()):
                return None
            for table, item_type in _ITEMS:
                for side_table in ("embedding_queue", "embedding_failures"):
                    await db.execute(
                        f"DELETE FROM {side_table} WHERE item_type = ? AND item_id IN "
                        f"(SELECT id FROM {table} WHERE agent_id = ?)", (item_type, agent_id))
            # Items first (their triggers take the FTS entries and vectors along), then what
            # refers to the agent.
            for table in ("transcript", "pending_signals", "facts", "episodes", "entities",
                          "embeddings", "processing_log", "sessions", "agents"):
                column = "id" if table == "agents" else "agent_id"
                await db.execute(f"DELETE FROM {table} WHERE {column} = ?", (agent_id,))
            for table, _ in _ITEMS:
                await db.execute(f"INSERT INTO {table}_fts ({table}_fts) VALUES ('optimize')")
        async with self._write_lock:
            # Outside any transaction: the file rewritten without the freed pages, then the
            # WAL, which still holds the pages as they were, emptied.
            await self._writer.execute("VACUUM")
            await self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return {"messages": counts["transcript"], "facts": counts["facts"],
                "episodes": counts["episodes"], "sessions": counts["sessions"]}

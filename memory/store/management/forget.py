"""Store SQL for forgetting an agent, or one of its sessions, completely.

Everything else in the store deletes softly (a row marked deleted stays for history);
forgetting is the one hard delete, and it leaves nothing behind: every row of the agent (or
the session) in every table, its full-text entries, and the pages that held its text.

What a forget costs is what it deletes, never the whole database (any tenant may forget its
own agent, in a loop): SQLite's writer overwrites deleted content with zeros as it deletes
(secure_delete), a bounded number of the pages freed go back to the file system at once
(incremental vacuum), and the WAL, which still holds pages as they were, is checkpointed
and emptied. FTS5 keeps a deleted row's words in its index segments until they are merged:
`scrub` merges them (and frees the rest of the pages; PostgreSQL: VACUUMs the tables), and
memory runs it in the background shortly after a forget, at most once a minute
(memory/service.py).
"""

from __future__ import annotations

import asyncio

from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.postgres import search as pg_search

# Per item table: its type name in the embedding tables, and its FTS mirror.
_ITEMS = (("transcript", "transcript"), ("facts", "fact"), ("episodes", "episode"))
# Tables with an FTS mirror besides those: document chunks (no session owns them) and
# procedures (their source session's: forgetting it deletes them).
_OTHER_FTS = ("document_chunks", "procedures")
# Freed pages handed back to the file system by one forget (4 KiB each): the rest go at the
# next scrub.
RECLAIM_PAGES = 4096


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
            # Documents: the chunks' triggers take their FTS entries, vectors and queue
            # entries along.
            for table in ("document_chunks", "documents", "procedures"):
                await db.execute(f"DELETE FROM {table} WHERE agent_id = ?", (agent_id,))
            # Items first (their triggers take the FTS entries and vectors along), then what
            # refers to the agent.
            for table in ("transcript", "pending_signals", "facts", "episodes", "entities",
                          "embeddings", "processing_log", "thread_summaries", "sessions",
                          "agents"):
                column = "id" if table == "agents" else "agent_id"
                await db.execute(f"DELETE FROM {table} WHERE {column} = ?", (agent_id,))
        await self._reclaim(RECLAIM_PAGES)
        return {"messages": counts["transcript"], "facts": counts["facts"],
                "episodes": counts["episodes"], "sessions": counts["sessions"]}

    async def forget_session(self, agent_id: str, session_id: int) -> dict[str, int] | None:
        """Delete a session for good: its messages, its pending turns, its episodes and the
        facts only it stated (a fact other sessions stated too stays, its source unset).
        Returns what was deleted (None: the agent has no such session)."""
        require_agent(agent_id)
        async with self._write() as db:
            cursor = await db.execute(
                "SELECT 1 FROM sessions WHERE agent_id = ? AND id = ?", (agent_id, session_id))
            if await cursor.fetchone() is None:
                return None
            owned = {
                "transcript": "session_id = ?",
                "facts": "source_session_id = ? AND source_count <= 1",
                "episodes": "session_id = ?",
            }
            # Names of the agent's entities said in this session: once the session is gone,
            # those said nowhere else go too.
            cursor = await db.execute(
                "SELECT lower(group_concat(content, ' ')) FROM transcript WHERE agent_id = ? "
                "AND session_id = ?", (agent_id, session_id))
            said = ((await cursor.fetchone()) or [""])[0] or ""
            cursor = await db.execute("SELECT name FROM entities WHERE agent_id = ?", (agent_id,))
            named = [row[0] for row in await cursor.fetchall() if row[0].lower() in said]
            # A value replaced by one going away is replaced by what replaced that one, or,
            # when that one was current, is current again ("I moved to Paris" forgotten:
            # "lives in Berlin" is what memory knows).
            await db.execute(
                "UPDATE facts SET superseded_by = gone.superseded_by, valid_to = CASE WHEN "
                "gone.superseded_by IS NULL AND gone.valid_to IS NULL THEN NULL ELSE "
                "facts.valid_to END FROM (SELECT id, superseded_by, valid_to FROM facts "
                f"WHERE agent_id = ? AND {owned['facts']}) AS gone "
                "WHERE facts.agent_id = ? AND facts.superseded_by = gone.id",
                (agent_id, session_id, agent_id))
            counts: dict[str, int] = {}
            for table, item_type in _ITEMS:
                where = owned[table]
                for side_table in ("embedding_queue", "embedding_failures"):
                    await db.execute(
                        f"DELETE FROM {side_table} WHERE item_type = ? AND item_id IN "
                        f"(SELECT id FROM {table} WHERE agent_id = ? AND {where})",
                        (item_type, agent_id, session_id))
                cursor = await db.execute(
                    f"DELETE FROM {table} WHERE agent_id = ? AND {where}", (agent_id, session_id))
                counts[table] = max(cursor.rowcount, 0)
            await db.execute("UPDATE facts SET source_session_id = NULL WHERE agent_id = ? "
                             "AND source_session_id = ?", (agent_id, session_id))
            # The procedures it taught (or last restated).
            await db.execute("DELETE FROM procedures WHERE agent_id = ? "
                             "AND source_session_id = ?", (agent_id, session_id))
            token = "g" + agent_id.encode("utf-8").hex()  # retrieval.agent_token
            for name in named:
                if self.dialect == "postgres":
                    cursor = await db.execute(pg_search.MENTIONED, (agent_id, name))
                else:
                    phrase = '"' + name.replace('"', '""') + '"'
                    cursor = await db.execute(
                        "SELECT 1 FROM transcript_fts WHERE transcript_fts MATCH ? LIMIT 1",
                        (f'agent : "{token}" AND {phrase}',))
                if await cursor.fetchone() is None:
                    await db.execute("DELETE FROM entities WHERE agent_id = ? AND name = ?",
                                     (agent_id, name))
            # The running summary of its long thread (keyed by the session's key).
            await db.execute(
                "DELETE FROM thread_summaries WHERE agent_id = ? AND session_key = "
                "(SELECT session_key FROM sessions WHERE agent_id = ? AND id = ?)",
                (agent_id, agent_id, session_id))
            for table in ("pending_signals", "processing_log", "sessions"):
                column = "id" if table == "sessions" else "session_id"
                await db.execute(f"DELETE FROM {table} WHERE agent_id = ? AND {column} = ?",
                                 (agent_id, session_id))
        await self._reclaim(RECLAIM_PAGES)
        return {"messages": counts["transcript"], "facts": counts["facts"],
                "episodes": counts["episodes"]}

    async def scrub(self) -> None:
        """Leave no deleted text anywhere, after forgets: the full-text indexes merged (FTS5
        keeps deleted words in old segments until then), every free page handed back, the
        WAL emptied. On PostgreSQL, the tables the text was in are vacuumed: their dead
        rows' space is freed for reuse (the server overwrites it in time; its own WAL and
        backups are the operator's). Costs about the size of the indexes: run in the
        background, not by each forget."""
        if self.dialect == "postgres":
            async with self._write_lock:
                for table in (*(table for table, _ in _ITEMS), *_OTHER_FTS, "sessions",
                              "pending_signals", "thread_summaries", "embeddings"):
                    await self._writer.execute(f"VACUUM {table}")
            return
        async with self._write() as db:
            for table in (*(table for table, _ in _ITEMS), *_OTHER_FTS):
                await db.execute(f"INSERT INTO {table}_fts ({table}_fts) VALUES ('optimize')")
        await self._reclaim(None)

    async def _reclaim(self, pages: int | None) -> None:
        """SQLite: hand up to `pages` free pages (None: all) back to the file system, and
        empty the WAL, which still holds the pages as they were before the delete."""
        if self.dialect == "postgres":
            return
        pragma = "PRAGMA incremental_vacuum" + ("" if pages is None else f"({int(pages)})")
        async with self._write_lock:
            # As a script: a statement stepped once (sqlite3's execute) frees one page.
            await self._writer.run(lambda conn: conn.executescript(pragma + ";"))
            for _ in range(50):  # a reader on an older snapshot keeps the WAL: wait for it
                cursor = await self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                busy = await cursor.fetchone()
                if busy is None or not busy[0]:
                    break
                await asyncio.sleep(0.02)

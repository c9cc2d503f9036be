"""Store SQL for retracting what a fact's turns said: a fact deleted or edited by hand takes
the transcript lines it was drawn from out of what is served as memory.

The lines stay in the transcript (search, the inspector and exports still show them, marked
retracted); reads that build a block leave them out (memory/store/knowledge/retrieval.py
gives each message its `retracted` mark). Forgetting the session removes them for good.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from mnemoproxy.memory.store.db import Database, require_agent


class RetractQueries(Database):
    async def fact_source_lines(self, agent_id: str, fact_id: int) -> list[tuple[int, str]]:
        """(id, text) of the messages of the turns the fact was said in (fact_sources)."""
        require_agent(agent_id)

        def read(conn: sqlite3.Connection) -> list[tuple[int, str]]:
            return [(int(row[0]), str(row[1])) for row in conn.execute(
                "SELECT t.id, t.content FROM fact_sources s JOIN transcript t "
                "ON t.agent_id = s.agent_id AND t.session_id = s.session_id "
                "AND t.turn_index = s.turn_index WHERE s.agent_id = ? AND s.fact_id = ? "
                "ORDER BY t.session_id, t.turn_index, t.role DESC", (agent_id, fact_id))]

        return await self._read(read)

    async def session_lines(self, agent_id: str, session_id: int) -> list[tuple[int, str]]:
        """(id, text) of every message of one of the agent's sessions, in order."""
        require_agent(agent_id)

        def read(conn: sqlite3.Connection) -> list[tuple[int, str]]:
            return [(int(row[0]), str(row[1])) for row in conn.execute(
                "SELECT id, content FROM transcript WHERE agent_id = ? AND session_id = ? "
                "ORDER BY turn_index, role DESC", (agent_id, session_id))]

        return await self._read(read)

    async def retract_lines(self, agent_id: str, message_ids: Sequence[int]) -> int:
        """Mark these messages of the agent retracted; returns how many were not yet."""
        require_agent(agent_id)
        if not message_ids:
            return 0
        now = time.time()

        def write(db: Any) -> int:
            cursor = db.execute(
                "UPDATE transcript SET retracted_at = ? WHERE agent_id = ? "
                f"AND retracted_at IS NULL AND id IN ({', '.join('?' * len(message_ids))})",
                (now, agent_id, *message_ids))
            return int(cursor.rowcount)

        retracted = int(await self._write_in_one_hop(write))
        if retracted:
            self.content_changed.set()
        return retracted

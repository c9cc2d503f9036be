"""Store SQL for procedures: named ways of doing something a session taught (migration
m012). One row per agent and name (compared case- and space-insensitively): a procedure
stated again under the same name replaces the steps and when it applies in place, and
becomes the later session's. Searched by BM25 over name, when it applies and steps (the
FTS rows are kept by triggers); deleting one is for good.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass

from mnemoproxy.memory.models import ProcedureDraft
from mnemoproxy.memory.search.query_terms import quoted
from mnemoproxy.memory.store.conversations.sessions import upsert_agent
from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.postgres import search as pg_search
from mnemoproxy.memory.text.words import STOP_WORDS, WORD

# Words of a how-to question that say nothing of what it is about.
_QUESTION_WORDS = frozenset({"how", "do", "does", "can", "should", "would", "steps", "step",
                             "way", "process", "procedure", "again", "what", "are", "the"})
MAX_QUERY_TERMS = 16


@dataclass(frozen=True)
class StoredProcedure:
    id: int
    name: str
    applies_when: str
    steps: list[str]
    source_session_id: int | None
    created_at: float
    updated_at: float

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> StoredProcedure:
        return cls(row["id"], row["name"], row["applies_when"], json.loads(row["steps_json"]),
                   row["source_session_id"], row["created_at"], row["updated_at"])


def name_key(name: str) -> str:
    return " ".join(name.casefold().split())


def upsert_procedure_row(
    db: sqlite3.Connection, agent_id: str, draft: ProcedureDraft,
    session_id: int | None, at: float,
) -> int:
    """Store `draft`, replacing the agent's procedure of the same name; returns its id."""
    cursor = db.execute(
        "INSERT INTO procedures (agent_id, name, name_key, applies_when, steps_json, "
        "source_session_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (agent_id, name_key) DO UPDATE SET name = excluded.name, "
        "applies_when = excluded.applies_when, steps_json = excluded.steps_json, "
        "source_session_id = excluded.source_session_id, updated_at = excluded.updated_at "
        "RETURNING id",
        (agent_id, draft.name, name_key(draft.name), draft.applies_when,
         json.dumps(draft.steps, ensure_ascii=False), session_id, at, at),
    )
    row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def procedure_words(query: str) -> list[str]:
    """The content words of a question a procedure is searched by."""
    words = [w for w in WORD.findall(query.lower())
             if w not in STOP_WORDS and w not in _QUESTION_WORDS]
    return list(dict.fromkeys(words))[:MAX_QUERY_TERMS]


class ProcedureQueries(Database):
    async def add_procedure(
        self, agent_id: str, draft: ProcedureDraft, *, session_id: int | None = None,
        at: float | None = None,
    ) -> int:
        """Store a procedure (the agent is created when new), replacing one of the same
        name; returns its id."""
        require_agent(agent_id)
        stored_at = time.time() if at is None else at

        def write(db: sqlite3.Connection) -> int:
            upsert_agent(db, agent_id, stored_at)
            return upsert_procedure_row(db, agent_id, draft, session_id, stored_at)

        return await self._write_in_one_hop(write)

    async def update_procedure(
        self, agent_id: str, procedure_id: int, draft: ProcedureDraft
    ) -> bool | None:
        """Set a procedure's name, steps and when it applies; None: no such procedure;
        False: another procedure of the agent already has that name."""
        require_agent(agent_id)
        async with self._write() as db:
            try:
                cursor = await db.execute(
                    "UPDATE procedures SET name = ?, name_key = ?, applies_when = ?, "
                    "steps_json = ?, updated_at = ? WHERE agent_id = ? AND id = ?",
                    (draft.name, name_key(draft.name), draft.applies_when,
                     json.dumps(draft.steps, ensure_ascii=False), time.time(), agent_id,
                     procedure_id),
                )
            except sqlite3.IntegrityError:
                return False
            return True if cursor.rowcount > 0 else None

    async def procedure(self, agent_id: str, procedure_id: int) -> StoredProcedure | None:
        row = await self._fetchone(
            "SELECT * FROM procedures WHERE agent_id = ? AND id = ?",
            (require_agent(agent_id), procedure_id))
        return StoredProcedure.from_row(row) if row is not None else None

    async def procedures_page(
        self, agent_id: str, *, limit: int, after_id: int = 0
    ) -> list[StoredProcedure]:
        rows = await self._fetchall(
            "SELECT * FROM procedures WHERE agent_id = ? AND id > ? ORDER BY id LIMIT ?",
            (require_agent(agent_id), after_id, limit))
        return [StoredProcedure.from_row(row) for row in rows]

    async def delete_procedure(self, agent_id: str, procedure_id: int) -> bool:
        require_agent(agent_id)
        async with self._write() as db:
            cursor = await db.execute(
                "DELETE FROM procedures WHERE agent_id = ? AND id = ?", (agent_id, procedure_id))
            return cursor.rowcount > 0

    async def search_procedures(
        self, agent_id: str, query: str, *, limit: int = 3
    ) -> list[StoredProcedure]:
        """The agent's procedures sharing words with `query`, best BM25 first (the name
        weighs most, then when it applies, then the steps)."""
        words = procedure_words(query)
        if not words:
            return []
        if self.dialect == "postgres":
            rows = await self._fetchall(
                f"SELECT * FROM procedures WHERE agent_id = ? "
                f"AND fts @@ {pg_search.any_term(len(words))} "
                f"ORDER BY ts_rank_cd(fts, {pg_search.any_term(len(words))}) DESC, id LIMIT ?",
                (require_agent(agent_id), *words, *words, limit))
            return [StoredProcedure.from_row(row) for row in rows]
        match = " OR ".join(quoted(w) for w in words)
        token = quoted("g" + require_agent(agent_id).encode("utf-8").hex())
        rows = await self._fetchall(
            "SELECT p.* FROM procedures_fts JOIN procedures p ON p.id = procedures_fts.rowid "
            "WHERE procedures_fts MATCH ? AND p.agent_id = ? "
            "ORDER BY bm25(procedures_fts, 4.0, 2.0, 1.0, 0.0) LIMIT ?",
            (f"agent : {token} AND ({match})", agent_id, limit))
        return [StoredProcedure.from_row(row) for row in rows]


def upsert_procedure_rows(
    db: sqlite3.Connection, agent_id: str, drafts: Sequence[ProcedureDraft],
    session_id: int | None, at: float,
) -> int:
    for draft in drafts:
        upsert_procedure_row(db, agent_id, draft, session_id, at)
    return len(drafts)

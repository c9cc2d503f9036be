"""Store SQL for retrieval: BM25 candidates, fetching search hits, and embedding rows.

BM25 statistics (IDF, average length) come from the whole FTS table, i.e. all agents;
only the rows returned are restricted to one agent. That shared statistic leaks no
content and keeps one FTS table per item type instead of one per agent.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mnemoproxy.memory.models import Kind
from mnemoproxy.memory.search.query_terms import MATCH_BUDGET, affordable_terms, quoted
from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.postgres import search as pg_search
from mnemoproxy.memory.store.records import ITEM_TYPES, ItemType


@dataclass(frozen=True)
class ItemText:
    """What the embedding worker needs of an item lacking a vector."""

    item_type: ItemType
    item_id: int
    agent_id: str
    text: str


@dataclass(frozen=True)
class StoredItem:
    """A searchable item as fetched for a result: its text, time and where it came from."""

    kind: Kind
    item_type: ItemType
    item_id: int
    text: str
    at: float | None
    provenance: dict[str, Any] = field(default_factory=dict)


# Per item type: the FTS table, the base table, the time column for `days`, and the
# condition that makes a row visible to reads (current facts, live episodes).
_FTS = {
    "fact": ("facts_fts", "facts", "updated_at", "valid_to IS NULL AND deleted_at IS NULL"),
    "episode": ("episodes_fts", "episodes", "COALESCE(ended_at, created_at)",
                "deleted_at IS NULL"),
    "transcript": ("transcript_fts", "transcript", "at", "TRUE"),
    "document": ("document_chunks_fts", "document_chunks", "created_at", "TRUE"),
}
# An agent holding at least this share of a table's rows is never crowded out in it: its
# neighbours can at most double a count. Shares are counted again after SHARE_SECONDS.
MAJORITY = 0.5
SHARE_SECONDS = 60.0
# BM25 column weights: the text columns count, the agent column (a filter) never does.
_WEIGHTS = {"fact": "1.0, 0.0", "episode": "1.0, 1.0, 1.0, 0.0", "transcript": "1.0, 0.0",
            "document": "1.0, 1.0, 1.0, 0.0"}


def agent_token(agent_id: str) -> str:
    """The token every FTS row of the agent holds in its `agent` column (migration m007):
    its id's UTF-8 bytes in hex, so any id is one plain token, and no two ids share one."""
    return "g" + agent_id.encode("utf-8").hex()


_EMBED_SOURCES = {
    "fact": "SELECT id, agent_id, content FROM facts b WHERE valid_to IS NULL "
            "AND deleted_at IS NULL",
    "episode": "SELECT id, agent_id, summary, topics_json, entities_json FROM episodes b "
               "WHERE deleted_at IS NULL",
    # A message is embedded with the one before it in its session: a reply ("yes, twice!")
    # means little alone.
    # `turn_index <= ?` lets the lookup seek the session's index backwards and stop at
    # once; without it, it walked the session from its start (quadratic in its length).
    # Within a turn 'assistant' sorts before 'user', i.e. the later message first.
    "transcript": "SELECT id, agent_id, content, at, (SELECT p.content FROM transcript p "
                  "WHERE p.agent_id = b.agent_id AND p.session_id = b.session_id "
                  "AND p.turn_index <= b.turn_index AND (p.turn_index < b.turn_index "
                  "OR (p.role = 'user' AND b.role = 'assistant')) "
                  "ORDER BY p.turn_index DESC, p.role LIMIT 1) "
                  "FROM transcript b WHERE TRUE",
    # A chunk is embedded under its document's title and heading path: "Refunds" says what
    # "within 30 days of delivery" is about.
    "document": "SELECT id, agent_id, content, title, heading FROM document_chunks b WHERE TRUE",
}


class RetrievalQueries(Database):
    async def bm25_candidates(
        self,
        agent_id: str,
        terms: Sequence[str],
        item_types: Sequence[ItemType] = ITEM_TYPES,
        *,
        since: float | None = None,
        limit: int = 50,
        match_budget: int = MATCH_BUDGET,
    ) -> list[tuple[ItemType, int, float]]:
        """(item_type, item_id, bm25 score; higher is better): for each item type, the best
        `limit` of the agent's visible items matching any of `terms`.

        BM25 scores every document that matches (FTS5 cannot stop early), so the work
        per type is bounded: only the rarest terms, each matching at most `match_budget`
        documents (see `affordable_terms`); when every term matches more, the documents
        holding all of them, or else only the latest `match_budget` matches. Everything
        runs in one hop to the reader thread, on one snapshot."""
        require_agent(agent_id)
        if not terms:
            return []

        def read(conn: sqlite3.Connection) -> list[tuple[ItemType, int, float]]:
            hits: list[tuple[ItemType, int, float]] = []
            for item_type in item_types:
                if self.dialect == "postgres":
                    _, table, time_column, visible = _FTS[item_type]
                    own, _ = self._agent_rows(conn, agent_id, item_type)
                    hits += [(item_type, item_id, score) for item_id, score in pg_search.ranking(
                        conn, table=table, agent_id=agent_id, terms=terms, visible=visible,
                        time_column=time_column, since=since, limit=limit,
                        match_budget=match_budget, agent_rows=own)]
                    continue
                own, every = self._agent_rows(conn, agent_id, item_type)
                crowded = (own / every if every else 1.0) < MAJORITY
                hits += _bm25_ranking(
                    conn, agent_id, item_type, terms, since, limit, match_budget, crowded
                )
            return hits

        return await self._read(read)

    async def term_counts(
        self, agent_id: str, terms: Sequence[str], cap: int
    ) -> tuple[dict[str, int], int]:
        """How many of the agent's searchable items (messages, facts, episodes, document
        chunks) hold each of `terms`, counted no further than `cap` per item type, and how
        many items the agent has: how rare each word is in this agent's memory."""
        require_agent(agent_id)
        if not terms:
            return {}, 0

        def read(conn: sqlite3.Connection) -> tuple[dict[str, int], int]:
            counts = dict.fromkeys(terms, 0)
            items = 0
            for item_type in ITEM_TYPES:
                fts, table, _, _ = _FTS[item_type]
                own, _ = self._agent_rows(conn, agent_id, item_type)
                if not own:
                    continue
                items += own
                if self.dialect == "postgres":
                    found = pg_search.capped_counts(conn, table, agent_id, terms, cap)
                else:
                    mine = f'agent : "{agent_token(agent_id)}" AND '
                    found = _capped_counts(conn, fts, [mine + quoted(t) for t in terms], cap)
                for term, count in zip(terms, found, strict=True):
                    counts[term] += count
            return counts, items

        return await self._read(read)

    def _agent_rows(
        self, conn: sqlite3.Connection, agent_id: str, item_type: ItemType
    ) -> tuple[int, int]:
        """(the agent's rows of `item_type`, all agents' rows), counted at most every
        SHARE_SECONDS per agent (on the reader's thread, the only one that calls this)."""
        counts = self._agent_rows_counted
        now = time.monotonic()
        known = counts.get((agent_id, item_type))
        if known is not None and now - known[1] < SHARE_SECONDS:
            return known[0]
        table = _FTS[item_type][1]
        own, every = conn.execute(
            f"SELECT (SELECT COUNT(*) FROM {table} WHERE agent_id = ?), "
            f"(SELECT COUNT(*) FROM {table})", (agent_id,)).fetchone()
        counts[(agent_id, item_type)] = ((int(own), int(every)), now)
        return int(own), int(every)

    async def fetch_items(
        self,
        agent_id: str,
        keys: Sequence[tuple[ItemType, int]],
        *,
        since: float | None = None,
    ) -> dict[tuple[ItemType, int], StoredItem]:
        """The visible items among `keys` (others silently dropped: another agent's,
        superseded, deleted, or outside the time window)."""
        require_agent(agent_id)

        def read(conn: sqlite3.Connection) -> dict[tuple[ItemType, int], StoredItem]:
            found: dict[tuple[ItemType, int], StoredItem] = {}
            for item_type in ITEM_TYPES:
                ids = [item_id for kind, item_id in keys if kind == item_type]
                if not ids:
                    continue
                _, table, time_column, visible = _FTS[item_type]
                sql = (
                    # `+agent_id` keeps SQLite on the primary key for the id list; with a
                    # plain `agent_id = ?` it walks the agent's whole time index.
                    f"SELECT *, {time_column} AS item_time FROM {table} WHERE +agent_id = ? "
                    f"AND {visible} AND id IN ({', '.join('?' * len(ids))})"
                )
                params: list[Any] = [agent_id, *ids]
                if since is not None:
                    sql += f" AND {time_column} >= ?"
                    params.append(since)
                for row in conn.execute(sql, params):
                    item = _stored_item(item_type, row)
                    found[(item_type, item.item_id)] = item
            return found

        return await self._read(read)

    async def adjacent_messages(
        self, agent_id: str, ids: Sequence[int], *, since: float | None = None
    ) -> dict[int, list[StoredItem]]:
        """For the agent's transcript messages among `ids`, the messages said just before
        and just after each in its session (one at a session's ends; a message alone in
        its session, or another agent's, is left out)."""
        require_agent(agent_id)
        if not ids:
            return {}

        def read(conn: sqlite3.Connection) -> dict[int, list[StoredItem]]:
            # A message's neighbours lie within one turn of it (the unique key's index).
            sql = (
                "SELECT n.*, c.id AS of_id, c.turn_index AS of_turn, c.role AS of_role "
                "FROM transcript c JOIN transcript n ON n.agent_id = c.agent_id "
                "AND n.session_id = c.session_id "
                "AND n.turn_index BETWEEN c.turn_index - 1 AND c.turn_index + 1 "
                f"WHERE c.id IN ({', '.join('?' * len(ids))}) AND +c.agent_id = ? "
                "AND n.id != c.id"
            )
            params: list[Any] = [*ids, agent_id]
            if since is not None:
                sql += " AND n.at >= ?"
                params.append(since)
            # Within a turn the user speaks first.
            before: dict[int, tuple[tuple[int, bool], StoredItem]] = {}
            after: dict[int, tuple[tuple[int, bool], StoredItem]] = {}
            for row in conn.execute(sql, params):
                me = (row["of_turn"], row["of_role"] != "user")
                order = (row["turn_index"], row["role"] != "user")
                item = _stored_item("transcript", row)
                source = row["of_id"]
                if order < me and (source not in before or order > before[source][0]):
                    before[source] = (order, item)
                elif order > me and (source not in after or order < after[source][0]):
                    after[source] = (order, item)
            return {
                source: [side[source][1] for side in (before, after) if source in side]
                for source in dict.fromkeys([*before, *after])
            }

        return await self._read(read)

    async def facts_drawn_from(self, agent_id: str, message_ids: Sequence[int]) -> list[int]:
        """The agent's current pinned facts drawn from the turns of these messages."""
        require_agent(agent_id)
        if not message_ids:
            return []

        def read(conn: sqlite3.Connection) -> list[int]:
            return [row[0] for row in conn.execute(
                "SELECT DISTINCT s.fact_id FROM transcript t JOIN fact_sources s "
                "ON s.session_id = t.session_id AND s.turn_index = t.turn_index "
                "JOIN facts f ON f.id = s.fact_id "
                f"WHERE t.id IN ({', '.join('?' * len(message_ids))}) AND t.agent_id = ? "
                f"AND f.kind = 'pinned' AND {_FTS['fact'][3]} ORDER BY s.fact_id",
                (*message_ids, agent_id),
            )]

        return await self._read(read)

    async def fact_source_messages(
        self, agent_id: str, fact_ids: Sequence[int], *, since: float | None = None
    ) -> dict[int, list[StoredItem]]:
        """For the agent's facts among `fact_ids`, the transcript messages of the turns
        they were said in (both sides of each turn), in the order they were said."""
        require_agent(agent_id)
        if not fact_ids:
            return {}

        def read(conn: sqlite3.Connection) -> dict[int, list[StoredItem]]:
            sql = (
                "SELECT t.*, s.fact_id AS of_fact FROM fact_sources s JOIN transcript t "
                "ON t.agent_id = s.agent_id AND t.session_id = s.session_id "
                "AND t.turn_index = s.turn_index "
                f"WHERE s.fact_id IN ({', '.join('?' * len(fact_ids))}) AND s.agent_id = ?"
            )
            params: list[Any] = [*fact_ids, agent_id]
            if since is not None:
                sql += " AND t.at >= ?"
                params.append(since)
            sql += " ORDER BY t.session_id, t.turn_index, t.role DESC"  # user before assistant
            found: dict[int, list[StoredItem]] = {}
            for row in conn.execute(sql, params):
                found.setdefault(row["of_fact"], []).append(_stored_item("transcript", row))
            return found

        return await self._read(read)

    # -- embeddings ---------------------------------------------------------------------

    async def queued_for_vectors(
        self, item_type: ItemType, *, limit: int = 256
    ) -> tuple[list[int], list[ItemText]]:
        """The next `limit` queued ids of one type, and the texts of those still visible
        (a superseded fact or a deleted item needs no vector: it is only dequeued)."""

        def read(conn: sqlite3.Connection) -> tuple[list[int], list[ItemText]]:
            ids = [row[0] for row in conn.execute(
                "SELECT item_id FROM embedding_queue WHERE item_type = ? "
                "ORDER BY item_id LIMIT ?", (item_type, limit),
            )]
            if not ids:
                return [], []
            rows = conn.execute(
                f"{_EMBED_SOURCES[item_type]} AND b.id IN ({', '.join('?' * len(ids))}) "
                "ORDER BY b.id", ids,
            ).fetchall()
            return ids, [
                ItemText(item_type, r[0], r[1], _embedding_text(item_type, r)) for r in rows
            ]

        return await self._read(read)

    async def queue_missing_vectors(self, model: str) -> int:
        """Queue every visible item with no vector for `model` (after a change of embedder,
        or a crash between a vector's computation and its storage). One pass over the
        items: run when the embedding worker starts, not per batch."""
        queued = 0
        async with self._write() as db:
            for item_type in ITEM_TYPES:
                _, table, _, visible = _FTS[item_type]
                cursor = await db.execute(
                    f"INSERT OR IGNORE INTO embedding_queue SELECT ?, b.id FROM {table} b "
                    f"WHERE {visible} AND NOT EXISTS (SELECT 1 FROM embeddings e "
                    "WHERE e.item_type = ? AND e.item_id = b.id AND e.model = ?) "
                    "AND NOT EXISTS (SELECT 1 FROM embedding_failures f "
                    "WHERE f.item_type = ? AND f.item_id = b.id AND f.model = ?)",
                    (item_type, item_type, model, item_type, model),
                )
                queued += max(cursor.rowcount, 0)
        return queued

    async def save_embeddings(
        self,
        model: str,
        rows: Sequence[tuple[ItemType, int, str, str, bytes]],
        *,
        dequeue: Sequence[tuple[ItemType, int]] = (),
    ) -> None:
        """Store (item_type, item_id, agent_id, content_hash, float32 LE blob) rows and take
        `dequeue` off the embedding queue, in one transaction."""

        def write(db: sqlite3.Connection) -> None:
            db.executemany(
                "INSERT OR REPLACE INTO embeddings "
                "(item_type, item_id, agent_id, model, content_hash, vector) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(t, i, a, model, h, v) for t, i, a, h, v in rows],
            )
            db.executemany(
                "DELETE FROM embedding_queue WHERE item_type = ? AND item_id = ?", dequeue
            )
            # A re-worded item that was set aside and now embeds is no longer a failure.
            db.executemany(
                "DELETE FROM embedding_failures WHERE item_type = ? AND item_id = ? "
                "AND model = ?",
                [(t, i, model) for t, i, _, _, _ in rows],
            )

        await self._write_in_one_hop(write)

    async def set_aside_embedding(
        self, model: str, item_type: ItemType, item_id: int, reason: str
    ) -> None:
        """Take an item the embedder fails on off the queue for good (for this model and
        this text: a change of its text queues it again); full-text search still finds it."""
        async with self._write() as db:
            await db.execute(
                "INSERT OR REPLACE INTO embedding_failures (item_type, item_id, model, "
                "reason, at) VALUES (?, ?, ?, ?, ?)",
                (item_type, item_id, model, reason[:500], time.time()),
            )
            await db.execute(
                "DELETE FROM embedding_queue WHERE item_type = ? AND item_id = ?",
                (item_type, item_id),
            )

    async def embedding_count(self, agent_id: str, model: str) -> int:
        count = await self._scalar(
            "SELECT COUNT(*) FROM embeddings WHERE agent_id = ? AND model = ?",
            (require_agent(agent_id), model),
        )
        return int(count or 0)

    async def embedding_matrix(
        self, agent_id: str, model: str, item_types: Sequence[ItemType]
    ) -> tuple[list[tuple[ItemType, int]], np.ndarray]:
        """The keys and vectors (one row each) of the agent's `model` embeddings of
        `item_types`, read as plain tuples and joined into one matrix in one hop."""
        require_agent(agent_id)

        def read(conn: sqlite3.Connection) -> tuple[list[tuple[ItemType, int]], np.ndarray]:
            cursor = conn.cursor()
            cursor.row_factory = None
            rows = cursor.execute(
                "SELECT item_type, item_id, vector FROM embeddings WHERE agent_id = ? "
                f"AND model = ? AND item_type IN ({', '.join('?' * len(item_types))})",
                (agent_id, model, *item_types),
            ).fetchall()
            if not rows:
                return [], np.zeros((0, 0), dtype="<f4")
            matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype="<f4")
            return [(row[0], row[1]) for row in rows], matrix.reshape(len(rows), -1)

        return await self._read(read)

    async def embedding_rows(
        self, agent_id: str, model: str, keys: Sequence[tuple[ItemType, int]]
    ) -> list[tuple[ItemType, int, np.ndarray]]:
        """(item_type, item_id, vector) of the agent's `model` embeddings among `keys`."""
        require_agent(agent_id)

        def read(conn: sqlite3.Connection) -> list[tuple[ItemType, int, np.ndarray]]:
            found: list[tuple[ItemType, int, np.ndarray]] = []
            for item_type in ITEM_TYPES:
                ids = [item_id for kind, item_id in keys if kind == item_type]
                if ids:
                    # Unary + keeps the planner on the primary key, not the agent index.
                    found += [
                        (item_type, row[0], np.frombuffer(row[1], dtype="<f4"))
                        for row in conn.execute(
                            "SELECT item_id, vector FROM embeddings WHERE item_type = ? "
                            "AND model = ? AND +agent_id = ? "
                            f"AND item_id IN ({', '.join('?' * len(ids))})",
                            (item_type, model, agent_id, *ids),
                        )
                    ]
            return found

        return await self._read(read)


def _embedding_text(item_type: ItemType, row: Any) -> str:
    if item_type == "transcript":
        # The date lets "when did ..." questions meet the message.
        day = datetime.fromtimestamp(row[3], UTC).strftime("%d %B %Y")
        return f"{day}: {row[4]}\n{row[2]}" if row[4] else f"{day}: {row[2]}"
    if item_type == "fact":
        return str(row[2])
    if item_type == "document":
        return f"{chunk_label(row[3], row[4])}\n{row[2]}"
    # An episode is found by its summary and also by what it was about.
    labels = [*json.loads(row[3]), *json.loads(row[4])]
    return row[2] if not labels else f"{row[2]} ({', '.join(map(str, labels))})"


def chunk_label(title: str, heading: str) -> str:
    """Where a document chunk sits: its document's title and its heading path."""
    return f"{title} › {heading}" if heading else title


def _stored_item(item_type: ItemType, row: Any) -> StoredItem:
    if item_type == "transcript":
        return StoredItem(
            "transcript", item_type, row["id"], row["content"], row["at"],
            {"session_id": row["session_id"], "turn_index": row["turn_index"],
             "role": row["role"], "restates_memory": bool(row["restates_memory"]),
             "retracted": row["retracted_at"] is not None},
        )
    if item_type == "document":
        return StoredItem(
            "document", item_type, row["id"], row["content"], row["created_at"],
            {"document_id": row["document_id"], "title": row["title"],
             "heading": row["heading"], "position": row["position"], "page": row["page"]},
        )
    if item_type == "fact":
        return StoredItem(
            row["kind"], item_type, row["id"], row["content"], row["updated_at"],
            {"kind": row["kind"], "slot": row["slot"], "session_id": row["source_session_id"],
             "created_at": row["created_at"], "source_count": row["source_count"],
             "salience": row["salience"], "tags": json.loads(row["tags_json"])},
        )
    return StoredItem(
        "episode", item_type, row["id"], row["summary"], row["item_time"],
        {"session_id": row["session_id"], "created_at": row["created_at"],
         "started_at": row["started_at"], "ended_at": row["ended_at"],
         "topics": json.loads(row["topics_json"]), "salience": row["salience"]},
    )


def _bm25_ranking(
    conn: sqlite3.Connection,
    agent_id: str,
    item_type: ItemType,
    terms: Sequence[str],
    since: float | None,
    limit: int,
    match_budget: int,
    among_others: bool = True,
) -> list[tuple[ItemType, int, float]]:
    fts, table, time_column, visible = _FTS[item_type]
    # A term is counted among all agents' documents first (cheapest); one found in more
    # than the budget is counted again among the agent's own (its token in the agent
    # column), so that a neighbour's common words never crowd out this agent's. An agent
    # holding most of the rows (`among_others` False) is spared that second count.
    own = f'agent : "{agent_token(agent_id)}" AND '
    everyone = _capped_counts(conn, fts, [quoted(term) for term in terms], match_budget + 1)
    crowded = [term for term, count in zip(terms, everyone, strict=True)
               if count > match_budget and among_others]
    mine = dict(zip(crowded, _capped_counts(
        conn, fts, [own + quoted(term) for term in crowded], match_budget + 1), strict=True))
    counts = [mine.get(term, count) for term, count in zip(terms, everyone, strict=True)]
    chosen = affordable_terms(terms, counts, match_budget)
    if not chosen:
        return []
    # Scoring walks every agent's matches of the chosen terms, or, once some term of the
    # query is crowded, only the agent's own.
    scope = own if mine else ""
    # The agent condition again, against the base table: a second lock on the same door.
    conditions = f"+b.agent_id = ? AND {visible}"
    params: list[Any] = [agent_id]
    if since is not None:
        conditions += f" AND {time_column} >= ?"
        params.append(since)
    bm25 = f"bm25({fts}, {_WEIGHTS[item_type]})"

    def ranking(match: str, floor: int) -> list[tuple[ItemType, int, float]]:
        rows = conn.execute(
            f"SELECT b.id, -{bm25} FROM {fts} JOIN {table} b ON b.id = {fts}.rowid "
            f"WHERE {fts} MATCH ? AND {fts}.rowid >= ? AND {conditions} "
            f"ORDER BY {bm25} LIMIT ?",
            [scope + f"({match})", floor, *params, limit],
        )
        return [(item_type, row[0], row[1]) for row in rows]

    scored = [count for term, count in zip(terms, counts, strict=True) if term in chosen]
    if max(scored) <= match_budget:
        return ranking(" OR ".join(quoted(term) for term in chosen), 0)

    # Every term of the query is too common to score everywhere (counted no further than
    # the budget, they tie: `chosen` holds the query's first). The documents holding all
    # of them say the most about the query, when there are any...
    match = quoted(chosen[0])
    found = [quoted(term) for term, count in zip(terms, counts, strict=True) if count]
    if len(found) > 1:
        every = " AND ".join(found)
        together = _capped_counts(conn, fts, [scope + f"({every})"], match_budget + 1)[0]
        if 0 < together <= match_budget:
            return ranking(every, 0)
        if together:
            match = every
    # ... otherwise only the agent's latest `match_budget` matches are scored.
    latest = conn.execute(
        f"SELECT rowid FROM {fts} WHERE {fts} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        [scope + f"({match})", match_budget - 1],
    ).fetchone()
    return ranking(match, 0 if latest is None else int(latest[0]))


def _capped_counts(
    conn: sqlite3.Connection, fts: str, expressions: Sequence[str], cap: int
) -> list[int]:
    """How many documents match each FTS expression, counted no further than `cap`: cheap
    even for a term found everywhere."""
    if not expressions:
        return []
    counter = f"(SELECT COUNT(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT ?))"
    row = conn.execute(
        "SELECT " + ", ".join([counter] * len(expressions)),
        [value for expression in expressions for value in (expression, cap)],
    ).fetchone()
    return [int(count) for count in row]

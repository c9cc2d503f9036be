"""Store SQL for retrieval: BM25 candidates, fetching search hits, and embedding rows.

BM25 statistics (IDF, average length) come from the whole FTS table, i.e. all agents;
only the rows returned are restricted to one agent. That shared statistic leaks no
content and keeps one FTS table per item type instead of one per agent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memory.db import Database, require_agent
from memory.records import ITEM_TYPES, ItemType


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
    "transcript": ("transcript_fts", "transcript", "at", "1"),
}
_EMBED_SOURCES = {
    "fact": "SELECT id, agent_id, content FROM facts b WHERE valid_to IS NULL "
            "AND deleted_at IS NULL",
    "episode": "SELECT id, agent_id, summary, topics_json, entities_json FROM episodes b "
               "WHERE deleted_at IS NULL",
    # A message is embedded with the one before it in its session: a reply ("yes, twice!")
    # means little alone. Measured on LoCoMo: +4 points of vector recall@10.
    "transcript": "SELECT id, agent_id, content, at, (SELECT p.content FROM transcript p "
                  "WHERE p.agent_id = b.agent_id AND p.session_id = b.session_id "
                  "AND (p.turn_index < b.turn_index OR (p.turn_index = b.turn_index "
                  "AND p.role = 'user' AND b.role = 'assistant')) "
                  "ORDER BY p.turn_index DESC, p.role = 'assistant' DESC LIMIT 1) "
                  "FROM transcript b WHERE 1",
}


class RetrievalQueries(Database):
    async def fts_candidates(
        self,
        agent_id: str,
        matches: Mapping[ItemType, str],
        *,
        since: float | None = None,
        limit: int = 50,
    ) -> list[tuple[ItemType, int, float]]:
        """(item_type, item_id, bm25 score; higher is better): for each item type, the best
        `limit` matches of its FTS5 expression among the agent's visible items.
        One statement for all types: on a busy machine each round trip to the reader
        thread costs more than the query itself."""
        require_agent(agent_id)
        selects: list[str] = []
        params: list[Any] = []
        for item_type, match in matches.items():
            fts, table, time_column, visible = _FTS[item_type]
            window = f" AND {time_column} >= ?" if since is not None else ""
            selects.append(
                f"SELECT * FROM (SELECT '{item_type}', b.id, -bm25({fts}) FROM {fts} "
                f"JOIN {table} b ON b.id = {fts}.rowid WHERE {fts} MATCH ? AND b.agent_id = ? "
                f"AND {visible}{window} ORDER BY bm25({fts}) LIMIT ?)"
            )
            params += [match, agent_id, *([since] if since is not None else []), limit]
        if not selects:
            return []
        rows = await self._fetchall(" UNION ALL ".join(selects), params)
        return [(r[0], r[1], r[2]) for r in rows]

    async def term_document_counts(
        self, item_types: Sequence[ItemType], terms: Sequence[str], cap: int
    ) -> dict[ItemType, list[int]]:
        """For each item type, how many documents (of all agents) contain each term,
        counting no further than `cap`: cheap even for a term found everywhere."""
        if not terms or not item_types:
            return {item_type: [] for item_type in item_types}
        counters = []
        for item_type in item_types:
            fts = _FTS[item_type][0]
            counters += [
                f"(SELECT COUNT(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT ?))"
            ] * len(terms)
        row = await self._fetchone(
            "SELECT " + ", ".join(counters),
            [value for _ in item_types for term in terms for value in (f'"{term}"', cap)],
        )
        assert row is not None
        counts = [int(count) for count in row]
        return {
            item_type: counts[n * len(terms):(n + 1) * len(terms)]
            for n, item_type in enumerate(item_types)
        }

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
        found: dict[tuple[ItemType, int], StoredItem] = {}
        for item_type in ITEM_TYPES:
            ids = [item_id for kind, item_id in keys if kind == item_type]
            if not ids:
                continue
            _, table, time_column, visible = _FTS[item_type]
            sql = (
                # `+agent_id` keeps SQLite on the primary key for the id list; with a plain
                # `agent_id = ?` it walks the agent's whole time index (20 ms at 100k items).
                f"SELECT *, {time_column} AS item_time FROM {table} WHERE +agent_id = ? "
                f"AND {visible} AND id IN ({', '.join('?' * len(ids))})"
            )
            params: list[Any] = [agent_id, *ids]
            if since is not None:
                sql += f" AND {time_column} >= ?"
                params.append(since)
            for row in await self._fetchall(sql, params):
                item = _stored_item(item_type, row)
                found[(item_type, item.item_id)] = item
        return found

    # -- embeddings ---------------------------------------------------------------------

    async def items_needing_vectors(
        self, model: str, item_type: ItemType, *, after_id: int = 0, limit: int = 256
    ) -> list[ItemText]:
        """Visible items of one type, id > after_id, with no vector for `model` (new, or
        their text changed, which drops the old vector, or the model changed)."""
        rows = await self._fetchall(
            f"{_EMBED_SOURCES[item_type]} AND b.id > ? AND NOT EXISTS (SELECT 1 FROM embeddings e"
            " WHERE e.item_type = ? AND e.item_id = b.id AND e.model = ?) ORDER BY b.id LIMIT ?",
            (after_id, item_type, model, limit),
        )
        return [ItemText(item_type, r[0], r[1], _embedding_text(item_type, r)) for r in rows]

    async def save_embeddings(
        self, model: str, rows: Sequence[tuple[ItemType, int, str, str, bytes]]
    ) -> None:
        """Store (item_type, item_id, agent_id, content_hash, float32 LE blob) rows."""
        async with self._write() as db:
            await db.executemany(
                "INSERT OR REPLACE INTO embeddings "
                "(item_type, item_id, agent_id, model, content_hash, vector) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(t, i, a, model, h, v) for t, i, a, h, v in rows],
            )

    async def embedding_count(self, agent_id: str, model: str) -> int:
        count = await self._scalar(
            "SELECT COUNT(*) FROM embeddings WHERE agent_id = ? AND model = ?",
            (require_agent(agent_id), model),
        )
        return int(count or 0)

    async def embedding_rows(
        self, agent_id: str, model: str, keys: Sequence[tuple[ItemType, int]] | None = None
    ) -> list[tuple[ItemType, int, np.ndarray]]:
        """(item_type, item_id, vector) of the agent's embeddings for `model`, all of them
        or only those of `keys`."""
        require_agent(agent_id)
        select = "SELECT item_type, item_id, vector FROM embeddings WHERE "
        if keys is None:
            rows = await self._fetchall(select + "agent_id = ? AND model = ?", (agent_id, model))
        else:
            rows = []
            for item_type in ITEM_TYPES:
                ids = [item_id for kind, item_id in keys if kind == item_type]
                if ids:
                    # Unary + keeps the planner on the primary key instead of the agent index.
                    rows += await self._fetchall(
                        select + f"item_type = ? AND model = ? AND +agent_id = ? "
                        f"AND item_id IN ({', '.join('?' * len(ids))})",
                        (item_type, model, agent_id, *ids),
                    )
        return [(r[0], r[1], np.frombuffer(r[2], dtype="<f4")) for r in rows]


def _embedding_text(item_type: ItemType, row: Any) -> str:
    if item_type == "transcript":
        # The date lets "when did ..." questions meet the message; measured +1.5 points.
        day = datetime.fromtimestamp(row[3], UTC).strftime("%d %B %Y")
        return f"{day}: {row[4]}\n{row[2]}" if row[4] else f"{day}: {row[2]}"
    if item_type == "fact":
        return str(row[2])
    # An episode is found by its summary and also by what it was about.
    labels = [*json.loads(row[3]), *json.loads(row[4])]
    return row[2] if not labels else f"{row[2]} ({', '.join(map(str, labels))})"


def _stored_item(item_type: ItemType, row: Any) -> StoredItem:
    if item_type == "transcript":
        return StoredItem(
            item_type, row["id"], row["content"], row["at"],
            {"session_id": row["session_id"], "turn_index": row["turn_index"],
             "role": row["role"]},
        )
    if item_type == "fact":
        return StoredItem(
            item_type, row["id"], row["content"], row["updated_at"],
            {"kind": row["kind"], "slot": row["slot"], "session_id": row["source_session_id"],
             "created_at": row["created_at"], "source_count": row["source_count"],
             "salience": row["salience"], "tags": json.loads(row["tags_json"])},
        )
    return StoredItem(
        item_type, row["id"], row["summary"], row["item_time"],
        {"session_id": row["session_id"], "created_at": row["created_at"],
         "started_at": row["started_at"], "ended_at": row["ended_at"],
         "topics": json.loads(row["topics_json"]), "salience": row["salience"]},
    )

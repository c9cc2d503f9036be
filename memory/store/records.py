"""Rows the store hands back: plain dataclasses, JSON columns already decoded."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, fields
from typing import Literal

from mnemoproxy.memory.models import Kind

Role = Literal["user", "assistant"]
# Where an item is stored: the table (facts hold both identity and pinned facts; a
# "document" item is one chunk of a document). New types go last: the vector index keys
# items by their type's position here (memory/search/vectors.py, at most 4 types).
ItemType = Literal["fact", "episode", "transcript", "document"]
ITEM_TYPES: tuple[ItemType, ...] = ("fact", "episode", "transcript", "document")
_TABLE_OF_KIND: dict[Kind, ItemType] = {
    "identity": "fact",
    "pinned": "fact",
    "episode": "episode",
    "transcript": "transcript",
    "document": "document",
}


def item_type_of(kind: Kind) -> ItemType:
    return _TABLE_OF_KIND[kind]


@dataclass(frozen=True)
class TranscriptMessage:
    """One verbatim message; (session, turn_index, role) identifies it, so re-adding is a no-op."""

    turn_index: int
    role: Role
    content: str
    at: float
    retracted: bool = False  # a fact drawn from it was deleted or edited by hand


@dataclass(frozen=True)
class PendingSignal:
    id: int
    agent_id: str
    session_id: int
    turn_index: int
    user_text: str
    assistant_text: str
    at: float
    status: str
    attempts: int
    last_error: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> PendingSignal:
        """From a row of PENDING_SIGNAL_COLUMNS, by position: a distillation reads every
        pending turn of its session, and building each by column name cost more than
        the query."""
        return cls(*row)


PENDING_SIGNAL_COLUMNS = ", ".join(f.name for f in fields(PendingSignal))


@dataclass(frozen=True)
class Fact:
    id: int
    agent_id: str
    kind: str
    slot: str | None
    content: str
    tags: list[str]
    salience: float
    source_count: int
    use_count: int
    last_used: float | None
    valid_from: float
    valid_to: float | None
    superseded_by: int | None
    source_session_id: int | None
    created_at: float
    updated_at: float
    pinned_at: float | None = None  # pinned by hand: kept by consolidation whatever its age

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Fact:
        return cls(
            id=row["id"], agent_id=row["agent_id"], kind=row["kind"], slot=row["slot"],
            content=row["content"], tags=json.loads(row["tags_json"]),
            salience=row["salience"], source_count=row["source_count"],
            use_count=row["use_count"], last_used=row["last_used"],
            valid_from=row["valid_from"], valid_to=row["valid_to"],
            superseded_by=row["superseded_by"], source_session_id=row["source_session_id"],
            created_at=row["created_at"], updated_at=row["updated_at"],
            pinned_at=row["pinned_at"],
        )


@dataclass(frozen=True)
class Episode:
    id: int
    agent_id: str
    session_id: int | None
    summary: str
    topics: list[str]
    entities: list[str]
    decisions: list[str]
    action_items: list[str]
    salience: float
    started_at: float | None
    ended_at: float | None
    created_at: float
    use_count: int
    last_used: float | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Episode:
        return cls(
            id=row["id"], agent_id=row["agent_id"], session_id=row["session_id"],
            summary=row["summary"], topics=json.loads(row["topics_json"]),
            entities=json.loads(row["entities_json"]),
            decisions=json.loads(row["decisions_json"]),
            action_items=json.loads(row["action_items_json"]),
            salience=row["salience"], started_at=row["started_at"], ended_at=row["ended_at"],
            created_at=row["created_at"], use_count=row["use_count"], last_used=row["last_used"],
        )

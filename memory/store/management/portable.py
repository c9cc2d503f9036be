"""Store SQL for carrying an agent's memory out and back in: JSON Lines records.

One record per line, each with its `type`: the agent, its sessions (each with its verbatim
messages, marked where a line is retracted or only restated memory), facts (current and
history, soft-deleted ones too, each with the turns it was said in), episodes, entities,
documents (each with its chunks) and procedures. The marks travel so that a correction
made before the export stays made after the import.
Vectors are not carried: they are derived, and the embedding worker rebuilds them. Row ids
never leave the store: a fact is referred to by its position among the agent's facts
(`ref`), a session by its key, so exporting an import gives the same lines again.

Importing merges: sessions by key, messages by (session, turn, role), facts by (kind,
content, valid_from), episodes by (session, summary, created_at), entities by name,
documents by (title, created_at), procedures by name; what is already there is kept, so
importing the same file twice adds nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from mnemoproxy.errors import InvalidArgument
from mnemoproxy.memory.store.db import Database, require_agent
from mnemoproxy.memory.store.knowledge.procedures import name_key

_FACT_COLUMNS = ("kind", "slot", "content", "tags_json", "salience", "source_count",
                 "use_count", "last_used", "valid_from", "valid_to", "created_at",
                 "updated_at", "deleted_at", "promoted_at", "pinned_at")
_EPISODE_COLUMNS = ("summary", "topics_json", "entities_json", "decisions_json",
                    "action_items_json", "salience", "started_at", "ended_at", "created_at",
                    "use_count", "last_used", "deleted_at")
_ENTITY_COLUMNS = ("name", "mention_count", "first_seen", "last_seen")
_DOCUMENT_COLUMNS = ("title", "source", "media_type", "size_bytes", "created_at",
                     "content_hash")
_CHUNK_COLUMNS = ("position", "title", "heading", "page", "content", "created_at")
_PROCEDURE_COLUMNS = ("name", "applies_when", "steps_json", "created_at", "updated_at")


class PortableQueries(Database):
    async def export_agent(self, agent_id: str) -> list[dict[str, Any]] | None:
        """Every record of the agent, in a stable order (None: no such agent)."""
        require_agent(agent_id)

        def read(conn: Any) -> list[dict[str, Any]] | None:
            agent = conn.execute(
                "SELECT created_at, last_active FROM agents WHERE id = ?", (agent_id,)
            ).fetchone()
            if agent is None:
                return None
            out: list[dict[str, Any]] = [
                {"type": "agent", "created_at": agent[0], "last_active": agent[1]}]
            keys: dict[int, str] = {}
            for s in conn.execute(
                "SELECT id, session_key, started_at, last_turn_at, distilled_at, title "
                "FROM sessions "
                "WHERE agent_id = ? ORDER BY id", (agent_id,)
            ).fetchall():
                keys[s[0]] = s[1]
                messages = [
                    _message(*m) for m in conn.execute(
                        "SELECT turn_index, role, content, at, restates_memory, retracted_at "
                        "FROM transcript WHERE agent_id = ? AND session_id = ? "
                        "ORDER BY turn_index, role DESC", (agent_id, s[0]))
                ]
                out.append({"type": "session", "key": s[1], "title": s[5], "started_at": s[2],
                            "last_turn_at": s[3], "distilled_at": s[4], "messages": messages})
            facts = conn.execute(
                f"SELECT id, superseded_by, source_session_id, {', '.join(_FACT_COLUMNS)} "
                "FROM facts WHERE agent_id = ? ORDER BY id", (agent_id,)).fetchall()
            refs = {row[0]: n for n, row in enumerate(facts, start=1)}
            sources: dict[int, list[list[Any]]] = {}
            for fact_id, session_id, turn in conn.execute(
                "SELECT fact_id, session_id, turn_index FROM fact_sources WHERE agent_id = ? "
                "ORDER BY fact_id, session_id, turn_index", (agent_id,)
            ).fetchall():
                if session_id in keys:
                    sources.setdefault(fact_id, []).append([keys[session_id], turn])
            for row in facts:
                record = {"type": "fact", "ref": refs[row[0]],
                          "superseded_by": refs.get(row[1]), "session": keys.get(row[2]),
                          "sources": sources.get(row[0], [])}
                record.update(_columns(_FACT_COLUMNS, row[3:]))
                out.append(record)
            for row in conn.execute(
                f"SELECT session_id, {', '.join(_EPISODE_COLUMNS)} FROM episodes "
                "WHERE agent_id = ? ORDER BY id", (agent_id,)
            ).fetchall():
                out.append({"type": "episode", "session": keys.get(row[0]),
                            **_columns(_EPISODE_COLUMNS, row[1:])})
            for row in conn.execute(
                f"SELECT {', '.join(_ENTITY_COLUMNS)} FROM entities WHERE agent_id = ? "
                "ORDER BY name", (agent_id,)
            ).fetchall():
                out.append({"type": "entity", **_columns(_ENTITY_COLUMNS, row)})
            for row in conn.execute(
                f"SELECT id, {', '.join(_DOCUMENT_COLUMNS)} FROM documents WHERE agent_id = ? "
                "ORDER BY id", (agent_id,)
            ).fetchall():
                chunks = [_columns(_CHUNK_COLUMNS, chunk) for chunk in conn.execute(
                    f"SELECT {', '.join(_CHUNK_COLUMNS)} FROM document_chunks "
                    "WHERE agent_id = ? AND document_id = ? ORDER BY position",
                    (agent_id, row[0]))]
                out.append({"type": "document", **_columns(_DOCUMENT_COLUMNS, row[1:]),
                            "chunks": chunks})
            for row in conn.execute(
                f"SELECT source_session_id, {', '.join(_PROCEDURE_COLUMNS)} FROM procedures "
                "WHERE agent_id = ? ORDER BY id", (agent_id,)
            ).fetchall():
                out.append({"type": "procedure", "session": keys.get(row[0]),
                            **_columns(_PROCEDURE_COLUMNS, row[1:])})
            return out

        return await self._read(read)

    async def import_agent(
        self, agent_id: str, records: Iterable[dict[str, Any]]
    ) -> dict[str, int]:
        """Merge exported records into the agent (created when new), in one transaction.
        Returns how many of each kind were added."""
        require_agent(agent_id)
        added = {"sessions": 0, "messages": 0, "facts": 0, "episodes": 0, "entities": 0,
                 "documents": 0, "procedures": 0}
        by_type: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            by_type.setdefault(str(record.get("type")), []).append(record)
        unknown = set(by_type) - set(_FIELDS) | ({"message", "chunk"} & set(by_type))
        if unknown:
            raise InvalidArgument(f"unknown record type {sorted(unknown)[0]!r}", param="type")
        by_type = {kind: [_clean(kind, n, record) for n, record in enumerate(given)]
                   for kind, given in by_type.items()}
        agent = (by_type.get("agent") or [{}])[0]
        try:
            async with self._write() as db:
                first = agent.get("created_at") or min(
                    (s["started_at"] for s in by_type.get("session", [])), default=0.0)
                await db.execute(
                    "INSERT INTO agents (id, created_at, last_active) VALUES (?, ?, ?) "
                    "ON CONFLICT (id) DO UPDATE SET created_at = MIN(agents.created_at, "
                    "excluded.created_at), last_active = MAX(agents.last_active, "
                    "excluded.last_active)",
                    (agent_id, first, agent.get("last_active") or first))
                sessions: dict[str, int] = {}
                for s in by_type.get("session", []):
                    cursor = await db.execute(
                        "INSERT INTO sessions (agent_id, session_key, started_at, last_turn_at, "
                        "distilled_at, title) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, "
                        "session_key) DO NOTHING RETURNING id",
                        (agent_id, s["key"], s["started_at"], s.get("last_turn_at"),
                         s.get("distilled_at"), s["title"]))
                    row = await cursor.fetchone()
                    if row is None:
                        cursor = await db.execute(
                            "SELECT id FROM sessions WHERE agent_id = ? AND session_key = ?",
                            (agent_id, s["key"]))
                        row = await cursor.fetchone()
                    else:
                        added["sessions"] += 1
                    assert row is not None
                    sessions[s["key"]] = row[0]
                    messages = s.get("messages", [])
                    cursor = await db.executemany(
                        "INSERT OR IGNORE INTO transcript (agent_id, session_id, turn_index, "
                        "role, content, at, restates_memory, retracted_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [(agent_id, row[0], m["turn_index"], m["role"], m["content"], m["at"],
                          int(m["restates_memory"]), m["retracted_at"]) for m in messages])
                    added["messages"] += max(cursor.rowcount, 0)
                    # A line retracted where the export came from stays retracted here.
                    await db.executemany(
                        "UPDATE transcript SET retracted_at = ? WHERE agent_id = ? "
                        "AND session_id = ? AND turn_index = ? AND role = ? "
                        "AND retracted_at IS NULL",
                        [(m["retracted_at"], agent_id, row[0], m["turn_index"], m["role"])
                         for m in messages if m["retracted_at"] is not None])
                ids: dict[int, int] = {}
                for f in by_type.get("fact", []):
                    cursor = await db.execute(
                        "SELECT id FROM facts WHERE agent_id = ? AND kind = ? AND content = ? "
                        "AND valid_from = ?", (agent_id, f["kind"], f["content"], f["valid_from"]))
                    row = await cursor.fetchone()
                    if row is None:
                        cursor = await db.execute(
                            f"INSERT INTO facts (agent_id, source_session_id, "
                            f"{', '.join(_FACT_COLUMNS)}) VALUES (?, ?, "
                            f"{', '.join('?' * len(_FACT_COLUMNS))}) RETURNING id",
                            (agent_id, sessions.get(f.get("session") or ""),
                             *_values(_FACT_COLUMNS, f)))
                        row = await cursor.fetchone()
                        added["facts"] += 1
                    assert row is not None
                    ids[f["ref"]] = row[0]
                await db.executemany(
                    "INSERT OR IGNORE INTO fact_sources (agent_id, fact_id, session_id, "
                    "turn_index) VALUES (?, ?, ?, ?)",
                    [(agent_id, ids[f["ref"]], sessions[key], turn)
                     for f in by_type.get("fact", []) for key, turn in f["sources"]
                     if key in sessions])
                for f in by_type.get("fact", []):
                    later = ids.get(f.get("superseded_by"))  # type: ignore[arg-type]
                    if later is not None:
                        await db.execute(
                            "UPDATE facts SET superseded_by = ? WHERE id = ? "
                            "AND superseded_by IS NULL", (later, ids[f["ref"]]))
                for e in by_type.get("episode", []):
                    session_id = sessions.get(e.get("session") or "")
                    cursor = await db.execute(
                        "SELECT 1 FROM episodes WHERE agent_id = ? AND session_id IS ? "
                        "AND summary = ? AND created_at = ?",
                        (agent_id, session_id, e["summary"], e["created_at"]))
                    if await cursor.fetchone() is None:
                        await db.execute(
                            f"INSERT INTO episodes (agent_id, session_id, "
                            f"{', '.join(_EPISODE_COLUMNS)}) VALUES (?, ?, "
                            f"{', '.join('?' * len(_EPISODE_COLUMNS))})",
                            (agent_id, session_id, *_values(_EPISODE_COLUMNS, e)))
                        added["episodes"] += 1
                for entity in by_type.get("entity", []):
                    cursor = await db.execute(
                        "SELECT 1 FROM entities WHERE agent_id = ? AND name = ?",
                        (agent_id, entity["name"]))
                    added["entities"] += await cursor.fetchone() is None
                    await db.execute(
                        "INSERT INTO entities (agent_id, name, mention_count, first_seen, "
                        "last_seen) VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id, name) DO "
                        "UPDATE SET mention_count = MAX(entities.mention_count, "
                        "excluded.mention_count), "
                        "first_seen = MIN(entities.first_seen, excluded.first_seen), "
                        "last_seen = MAX(entities.last_seen, excluded.last_seen)",
                        (agent_id, entity["name"], entity.get("mention_count") or 0,
                         entity["first_seen"], entity["last_seen"]))
                for d in by_type.get("document", []):
                    cursor = await db.execute(
                        "SELECT 1 FROM documents WHERE agent_id = ? AND title = ? "
                        "AND created_at = ?", (agent_id, d["title"], d["created_at"]))
                    if await cursor.fetchone() is not None:
                        continue
                    cursor = await db.execute(
                        f"INSERT INTO documents (agent_id, chunk_count, "
                        f"{', '.join(_DOCUMENT_COLUMNS)}) VALUES (?, ?, "
                        f"{', '.join('?' * len(_DOCUMENT_COLUMNS))}) RETURNING id",
                        (agent_id, len(d["chunks"]), *_values(_DOCUMENT_COLUMNS, d)))
                    row = await cursor.fetchone()
                    assert row is not None
                    await db.executemany(
                        f"INSERT INTO document_chunks (agent_id, document_id, "
                        f"{', '.join(_CHUNK_COLUMNS)}) VALUES (?, ?, "
                        f"{', '.join('?' * len(_CHUNK_COLUMNS))})",
                        [(agent_id, row[0], *_values(_CHUNK_COLUMNS, c)) for c in d["chunks"]])
                    added["documents"] += 1
                for procedure in by_type.get("procedure", []):
                    cursor = await db.execute(
                        f"INSERT INTO procedures (agent_id, name_key, source_session_id, "
                        f"{', '.join(_PROCEDURE_COLUMNS)}) VALUES (?, ?, ?, "
                        f"{', '.join('?' * len(_PROCEDURE_COLUMNS))}) "
                        "ON CONFLICT (agent_id, name_key) DO NOTHING",
                        (agent_id, name_key(procedure["name"]),
                         sessions.get(procedure.get("session") or ""),
                         *_values(_PROCEDURE_COLUMNS, procedure)))
                    added["procedures"] += max(cursor.rowcount, 0)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgument(
                f"an import record is missing or has a bad field: {exc!r}; import what "
                "GET /agents/{id}/export wrote", param="records") from exc
        if added["messages"] or added["facts"] or added["episodes"] or added["documents"]:
            self.content_changed.set()
        return added


# Every field of every record type: (its type, required, its default). Types: "time" a
# finite number of seconds within the years 1900-2999 (None allowed when not required and
# no default), "count" a non-negative 64-bit integer, "score" a number in [0, 1], "text" a
# string, "texts" a list of strings, "key" a non-empty string, "ref" a positive integer,
# "flag" a boolean, "turns" a list of [session key, turn index] pairs.
_EARLIEST, _LATEST = -2_208_988_800, 32_503_680_000
_MAX_INT = 2**63 - 1
_FIELDS: dict[str, dict[str, tuple[str, bool, Any]]] = {
    "agent": {"created_at": ("time", False, None), "last_active": ("time", False, None)},
    "session": {"key": ("key", True, None), "title": ("text", False, ""),
                "started_at": ("time", True, None),
                "last_turn_at": ("time", False, None), "distilled_at": ("time", False, None),
                "messages": ("messages", False, [])},
    "message": {"turn_index": ("count", True, None), "role": ("role", True, None),
                "content": ("text", True, None), "at": ("time", True, None),
                "restates_memory": ("flag", False, False),
                "retracted_at": ("time", False, None)},
    "fact": {"ref": ("ref", True, None), "kind": ("kind", True, None),
             "content": ("key", True, None), "slot": ("text", False, None),
             "tags": ("texts", False, []), "salience": ("score", False, 0.5),
             "source_count": ("count", False, 1), "use_count": ("count", False, 0),
             "last_used": ("time", False, None), "valid_from": ("time", True, None),
             "valid_to": ("time", False, None), "created_at": ("time", True, None),
             "updated_at": ("time", True, None), "deleted_at": ("time", False, None),
             "promoted_at": ("time", False, None), "pinned_at": ("time", False, None),
             "superseded_by": ("ref", False, None), "session": ("text", False, None),
             "sources": ("turns", False, [])},
    "episode": {"summary": ("key", True, None), "topics": ("texts", False, []),
                "entities": ("texts", False, []), "decisions": ("texts", False, []),
                "action_items": ("texts", False, []), "salience": ("score", False, 0.5),
                "started_at": ("time", False, None), "ended_at": ("time", False, None),
                "created_at": ("time", True, None), "use_count": ("count", False, 0),
                "last_used": ("time", False, None), "deleted_at": ("time", False, None),
                "session": ("text", False, None)},
    "entity": {"name": ("key", True, None), "mention_count": ("count", False, 0),
               "first_seen": ("time", True, None), "last_seen": ("time", True, None)},
    "document": {"title": ("key", True, None), "source": ("text", False, ""),
                 "media_type": ("key", True, None), "size_bytes": ("count", False, 0),
                 "created_at": ("time", True, None), "chunks": ("chunks", True, None),
                 "content_hash": ("text", False, "")},
    "chunk": {"position": ("count", True, None), "title": ("text", False, ""),
              "heading": ("text", False, ""), "page": ("count", False, None),
              "content": ("key", True, None), "created_at": ("time", True, None)},
    "procedure": {"name": ("key", True, None), "applies_when": ("text", False, ""),
                  "steps": ("steps", True, None), "created_at": ("time", True, None),
                  "updated_at": ("time", True, None), "session": ("text", False, None)},
}


def _valid(kind: str, value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "time":
        return number and math.isfinite(value) and _EARLIEST <= value <= _LATEST
    if kind in ("count", "ref"):
        return (isinstance(value, int) and not isinstance(value, bool)
                and (1 if kind == "ref" else 0) <= value <= _MAX_INT)
    if kind == "score":
        return number and math.isfinite(value) and 0.0 <= value <= 1.0
    if kind == "text":
        return isinstance(value, str)
    if kind == "key":
        return isinstance(value, str) and bool(value.strip())
    if kind == "texts":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "flag":
        return isinstance(value, bool)
    if kind == "turns":
        return isinstance(value, list) and all(
            isinstance(v, list) and len(v) == 2 and _valid("key", v[0]) and _valid("count", v[1])
            for v in value)
    if kind == "role":
        return value in ("user", "assistant")
    if kind == "kind":
        return value in ("pinned", "identity")
    if kind == "steps":
        return (isinstance(value, list) and bool(value)
                and all(isinstance(v, str) and v.strip() for v in value))
    return isinstance(value, list)  # messages, chunks: each checked on its own


def _clean(kind: str, n: int, record: Any) -> dict[str, Any]:
    """The record with every field checked and defaults filled; a 400 naming the field
    otherwise (what is stored must be what reads and consolidation can use)."""
    if not isinstance(record, dict):
        raise InvalidArgument(f"{kind} record {n} is not an object", param=kind)
    clean: dict[str, Any] = {"type": kind}
    for name, (type_, required, default) in _FIELDS[kind].items():
        value = record.get(name)
        if value is None:
            if required:
                raise InvalidArgument(f"{kind} record {n}: {name!r} is missing", param=name)
            clean[name] = list(default) if isinstance(default, list) else default
        elif _valid(type_, value):
            clean[name] = value
        else:
            raise InvalidArgument(f"{kind} record {n}: {name!r} is not a valid {type_}",
                                  param=name)
    if kind == "session":
        clean["messages"] = [_clean("message", m, message)
                             for m, message in enumerate(clean["messages"])]
    if kind == "document":
        clean["chunks"] = [_clean("chunk", c, chunk) for c, chunk in enumerate(clean["chunks"])]
        if len({c["position"] for c in clean["chunks"]}) < len(clean["chunks"]):
            raise InvalidArgument(f"document record {n}: two chunks share a position",
                                  param="position")
    return clean


def _message(turn: int, role: str, content: str, at: float, restates: int,
             retracted_at: float | None) -> dict[str, Any]:
    """A transcript line as exported: its marks only where set, so that an unmarked line
    reads as it always has."""
    message: dict[str, Any] = {"turn_index": turn, "role": role, "content": content, "at": at}
    if restates:
        message["restates_memory"] = True
    if retracted_at is not None:
        message["retracted_at"] = retracted_at
    return message


def _columns(names: tuple[str, ...], values: Iterable[Any]) -> dict[str, Any]:
    """Columns as an export shows them: JSON columns as their values, not as text."""
    out = {}
    for name, value in zip(names, values, strict=True):
        if name.endswith("_json"):
            out[name.removesuffix("_json")] = json.loads(value)
        else:
            out[name] = value
    return out


def _values(names: tuple[str, ...], record: dict[str, Any]) -> list[Any]:
    return [json.dumps(record.get(name.removesuffix("_json"), []))
            if name.endswith("_json") else record.get(name) for name in names]

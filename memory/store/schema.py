"""The SQLite schema as an ordered list of migrations.

Each migration is a small named SQL step recorded in `_migrations` once applied. Steps are
applied in order when the store opens and are never edited once shipped: a change to the
schema is a new step appended to MIGRATIONS.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

# (name, SQL script); the name is recorded in _migrations once the script has run.
Migration = tuple[str, str]

_M001_TABLES = """
CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    last_active REAL NOT NULL
);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    session_key TEXT NOT NULL,
    started_at REAL NOT NULL,
    last_turn_at REAL,
    distilled_at REAL,
    UNIQUE (agent_id, session_key)
);
CREATE TABLE transcript (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_index INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content TEXT NOT NULL,
    at REAL NOT NULL,
    UNIQUE (agent_id, session_id, turn_index, role)
);
CREATE INDEX transcript_by_agent_time ON transcript (agent_id, at);
CREATE TABLE pending_signals (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_index INTEGER NOT NULL,
    user_text TEXT NOT NULL,
    assistant_text TEXT NOT NULL,
    at REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'dead')),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    UNIQUE (agent_id, session_id, turn_index)
);
CREATE INDEX pending_signals_open ON pending_signals (agent_id, session_id)
    WHERE status = 'pending';
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
    summary TEXT NOT NULL,
    topics_json TEXT NOT NULL DEFAULT '[]',
    entities_json TEXT NOT NULL DEFAULT '[]',
    decisions_json TEXT NOT NULL DEFAULT '[]',
    action_items_json TEXT NOT NULL DEFAULT '[]',
    salience REAL NOT NULL DEFAULT 0.5,
    started_at REAL,
    ended_at REAL,
    created_at REAL NOT NULL,
    use_count INTEGER NOT NULL DEFAULT 0,
    last_used REAL,
    deleted_at REAL
);
CREATE INDEX episodes_by_agent_time ON episodes (agent_id, created_at);
CREATE TABLE facts (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('pinned', 'identity')),
    slot TEXT,
    content TEXT NOT NULL,
    tags_json TEXT NOT NULL DEFAULT '[]',
    salience REAL NOT NULL DEFAULT 0.5,
    source_count INTEGER NOT NULL DEFAULT 1,
    use_count INTEGER NOT NULL DEFAULT 0,
    last_used REAL,
    valid_from REAL NOT NULL,
    valid_to REAL,
    superseded_by INTEGER REFERENCES facts(id),
    source_session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    deleted_at REAL
);
CREATE INDEX facts_current ON facts (agent_id, kind, slot)
    WHERE valid_to IS NULL AND deleted_at IS NULL;
CREATE TABLE entities (
    agent_id TEXT NOT NULL,
    name TEXT NOT NULL COLLATE NOCASE,
    mention_count INTEGER NOT NULL DEFAULT 0,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    PRIMARY KEY (agent_id, name)
);
CREATE TABLE embeddings (
    item_type TEXT NOT NULL CHECK (item_type IN ('fact', 'episode', 'transcript')),
    item_id INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    model TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (item_type, item_id, model)
);
CREATE INDEX embeddings_by_agent_model ON embeddings (agent_id, model);
CREATE TABLE processing_log (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    session_id INTEGER,
    event TEXT NOT NULL,
    detail_json TEXT NOT NULL DEFAULT '{}',
    at REAL NOT NULL
);
CREATE INDEX processing_log_by_agent ON processing_log (agent_id, at);
"""

# External-content FTS5 mirrors, Porter-stemmed: "careers" meets "career".
# A changed or deleted item also loses its vectors, so the embedding worker re-embeds it.
_M002_FTS = """
CREATE VIRTUAL TABLE facts_fts USING fts5(
    content, content='facts', content_rowid='id', tokenize='porter unicode61');
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content) VALUES ('delete', old.id, old.content);
    DELETE FROM embeddings WHERE item_type = 'fact' AND item_id = old.id;
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF content ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO facts_fts (rowid, content) VALUES (new.id, new.content);
    DELETE FROM embeddings WHERE item_type = 'fact' AND item_id = old.id;
END;

CREATE VIRTUAL TABLE episodes_fts USING fts5(
    summary, topics_json, entities_json, content='episodes', content_rowid='id',
    tokenize='porter unicode61');
CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_fts (rowid, summary, topics_json, entities_json)
    VALUES (new.id, new.summary, new.topics_json, new.entities_json);
END;
CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_fts (episodes_fts, rowid, summary, topics_json, entities_json)
    VALUES ('delete', old.id, old.summary, old.topics_json, old.entities_json);
    DELETE FROM embeddings WHERE item_type = 'episode' AND item_id = old.id;
END;
CREATE TRIGGER episodes_fts_update AFTER UPDATE OF summary, topics_json, entities_json
ON episodes BEGIN
    INSERT INTO episodes_fts (episodes_fts, rowid, summary, topics_json, entities_json)
    VALUES ('delete', old.id, old.summary, old.topics_json, old.entities_json);
    INSERT INTO episodes_fts (rowid, summary, topics_json, entities_json)
    VALUES (new.id, new.summary, new.topics_json, new.entities_json);
    DELETE FROM embeddings WHERE item_type = 'episode' AND item_id = old.id;
END;

CREATE VIRTUAL TABLE transcript_fts USING fts5(
    content, content='transcript', content_rowid='id', tokenize='porter unicode61');
CREATE TRIGGER transcript_fts_insert AFTER INSERT ON transcript BEGIN
    INSERT INTO transcript_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER transcript_fts_delete AFTER DELETE ON transcript BEGIN
    INSERT INTO transcript_fts (transcript_fts, rowid, content)
    VALUES ('delete', old.id, old.content);
    DELETE FROM embeddings WHERE item_type = 'transcript' AND item_id = old.id;
END;
CREATE TRIGGER transcript_fts_update AFTER UPDATE OF content ON transcript BEGIN
    INSERT INTO transcript_fts (transcript_fts, rowid, content)
    VALUES ('delete', old.id, old.content);
    INSERT INTO transcript_fts (rowid, content) VALUES (new.id, new.content);
    DELETE FROM embeddings WHERE item_type = 'transcript' AND item_id = old.id;
END;
"""


# What still needs a vector: every new or re-worded item is queued by a trigger, and the
# embedding worker takes batches off the queue. Finding them by scanning for items without
# a vector cost a pass over every item per batch (quadratic over a bulk import).
_M005_EMBEDDING_QUEUE = """
CREATE TABLE embedding_queue (
    item_type TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    PRIMARY KEY (item_type, item_id)
) WITHOUT ROWID;
CREATE TRIGGER transcript_queue_insert AFTER INSERT ON transcript BEGIN
    INSERT OR IGNORE INTO embedding_queue VALUES ('transcript', new.id);
END;
CREATE TRIGGER transcript_queue_update AFTER UPDATE OF content ON transcript BEGIN
    INSERT OR IGNORE INTO embedding_queue VALUES ('transcript', new.id);
END;
CREATE TRIGGER facts_queue_insert AFTER INSERT ON facts BEGIN
    INSERT OR IGNORE INTO embedding_queue VALUES ('fact', new.id);
END;
CREATE TRIGGER facts_queue_update AFTER UPDATE OF content ON facts BEGIN
    INSERT OR IGNORE INTO embedding_queue VALUES ('fact', new.id);
END;
CREATE TRIGGER episodes_queue_insert AFTER INSERT ON episodes BEGIN
    INSERT OR IGNORE INTO embedding_queue VALUES ('episode', new.id);
END;
CREATE TRIGGER episodes_queue_update AFTER UPDATE OF summary, topics_json, entities_json
ON episodes BEGIN
    INSERT OR IGNORE INTO embedding_queue VALUES ('episode', new.id);
END;
INSERT OR IGNORE INTO embedding_queue SELECT 'transcript', id FROM transcript b
    WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.item_type = 'transcript'
                      AND e.item_id = b.id);
INSERT OR IGNORE INTO embedding_queue SELECT 'fact', id FROM facts b
    WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.item_type = 'fact' AND e.item_id = b.id);
INSERT OR IGNORE INTO embedding_queue SELECT 'episode', id FROM episodes b
    WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.item_type = 'episode'
                      AND e.item_id = b.id);
"""


# BM25 per agent: each FTS row also holds its agent as one token (`agent_token` in
# retrieval.py: "g" + the id's UTF-8 bytes in hex) in a column weighted 0, and every
# search matches it. Counting and scoring then walk the agent's own matches only, so a
# neighbour's 50k messages no longer push an agent's common words over the match budget.
# The FTS tables read their text through views that add the column.
def _fts_with_agent(table: str, columns: tuple[str, ...], item_type: str) -> str:
    names = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    return f"""
DROP TRIGGER {table}_fts_insert;
DROP TRIGGER {table}_fts_delete;
DROP TRIGGER {table}_fts_update;
DROP TABLE {table}_fts;
CREATE VIEW {table}_fts_source AS
    SELECT id, {names}, 'g' || lower(hex(agent_id)) AS agent FROM {table};
CREATE VIRTUAL TABLE {table}_fts USING fts5(
    {names}, agent, content='{table}_fts_source', content_rowid='id',
    tokenize='porter unicode61');
CREATE TRIGGER {table}_fts_insert AFTER INSERT ON {table} BEGIN
    INSERT INTO {table}_fts (rowid, {names}, agent)
    VALUES (new.id, {new}, 'g' || lower(hex(new.agent_id)));
END;
CREATE TRIGGER {table}_fts_delete AFTER DELETE ON {table} BEGIN
    INSERT INTO {table}_fts ({table}_fts, rowid, {names}, agent)
    VALUES ('delete', old.id, {old}, 'g' || lower(hex(old.agent_id)));
    DELETE FROM embeddings WHERE item_type = '{item_type}' AND item_id = old.id;
END;
CREATE TRIGGER {table}_fts_update AFTER UPDATE OF {names} ON {table} BEGIN
    INSERT INTO {table}_fts ({table}_fts, rowid, {names}, agent)
    VALUES ('delete', old.id, {old}, 'g' || lower(hex(old.agent_id)));
    INSERT INTO {table}_fts (rowid, {names}, agent)
    VALUES (new.id, {new}, 'g' || lower(hex(new.agent_id)));
    DELETE FROM embeddings WHERE item_type = '{item_type}' AND item_id = old.id;
END;
INSERT INTO {table}_fts ({table}_fts) VALUES ('rebuild');
"""


_M007_FTS_BY_AGENT = (
    _fts_with_agent("facts", ("content",), "fact")
    + _fts_with_agent("episodes", ("summary", "topics_json", "entities_json"), "episode")
    + _fts_with_agent("transcript", ("content",), "transcript")
)


_M009_THREAD_SUMMARIES = """
CREATE TABLE thread_summaries (
    agent_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    covered INTEGER NOT NULL,
    turns INTEGER NOT NULL,
    digest TEXT NOT NULL,
    summary TEXT NOT NULL,
    author TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (agent_id, session_key)
) WITHOUT ROWID;
"""


# Documents (a knowledge base per agent, memory/write/documents.py): each document's chunks are
# items like messages, searched by BM25 over their text, heading path and the document's
# title (kept on each chunk, so the FTS triggers need no join) and by their vectors. The
# embeddings table is rebuilt to accept the new item type (SQLite cannot alter a CHECK);
# the rename is a legacy one, which leaves the other tables' triggers, which name
# `embeddings`, as they are (a modern rename would refuse them while the table is gone).
_M010_DOCUMENTS = """
CREATE TABLE documents (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    title TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    media_type TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX documents_by_agent ON documents (agent_id, id);
CREATE TABLE document_chunks (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    title TEXT NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    page INTEGER,
    content TEXT NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (document_id, position)
);
CREATE INDEX document_chunks_by_agent ON document_chunks (agent_id, document_id);
CREATE VIEW document_chunks_fts_source AS
    SELECT id, content, heading, title, 'g' || lower(hex(agent_id)) AS agent
    FROM document_chunks;
CREATE VIRTUAL TABLE document_chunks_fts USING fts5(
    content, heading, title, agent, content='document_chunks_fts_source', content_rowid='id',
    tokenize='porter unicode61');
CREATE TRIGGER document_chunks_fts_insert AFTER INSERT ON document_chunks BEGIN
    INSERT INTO document_chunks_fts (rowid, content, heading, title, agent)
    VALUES (new.id, new.content, new.heading, new.title, 'g' || lower(hex(new.agent_id)));
    INSERT OR IGNORE INTO embedding_queue VALUES ('document', new.id);
END;
CREATE TRIGGER document_chunks_fts_delete AFTER DELETE ON document_chunks BEGIN
    INSERT INTO document_chunks_fts (document_chunks_fts, rowid, content, heading, title, agent)
    VALUES ('delete', old.id, old.content, old.heading, old.title,
            'g' || lower(hex(old.agent_id)));
    DELETE FROM embeddings WHERE item_type = 'document' AND item_id = old.id;
    DELETE FROM embedding_queue WHERE item_type = 'document' AND item_id = old.id;
    DELETE FROM embedding_failures WHERE item_type = 'document' AND item_id = old.id;
END;
CREATE TRIGGER document_chunks_fts_update AFTER UPDATE OF content, heading, title
ON document_chunks BEGIN
    INSERT INTO document_chunks_fts (document_chunks_fts, rowid, content, heading, title, agent)
    VALUES ('delete', old.id, old.content, old.heading, old.title,
            'g' || lower(hex(old.agent_id)));
    INSERT INTO document_chunks_fts (rowid, content, heading, title, agent)
    VALUES (new.id, new.content, new.heading, new.title, 'g' || lower(hex(new.agent_id)));
    DELETE FROM embeddings WHERE item_type = 'document' AND item_id = old.id;
    INSERT OR IGNORE INTO embedding_queue VALUES ('document', new.id);
END;
CREATE TABLE embeddings_with_documents (
    item_type TEXT NOT NULL
        CHECK (item_type IN ('fact', 'episode', 'transcript', 'document')),
    item_id INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    model TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (item_type, item_id, model)
);
INSERT INTO embeddings_with_documents
    SELECT item_type, item_id, agent_id, model, content_hash, vector FROM embeddings;
DROP TABLE embeddings;
PRAGMA legacy_alter_table = ON;
ALTER TABLE embeddings_with_documents RENAME TO embeddings;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX embeddings_by_agent_model_type ON embeddings (agent_id, model, item_type);
"""


# Several processes on one data_dir (workers > 1, memory/background/ownership.py): each keeps
# its own
# usearch indexes and learns of vectors another process stored by reading those newer
# than the last it applied. vector_versions numbers every stored vector in commit order
# (`seq`, from a counter that never goes back: rowids can, VACUUM renumbers the
# embeddings table and a deleted last row's rowid is given out again). A vector for an
# item whose agent and row are both gone (forgotten while another process was embedding
# its text) is not stored. vector_resets counts, per agent (by the hash its index files
# are named by), the forgets that make every process drop its copy of that index.
_M011_VECTOR_VERSIONS = """
CREATE TABLE embedding_sequence (last INTEGER NOT NULL);
INSERT INTO embedding_sequence VALUES (0);
CREATE TABLE vector_versions (
    item_type TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    model TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (item_type, item_id, model)
) WITHOUT ROWID;
CREATE INDEX vector_versions_by_agent ON vector_versions (agent_id, seq);
CREATE TRIGGER embeddings_of_the_gone BEFORE INSERT ON embeddings
WHEN NOT EXISTS (SELECT 1 FROM agents WHERE id = new.agent_id)
    AND NOT EXISTS (SELECT 1 FROM transcript WHERE new.item_type = 'transcript'
                    AND id = new.item_id AND agent_id = new.agent_id)
    AND NOT EXISTS (SELECT 1 FROM facts WHERE new.item_type = 'fact'
                    AND id = new.item_id AND agent_id = new.agent_id)
    AND NOT EXISTS (SELECT 1 FROM episodes WHERE new.item_type = 'episode'
                    AND id = new.item_id AND agent_id = new.agent_id)
BEGIN
    SELECT RAISE(IGNORE);
END;
CREATE TRIGGER embeddings_versioned AFTER INSERT ON embeddings BEGIN
    UPDATE embedding_sequence SET last = last + 1;
    INSERT OR REPLACE INTO vector_versions (item_type, item_id, model, agent_id, seq)
    VALUES (new.item_type, new.item_id, new.model, new.agent_id,
            (SELECT last FROM embedding_sequence));
END;
CREATE TRIGGER embeddings_unversioned AFTER DELETE ON embeddings BEGIN
    DELETE FROM vector_versions WHERE item_type = old.item_type AND item_id = old.item_id
        AND model = old.model;
END;
CREATE TABLE vector_resets (
    agent_key TEXT PRIMARY KEY,
    resets INTEGER NOT NULL
) WITHOUT ROWID;
"""


# Procedures: named ways of doing something a session taught (memory/distill/), one live
# row per name and agent (a newer one with the same name replaces its steps in place).
# Found by BM25 over the name, when it applies and the steps; no vectors.
_M012_PROCEDURES = """
CREATE TABLE procedures (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    applies_when TEXT NOT NULL DEFAULT '',
    steps_json TEXT NOT NULL,
    source_session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (agent_id, name_key)
);
CREATE VIEW procedures_fts_source AS
    SELECT id, name, applies_when, steps_json, 'g' || lower(hex(agent_id)) AS agent
    FROM procedures;
CREATE VIRTUAL TABLE procedures_fts USING fts5(
    name, applies_when, steps_json, agent, content='procedures_fts_source',
    content_rowid='id', tokenize='porter unicode61');
CREATE TRIGGER procedures_fts_insert AFTER INSERT ON procedures BEGIN
    INSERT INTO procedures_fts (rowid, name, applies_when, steps_json, agent)
    VALUES (new.id, new.name, new.applies_when, new.steps_json,
            'g' || lower(hex(new.agent_id)));
END;
CREATE TRIGGER procedures_fts_delete AFTER DELETE ON procedures BEGIN
    INSERT INTO procedures_fts (procedures_fts, rowid, name, applies_when, steps_json, agent)
    VALUES ('delete', old.id, old.name, old.applies_when, old.steps_json,
            'g' || lower(hex(old.agent_id)));
END;
CREATE TRIGGER procedures_fts_update AFTER UPDATE OF name, applies_when, steps_json
ON procedures BEGIN
    INSERT INTO procedures_fts (procedures_fts, rowid, name, applies_when, steps_json, agent)
    VALUES ('delete', old.id, old.name, old.applies_when, old.steps_json,
            'g' || lower(hex(old.agent_id)));
    INSERT INTO procedures_fts (rowid, name, applies_when, steps_json, agent)
    VALUES (new.id, new.name, new.applies_when, new.steps_json,
            'g' || lower(hex(new.agent_id)));
END;
"""


# Unspaced scripts (Chinese, Japanese, Korean, Thai) indexed one character a token, so a
# query can find them pair by pair (memory/text/segments.py): every full-text mirror's
# triggers and source view pass their text through mnemo_spaced, a function each SQLite
# connection registers, and the mirrors are rebuilt.
_SPACED_TABLES = (
    # table, text columns, what the insert, delete and update triggers also do
    ("facts", ("content",), "", "DELETE FROM embeddings WHERE item_type = 'fact' "
     "AND item_id = old.id;", "DELETE FROM embeddings WHERE item_type = 'fact' "
     "AND item_id = old.id;"),
    ("episodes", ("summary", "topics_json", "entities_json"), "",
     "DELETE FROM embeddings WHERE item_type = 'episode' AND item_id = old.id;",
     "DELETE FROM embeddings WHERE item_type = 'episode' AND item_id = old.id;"),
    ("transcript", ("content",), "",
     "DELETE FROM embeddings WHERE item_type = 'transcript' AND item_id = old.id;",
     "DELETE FROM embeddings WHERE item_type = 'transcript' AND item_id = old.id;"),
    ("document_chunks", ("content", "heading", "title"),
     "INSERT OR IGNORE INTO embedding_queue VALUES ('document', new.id);",
     "DELETE FROM embeddings WHERE item_type = 'document' AND item_id = old.id; "
     "DELETE FROM embedding_queue WHERE item_type = 'document' AND item_id = old.id; "
     "DELETE FROM embedding_failures WHERE item_type = 'document' AND item_id = old.id;",
     "DELETE FROM embeddings WHERE item_type = 'document' AND item_id = old.id; "
     "INSERT OR IGNORE INTO embedding_queue VALUES ('document', new.id);"),
    ("procedures", ("name", "applies_when", "steps_json"), "", "", ""),
)


def _spaced_fts(table: str, columns: tuple[str, ...], on_insert: str, on_delete: str,
                on_update: str) -> str:
    names = ", ".join(columns)

    def values(row: str) -> str:
        texts = ", ".join(f"mnemo_spaced({row}.{c})" for c in columns)
        return f"{row}.id, {texts}, 'g' || lower(hex({row}.agent_id))"

    return f"""
DROP TRIGGER {table}_fts_insert;
DROP TRIGGER {table}_fts_delete;
DROP TRIGGER {table}_fts_update;
DROP VIEW {table}_fts_source;
CREATE VIEW {table}_fts_source AS
    SELECT id, {", ".join(f"mnemo_spaced({c}) AS {c}" for c in columns)},
        'g' || lower(hex(agent_id)) AS agent FROM {table};
CREATE TRIGGER {table}_fts_insert AFTER INSERT ON {table} BEGIN
    INSERT INTO {table}_fts (rowid, {names}, agent) VALUES ({values("new")});
    {on_insert}
END;
CREATE TRIGGER {table}_fts_delete AFTER DELETE ON {table} BEGIN
    INSERT INTO {table}_fts ({table}_fts, rowid, {names}, agent)
    VALUES ('delete', {values("old")});
    {on_delete}
END;
CREATE TRIGGER {table}_fts_update AFTER UPDATE OF {names} ON {table} BEGIN
    INSERT INTO {table}_fts ({table}_fts, rowid, {names}, agent)
    VALUES ('delete', {values("old")});
    INSERT INTO {table}_fts (rowid, {names}, agent) VALUES ({values("new")});
    {on_update}
END;
INSERT INTO {table}_fts ({table}_fts) VALUES ('rebuild');
"""


_M015_UNSPACED_SCRIPTS = "".join(_spaced_fts(*spec) for spec in _SPACED_TABLES)


# A lease on one session's distillation (memory/store/claims.py): gone with its session.
_DISTILLATION_CLAIMS = """
CREATE TABLE distillation_claims (
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    holder TEXT NOT NULL,
    until REAL NOT NULL
);
"""


# What is imported again is recognised: a session keeps the title its source gave it
# (ChatGPT's), a document the hash of the bytes it was read from, so the same file is
# skipped and a changed one under the same name replaces it.
# The same statements serve PostgreSQL (postgres/schema.py, p004).
IMPORT_IDENTITY = """
ALTER TABLE sessions ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE documents ADD COLUMN content_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX documents_by_content ON documents (agent_id, content_hash);
"""


# Where each fact was said: the turns of the sessions it was distilled from (a fact stated
# again gains the new turn). Search finds a turn by the facts drawn from it, and the block
# shows one of the two; deleting a fact retracts what its turns said.
# The same statements serve PostgreSQL (postgres/schema.py, p007).
FACT_SOURCES = """
CREATE TABLE fact_sources (
    agent_id TEXT NOT NULL,
    fact_id INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_index INTEGER NOT NULL,
    PRIMARY KEY (fact_id, session_id, turn_index)
);
CREATE INDEX fact_sources_by_turn ON fact_sources (session_id, turn_index);
"""


RETRACTED_LINES = "ALTER TABLE transcript ADD COLUMN retracted_at REAL;"


MIGRATIONS: tuple[Migration, ...] = (
    ("m001_initial", _M001_TABLES),
    ("m002_full_text_search", _M002_FTS),
    # Consolidation raises a confirmed fact's salience once; promoted_at records that it did.
    ("m003_fact_promotion", "ALTER TABLE facts ADD COLUMN promoted_at REAL;"),
    # A search scoped to facts or episodes reads just those vectors (see memory/search/hybrid.py);
    # the new index serves everything the old one did.
    ("m004_embeddings_by_type",
     "CREATE INDEX embeddings_by_agent_model_type ON embeddings (agent_id, model, item_type);"
     "DROP INDEX embeddings_by_agent_model;"),
    ("m005_embedding_queue", _M005_EMBEDDING_QUEUE),
    # An item the embedder fails on alone is set aside for that model, with the reason, so
    # the start-up catch-up does not queue (and fail) it again in every process.
    ("m006_embedding_failures",
     "CREATE TABLE embedding_failures (item_type TEXT NOT NULL, item_id INTEGER NOT NULL, "
     "model TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL, "
     "PRIMARY KEY (item_type, item_id, model)) WITHOUT ROWID;"),
    ("m007_fts_by_agent", _M007_FTS_BY_AGENT),
    # A fact pinned by hand (the management API) is never faded nor evicted by consolidation.
    ("m008_fact_pinned_at", "ALTER TABLE facts ADD COLUMN pinned_at REAL;"),
    # Long threads (context_budget_tokens): each session's running summary of the turns
    # compressed out of its chat requests, reused while the same turns are sent again so
    # the compressed prefix stays byte-stable (gate/threads/). Keyed by the session key,
    # as the chat route knows it before the session's first turn is stored.
    ("m009_thread_summaries", _M009_THREAD_SUMMARIES),
    # Documents: a knowledge base per agent, searched like the rest of memory.
    ("m010_documents", _M010_DOCUMENTS),
    # Vectors shared by several processes: a sequence number per stored vector (a later
    # rebuild of the embeddings table must create its three triggers again).
    ("m011_vector_versions", _M011_VECTOR_VERSIONS),
    # Procedures: the how-tos sessions taught, searched by their words.
    ("m012_procedures", _M012_PROCEDURES),
    # Which process distils a session now (memory/store/claims.py).
    ("m013_distillation_claims", _DISTILLATION_CLAIMS),
    # A session's title and a document's content hash: imports recognise what is held.
    ("m014_import_identity", IMPORT_IDENTITY),
    # Chinese, Japanese, Korean and Thai found by their words (memory/text/segments.py).
    ("m015_unspaced_scripts", _M015_UNSPACED_SCRIPTS),
    # A turn that only asked what memory, injected for it, already held: kept for search
    # and audit, not served as memory again (proxy/chat/memory.py).
    ("m016_turns_restating_memory",
     "ALTER TABLE transcript ADD COLUMN restates_memory INTEGER NOT NULL DEFAULT 0;"),
    # Where each fact was said (fact_sources above).
    ("m017_fact_sources", FACT_SOURCES),
    # What a fact deleted or edited by hand said in its turns is no longer served
    # (memory/store/management/retract.py).
    ("m018_retracted_lines", RETRACTED_LINES),
)


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    conn.commit()
    return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply the steps not yet recorded, in order, each in its own transaction (on the
    writer's thread).

    Returns the names applied now. `migrations` is a parameter so tests can stop a
    database at an earlier step and upgrade it later.
    """
    done = set(applied_migrations(conn))
    applied: list[str] = []
    for name, sql in migrations:
        if name in done:
            continue
        # executescript commits any open transaction first, so the step's own BEGIN/COMMIT
        # live inside the script: a failing step leaves nothing half-applied.
        script = (
            f"BEGIN;\n{sql}\nINSERT INTO _migrations (name, applied_at) "
            f"VALUES ('{name}', {time.time()!r});\nCOMMIT;"
        )
        try:
            conn.executescript(script)
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise
        applied.append(name)
    return applied

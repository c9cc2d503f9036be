"""The store's SQLite statements as PostgreSQL takes them (memory/store/postgres.translate):
the pure translation, on the constructs the store uses."""

from __future__ import annotations

import pytest

from mnemoproxy.memory.store.postgres.connections import translate


@pytest.mark.parametrize(("sqlite", "postgres"), [
    ("SELECT * FROM t WHERE a = ? AND b LIKE ? ESCAPE '\\'",
     "SELECT * FROM t WHERE a = %s AND b ILIKE %s ESCAPE '\\'"),
    # Scalar MAX/MIN of several values, nested; the aggregate of one stays.
    ("UPDATE x SET a = MAX(b, MIN(c, ?)), e = (SELECT MAX(f) FROM y)",
     "UPDATE x SET a = GREATEST(b, LEAST(c, %s)), e = (SELECT MAX(f) FROM y)"),
    ("SELECT lower(group_concat(content, ' ')) FROM t",
     "SELECT lower(string_agg(content, ' ')) FROM t"),
    # Quoted text is left alone: no placeholder, no function, a literal % doubled.
    ("SELECT 'MAX(a, b) ?' , x FROM t WHERE y LIKE '%z%'",
     "SELECT 'MAX(a, b) ?' , x FROM t WHERE y ILIKE '%%z%%'"),
    ("SELECT 1 FROM t WHERE a IS ? AND b IS NOT ?",
     "SELECT 1 FROM t WHERE a IS NOT DISTINCT FROM %s AND b IS DISTINCT FROM %s"),
    ("INSERT OR IGNORE INTO embedding_queue VALUES ('fact', ?)",
     "INSERT INTO embedding_queue VALUES ('fact', %s) ON CONFLICT DO NOTHING"),
    ("INSERT OR IGNORE INTO transcript (a, b) VALUES (?, ?) RETURNING id",
     "INSERT INTO transcript (a, b) VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING id"),
    ("INSERT OR REPLACE INTO vector_resets (agent_key, resets) VALUES (?, ?)",
     "INSERT INTO vector_resets (agent_key, resets) VALUES (%s, %s) "
     "ON CONFLICT (agent_key) DO UPDATE SET resets = EXCLUDED.resets"),
    # SQLite's index hint (unary plus) becomes an expression no index serves.
    ("SELECT * FROM t WHERE +agent_id = ? AND id IN (?, ?)",
     "SELECT * FROM t WHERE (agent_id || '') = %s AND id IN (%s, %s)"),
    ("SELECT 1 WHERE c.id = 1 AND +c.agent_id = ? AND n = 1 + 2",
     "SELECT 1 WHERE c.id = 1 AND (c.agent_id || '') = %s AND n = 1 + 2"),
])
def test_statements_translate(sqlite: str, postgres: str) -> None:
    assert translate(sqlite) == postgres


def test_a_replace_into_a_table_of_unknown_key_is_refused() -> None:
    with pytest.raises(ValueError, match="conflict target"):
        translate("INSERT OR REPLACE INTO mystery (a) VALUES (?)")

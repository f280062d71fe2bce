"""The index's tables, kept in the store's own SQLite file beside the chunks.

- index_meta(key, value): model name, dimension, generation (bumped by every index run).
- embeddings(key, vec): float32 vectors keyed by sha1(model name + text). Store.save_page deletes and
  re-inserts a page's chunks (new ids), so keying by content lets an unchanged chunk of a re-crawled
  page find its vector again instead of being embedded anew.
- chunk_vectors(chunk_id, key): which vector each chunk has. A trigger drops the row when the chunk
  is deleted or its text changes, so a reused chunk id never points at another text's vector.
- chunks_fts: FTS5 over chunks (external content: the text is not stored twice), kept in sync with
  chunks by triggers once created, so the crawler needs to know nothing about it.
"""
from __future__ import annotations

import hashlib
import sqlite3

VECTOR_SCHEMA = """
CREATE TABLE IF NOT EXISTS index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunk_vectors (chunk_id INTEGER PRIMARY KEY, key BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS chunk_vectors_key ON chunk_vectors(key);
CREATE TRIGGER IF NOT EXISTS chunk_vectors_on_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_vectors WHERE chunk_id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS chunk_vectors_on_update AFTER UPDATE OF text ON chunks BEGIN
    DELETE FROM chunk_vectors WHERE chunk_id = old.id;
END;
"""

# remove_diacritics 2: "Zurich" finds "Zürich"; the heading path (JSON text) is searchable too.
FTS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, heading_path, content='chunks', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS chunks_fts_on_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text, heading_path) VALUES (new.id, new.text, new.heading_path);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_on_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading_path)
    VALUES ('delete', old.id, old.text, old.heading_path);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_on_update AFTER UPDATE OF text, heading_path ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading_path)
    VALUES ('delete', old.id, old.text, old.heading_path);
    INSERT INTO chunks_fts(rowid, text, heading_path) VALUES (new.id, new.text, new.heading_path);
END;
"""


def vector_key(model: str, text: str) -> bytes:
    return hashlib.sha1(model.encode() + b"\0" + text.encode("utf-8", "surrogatepass")).digest()


def has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name=?", (name,)).fetchone() is not None


def ensure_schema(db: sqlite3.Connection) -> None:
    """Create the index tables; the first time, fill the FTS table from the existing chunks."""
    db.executescript(VECTOR_SCHEMA)
    fresh = not has_table(db, "chunks_fts")
    db.executescript(FTS_SCHEMA)
    if fresh:
        db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")


def get_meta(db: sqlite3.Connection) -> dict[str, str]:
    if not has_table(db, "index_meta"):
        return {}
    return dict(db.execute("SELECT key, value FROM index_meta"))


def set_meta(db: sqlite3.Connection, **values: object) -> None:
    db.executemany("INSERT INTO index_meta(key, value) VALUES (?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                   [(k, str(v)) for k, v in values.items()])

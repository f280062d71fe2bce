"""The embedded store: one SQLite file holding pages, blocks and chunks.

WAL mode so that readers (search) do not block the writer (crawl). Later stages add their own
tables (frontier, crawl log, vectors, FTS) in their own modules, with CREATE ... IF NOT EXISTS.
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from ..records import Block, Chunk

SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,          -- canonical URL
    final_url TEXT,                    -- after redirects
    status INTEGER,
    content_type TEXT,
    title TEXT,
    content_hash TEXT,                 -- hash of the extracted text: unchanged pages are not re-indexed
    fetched_at REAL
);
CREATE TABLE IF NOT EXISTS blocks (
    id INTEGER PRIMARY KEY,
    page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    kind TEXT NOT NULL,
    heading_path TEXT NOT NULL,        -- JSON list
    tag_path TEXT NOT NULL,
    text TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS blocks_page ON blocks(page_id);
CREATE INDEX IF NOT EXISTS blocks_hash ON blocks(hash);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    block_position INTEGER NOT NULL,
    chunk_index INTEGER NOT NULL,
    url TEXT NOT NULL,
    heading_path TEXT NOT NULL,        -- JSON list
    text TEXT NOT NULL,
    block_hash TEXT NOT NULL,
    n_tokens INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_page ON chunks(page_id);
"""


class Store:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.commit()
        self.close()

    def save_page(self, url: str, blocks: list[Block], chunks: list[Chunk], *, final_url: str | None = None,
                  status: int = 200, content_type: str | None = None, title: str = "",
                  content_hash: str | None = None) -> int:
        """Insert or replace a page with its blocks and chunks; returns the page id. No commit."""
        cur = self.db.execute(
            "INSERT INTO pages(url, final_url, status, content_type, title, content_hash, fetched_at) "
            "VALUES (?,?,?,?,?,?,?) ON CONFLICT(url) DO UPDATE SET final_url=excluded.final_url, "
            "status=excluded.status, content_type=excluded.content_type, title=excluded.title, "
            "content_hash=excluded.content_hash, fetched_at=excluded.fetched_at RETURNING id",
            (url, final_url or url, status, content_type, title, content_hash, time.time()))
        page_id = cur.fetchone()[0]
        self.db.execute("DELETE FROM blocks WHERE page_id=?", (page_id,))
        self.db.execute("DELETE FROM chunks WHERE page_id=?", (page_id,))
        paths: dict[tuple[str, ...], str] = {}  # a block's chunks share its heading path: encode it once

        def path_json(hp: tuple[str, ...]) -> str:
            js = paths.get(hp)
            if js is None:
                js = paths[hp] = json.dumps(list(hp), ensure_ascii=False)
            return js
        self.db.executemany(
            "INSERT INTO blocks(page_id, position, kind, heading_path, tag_path, text, hash) VALUES (?,?,?,?,?,?,?)",
            [(page_id, b.position, b.kind, path_json(tuple(b.heading_path)), b.tag_path, b.text, b.hash)
             for b in blocks])
        self.db.executemany(
            "INSERT INTO chunks(page_id, block_position, chunk_index, url, heading_path, text, block_hash, n_tokens) "
            "VALUES (?,?,?,?,?,?,?,?)",
            [(page_id, c.block_position, c.chunk_index, c.url or url,
              path_json(tuple(c.heading_path)), c.text, c.block_hash, c.n_tokens)
             for c in chunks])
        return page_id

    def commit(self) -> None:
        self.db.commit()

    def iter_chunks(self) -> Iterator[tuple[int, str, list[str], str]]:
        """(chunk id, url, heading path, text) of every chunk, in insertion order."""
        for cid, url, hp, text in self.db.execute("SELECT id, url, heading_path, text FROM chunks ORDER BY id"):
            yield cid, url, json.loads(hp), text

    def block_hashes(self, url_prefix: str | None = None) -> list[tuple[str, str]]:
        """(text, hash) of stored blocks in page order: reloads a site's dedup state on resume.
        With url_prefix, only blocks of pages whose URL starts with it (one site)."""
        if url_prefix is None:
            return list(self.db.execute("SELECT text, hash FROM blocks ORDER BY page_id, position"))
        return list(self.db.execute(
            "SELECT b.text, b.hash FROM blocks b JOIN pages p ON p.id = b.page_id "
            "WHERE substr(p.url, 1, ?) = ? ORDER BY b.page_id, b.position", (len(url_prefix), url_prefix)))

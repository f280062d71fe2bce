"""The persistent frontier and crawl log: tables in the store's SQLite file.

Every URL the crawl ever accepted has one row keyed by its canonical form, so the table is also
the seen-set. A page's outcome and the links it discovered are written in one transaction, hence
after a kill -9 nothing is lost: rows still queued or in_flight are fetched by --resume (in_flight
ones were interrupted and go back to the queue), rows done are never fetched again.
"""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass

QUEUED, IN_FLIGHT, DONE, FAILED, SKIPPED = 0, 1, 2, 3, 4
STATE_NAMES = {QUEUED: "queued", IN_FLIGHT: "in_flight", DONE: "done", FAILED: "failed", SKIPPED: "skipped"}

SCHEMA = """
CREATE TABLE IF NOT EXISTS frontier (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,          -- canonical URL (identity: /x and /x/ are one)
    fetch_url TEXT,                    -- the form requested, if different ("/x" as linked)
    host TEXT NOT NULL,                -- scheme://host[:port]
    depth INTEGER NOT NULL,
    kind TEXT NOT NULL DEFAULT 'page', -- page | sitemap
    state INTEGER NOT NULL DEFAULT 0,  -- 0 queued 1 in_flight 2 done 3 failed 4 skipped
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    hops INTEGER NOT NULL DEFAULT 0,   -- redirects that led here
    trail INTEGER NOT NULL DEFAULT 0,  -- hops from dated page to dated page (crawl.traps)
    via TEXT,                          -- the URL that redirected here
    status INTEGER,
    error TEXT,
    updated REAL
);
CREATE INDEX IF NOT EXISTS frontier_state ON frontier(state);
CREATE TABLE IF NOT EXISTS crawl_log (
    id INTEGER PRIMARY KEY,
    t REAL NOT NULL,
    url TEXT NOT NULL,
    event TEXT NOT NULL,               -- fetched, redirect, retry, failed, skipped
    status INTEGER,
    error TEXT,
    detail TEXT,
    bytes INTEGER,
    elapsed REAL
);
CREATE TABLE IF NOT EXISTS crawl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(slots=True)
class Item:
    """A frontier entry in memory."""

    url: str  # the key (url_key of the canonical URL)
    host: str
    depth: int
    kind: str = "page"
    attempts: int = 0
    hops: int = 0
    via: str | None = None
    not_before: float = 0.0
    fetch: str | None = None  # URL to request when it differs from the key
    trail: int = 0  # date-chain trail (crawl.traps)

    @property
    def target(self) -> str:
        return self.fetch or self.url


class Frontier:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        db.executescript(SCHEMA)
        if "trail" not in {r[1] for r in db.execute("PRAGMA table_info(frontier)")}:  # a store from before
            db.execute("ALTER TABLE frontier ADD COLUMN trail INTEGER NOT NULL DEFAULT 0")

    # -- meta (seeds and scope of the crawl, for --resume)
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM crawl_meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO crawl_meta(key, value) VALUES (?,?)", (key, value))

    def reset(self) -> None:
        """Forget the previous crawl's frontier (pages already stored stay)."""
        self.db.execute("DELETE FROM frontier")
        self.db.execute("DELETE FROM crawl_meta")

    def size(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM frontier").fetchone()[0])

    def seen_urls(self) -> set[str]:
        return {u for (u,) in self.db.execute("SELECT url FROM frontier")}

    def restore(self) -> list[Item]:
        """Items still to fetch, in discovery order; interrupted (in_flight) ones are queued again."""
        self.db.execute("UPDATE frontier SET state=? WHERE state=?", (QUEUED, IN_FLIGHT))
        rows = self.db.execute("SELECT url, host, depth, kind, attempts, hops, via, not_before, fetch_url, trail "
                               "FROM frontier "
                               "WHERE state=? ORDER BY depth, id", (QUEUED,))
        return [Item(*r) for r in rows]

    def add(self, items: Iterable[Item]) -> None:
        now = time.time()
        self.db.executemany(
            "INSERT OR IGNORE INTO frontier(url, fetch_url, host, depth, kind, hops, via, trail, updated) "
            "VALUES (?,?,?,?,?,?,?,?,?)",
            [(it.url, it.fetch, it.host, it.depth, it.kind, it.hops, it.via, it.trail, now) for it in items])

    def mark(self, url: str, state: int, status: int | None = None, error: str | None = None,
             attempts: int | None = None, not_before: float = 0.0) -> None:
        if attempts is None:
            self.db.execute("UPDATE frontier SET state=?, status=?, error=?, updated=? WHERE url=?",
                            (state, status, error, time.time(), url))
        else:
            self.db.execute("UPDATE frontier SET state=?, status=?, error=?, attempts=?, not_before=?, updated=? "
                            "WHERE url=?", (state, status, error, attempts, not_before, time.time(), url))

    def log(self, url: str, event: str, status: int | None = None, error: str | None = None,
            detail: str = "", nbytes: int = 0, elapsed: float = 0.0) -> None:
        self.db.execute("INSERT INTO crawl_log(t, url, event, status, error, detail, bytes, elapsed) "
                        "VALUES (?,?,?,?,?,?,?,?)", (time.time(), url, event, status, error, detail[:500],
                                                    nbytes, round(elapsed, 4)))

"""The persistent frontier and crawl log: tables in the store's SQLite file (see store.schema).

Every URL the crawl ever accepted has one row keyed by its canonical form, so the table is also
the seen-set. A page's outcome and the links it discovered are written in one transaction, hence
after a kill -9 nothing is lost: rows still queued or in_flight are fetched by --resume (in_flight
ones were interrupted and go back to the queue), rows done are never fetched again.

Same methods and signatures as the crawl engine's Frontier protocol; no commit here: the crawler
commits through the store (its PageSink), so a page and its frontier row land together.
"""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable

from ..crawl.frontier import IN_FLIGHT, QUEUED, Item


class SqliteFrontier:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db  # the store's writer connection: the schema is the store's (store.schema)

    # -- meta (seeds and scope of the crawl, for --resume)
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM crawl_meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

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
                               "FROM frontier WHERE state=? ORDER BY depth, id", (QUEUED,))
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

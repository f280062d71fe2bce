"""The persistent frontier and crawl log: tables in the store (see store.schema, store.pgschema).

Every URL the crawl ever accepted has one row keyed by its canonical form, so the table is also
the seen-set. A page's outcome and the links it discovered are written in one transaction, hence
after a kill -9 nothing is lost: rows still queued or in_flight are fetched by --resume (in_flight
ones were interrupted and go back to the queue), rows done are never fetched again.

Same methods and signatures as the crawl engine's Frontier protocol, for either backend (the SQL
goes through the store's dialect hooks, store.base); no commit here: the crawler commits through the
store (its PageSink), so a page and its frontier row land together. Database faults (disk full, a
connection lost) are one StoreError line naming the store, as from the store's own methods.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from ..frontier_item import IN_FLIGHT, QUEUED, Item
from .core import guard

if TYPE_CHECKING:
    from .core import SqlCore


class SqlFrontier:
    def __init__(self, store: SqlCore) -> None:
        self.store = store
        self.db: Any = store._writable()  # the store's writer connection: the schema is the store's
        self.location = store.location

    def _fault(self, e: BaseException) -> StoreError | None:
        return self.store._fault(e)

    def _exec(self, sql: str, args: tuple[object, ...] = ()) -> Any:
        return self.store._exec(self.db, sql, args)

    # -- meta (seeds and scope of the crawl, for --resume)
    @guard
    def get_meta(self, key: str) -> str | None:
        row = self._exec("SELECT value FROM crawl_meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    @guard
    def set_meta(self, key: str, value: str) -> None:
        self._exec("INSERT INTO crawl_meta(key, value) VALUES (?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                   (key, value))

    @guard
    def reset(self) -> None:
        """Forget the previous crawl's frontier (pages already stored stay)."""
        self._exec("DELETE FROM frontier")
        self._exec("DELETE FROM crawl_meta")

    @guard
    def size(self) -> int:
        return int(self._exec("SELECT count(*) FROM frontier").fetchone()[0])

    @guard
    def seen_urls(self) -> set[str]:
        return {str(u) for (u,) in self._exec("SELECT url FROM frontier")}

    @guard
    def restore(self, limit: int | None = None) -> list[Item]:
        """Items still to fetch, in discovery order; interrupted (in_flight) ones are queued again.
        limit: the first so many (crawl.engine.queues reads back what spilled past the memory cap)."""
        self._exec("UPDATE frontier SET state=? WHERE state=?", (QUEUED, IN_FLIGHT))
        sql = ("SELECT url, host, depth, kind, attempts, hops, via, not_before, fetch_url, trail "
               "FROM frontier WHERE state=? ORDER BY depth, id")
        args: tuple[object, ...] = (QUEUED,) if limit is None else (QUEUED, limit)
        rows = self._exec(sql if limit is None else sql + " LIMIT ?", args).fetchall()
        return [Item(*r) for r in rows]

    @guard
    def add(self, items: Iterable[Item]) -> None:
        now = time.time()
        self.store._many(
            self.db, "INSERT INTO frontier(url, fetch_url, host, depth, kind, hops, via, trail, updated) "
                     "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(url) DO NOTHING",
            [(it.url, it.fetch, it.host, it.depth, it.kind, it.hops, it.via, it.trail, now) for it in items])

    @guard
    def mark(self, url: str, state: int, status: int | None = None, error: str | None = None,
             attempts: int | None = None, not_before: float = 0.0) -> None:
        if attempts is None:
            self._exec("UPDATE frontier SET state=?, status=?, error=?, updated=? WHERE url=?",
                       (state, status, error, time.time(), url))
        else:
            self._exec("UPDATE frontier SET state=?, status=?, error=?, attempts=?, not_before=?, updated=? "
                       "WHERE url=?", (state, status, error, attempts, not_before, time.time(), url))

    @guard
    def log(self, url: str, event: str, status: int | None = None, error: str | None = None,
            detail: str = "", nbytes: int = 0, elapsed: float = 0.0) -> None:
        self._exec("INSERT INTO crawl_log(t, url, event, status, error, detail, bytes, elapsed) "
                   "VALUES (?,?,?,?,?,?,?,?)", (time.time(), url, event, status, error, detail[:500],
                                               nbytes, round(elapsed, 4)))


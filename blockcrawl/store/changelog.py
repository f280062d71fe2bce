"""The change log (schema 7): which crawl changed which pages and chunks, for `blockcrawl changes`.

Every crawl run is a row of `crawls` (started, ended, finished). The store's own writes record what
they did in `changes`, on the writer's connection, so an op is committed with the work it describes
and a crawl killed before a commit leaves neither (--resume goes on with the unfinished crawl's row):

- page ops: added, changed (reason "revised": re-extracted by a learned site model), unchanged (a
  recrawl's 304 or same body), removed (reason "gone 404", "gone 410", "noindex", "canonical
  elsewhere", "directory index"); a changed or removed page keeps its main text before (`changes --what pages --diff`);
- chunk ops: added, removed, moved (same text, heading path and context, new place in the page):
  save_page keeps the ids of a changed page's unchanged chunks (store.writes._put_content).

The feed (blockcrawl.feed) is the net effect of the ops after a cursor `seq`: each chunk touched is an
upsert of what is stored now or a delete, in the order of its last op. Compaction drops whole old
crawls' ops; crawls.compacted keeps the highest seq dropped, so a cursor from before it is refused
(its deletes are gone) instead of answered wrongly.
"""
from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from ..errors import StoreError
from .core import SqlCore, guard

LogRow = tuple[str, str, str, int | None, str | None, str | None]  # what, op, url, chunk_id, reason, before
CRAWL_COLUMNS = ("id", "started", "ended", "finished", "compacted")
# a feed's chunk fields: export --what chunks's (store.reads), then the page's
FEED_CHUNK = ("id", "url", "block_position", "chunk_index", "heading_path", "text", "block_hash", "n_tokens")
FEED_PAGE = ("url", "final_url", "status", "title", "kind", "summary", "meta")


class ChangeLog(SqlCore):
    """Recording (no commit: the caller's transaction) and reading the change log."""

    _crawl_id: int | None = None

    def _log(self, db: Any, rows: list[LogRow]) -> None:
        if rows:
            t = time.time()
            self._many(db, "INSERT INTO changes(crawl_id, t, what, op, url, chunk_id, reason, before) "
                           "VALUES (?,?,?,?,?,?,?,?)", [(self._crawl_id, t, *r) for r in rows])

    @guard
    def begin_crawl(self, resume: bool = False) -> int:
        """The crawl run the following writes belong to: with resume, the last crawl if it did not
        finish (an interrupted run goes on under its id); else a new row. No commit (the seed plan's)."""
        db = self._writable()
        if resume:
            row = self._exec(db, "SELECT id, finished FROM crawls ORDER BY id DESC LIMIT 1").fetchone()
            if row is not None and not row[1]:
                self._crawl_id = int(row[0])
                return self._crawl_id
        self._crawl_id = int(self._exec(db, "INSERT INTO crawls(started) VALUES (?) RETURNING id",
                                        (time.time(),)).fetchone()[0])
        return self._crawl_id

    @guard
    def finish_crawl(self) -> int | None:
        """The current crawl ended as asked (not interrupted): its end time, finished; commits."""
        cid, self._crawl_id = self._crawl_id, None
        if cid is not None:
            self._exec(self._writable(), "UPDATE crawls SET ended=?, finished=1 WHERE id=?", (time.time(), cid))
            self.commit()
        return cid

    @guard
    def crawls(self) -> list[dict[str, object]]:
        """Every crawl run, oldest first ([] for a store from before schema 7)."""
        with self._reading() as db:
            if not self._has_table(db, "crawls"):
                return []
            return [dict(zip(CRAWL_COLUMNS, r)) for r in self._exec(
                db, f"SELECT {', '.join(CRAWL_COLUMNS)} FROM crawls ORDER BY id")]

    @guard
    def crawl_counts(self, crawl_id: int) -> dict[str, int]:
        """{"pages_added": n, "chunks_removed": m, ...}: the ops a crawl recorded, by kind."""
        with self._reading() as db:
            return {f"{what}s_{op}": int(n) for what, op, n in self._exec(
                db, "SELECT what, op, count(*) FROM changes WHERE crawl_id=? GROUP BY what, op", (crawl_id,))}

    @guard
    def change_bound(self, kind: str, value: float = 0) -> int:
        """The seq after which the ops asked for begin: kind "crawl" (ops of crawls after crawl
        `value`), "last" (ops of the newest crawl), "time" (ops at or after unix time `value`),
        "cursor" (ops after seq `value`). StoreError when compaction dropped ops that are needed."""
        with self._reading() as db:
            if not self._has_table(db, "changes"):
                raise StoreError(f"{self.location} has no change log (written before schema 7): "
                                 "open it with a writer (e.g. crawl --recrawl) to start one")
            def one(sql: str, *a: object) -> Any:
                return self._exec(db, sql, a).fetchone()[0]
            dropped = int(one("SELECT coalesce(max(compacted), 0) FROM crawls"))
            last_gone = int(one("SELECT coalesce(max(id), 0) FROM crawls WHERE compacted > 0"))
            if kind == "last":
                value = int(one("SELECT coalesce(max(id), 0) FROM crawls")) - 1
                kind = "crawl"
            if kind == "crawl":
                if value < last_gone:
                    raise StoreError(f"the changes of crawl {last_gone} and before were compacted: "
                                     f"load 'export --what chunks' and follow with --since {last_gone}")
                bound = int(one("SELECT coalesce(max(seq), 0) FROM changes WHERE crawl_id <= ?", int(value)))
                return max(bound, dropped)
            if kind == "time":
                bound = int(one("SELECT coalesce(max(seq), 0) FROM changes WHERE t < ?", float(value)))
                gone_t = float(one("SELECT coalesce(max(coalesce(ended, started)), 0) FROM crawls WHERE compacted > 0"))
                if dropped and float(value) < gone_t:
                    raise StoreError("the changes before then were compacted: load 'export --what chunks' "
                                     f"and follow with --since {last_gone}")
                return max(bound, dropped)
            if int(value) < dropped:
                raise StoreError(f"cursor {int(value)} is older than the compacted changes (up to {dropped}): "
                                 f"load 'export --what chunks' and follow with --since {last_gone}")
            return int(value)

    @guard
    def chunk_ops(self, after: int, limit: int | None = None) -> list[tuple[int, int, str]]:
        """(seq, chunk id, url) of the last op of each chunk touched after seq `after`, in seq order."""
        with self._reading() as db:
            return [(int(s), int(c), str(u)) for s, c, u in self._exec(
                db, "SELECT ch.seq, ch.chunk_id, ch.url FROM changes ch JOIN (SELECT max(seq) AS s FROM changes "
                    "WHERE what = 'chunk' AND seq > ? GROUP BY chunk_id) m ON ch.seq = m.s ORDER BY ch.seq"
                    + (f" LIMIT {int(limit)}" if limit is not None else ""), (after,))]

    @guard
    def page_ops(self, after: int) -> list[tuple[int, int | None, str, str, str | None, str | None]]:
        """(seq, crawl id, url, op, reason, before) of the page ops after seq `after`, in order (read
        at once: the log holds a few crawls' ops, compaction drops the rest)."""
        with self._reading() as db:
            return [(int(s), None if c is None else int(c), str(u), str(op), reason, before)
                    for s, c, u, op, reason, before in self._exec(
                        db, "SELECT seq, crawl_id, url, op, reason, before FROM changes WHERE what = 'page' AND seq > ? "
                            "ORDER BY seq", (after,))]

    @guard
    def crawl_span(self, crawl_id: int) -> tuple[int, int]:
        """(the seq before the crawl's first op, its last op's): `--since cursor:FIRST` gives its changes."""
        with self._reading() as db:
            lo, hi = self._exec(db, "SELECT min(seq), max(seq) FROM changes WHERE crawl_id=?", (crawl_id,)).fetchone()
        if lo is None:
            last = self.last_seq()
            return last, last
        return int(lo) - 1, int(hi)

    @guard
    def last_seq(self) -> int:
        with self._reading() as db:
            return int(self._exec(db, "SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])

    @guard
    def compact_changes(self, before: float) -> int:
        """Drop the ops of the crawls that ended (or, interrupted, began) before unix time `before`,
        oldest first and never the newest crawl's; returns how many ops went. Commits."""
        db = self._writable()
        row = self._exec(db, "SELECT max(id) FROM crawls WHERE coalesce(ended, started) < ? AND "
                             "id < (SELECT max(id) FROM crawls)", (before,)).fetchone()
        if row is None or row[0] is None:
            return 0
        upto = int(row[0])
        seq = self._exec(db, "SELECT max(seq) FROM changes WHERE crawl_id <= ?", (upto,)).fetchone()[0]
        n = 0
        if seq is not None:
            n = int(self._exec(db, "DELETE FROM changes WHERE seq <= ?", (int(seq),)).rowcount)
            self._exec(db, "UPDATE crawls SET compacted=? WHERE id <= ? AND compacted = 0", (int(seq), upto))
        self.commit()
        return n

    @guard
    def feed_chunks(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The stored chunks among ids with their page's fields, as the feed writes them: the export
        record's columns (export --what chunks), title, page {...}, and "heading_only" (no vector)."""
        out: dict[int, dict[str, Any]] = {}
        with self._reading() as db:
            for i in range(0, len(ids), 500):
                part = [int(x) for x in ids[i:i + 500]]
                q = (f"SELECT {', '.join('c.' + c for c in FEED_CHUNK)}, {', '.join('p.' + c for c in FEED_PAGE)}, "
                     "(SELECT b.kind FROM blocks b WHERE b.page_id = c.page_id AND b.position = c.block_position "
                     "LIMIT 1) FROM chunks c JOIN pages p ON p.id = c.page_id "
                     f"WHERE c.id IN ({','.join('?' * len(part))})")
                for row in self._exec(db, q, part):
                    rec = dict(zip(FEED_CHUNK, row))
                    rec["heading_path"] = json.loads(str(rec["heading_path"]))
                    page = dict(zip(FEED_PAGE, row[len(FEED_CHUNK):]))
                    page["meta"] = json.loads(str(page["meta"])) if page["meta"] else {}
                    rec["title"], rec["page"], rec["heading_only"] = page["title"] or "", page, row[-1] == "heading"
                    out[int(row[0])] = rec
        return out

    @guard
    def missing_vectors(self, after: int | None = None) -> int:
        """How many stored chunks that should have a vector (not heading-only) have none: all of
        them, or (after) those touched by ops after that seq. 0 means `--vectors` can be served."""
        with self._reading() as db:
            if not self._has_table(db, "chunk_vectors"):
                return -1
            touched = "" if after is None else \
                " AND c.id IN (SELECT chunk_id FROM changes WHERE what = 'chunk' AND seq > ?)"
            return int(self._exec(db, "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v "
                                      "WHERE v.chunk_id = c.id) AND coalesce((SELECT b.kind FROM blocks b WHERE "
                                      "b.page_id = c.page_id AND b.position = c.block_position LIMIT 1), 'text') "
                                      "<> 'heading'" + touched, () if after is None else (after,)).fetchone()[0])

    @guard
    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, bytes]:
        """chunk id -> its stored vector (float32 bytes), for those of ids that have one."""
        out: dict[int, bytes] = {}
        with self._reading() as db:
            if not self._has_table(db, "chunk_vectors"):
                return out
            for i in range(0, len(ids), 500):
                part = [int(x) for x in ids[i:i + 500]]
                for cid, vec in self._exec(db, "SELECT v.chunk_id, e.vec FROM chunk_vectors v JOIN embeddings e "
                                               f"ON e.key = v.key WHERE v.chunk_id IN ({','.join('?' * len(part))})", part):
                    out[int(cid)] = bytes(vec)
        return out

    @guard
    def pages_now(self, urls: Sequence[str]) -> dict[str, tuple[str, str]]:
        """url -> (title, main text) of the stored pages among urls."""
        out: dict[str, tuple[str, str]] = {}
        with self._reading() as db:
            for i in range(0, len(urls), 500):
                part = list(urls[i:i + 500])
                for url, title, text in self._exec(db, "SELECT url, title, text FROM pages "
                                                       f"WHERE url IN ({','.join('?' * len(part))})", part):
                    out[str(url)] = (str(title or ""), str(text or ""))
        return out

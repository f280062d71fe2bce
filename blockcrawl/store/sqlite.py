"""The embedded store: one SQLite file holding pages, blocks, chunks, the frontier and the index.

Two ways to open it:
- writer (`SqliteStore(path)`; crawl, index): holds the store's writer lock (store.lock) for its
  lifetime, migrates an older file in place, WAL mode so that readers never wait for it;
- reader (`SqliteStore(path, readonly=True)`; search, export, serve): never writes, never creates,
  opens `file:...?mode=ro`, and `immutable=1` when the folder does not let SQLite create the WAL
  index (-shm) next to a read-only file. Readers take no lock: they work during a crawl.

Every SQLite fault a user can meet (not a database, truncated, read-only, locked) surfaces as one
StoreError line naming the file, never as a traceback.
"""
from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Self, TypeVar, cast
from urllib.parse import quote

from ..errors import NotIndexed, StoreError, StoreMissing
from ..records import embedding_text
from .lock import WriterLock
from .protocols import RECORD_KINDS, StoredChunk
from .schema import (
    SCHEMA_VERSION,
    check,
    ensure_index_schema,
    get_index_meta,
    has_table,
    migrate,
    set_index_meta,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..records import Block, Chunk, PageInfo
    from .frontier import SqliteFrontier

P = ParamSpec("P")
R = TypeVar("R")

BUSY_MS = 30000  # a reader meets the writer's checkpoint, a writer a reader's long scan: wait, do not fail
POOL_MAX = 8  # idle reader connections kept for other threads (serve's request threads)

# keyword search (see keyword_ranked)
_TERM = re.compile(r"\w+", re.UNICODE)
# Dropped from keyword queries (terms are OR-ed, so these would match nearly every chunk).
_STOP = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "is", "it", "of", "on", "or", "that",
    "the", "this", "to", "was", "were", "what", "when", "where", "which", "who", "why", "with", "about", "does", "do", "did",
])
COMMON_SHARE = 0.05  # of the chunks: a word in more of them is common (see keyword_ranked)
COMMON_MIN_ROWS = 2000  # chunks: scoring this many costs ~2 ms, so a rarer word is never common
_BM25 = "SELECT rowid, bm25(chunks_fts, 1.0, 0.5, 0.5) AS s FROM chunks_fts WHERE chunks_fts MATCH ?"
# the same restricted to some pages (a JSON array of page ids): FTS5 selects, then each match's
# chunk row is looked up by id and its page tested against the ids (an ephemeral index, built once)
_BM25_IN = ("SELECT chunks_fts.rowid, bm25(chunks_fts, 1.0, 0.5, 0.5) AS s FROM chunks_fts "
            "JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? "
            "AND c.page_id IN (SELECT value FROM json_each(?))")

_EXPORTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "pages": (("SELECT p.id, p.url, p.final_url, p.status, p.content_type, p.title, p.content_hash, p.fetched_at, "
              "(SELECT count(*) FROM blocks b WHERE b.page_id = p.id), "
              "(SELECT count(*) FROM chunks c WHERE c.page_id = p.id), "
              "p.text, p.kind, p.kind_score, p.summary, p.cluster, p.meta FROM pages p ORDER BY p.id"),
              ("id", "url", "final_url", "status", "content_type", "title", "content_hash", "fetched_at",
               "n_blocks", "n_chunks", "text", "kind", "kind_score", "summary", "cluster", "meta")),
    "blocks": (("SELECT b.id, p.url, b.position, b.kind, b.heading_path, b.tag_path, b.text, b.hash "
               "FROM blocks b JOIN pages p ON p.id = b.page_id ORDER BY b.page_id, b.position"),
               ("id", "url", "position", "kind", "heading_path", "tag_path", "text", "hash")),
    "chunks": (("SELECT id, url, block_position, chunk_index, heading_path, text, block_hash, n_tokens "
               "FROM chunks ORDER BY id"),
               ("id", "url", "block_position", "chunk_index", "heading_path", "text", "block_hash", "n_tokens")),
    "frontier": ("SELECT url, depth, kind, state, attempts, status, error, via FROM frontier ORDER BY id",
                 ("url", "depth", "kind", "state", "attempts", "status", "error", "via")),
}
assert set(_EXPORTS) == set(RECORD_KINDS)
# schema 5's page-info columns: a reader of an older store (never migrated) reads them as NULL
_INFO_COLUMNS = ("text", "kind", "kind_score", "summary", "cluster", "meta")


def _info_row(info: PageInfo | None) -> tuple[object, ...]:
    """The pages columns text, kind, kind_score, summary, meta, cluster of a PageInfo (NULLs, -1)."""
    if info is None:
        return None, None, None, None, None, -1
    return (info.text, info.kind, float(info.kind_score), info.summary,
            json.dumps(info.meta.to_dict(), ensure_ascii=False), int(info.cluster))


def _pages_sql(sql: str, have: set[str]) -> str:
    """The pages export for a store that may predate schema 5."""
    for col in _INFO_COLUMNS:
        if col not in have:
            sql = sql.replace(f"p.{col},", f"{-1 if col == 'cluster' else 'NULL'},").replace(f"p.{col} FROM", "NULL FROM")
    return sql


def _store_fault(e: sqlite3.Error) -> bool:
    """A fault of the file or its surroundings (corrupt, read-only, locked, disk full), not of our SQL."""
    return isinstance(e, (sqlite3.OperationalError, sqlite3.DataError, sqlite3.InternalError)) or \
        type(e) is sqlite3.DatabaseError


def _guard(fn: Callable[Concatenate[SqliteStore, P], R]) -> Callable[Concatenate[SqliteStore, P], R]:
    """SQLite faults of the file as one StoreError line naming the store."""
    @functools.wraps(fn)
    def wrapper(self: SqliteStore, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(self, *args, **kwargs)
        except sqlite3.Error as e:
            if not _store_fault(e):
                raise
            raise StoreError(f"{self.location}: {e}") from e
    return cast("Callable[Concatenate[SqliteStore, P], R]", wrapper)


class SqliteStore:
    """A store in one SQLite file. Implements PageSink, ChunkSource, SearchStore, RecordSource."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True, readonly: bool = False,
                 who: str = "a blockcrawl writer") -> None:
        """create: make the file (and its folders) when missing; else StoreMissing. readonly: a
        reader (never creates). who: how a second writer is told who holds the lock."""
        self.path = Path(path)
        self.location = str(self.path)
        self.readonly = readonly
        self.ann_base: Path | None = self.path
        self._lock: WriterLock | None = None
        self._pool: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._owner = threading.get_ident()
        self._closed = False
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a folder, not a store")
        memory = str(path) == ":memory:"  # SQLite's in-memory database: no file, no lock
        if not memory and not self.path.exists():
            if readonly or not create:
                raise StoreMissing(f"no store at {self.path} (run 'blockcrawl crawl URL --store {self.path}' first)")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"cannot create {self.path}: {e.strerror or e}") from None
        self.cache_key = str(self.path.resolve())
        if readonly:
            self._uri, self._db = self._open_reader()
        else:
            if self.path.exists() and not os.access(self.path, os.W_OK):
                raise StoreError(f"cannot write {self.path}: read-only file (a read-only store can be searched "
                                 "and exported, not crawled or indexed)")
            self._lock = None if memory else WriterLock(self.path, who)
            try:
                self._db = self._open_writer()
            except BaseException:
                if self._lock is not None:
                    self._lock.release()
                raise
            self._uri = self._uri_of("mode=ro")

    # ------------------------------------------------------------------ opening and closing
    def _uri_of(self, params: str) -> str:
        return f"file:{quote(str(self.path.resolve()))}?{params}"

    def _open_writer(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, check_same_thread=False)
        try:
            check(db, self.location)  # before any write: another program's file is left untouched
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            migrate(db, self.location)
        except sqlite3.Error as e:
            db.close()
            raise StoreError(f"cannot open {self.location}: {e}") from None
        except BaseException:
            db.close()
            raise
        return db

    def _open_reader(self) -> tuple[str, sqlite3.Connection]:
        """mode=ro first; immutable=1 when SQLite cannot open the WAL index beside a read-only file
        (no -shm there and the folder read-only). immutable skips locking and the WAL: right for a
        store nobody writes, which a read-only one is; a crawl killed mid-write left its last
        commits in the -wal file, which an immutable reader does not see."""
        last: sqlite3.Error | None = None
        for params in ("mode=ro", "immutable=1"):
            uri = self._uri_of(params)
            db = sqlite3.connect(uri, uri=True, timeout=BUSY_MS / 1000, check_same_thread=False)
            try:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError as e:  # "unable to open database file": the -shm
                db.close()
                last = e
                continue
            except sqlite3.DatabaseError as e:  # "file is not a database"
                db.close()
                raise StoreError(f"{self.location} is not a readable SQLite store: {e}") from None
            try:
                check(db, self.location)
                if not has_table(db, "chunks"):  # an empty file (`touch site.db`) has nothing to read
                    raise StoreError(f"{self.location} is not a blockcrawl store (no chunks table)")
            except BaseException:
                db.close()
                raise
            return uri, db
        raise StoreError(f"cannot read {self.location}: {last}")

    def _connect_reader(self) -> sqlite3.Connection:
        return sqlite3.connect(self._uri, uri=True, timeout=BUSY_MS / 1000, check_same_thread=False)

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The owner thread's connection, or a pooled read-only one for any other thread (serve's
        request threads, hybrid search's keyword thread): one connection is never used by two
        threads at once. A writer's own thread reads its uncommitted rows; other threads read the
        last commit."""
        if threading.get_ident() == self._owner:
            yield self._db
            return
        with self._pool_lock:
            db = self._pool.pop() if self._pool else None
        if db is None:
            db = self._connect_reader()
        try:
            yield db
        finally:
            with self._pool_lock:
                keep = not self._closed and len(self._pool) < POOL_MAX
                if keep:
                    self._pool.append(db)
            if not keep:
                db.close()

    @property
    def db(self) -> sqlite3.Connection:
        """The owner's connection (tests and benchmarks read it; stages use the methods)."""
        return self._db

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, []
        for db in pool:
            db.close()
        self._db.close()
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if not self.readonly:
                self.commit()
        finally:
            self.close()

    def _writable(self) -> sqlite3.Connection:
        if self.readonly:
            raise StoreError(f"{self.location} was opened read-only")
        return self._db

    # ------------------------------------------------------------------ PageSink (crawl)
    @_guard
    def save_page(self, url: str, blocks: list[Block], chunks: list[Chunk], *, final_url: str | None = None,
                  status: int = 200, content_type: str | None = None, title: str = "",
                  content_hash: str | None = None, markdown: str | None = None, etag: str | None = None,
                  last_modified: str | None = None, body_hash: str | None = None,
                  info: PageInfo | None = None) -> int:
        """Insert or replace a page with its blocks and chunks; returns the page id. No commit.
        markdown: the page's main content as Markdown (export --format markdown), if made.
        etag, last_modified: the answer's validators, sent back by `crawl --recrawl`; body_hash: the
        body's hash, by which a recrawl tells an unchanged page from a server without validators.
        info: the page's text, kind, summary, metadata and cluster (schema 5; NULL when None)."""
        db = self._writable()
        cur = db.execute(
            "INSERT INTO pages(url, final_url, status, content_type, title, content_hash, fetched_at, markdown, etag, "
            "last_modified, body_hash, text, kind, kind_score, summary, meta, cluster) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(url) DO UPDATE SET "
            "final_url=excluded.final_url, status=excluded.status, content_type=excluded.content_type, "
            "title=excluded.title, content_hash=excluded.content_hash, fetched_at=excluded.fetched_at, "
            "markdown=excluded.markdown, etag=excluded.etag, last_modified=excluded.last_modified, "
            "body_hash=excluded.body_hash, text=excluded.text, kind=excluded.kind, kind_score=excluded.kind_score, "
            "summary=excluded.summary, meta=excluded.meta, cluster=excluded.cluster RETURNING id",
            (url, final_url or url, status, content_type, title, content_hash, time.time(), markdown or None, etag,
             last_modified, body_hash, *_info_row(info)))
        page_id = int(cur.fetchone()[0])
        self._put_content(db, page_id, url, blocks, chunks)
        return page_id

    @_guard
    def replace_content(self, url: str, blocks: list[Block], chunks: list[Chunk], *, markdown: str | None = None,
                        content_hash: str | None = None, info: PageInfo | None = None) -> int | None:
        """Replace a stored page's blocks, chunks, Markdown, content hash and info (site learning:
        the page re-extracted with the model learned after it was stored), keeping what the fetch
        gave (status, validators, fetch time, title). Returns the page id, or None when no page
        is stored at url (not stored: noindex, canonical elsewhere). No commit."""
        db = self._writable()
        row = db.execute(
            "UPDATE pages SET markdown=?, content_hash=coalesce(?, content_hash), text=?, kind=?, kind_score=?, "
            "summary=?, meta=?, cluster=? WHERE url=? RETURNING id",
            (markdown or None, content_hash, *_info_row(info), url)).fetchone()
        if row is None:
            return None
        page_id = int(row[0])
        self._put_content(db, page_id, url, blocks, chunks)
        return page_id

    @staticmethod
    def _put_content(db: sqlite3.Connection, page_id: int, url: str, blocks: list[Block], chunks: list[Chunk]) -> None:
        db.execute("DELETE FROM blocks WHERE page_id=?", (page_id,))
        db.execute("DELETE FROM chunks WHERE page_id=?", (page_id,))
        paths: dict[tuple[str, ...], str] = {}  # a block's chunks share its heading path: encode it once

        def path_json(hp: tuple[str, ...]) -> str:
            js = paths.get(hp)
            if js is None:
                js = paths[hp] = json.dumps(list(hp), ensure_ascii=False)
            return js
        db.executemany(
            "INSERT INTO blocks(page_id, position, kind, heading_path, tag_path, text, hash) VALUES (?,?,?,?,?,?,?)",
            [(page_id, b.position, b.kind, path_json(tuple(b.heading_path)), b.tag_path, b.text, b.hash)
             for b in blocks])
        db.executemany(
            "INSERT INTO chunks(page_id, block_position, chunk_index, url, heading_path, text, block_hash, n_tokens, "
            "context) VALUES (?,?,?,?,?,?,?,?,?)",
            [(page_id, c.block_position, c.chunk_index, c.url or url,
              path_json(tuple(c.heading_path)), c.text, c.block_hash, c.n_tokens, c.context)
             for c in chunks])

    # ------------------------------------------------------------------ site models (crawl --algorithm site)
    @_guard
    def save_site_model(self, site: str, model: str, *, version: int, pages: int, fallbacks: int) -> None:
        """Store (or replace) the site's learned model, JSON as the pipeline gave it. No commit.
        Saving the same version again (the crawl updates the counts after each page of the site)
        keeps its learned_at."""
        self._writable().execute(
            "INSERT INTO site_models(site, version, model, learned_at, pages, fallbacks) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(site) DO UPDATE SET version=excluded.version, model=excluded.model, "
            "learned_at=CASE WHEN site_models.version IS excluded.version THEN site_models.learned_at "
            "ELSE excluded.learned_at END, pages=excluded.pages, fallbacks=excluded.fallbacks",
            (site, version, model, time.time(), pages, fallbacks))

    @_guard
    def site_models(self) -> list[dict[str, object]]:
        """Every stored site model (site, version, model, learned_at, pages, fallbacks), by site;
        [] for a store from before schema 5."""
        with self._reading() as db:
            if not has_table(db, "site_models"):
                return []
            cols = ("site", "version", "model", "learned_at", "pages", "fallbacks")
            return [dict(zip(cols, r)) for r in db.execute(f"SELECT {', '.join(cols)} FROM site_models ORDER BY site")]

    @_guard
    def commit(self) -> None:
        self._db.commit()

    @_guard
    def block_hashes(self, url_prefix: str | None = None) -> list[tuple[str, str]]:
        """(text, hash) of stored blocks in page order: reloads a site's dedup state on resume.
        With url_prefix, only blocks of pages whose URL starts with it (one site)."""
        if url_prefix is None:
            return list(self._db.execute("SELECT text, hash FROM blocks ORDER BY page_id, position"))
        return list(self._db.execute(
            "SELECT b.text, b.hash FROM blocks b JOIN pages p ON p.id = b.page_id "
            "WHERE substr(p.url, 1, ?) = ? ORDER BY b.page_id, b.position", (len(url_prefix), url_prefix)))

    # ------------------------------------------------------------------ recrawl (crawl --recrawl)
    @_guard
    def recrawl_pages(self) -> list[tuple[str, str, float, str | None, str | None, str | None]]:
        """(url, final_url, fetched_at, etag, last_modified, body_hash) of every stored page, oldest
        fetch first: what an incremental recrawl revisits."""
        return [(str(u), str(f or u), float(t or 0.0), e, m, h) for u, f, t, e, m, h in self._writable().execute(
            "SELECT url, final_url, fetched_at, etag, last_modified, body_hash FROM pages ORDER BY fetched_at")]

    @_guard
    def touch_page(self, url: str, *, etag: str | None = None, last_modified: str | None = None) -> None:
        """The page was confirmed unchanged (304, or the same text): its fetch time is now; new
        validators, if the answer carried any, replace the old. No commit."""
        self._writable().execute(
            "UPDATE pages SET fetched_at=?, etag=coalesce(?, etag), last_modified=coalesce(?, last_modified) "
            "WHERE url=?", (time.time(), etag, last_modified, url))

    @_guard
    def delete_page(self, url: str) -> bool:
        """Remove a page that is gone (404/410) with its blocks and chunks; the chunks' keyword-index
        rows and vector mappings go with them (triggers of the index schema), so search never returns
        it again. Returns whether there was such a page. No commit."""
        db = self._writable()
        row = db.execute("SELECT id FROM pages WHERE url=?", (url,)).fetchone()
        if row is None:
            return False
        db.execute("DELETE FROM chunks WHERE page_id=?", (row[0],))
        db.execute("DELETE FROM blocks WHERE page_id=?", (row[0],))
        db.execute("DELETE FROM pages WHERE id=?", (row[0],))
        return True

    def frontier(self) -> SqliteFrontier:
        """The crawl's frontier and log, on this store's writer connection (committed with the pages)."""
        from .frontier import SqliteFrontier

        return SqliteFrontier(self._writable())

    def crawl_log(self) -> SqliteFrontier:
        """Where a worker of a shared frontier (crawl --frontier redis://) writes its crawl log:
        the store's frontier object, of which it only calls `log`."""
        return self.frontier()

    # ------------------------------------------------------------------ ChunkSource (index)
    @_guard
    def begin_index(self, model: str, dim: int) -> dict[str, str]:
        db = self._writable()
        ensure_index_schema(db)
        meta = get_index_meta(db)
        if meta.get("model") not in (None, model) or meta.get("dim") not in (None, str(dim)):
            # another model: its vectors live in another space, start over
            db.execute("DELETE FROM chunk_vectors")
            db.execute("DELETE FROM embeddings")
        set_index_meta(db, model=model, dim=dim)
        db.commit()
        return meta

    @_guard
    def chunks_to_embed(self) -> list[tuple[int, str]]:
        # Chunks of heading-only blocks ("Europe Countries:") get no vector: alone they are close to
        # every query about their topic yet hold nothing to read; keyword search still finds them.
        # The text embedded is the chunk's context (title > outer headings) and its text.
        return [(int(c), embedding_text(str(x), str(t))) for c, x, t in self._db.execute(
            "SELECT c.id, c.context, c.text FROM chunks c LEFT JOIN chunk_vectors v ON v.chunk_id = c.id "
            "LEFT JOIN blocks b ON b.page_id = c.page_id AND b.position = c.block_position "
            "WHERE v.chunk_id IS NULL AND coalesce(b.kind, 'text') != 'heading'")]

    @_guard
    def vector_keys(self) -> set[bytes]:
        return {bytes(k) for (k,) in self._db.execute("SELECT key FROM embeddings")}

    @_guard
    def map_vectors(self, pairs: Iterable[tuple[int, bytes]]) -> None:
        self._writable().executemany("INSERT OR REPLACE INTO chunk_vectors(chunk_id, key) VALUES (?,?)", pairs)

    @_guard
    def save_vectors(self, keys: Sequence[bytes], vectors: npt.NDArray[np.float32],
                     chunk_ids: Sequence[Sequence[int]]) -> None:
        import numpy as np

        db = self._writable()
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        db.executemany("INSERT OR REPLACE INTO embeddings(key, vec) VALUES (?,?)",
                       [(k, vecs[i].tobytes()) for i, k in enumerate(keys)])
        db.executemany("INSERT OR REPLACE INTO chunk_vectors(chunk_id, key) VALUES (?,?)",
                       [(cid, k) for k, ids in zip(keys, chunk_ids) for cid in ids])

    @_guard
    def repair_vectors(self, dim: int) -> int:
        """Delete stored vectors that are not dim finite float32 values and the chunk mappings left
        pointing at no vector, so the chunks are embedded again (store.vecblob); returns how many
        chunks lost their vector. No commit."""
        from .vecblob import damaged_keys

        db = self._writable()
        bad = damaged_keys(db.execute("SELECT key, vec FROM embeddings"), dim)
        db.executemany("DELETE FROM embeddings WHERE key = ?", [(k,) for k in bad])
        return int(db.execute("DELETE FROM chunk_vectors WHERE key NOT IN (SELECT key FROM embeddings)").rowcount)

    @_guard
    def clear_vectors(self) -> None:
        """Forget every vector (index --rebuild). No commit."""
        db = self._writable()
        db.execute("DELETE FROM chunk_vectors")
        db.execute("DELETE FROM embeddings")

    @_guard
    def drop_unused_vectors(self) -> int:
        return int(self._writable().execute(
            "DELETE FROM embeddings WHERE key NOT IN (SELECT key FROM chunk_vectors)").rowcount)

    @_guard
    def finish_index(self, generation: int, indexed_at: float) -> None:
        set_index_meta(self._writable(), generation=generation, indexed_at=indexed_at)
        self._db.commit()

    @_guard
    def count_chunks(self) -> int:
        with self._reading() as db:
            return int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    # ------------------------------------------------------------------ SearchStore (search, serve)
    @_guard
    def index_meta(self) -> dict[str, str]:
        with self._reading() as db:
            if not has_table(db, "chunks_fts"):
                return {}
            return get_index_meta(db)

    @_guard
    def load_vectors(self, dim: int | None = None) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        with self._reading() as db:
            if "generation" in get_index_meta(db) and not (has_table(db, "embeddings")
                                                           and has_table(db, "chunk_vectors")):
                raise NotIndexed(f"store {self.location}: its vector tables are missing (was the store edited?); "
                                 f"run 'blockcrawl index --rebuild --store {self.location}'")
            return load_vectors(db, dim, self.location)

    @_guard
    def keyword_ranked(self, query: str, n: int, pages: Sequence[int] | None = None) -> list[tuple[int, float]]:
        with self._reading() as db:
            return keyword_ranked(db, query, n, pages=pages)

    @_guard
    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        out: dict[int, StoredChunk] = {}
        with self._reading() as db:
            for i in range(0, len(ids), 500):
                part = list(ids[i:i + 500])
                q = ("SELECT c.id, c.url, c.heading_path, c.text, p.title, c.page_id, c.block_position, "
                     "c.chunk_index FROM chunks c "
                     f"LEFT JOIN pages p ON p.id = c.page_id WHERE c.id IN ({','.join('?' * len(part))})")
                for cid, url, hp, text, title, page_id, pos, idx in db.execute(q, part):
                    out[cid] = StoredChunk(cid, url, tuple(json.loads(hp)), text, title or "", page_id, pos, idx)
        return out

    @_guard
    def pages_matching(self, site: str | None = None, url_prefix: str | None = None, kind: str | None = None,
                       lang: str | None = None, since: str | None = None) -> list[int]:
        """Ids (ascending) of the pages whose URL is on host `site` or one of its subdomains (a port
        in `site` must match too) and starts with `url_prefix`; with kind, lang, since, only pages
        whose stored info (schema 5) says so: kind equal ("article"), language equal or a subtag of
        it (lang "en" takes "en" and "en-gb"), published on or after since (ISO 8601 strings compare
        as dates do; a page without a date is left out). The prefix is a range on the pages.url
        index. The host comes from a per-store table host[:port] -> page ids, built once
        and again only when pages were added or removed: cutting the host out of every URL in SQL
        took 15-40 ms a query for 5,000 pages (load 8), the table's look-up well under 1 ms."""
        ids: set[int] | None = None
        if site is not None:
            ids = set()
            with_port = ":" in site.lstrip("[").split("]")[-1]
            for hostport, pages in self._page_hosts().items():
                host = hostport if with_port else _strip_port(hostport)
                if host == site or host.endswith("." + site):
                    ids.update(pages)
        if url_prefix is not None:
            with self._reading() as db:
                under = {int(r[0]) for r in db.execute("SELECT id FROM pages WHERE url >= ? AND url < ?",
                                                       (url_prefix, _prefix_end(url_prefix)))}
            ids = under if ids is None else ids & under
        if kind is not None or lang is not None or since is not None:
            info = self._pages_by_info(kind, lang, since)
            ids = info if ids is None else ids & info
        if ids is None:
            with self._reading() as db:
                return [int(r[0]) for r in db.execute("SELECT id FROM pages ORDER BY id")]
        return sorted(ids)

    def _pages_by_info(self, kind: str | None, lang: str | None, since: str | None) -> set[int]:
        """Pages by their stored info: one scan of the index pages_info (schema.PAGE_INFO_INDEX,
        4-20 ms for 5,000 pages at load 10); a store from before schema 5 has no page info, so no
        page matches."""
        where: list[str] = []
        args: list[object] = []
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        if lang is not None:
            where.append("(lower(json_extract(meta, '$.language')) = ? "
                         "OR lower(json_extract(meta, '$.language')) LIKE ? ESCAPE '\\')")
            args += [lang.lower(), lang.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "-%"]
        if since is not None:
            where.append("json_extract(meta, '$.published') >= ? AND json_extract(meta, '$.published') != ''")
            args.append(since)
        with self._reading() as db:
            if "kind" not in {str(r[1]) for r in db.execute("PRAGMA table_info(pages)")}:
                return set()
            return {int(r[0]) for r in db.execute(f"SELECT id FROM pages WHERE {' AND '.join(where)}", args)}

    def _page_hosts(self) -> dict[str, list[int]]:
        """host[:port] (lower case, no user info) -> ids of its pages, kept per store file. A page's URL never changes
        (save_page updates a page in place by URL), so the table is valid while the file (inode, ctime:
        a checkpoint changes it too, which only costs a rebuild), the pages' count and highest id are."""
        with self._reading() as db:
            try:  # the file itself: a store deleted and crawled anew at the same path is another file
                st = os.stat(self.path)
                file_id: tuple[object, ...] = (st.st_ino, st.st_ctime_ns)
            except OSError:
                file_id = (id(self),)
            key = (*file_id, *db.execute("SELECT count(*), max(id) FROM pages").fetchone())
            with _hosts_lock:
                cached = _hosts.get(self.cache_key)
            if cached is not None and cached[0] == key:
                return cached[1]
            table: dict[str, list[int]] = {}
            for pid, url in db.execute("SELECT id, url FROM pages"):
                table.setdefault(_hostport(str(url)), []).append(int(pid))
        with _hosts_lock:
            _hosts[self.cache_key] = (key, table)
        return table
    @_guard
    def chunk_pages(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(chunk ids ascending, their page ids) of every chunk: lets search restrict the vector
        matrix to some pages without a query per search (~40 ms at 100k chunks, once per index
        generation)."""
        import numpy as np

        with self._reading() as db:
            rows = db.execute("SELECT id, page_id FROM chunks ORDER BY id").fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0].copy(), arr[:, 1].copy()

    @_guard
    def has_blocks(self) -> bool:
        with self._reading() as db:
            return db.execute("SELECT 1 FROM blocks LIMIT 1").fetchone() is not None

    @_guard
    def block_texts(self, keys: Sequence[tuple[int, int]]) -> dict[tuple[int, int], str]:
        """Text of the blocks at (page id, position), those that exist."""
        out: dict[tuple[int, int], str] = {}
        with self._reading() as db:
            for page_id, pos in dict.fromkeys(keys):
                row = db.execute("SELECT text FROM blocks WHERE page_id = ? AND position = ?", (page_id, pos)).fetchone()
                if row is not None:
                    out[page_id, pos] = str(row[0])
        return out

    @_guard
    def page_chunks(self, page_id: int) -> list[tuple[int, str]]:
        """(chunk id, text) of a page's chunks in reading order (block, then chunk within it)."""
        with self._reading() as db:
            return [(int(i), str(t)) for i, t in db.execute(
                "SELECT id, text FROM chunks WHERE page_id = ? ORDER BY block_position, chunk_index, id", (page_id,))]

    # ------------------------------------------------------------------ RecordSource (export)
    def records(self, what: str) -> Iterator[dict[str, object]]:
        """Streamed: a million chunks never sit in memory at once."""
        from ..crawl.frontier import STATE_NAMES

        if what not in _EXPORTS:
            raise StoreError(f"cannot export {what!r}: one of {', '.join(RECORD_KINDS)}")
        sql, cols = _EXPORTS[what]
        try:
            with self._reading() as db:
                if what == "pages":
                    sql = _pages_sql(sql, {str(r[1]) for r in db.execute("PRAGMA table_info(pages)")})
                for row in db.execute(sql):
                    rec: dict[str, object] = dict(zip(cols, row))
                    if "heading_path" in rec:
                        rec["heading_path"] = json.loads(str(rec["heading_path"]))
                    if what == "pages":  # meta as a nested object ({} when the page has no info)
                        rec["meta"] = json.loads(str(rec["meta"])) if rec["meta"] else {}
                        if rec["cluster"] is None:
                            rec["cluster"] = -1
                    if what == "frontier":
                        rec["state"] = STATE_NAMES.get(int(str(rec["state"])), rec["state"])
                    yield rec
        except sqlite3.Error as e:
            if not _store_fault(e):
                raise
            raise StoreError(f"{self.location}: {e}") from e


    def page_markdown(self) -> Iterator[tuple[str, str, str | None, list[tuple[tuple[str, ...], str, str]]]]:
        """(url, title, markdown, blocks) of every page in crawl order, streamed. markdown is None
        for pages stored without it (before schema 2, or crawled with --no-extract); blocks
        (heading path, kind, text) are then given, for the headings-and-text fallback."""
        try:
            with self._reading() as db:
                cols = {str(r[1]) for r in db.execute("PRAGMA table_info(pages)")}
                md = "markdown" if "markdown" in cols else "NULL"
                for pid, url, title, text in db.execute(f"SELECT id, url, title, {md} FROM pages ORDER BY id"):
                    blocks: list[tuple[tuple[str, ...], str, str]] = []
                    if text is None:
                        blocks = [(tuple(json.loads(hp)), str(kind), str(t)) for hp, kind, t in db.execute(
                            "SELECT heading_path, kind, text FROM blocks WHERE page_id=? ORDER BY position", (pid,))]
                    yield str(url), str(title or ""), None if text is None else str(text), blocks
        except sqlite3.Error as e:
            if not _store_fault(e):
                raise
            raise StoreError(f"{self.location}: {e}") from e


# ---------------------------------------------------------------------- SQL the methods share


def load_vectors(db: sqlite3.Connection, dim: int | None = None,
                 location: str = "store") -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """(chunk ids int64 ascending, float32 matrix of shape (n, dim)).

    Two sequential scans joined in Python: a JOIN looks every chunk's vector up by its 20-byte key,
    random B-tree reads that took ~3-5 s at 100k chunks against ~0.5 s for the scans. Chunks with
    the same text share one stored vector. A damaged vector (wrong size, NaN) is left out with one
    warning (store.vecblob); `index` embeds it again."""
    import numpy as np

    from .vecblob import usable, warn_damaged

    if not has_table(db, "chunk_vectors"):
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim or 0), dtype=np.float32)
    if not dim:
        dim = int(get_index_meta(db).get("dim", "0") or 0)
    rows = db.execute("SELECT chunk_id, key FROM chunk_vectors ORDER BY chunk_id").fetchall()
    where: dict[bytes, list[int]] = {}
    for i, (_, key) in enumerate(rows):
        where.setdefault(key, []).append(i)
    matrix: npt.NDArray[np.float32] | None = None
    filled = np.zeros(len(rows), dtype=bool)
    damaged = 0
    for key, blob in db.execute("SELECT key, vec FROM embeddings"):
        at = where.get(key)
        if at is None:
            continue
        vec = usable(blob, dim) if dim else np.frombuffer(blob, dtype=np.float32)
        if vec is None:
            damaged += 1
            continue
        if matrix is None:
            matrix = np.empty((len(rows), len(vec)), dtype=np.float32)
        matrix[at] = vec
        filled[at] = True
    warn_damaged(damaged, location)
    if matrix is None:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim or 0), dtype=np.float32)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not filled.all():  # a mapping without its vector, or a damaged one
        ids, matrix = ids[filled], matrix[filled]
    return ids, matrix


def keyword_terms(query: str) -> list[str]:
    """The query's distinct words as quoted FTS5 phrases (no FTS syntax from users), stop words
    dropped unless nothing else is left."""
    terms = [t.lower() for t in _TERM.findall(query)]
    kept = [t for t in terms if t not in _STOP] or terms
    return ['"' + t.replace('"', '""') + '"' for t in dict.fromkeys(kept)]


# SqliteStore._page_hosts's tables, by store file (cache_key): shared by every Store opened on it, as
# search()'s vector cache is, so that search("site.db", ...) does not rebuild it on each call
_hosts: dict[str, tuple[tuple[object, ...], dict[str, list[int]]]] = {}
_hosts_lock = threading.Lock()


def _hostport(url: str) -> str:
    """host[:port] of a URL, lower case, without user info: "HTTP://u@B.test:81/x" -> "b.test:81"."""
    rest = url.partition("://")[2]
    for sep in "/?#":
        rest = rest.partition(sep)[0]
    return rest.rpartition("@")[2].lower()


def _strip_port(hostport: str) -> str:
    if hostport.startswith("["):  # an IPv6 literal: [::1]:8000
        return hostport[:hostport.find("]") + 1] if "]" in hostport else hostport
    return hostport.partition(":")[0]


def _prefix_end(prefix: str) -> str:
    """The least string above every string that starts with prefix (SQLite compares text by UTF-8
    bytes, which orders as code points do)."""
    last = prefix[-1]
    if ord(last) == 0x10FFFF:
        return _prefix_end(prefix[:-1]) if len(prefix) > 1 else "\U0010ffff" * 2
    nxt = ord(last) + 1
    if 0xD800 <= nxt <= 0xDFFF:  # surrogates are no characters: skip to the next code point
        nxt = 0xE000
    return prefix[:-1] + chr(nxt)


def keyword_ranked(db: sqlite3.Connection, query: str, n: int, common_share: float = COMMON_SHARE,
                   common_min_rows: int = COMMON_MIN_ROWS,
                   pages: Sequence[int] | None = None) -> list[tuple[int, float]]:
    """The n best chunks for the OR of the query's words by bm25 (text counts twice the heading path),
    best first, as (chunk id, score) with score = -bm25 (higher is better).

    Common words (in more than common_share of the chunks and more than common_min_rows of them)
    score but do not select when the query has rarer words, as in Lucene's CommonTermsQuery: bm25 is
    a sum of independent per-word parts, so each chunk returned gets the very score of the plain OR
    query; left out are chunks whose only match is a common word (idf <= log(19) = 2.9, against 7.6
    for a word in 1 of 2000 chunks). The plain query ranks those below every chunk that scores more
    than sum(idf * (k1 + 1)) of the common words, so its top n is unchanged whenever n such chunks
    exist; else the list is shorter. Scoring them was the cost: bm25 of the 18k chunks of 100k that
    hold a word like "news" took ~20 ms a query.

    pages: only chunks of these pages (the filter applies before the top n is cut, so a filter
    matching few pages still gets its n best); the common/rare split stays global, as bm25's idf.
    """
    terms = keyword_terms(query)
    if not terms:
        return []
    rare, common = terms, []
    if len(terms) > 1:
        total = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        cutoff = max(common_min_rows, common_share * total)
        # rows per term, as FTS5 tokenizes it (the same count bm25's idf uses); cheap for rare terms
        df = {t: db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (t,)).fetchone()[0]
              for t in terms}
        rare = [t for t in terms if 0 < df[t] <= cutoff]
        common = [t for t in terms if df[t] > cutoff]
        if not rare:  # only common words: nothing to select by, rank them all
            rare, common = common, []
        if not rare:
            return []
    either = " OR ".join(rare)
    sql, extra = (_BM25, ()) if pages is None else (_BM25_IN, (json.dumps(list(pages)),))
    if not common:
        rows = db.execute(f"{sql} ORDER BY s, chunks_fts.rowid LIMIT ?", (either, *extra, n)).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]
    # every chunk holding a rare word, scored on the rare words; then the full score of those of
    # them that also hold a common word (an AND, which FTS5 answers by seeking, not scanning)
    scores = {int(r[0]): -float(r[1]) for r in db.execute(sql, (either, *extra))}
    scores.update((int(r[0]), -float(r[1]))
                  for r in db.execute(sql, (f"({either}) AND ({' OR '.join(common)})", *extra)))
    return sorted(scores.items(), key=lambda r: (-r[1], r[0]))[:n]


__all__ = ["SCHEMA_VERSION", "SqliteStore", "keyword_ranked", "keyword_terms", "load_vectors"]

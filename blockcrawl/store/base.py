"""The store contract written once: every method whose SQL both backends share (SqlStore).

SqliteStore (store.sqlite) and PostgresStore (store.postgres) differed in 38% of 1,559 lines before
this class, and had begun to drift (chunks_to_embed ordered by id in one only, site_models kept the
learned time in one only). What still differs is a small set of hooks, each a few lines:

- placeholders: the SQL here is written with `?`; `_q` turns it into the driver's (`%s` for psycopg);
- upserts: both speak `INSERT ... ON CONFLICT (key) DO UPDATE/NOTHING` (SQLite >= 3.24), no hook;
- JSON paths and byte order: `_json_text`, `BYTE_ORDER`; URL prefixes: `_prefix`;
- locks: `_lock_frontier`, `_prepare_index` (SQLite's writer lock is the file's, taken on open);
- full-text search: `_keyword` (FTS5 against tsvector), `_chunk_extra` (PostgreSQL's keyword columns),
  `_has_index`, and `_drop_mappings` (SQLite drops vector mappings by trigger);
- connections: `_connect_reader`, `_stream` (a server-side cursor in PostgreSQL), `_fault` (which
  driver errors are the store's and how they read as one StoreError line).

tests/test_store.py runs one contract suite against both backends.
"""
from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, Self, TypeVar, cast

from ..errors import StoreError
from ..records import embedding_text
from .protocols import RECORD_KINDS, StoredChunk

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import numpy.typing as npt

    from ..records import Block, Chunk, PageInfo
    from .frontier import SqlFrontier

P = ParamSpec("P")
R = TypeVar("R")


class Faulty(Protocol):
    def _fault(self, e: BaseException) -> StoreError | None: ...


S = TypeVar("S", bound=Faulty)

POOL_MAX = 8  # idle reader connections kept for other threads (serve's request threads)
BATCH = 500  # ids per IN (...) list: SQLite allows 32,766 variables, PostgreSQL 65,535

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
# schema 5's page-info columns: a reader of an older SQLite store (never migrated) reads them as NULL
_INFO_COLUMNS = ("text", "kind", "kind_score", "summary", "cluster", "meta")
_SITE_COLUMNS = ("site", "version", "model", "learned_at", "pages", "fallbacks")


def info_row(info: PageInfo | None) -> tuple[object, ...]:
    """The pages columns text, kind, kind_score, summary, meta, cluster of a PageInfo (NULLs, -1)."""
    if info is None:
        return None, None, None, None, None, -1
    return (info.text, info.kind, float(info.kind_score), info.summary,
            json.dumps(info.meta.to_dict(), ensure_ascii=False), int(info.cluster))


def guard(fn: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """The driver's faults of the store as one StoreError line naming it (SqlStore._fault)."""
    @functools.wraps(fn)
    def wrapper(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(self, *args, **kwargs)
        except Exception as e:
            err = self._fault(e)
            if err is None:
                raise
            raise err from e
    return cast("Callable[Concatenate[S, P], R]", wrapper)


def hostport(url: str) -> str:
    """host[:port] of a URL, lower case, without user info: "HTTP://u@B.test:81/x" -> "b.test:81"."""
    rest = url.partition("://")[2]
    for sep in "/?#":
        rest = rest.partition(sep)[0]
    return rest.rpartition("@")[2].lower()


def strip_port(hostport: str) -> str:
    if hostport.startswith("["):  # an IPv6 literal: [::1]:8000
        return hostport[:hostport.find("]") + 1] if "]" in hostport else hostport
    return hostport.partition(":")[0]


# _page_hosts's tables, by store (cache_key): shared by every store object opened on it, as search()'s
# vector cache is, so that search("site.db", ...) does not rebuild it on each call
_hosts: dict[str, tuple[tuple[object, ...], dict[str, list[int]]]] = {}
_hosts_lock = threading.Lock()


def vectors_from(rows: list[tuple[int, bytes]], blobs: Iterable[tuple[bytes, bytes]],
                 dim: int | None) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """(chunk ids ascending, float32 matrix) from the (chunk id, key) mappings in chunk order and a
    stream of (key, vector blob). Two sequential scans joined in Python: a JOIN looks every chunk's
    vector up by its 20-byte key, random B-tree reads that took ~3-5 s at 100k chunks against
    ~0.5 s for the scans. Chunks with the same text share one stored vector."""
    import numpy as np

    where: dict[bytes, list[int]] = {}
    for i, (_, key) in enumerate(rows):
        where.setdefault(bytes(key), []).append(i)
    matrix: npt.NDArray[np.float32] | None = None
    filled = np.zeros(len(rows), dtype=bool)
    for key, blob in blobs:
        at = where.get(bytes(key))
        if at is None:
            continue
        vec = np.frombuffer(blob, dtype=np.float32)
        if matrix is None:
            matrix = np.empty((len(rows), len(vec)), dtype=np.float32)
        matrix[at] = vec
        filled[at] = True
    if matrix is None:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim or 0), dtype=np.float32)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not filled.all():  # a mapping without its vector (cannot happen through build_index)
        ids, matrix = ids[filled], matrix[filled]
    return ids, matrix


class SqlStore:
    """The methods of PageSink, ChunkSource, SearchStore and RecordSource, once for both backends."""

    location: str
    cache_key: str
    ann_base: Path | None
    readonly: bool
    _db: Any
    BYTE_ORDER = ""  # appended to ORDER BY / comparisons of text that must order by code point
    FOR_UPDATE = ""  # appended to a SELECT of the row a writer is about to change
    CHUNK_EXTRA: tuple[str, ...] = ()  # extra chunks columns filled by _chunk_extra

    def _init_pool(self) -> None:
        self._pool: list[Any] = []
        self._pool_lock = threading.Lock()
        self._owner = threading.get_ident()
        self._closed = False

    # ------------------------------------------------------------------ dialect hooks
    def _fault(self, e: BaseException) -> StoreError | None:
        """e as one StoreError line if it is the store's fault (the driver's), else None."""
        raise NotImplementedError

    def _q(self, sql: str) -> str:
        """sql with the driver's placeholders (written with `?` here)."""
        return sql

    def _connect_reader(self) -> Any:
        raise NotImplementedError

    def _has_table(self, db: Any, name: str) -> bool:
        raise NotImplementedError

    def _columns(self, db: Any, table: str) -> set[str]:
        raise NotImplementedError

    def _json_text(self, col: str, key: str) -> str:
        """SQL of the text at key of the JSON object in col."""
        raise NotImplementedError

    def _prefix(self, expr: str, prefix: str) -> tuple[str, list[object]]:
        """SQL (and its arguments) that expr starts with prefix."""
        raise NotImplementedError

    def _file_id(self) -> tuple[object, ...]:
        """What tells this store from another at the same location (for the page-host cache)."""
        return ()

    def _chunk_extra(self, text: str, heading_json: str, context: str) -> tuple[object, ...]:
        return ()

    def _drop_mappings(self, db: Any, page_id: int) -> None:
        """Delete the vector mappings of a page's chunks before the chunks go."""

    def _prepare_index(self, db: Any) -> None:
        """Create or lock what an index run needs."""

    def _has_index(self, db: Any) -> bool:
        raise NotImplementedError

    def _keyword(self, db: Any, query: str, n: int, pages: Sequence[int] | None) -> list[tuple[int, float]]:
        raise NotImplementedError

    def _lock_frontier(self) -> None:
        """Make sure this is the only crawl using the store's frontier."""

    @contextmanager
    def _stream(self, db: Any, sql: str, args: Sequence[object] = ()) -> Iterator[Iterable[tuple[Any, ...]]]:
        """The rows of a query, not all in memory at once."""
        yield db.execute(self._q(sql), args)

    # ------------------------------------------------------------------ execution
    def _exec(self, db: Any, sql: str, args: Sequence[object] = ()) -> Any:
        return db.execute(self._q(sql), args)

    def _many(self, db: Any, sql: str, rows: Sequence[Sequence[object]]) -> None:
        if rows:
            with db.cursor() as cur:
                cur.executemany(self._q(sql), rows)

    @contextmanager
    def _reading(self) -> Iterator[Any]:
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
                keep = not self._closed and len(self._pool) < POOL_MAX and not getattr(db, "closed", False)
                if keep:
                    self._pool.append(db)
            if not keep:
                db.close()

    def _close_pool(self) -> None:
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, []
        for db in pool:
            db.close()

    @property
    def db(self) -> Any:
        """The owner's connection (tests and benchmarks read it; stages use the methods)."""
        return self._db

    def close(self) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if not self.readonly:
                self.commit()
        finally:
            self.close()

    def _writable(self) -> Any:
        if self.readonly:
            raise StoreError(f"{self.location} was opened read-only")
        return self._db

    # ------------------------------------------------------------------ PageSink (crawl)
    @guard
    def save_page(self, url: str, blocks: list[Block], chunks: list[Chunk], *, final_url: str | None = None,
                  status: int = 200, content_type: str | None = None, title: str = "",
                  content_hash: str | None = None, markdown: str | None = None, etag: str | None = None,
                  last_modified: str | None = None, body_hash: str | None = None,
                  info: PageInfo | None = None) -> int:
        """Insert or replace a page (by URL) with its blocks and chunks; returns the page id. No commit.
        markdown: the page's main content as Markdown (export --format markdown), if made.
        etag, last_modified: the answer's validators, sent back by `crawl --recrawl`; body_hash: the
        body's hash, by which a recrawl tells an unchanged page from a server without validators.
        info: the page's text, kind, summary, metadata and cluster (schema 5; NULL when None).
        The upsert locks that one pages row until commit (PostgreSQL: writers of other pages go on)."""
        db = self._writable()
        row = self._exec(db,
            "INSERT INTO pages(url, final_url, status, content_type, title, content_hash, fetched_at, markdown, etag, "
            "last_modified, body_hash, text, kind, kind_score, summary, meta, cluster) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(url) DO UPDATE SET "
            "final_url=excluded.final_url, status=excluded.status, content_type=excluded.content_type, "
            "title=excluded.title, content_hash=excluded.content_hash, fetched_at=excluded.fetched_at, "
            "markdown=excluded.markdown, etag=excluded.etag, last_modified=excluded.last_modified, "
            "body_hash=excluded.body_hash, text=excluded.text, kind=excluded.kind, kind_score=excluded.kind_score, "
            "summary=excluded.summary, meta=excluded.meta, cluster=excluded.cluster RETURNING id",
            (url, final_url or url, status, content_type, title, content_hash, time.time(), markdown or None, etag,
             last_modified, body_hash, *info_row(info))).fetchone()
        page_id = int(row[0])
        self._put_content(db, page_id, url, blocks, chunks)
        return page_id

    @guard
    def replace_content(self, url: str, blocks: list[Block], chunks: list[Chunk], *, markdown: str | None = None,
                        content_hash: str | None = None, info: PageInfo | None = None) -> int | None:
        """Replace a stored page's blocks, chunks, Markdown, content hash and info (site learning:
        the page re-extracted with the model learned after it was stored), keeping what the fetch
        gave (status, validators, fetch time, title). Returns the page id, or None when no page
        is stored at url (not stored: noindex, canonical elsewhere). No commit."""
        db = self._writable()
        row = self._exec(db,
            "UPDATE pages SET markdown=?, content_hash=coalesce(?, content_hash), text=?, kind=?, kind_score=?, "
            "summary=?, meta=?, cluster=? WHERE url=? RETURNING id",
            (markdown or None, content_hash, *info_row(info), url)).fetchone()
        if row is None:
            return None
        page_id = int(row[0])
        self._put_content(db, page_id, url, blocks, chunks)
        return page_id

    def _put_content(self, db: Any, page_id: int, url: str, blocks: list[Block], chunks: list[Chunk]) -> None:
        self._drop_mappings(db, page_id)
        self._exec(db, "DELETE FROM blocks WHERE page_id=?", (page_id,))
        self._exec(db, "DELETE FROM chunks WHERE page_id=?", (page_id,))
        paths: dict[tuple[str, ...], str] = {}  # a block's chunks share its heading path: encode it once

        def path_json(hp: tuple[str, ...]) -> str:
            js = paths.get(hp)
            if js is None:
                js = paths[hp] = json.dumps(list(hp), ensure_ascii=False)
            return js
        self._many(db, "INSERT INTO blocks(page_id, position, kind, heading_path, tag_path, text, hash) "
                       "VALUES (?,?,?,?,?,?,?)",
                   [(page_id, b.position, b.kind, path_json(tuple(b.heading_path)), b.tag_path, b.text, b.hash)
                    for b in blocks])
        cols = ("page_id", "block_position", "chunk_index", "url", "heading_path", "text", "block_hash", "n_tokens",
                "context", *self.CHUNK_EXTRA)
        rows = []
        for c in chunks:
            hp = path_json(tuple(c.heading_path))
            rows.append((page_id, c.block_position, c.chunk_index, c.url or url, hp, c.text, c.block_hash,
                         c.n_tokens, c.context, *self._chunk_extra(c.text, hp, c.context)))
        self._many(db, f"INSERT INTO chunks({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})", rows)

    # ------------------------------------------------------------------ site models (crawl --algorithm site)
    @guard
    def save_site_model(self, site: str, model: str, *, version: int, pages: int, fallbacks: int) -> None:
        """Store (or replace) the site's learned model, JSON as the pipeline gave it. No commit.
        Saving the same version again (the crawl updates the counts after each page of the site)
        keeps its learned_at."""
        self._exec(self._writable(),
            "INSERT INTO site_models(site, version, model, learned_at, pages, fallbacks) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(site) DO UPDATE SET version=excluded.version, model=excluded.model, "
            "learned_at=CASE WHEN coalesce(site_models.version, -1) = coalesce(excluded.version, -1) "
            "THEN site_models.learned_at ELSE excluded.learned_at END, pages=excluded.pages, fallbacks=excluded.fallbacks",
            (site, version, model, time.time(), pages, fallbacks))

    @guard
    def site_models(self) -> list[dict[str, object]]:
        """Every stored site model (site, version, model, learned_at, pages, fallbacks), by site;
        [] for a store from before schema 5."""
        with self._reading() as db:
            if not self._has_table(db, "site_models"):
                return []
            return [dict(zip(_SITE_COLUMNS, r)) for r in self._exec(
                db, f"SELECT {', '.join(_SITE_COLUMNS)} FROM site_models ORDER BY site{self.BYTE_ORDER}")]

    @guard
    def block_hashes(self, url_prefix: str | None = None) -> list[tuple[str, str]]:
        """(text, hash) of stored blocks in page order: reloads a site's dedup state on resume.
        With url_prefix, only blocks of pages whose URL starts with it (one site)."""
        if url_prefix is None:
            rows = self._exec(self._db, "SELECT text, hash FROM blocks ORDER BY page_id, position").fetchall()
        else:
            where, args = self._prefix("p.url", url_prefix)
            rows = self._exec(self._db, "SELECT b.text, b.hash FROM blocks b JOIN pages p ON p.id = b.page_id "
                                        f"WHERE {where} ORDER BY b.page_id, b.position", args).fetchall()
        return [(str(t), str(h)) for t, h in rows]

    # ------------------------------------------------------------------ recrawl (crawl --recrawl)
    @guard
    def recrawl_pages(self) -> list[tuple[str, str, float, str | None, str | None, str | None]]:
        """(url, final_url, fetched_at, etag, last_modified, body_hash) of every stored page, oldest
        fetch first: what an incremental recrawl revisits."""
        return [(str(u), str(f or u), float(t or 0.0), e, m, h) for u, f, t, e, m, h in self._exec(
            self._writable(),
            "SELECT url, final_url, fetched_at, etag, last_modified, body_hash FROM pages ORDER BY fetched_at, id")]

    @guard
    def touch_page(self, url: str, *, etag: str | None = None, last_modified: str | None = None) -> None:
        """The page was confirmed unchanged (304, or the same text): its fetch time is now; new
        validators, if the answer carried any, replace the old. No commit."""
        self._exec(self._writable(),
                   "UPDATE pages SET fetched_at=?, etag=coalesce(?, etag), last_modified=coalesce(?, last_modified) "
                   "WHERE url=?", (time.time(), etag, last_modified, url))

    @guard
    def delete_page(self, url: str) -> bool:
        """Remove a page that is gone (404/410) with its blocks and chunks; the chunks' keyword-index
        rows and vector mappings go with them, so search never returns it again. Returns whether
        there was such a page. No commit."""
        db = self._writable()
        row = self._exec(db, f"SELECT id FROM pages WHERE url=?{self.FOR_UPDATE}", (url,)).fetchone()
        if row is None:
            return False
        self._drop_mappings(db, int(row[0]))
        for table, col in (("chunks", "page_id"), ("blocks", "page_id"), ("pages", "id")):
            self._exec(db, f"DELETE FROM {table} WHERE {col}=?", (row[0],))
        return True

    def frontier(self) -> SqlFrontier:
        """The crawl's own frontier and log, on the writer connection (committed with the pages).
        One crawl at a time uses it: workers that share a frontier elsewhere (--frontier redis://)
        call crawl_log() instead and write pages side by side."""
        from .frontier import SqlFrontier

        fr = SqlFrontier(self)
        self._lock_frontier()
        return fr

    def crawl_log(self) -> SqlFrontier:
        """Where a worker of a shared frontier (crawl --frontier redis://) writes its crawl log: the
        frontier object without its one-crawl lock, of which the worker only calls `log`."""
        from .frontier import SqlFrontier

        return SqlFrontier(self)

    # ------------------------------------------------------------------ ChunkSource (index)
    @guard
    def begin_index(self, model: str, dim: int) -> dict[str, str]:
        db = self._writable()
        self._prepare_index(db)
        meta = self._index_meta(db)
        if meta.get("model") not in (None, model) or meta.get("dim") not in (None, str(dim)):
            # another model: its vectors live in another space, start over
            self._exec(db, "DELETE FROM chunk_vectors")
            self._exec(db, "DELETE FROM embeddings")
        self._set_meta(db, model=model, dim=dim)
        db.commit()
        return meta

    @guard
    def chunks_to_embed(self) -> list[tuple[int, str]]:
        """Chunks of heading-only blocks ("Europe Countries:") get no vector: alone they are close to
        every query about their topic yet hold nothing to read; keyword search still finds them.
        The text embedded is the chunk's context (title > outer headings) and its text."""
        return [(int(c), embedding_text(str(x), str(t))) for c, x, t in self._exec(self._db,
            "SELECT c.id, c.context, c.text FROM chunks c LEFT JOIN chunk_vectors v ON v.chunk_id = c.id "
            "LEFT JOIN blocks b ON b.page_id = c.page_id AND b.position = c.block_position "
            "WHERE v.chunk_id IS NULL AND coalesce(b.kind, 'text') <> 'heading' ORDER BY c.id")]

    @guard
    def vector_keys(self) -> set[bytes]:
        return {bytes(k) for (k,) in self._exec(self._db, "SELECT key FROM embeddings")}

    @guard
    def map_vectors(self, pairs: Iterable[tuple[int, bytes]]) -> None:
        self._many(self._writable(), "INSERT INTO chunk_vectors(chunk_id, key) VALUES (?,?) "
                                     "ON CONFLICT(chunk_id) DO UPDATE SET key=excluded.key", list(pairs))

    @guard
    def save_vectors(self, keys: Sequence[bytes], vectors: npt.NDArray[np.float32],
                     chunk_ids: Sequence[Sequence[int]]) -> None:
        import numpy as np

        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        self._many(self._writable(), "INSERT INTO embeddings(key, vec) VALUES (?,?) "
                                     "ON CONFLICT(key) DO UPDATE SET vec=excluded.vec",
                   [(bytes(k), vecs[i].tobytes()) for i, k in enumerate(keys)])
        self.map_vectors([(cid, bytes(k)) for k, ids in zip(keys, chunk_ids) for cid in ids])

    @guard
    def drop_unused_vectors(self) -> int:
        return int(self._exec(self._writable(), "DELETE FROM embeddings "
                              "WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.key = embeddings.key)").rowcount)

    @guard
    def finish_index(self, generation: int, indexed_at: float) -> None:
        self._set_meta(self._writable(), generation=generation, indexed_at=indexed_at)
        self._db.commit()

    @guard
    def count_chunks(self) -> int:
        with self._reading() as db:
            return int(self._exec(db, "SELECT count(*) FROM chunks").fetchone()[0])

    def _index_meta(self, db: Any) -> dict[str, str]:
        if not self._has_table(db, "index_meta"):
            return {}
        return {str(k): str(v) for k, v in self._exec(db, "SELECT key, value FROM index_meta")}

    def _set_meta(self, db: Any, **values: object) -> None:
        self._many(db, "INSERT INTO index_meta(key, value) VALUES (?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                   [(k, str(v)) for k, v in values.items()])

    # ------------------------------------------------------------------ SearchStore (search, serve)
    @guard
    def index_meta(self) -> dict[str, str]:
        """model, dim, generation, indexed_at; {} when the store was never indexed."""
        with self._reading() as db:
            return self._index_meta(db) if self._has_index(db) else {}

    @guard
    def load_vectors(self, dim: int | None = None) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(chunk ids ascending, float32 matrix of shape (n, dim)): see vectors_from."""
        with self._reading() as db:
            if not self._has_table(db, "chunk_vectors"):
                return vectors_from([], [], dim)
            rows = self._exec(db, "SELECT chunk_id, key FROM chunk_vectors ORDER BY chunk_id").fetchall()
            with self._stream(db, "SELECT key, vec FROM embeddings") as blobs:
                return vectors_from(rows, blobs, dim)

    @guard
    def keyword_ranked(self, query: str, n: int, pages: Sequence[int] | None = None) -> list[tuple[int, float]]:
        with self._reading() as db:
            return self._keyword(db, query, n, pages)

    @guard
    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        out: dict[int, StoredChunk] = {}
        with self._reading() as db:
            for i in range(0, len(ids), BATCH):
                part = [int(x) for x in ids[i:i + BATCH]]
                q = ("SELECT c.id, c.url, c.heading_path, c.text, p.title, c.page_id, c.block_position, "
                     "c.chunk_index FROM chunks c "
                     f"LEFT JOIN pages p ON p.id = c.page_id WHERE c.id IN ({','.join('?' * len(part))})")
                for cid, url, hp, text, title, page_id, pos, idx in self._exec(db, q, part):
                    out[int(cid)] = StoredChunk(int(cid), str(url), tuple(json.loads(hp)), str(text), title or "",
                                                int(page_id), int(pos), int(idx))
        return out

    @guard
    def pages_matching(self, site: str | None = None, url_prefix: str | None = None, kind: str | None = None,
                       lang: str | None = None, since: str | None = None) -> list[int]:
        """Ids (ascending) of the pages whose URL is on host `site` or one of its subdomains (a port
        in `site` must match too) and starts with `url_prefix`; with kind, lang, since, only pages
        whose stored info (schema 5) says so: kind equal ("article"), language equal or a subtag of
        it (lang "en" takes "en" and "en-gb"), published on or after since (ISO 8601 strings compare
        as dates do; a page without a date is left out). The host comes from a per-store table
        host[:port] -> page ids, built once and again only when pages were added or removed: cutting
        the host out of every URL in SQL took 15-40 ms a query for 5,000 pages (load 8), the table's
        look-up well under 1 ms. A store from before schema 5 has no page info: no page matches."""
        ids: set[int] | None = None
        if site is not None:
            ids = set()
            with_port = ":" in site.lstrip("[").split("]")[-1]
            for hp, pages in self._page_hosts().items():
                host = hp if with_port else strip_port(hp)
                if host == site or host.endswith("." + site):
                    ids.update(pages)
        where: list[str] = []
        args: list[object] = []
        if url_prefix is not None:  # a range on the pages.url index in SQLite
            sql, more = self._prefix("url", url_prefix)
            where.append(sql)
            args += more
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        if lang is not None:
            language = f"lower({self._json_text('meta', 'language')})"
            sql, more = self._prefix(language, lang.lower() + "-")
            where.append(f"({language} = ? OR ({sql}))")
            args += [lang.lower(), *more]
        if since is not None:
            published = self._json_text("meta", "published") + self.BYTE_ORDER
            where.append(f"{published} >= ? AND {published} <> ''")
            args.append(since)
        with self._reading() as db:
            if where:
                if any(x is not None for x in (kind, lang, since)) and "kind" not in self._columns(db, "pages"):
                    return []
                found = {int(r[0]) for r in self._exec(db, f"SELECT id FROM pages WHERE {' AND '.join(where)}", args)}
                ids = found if ids is None else ids & found
            if ids is None:
                return [int(r[0]) for r in self._exec(db, "SELECT id FROM pages ORDER BY id")]
        return sorted(ids)

    def _page_hosts(self) -> dict[str, list[int]]:
        """host[:port] (lower case, no user info) -> ids of its pages, kept per store. A page's URL never
        changes (save_page updates a page in place by URL), so the table is valid while the store
        (_file_id), the pages' count and highest id are."""
        with self._reading() as db:
            key = (*self._file_id(), *self._exec(db, "SELECT count(*), max(id) FROM pages").fetchone())
            with _hosts_lock:
                cached = _hosts.get(self.cache_key)
            if cached is not None and cached[0] == key:
                return cached[1]
            table: dict[str, list[int]] = {}
            for pid, url in self._exec(db, "SELECT id, url FROM pages"):
                table.setdefault(hostport(str(url)), []).append(int(pid))
        with _hosts_lock:
            _hosts[self.cache_key] = (key, table)
        return table

    @guard
    def chunk_pages(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(chunk ids ascending, their page ids) of every chunk: lets search restrict the vector
        matrix to some pages without a query per search (~40 ms at 100k chunks, once per index
        generation)."""
        import numpy as np

        with self._reading() as db:
            rows = self._exec(db, "SELECT id, page_id FROM chunks ORDER BY id").fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0].copy(), arr[:, 1].copy()

    @guard
    def has_blocks(self) -> bool:
        with self._reading() as db:
            return self._exec(db, "SELECT 1 FROM blocks LIMIT 1").fetchone() is not None

    @guard
    def block_texts(self, keys: Sequence[tuple[int, int]]) -> dict[tuple[int, int], str]:
        """Text of the blocks at (page id, position), those that exist: one query per page."""
        by_page: dict[int, list[int]] = {}
        for page_id, pos in dict.fromkeys(keys):
            by_page.setdefault(int(page_id), []).append(int(pos))
        out: dict[tuple[int, int], str] = {}
        with self._reading() as db:
            for page_id, positions in by_page.items():
                for i in range(0, len(positions), BATCH):
                    part = positions[i:i + BATCH]
                    for pos, text in self._exec(db, "SELECT position, text FROM blocks WHERE page_id = ? AND "
                                                    f"position IN ({','.join('?' * len(part))})", [page_id, *part]):
                        out[page_id, int(pos)] = str(text)
        return out

    @guard
    def page_chunks(self, page_id: int) -> list[tuple[int, str]]:
        """(chunk id, text) of a page's chunks in reading order (block, then chunk within it)."""
        with self._reading() as db:
            return [(int(i), str(t)) for i, t in self._exec(
                db, "SELECT id, text FROM chunks WHERE page_id = ? ORDER BY block_position, chunk_index, id", (page_id,))]

    # ------------------------------------------------------------------ RecordSource (export)
    def records(self, what: str) -> Iterator[dict[str, object]]:
        """Streamed: a million chunks never sit in memory at once."""
        from ..crawl.frontier import STATE_NAMES

        if what not in _EXPORTS:
            raise StoreError(f"cannot export {what!r}: one of {', '.join(RECORD_KINDS)}")
        sql, cols = _EXPORTS[what]
        try:
            with self._reading() as db:
                if what == "pages":  # a store that may predate schema 5
                    have = self._columns(db, "pages")
                    for col in _INFO_COLUMNS:
                        if col not in have:
                            sql = sql.replace(f"p.{col},", f"{-1 if col == 'cluster' else 'NULL'},").replace(
                                f"p.{col} FROM", "NULL FROM")
                with self._stream(db, sql) as rows:
                    for row in rows:
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
        except Exception as e:
            err = self._fault(e)
            if err is None:
                raise
            raise err from e

    def page_markdown(self) -> Iterator[tuple[str, str, str | None, list[tuple[tuple[str, ...], str, str]]]]:
        """(url, title, markdown, blocks) of every page in crawl order, streamed. markdown is None
        for pages stored without it (before schema 2, or crawled with --no-extract); blocks
        (heading path, kind, text) are then given, for the headings-and-text fallback."""
        try:
            with self._reading() as db:
                md = "markdown" if "markdown" in self._columns(db, "pages") else "NULL"
                with self._stream(db, f"SELECT id, url, title, {md} FROM pages ORDER BY id") as rows:
                    for pid, url, title, text in rows:
                        blocks: list[tuple[tuple[str, ...], str, str]] = []
                        if text is None:
                            blocks = [(tuple(json.loads(hp)), str(kind), str(t)) for hp, kind, t in self._exec(
                                db, "SELECT heading_path, kind, text FROM blocks WHERE page_id=? ORDER BY position",
                                (pid,))]
                        yield str(url), str(title or ""), None if text is None else str(text), blocks
        except Exception as e:
            err = self._fault(e)
            if err is None:
                raise
            raise err from e

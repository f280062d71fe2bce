"""The store in PostgreSQL (psycopg 3): what SqliteStore does, for many crawl workers writing one store.

`blockcrawl.store.open_store("postgresql://user:pw@host/db")` opens it; every CLI command takes the
URL as --store. The same methods and records as SqliteStore (store.protocols), with these
differences, each for a reason:

- No writer lock. SQLite's flock (store.lock) allows one writer; here many crawl workers (the Redis
  scale-out) write at once. save_page upserts the page by URL (INSERT ... ON CONFLICT (url) DO
  UPDATE), which locks that one pages row until commit, then replaces the page's blocks, chunks and
  vector mappings by page id: writers of different pages touch no common row; two writers of the
  same URL are serialized by the row lock and the later one's content wins whole (READ COMMITTED:
  its DELETE sees the first one's committed rows). Identity columns never block either.
  What stays single: the store's own frontier (frontier() takes a session advisory lock: one
  `crawl` without a shared frontier per store, as its reset() would wipe another crawl's queue) and
  `index` (begin_index takes another: two index runs would embed the same chunks twice).
- The keyword index is a tsvector column filled by save_page with FTS5's tokens and scored with
  FTS5's bm25 (store.pgsearch), so keyword ranking agrees with SQLite's.
- Vectors are float32 bytea blobs in embeddings/chunk_vectors, loaded by load_vectors exactly as
  from SQLite; no ANN side file (ann_base None): search is exact.
- Every database fault (server unreachable, bad password, no such database, connection lost) is
  one StoreError line naming the store by its URL without the password (`location`).
"""
from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Self, TypeVar, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import StoreError, StoreMissing
from ..records import embedding_text
from .pgschema import LOCK_FRONTIER, LOCK_INDEX, SCHEMA_VERSION, exists, migrate, version
from .pgsearch import keyword_ranked, tsvector
from .protocols import RECORD_KINDS, StoredChunk
from .sqlite import _hostport, _strip_port

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import numpy.typing as npt
    import psycopg

    from ..crawl.frontier import Item
    from ..records import Block, Chunk, PageInfo

    Conn = psycopg.Connection[tuple[Any, ...]]

P = ParamSpec("P")
R = TypeVar("R")

SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT = 10  # seconds: an unreachable host is one error line, not a hang
POOL_MAX = 8  # idle reader connections kept for other threads (as SqliteStore)

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


def is_url(location: object) -> bool:
    """Whether a --store value names a PostgreSQL store."""
    return isinstance(location, str) and location.lower().startswith(SCHEMES)


def redact(dsn: str) -> str:
    """The URL without its password (in the user info or a password= parameter): for messages."""
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return dsn.split("://", 1)[0] + "://..."
    netloc = parts.netloc
    if "@" in netloc:
        user, _, hosts = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{hosts}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _password(dsn: str) -> str | None:
    try:
        parts = urlsplit(dsn)
        pw = parts.password
        return pw or dict(parse_qsl(parts.query)).get("password")
    except ValueError:
        return None


def _first_line(e: BaseException, secret: str | None = None) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if secret:
        text = text.replace(secret, "***")
    return text


def _guard(fn: Callable[Concatenate[PostgresStore, P], R]) -> Callable[Concatenate[PostgresStore, P], R]:
    """psycopg errors as one StoreError line naming the store."""
    @functools.wraps(fn)
    def wrapper(self: PostgresStore, *args: P.args, **kwargs: P.kwargs) -> R:
        import psycopg

        try:
            return fn(self, *args, **kwargs)
        except psycopg.Error as e:
            raise StoreError(f"{self.location}: {_first_line(e, self._secret)}") from e
    return cast("Callable[Concatenate[PostgresStore, P], R]", wrapper)


class PostgresStore:
    """A store in a PostgreSQL database. Implements PageSink, ChunkSource, SearchStore, RecordSource."""

    def __init__(self, dsn: str, *, create: bool = True, readonly: bool = False,
                 who: str = "a blockcrawl writer") -> None:
        """dsn: postgresql://[user[:password]@]host[:port]/database[?param=value...] (libpq's URL;
        the database must exist: `createdb NAME`). create: make the store's tables in a database
        without them; else StoreMissing. readonly: a reader (read-only transactions, never creates).
        who: the connection's application_name (pg_stat_activity shows who writes)."""
        try:
            import psycopg
        except ImportError:
            raise StoreError("a postgresql:// store needs psycopg: pip install 'blockcrawl[postgres]'") from None
        self.dsn = dsn
        self.location = redact(dsn)
        self._secret = _password(dsn)
        self.cache_key = self.location
        self.ann_base: Path | None = None
        self.readonly = readonly
        self.who = who
        self._pool: list[Conn] = []
        self._pool_lock = threading.Lock()
        self._owner = threading.get_ident()
        self._closed = False
        self._db = self._connect(autocommit=True)
        try:
            if readonly or not create:
                found = version(self._db, self.location)
                if found is None:
                    raise StoreMissing(f"no store at {self.location} (run 'blockcrawl crawl URL --store "
                                       f"{self.location}' first)")
                if readonly and found < SCHEMA_VERSION:
                    raise StoreError(f"{self.location} has store schema version {found}: open it once with "
                                     "a writer (blockcrawl index) to migrate it")
            if not readonly:
                migrate(self._db, self.location)
            # the database's oid: a database dropped and created anew under the same URL is another
            # store for the caches keyed by cache_key (search's vectors, the page-host table)
            oid = self._db.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()
            self.cache_key = f"{self.location}#{oid[0] if oid else ''}"
            self._db.autocommit = readonly  # a writer commits when the crawl says so
            if readonly:
                self._db.execute("SET default_transaction_read_only = on")
        except psycopg.Error as e:
            self._db.close()
            raise StoreError(f"cannot open {self.location}: {_first_line(e, self._secret)}") from None
        except BaseException:
            self._db.close()
            raise

    # ------------------------------------------------------------------ opening and closing
    def _connect(self, autocommit: bool) -> Conn:
        import psycopg

        try:
            db = psycopg.connect(self.dsn, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT,
                                 application_name=self.who[:60])
        except psycopg.Error as e:
            raise StoreError(f"cannot connect to {self.location}: {_first_line(e, self._secret)}") from None
        return db

    @contextmanager
    def _reading(self) -> Iterator[Conn]:
        """The owner thread's connection, or a pooled autocommit read-only one for any other thread
        (serve's request threads, hybrid search's keyword thread), as SqliteStore._reading."""
        if threading.get_ident() == self._owner:
            yield self._db
            return
        with self._pool_lock:
            db = self._pool.pop() if self._pool else None
        if db is None:
            db = self._connect(autocommit=True)
            db.execute("SET default_transaction_read_only = on")
        try:
            yield db
        finally:
            with self._pool_lock:
                keep = not self._closed and len(self._pool) < POOL_MAX and not db.closed
                if keep:
                    self._pool.append(db)
            if not keep:
                db.close()

    @property
    def db(self) -> Conn:
        """The owner's connection (tests read it; stages use the methods)."""
        return self._db

    @property
    def schema_version(self) -> int:
        return version(self._db, self.location) or 0

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, []
        for db in pool:
            db.close()
        self._db.close()  # ends the session: its advisory locks go with it

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if not self.readonly and not self._db.closed:
                self.commit()
        finally:
            self.close()

    def _writable(self) -> Conn:
        if self.readonly:
            raise StoreError(f"{self.location} was opened read-only")
        return self._db

    def _exclusive(self, key: int, what: str) -> None:
        """A session advisory lock (kept until close, also across commits); StoreError if taken."""
        row = self._db.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        if not (row and row[0]):
            holder = self._db.execute(
                "SELECT a.application_name, a.client_addr, a.pid FROM pg_locks l JOIN pg_stat_activity a "
                "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND a.pid <> pg_backend_pid() "
                "AND a.datname = current_database() AND ((l.classid::bigint << 32) | l.objid::bigint) = %s",
                (key,)).fetchone()
            name = f"{holder[0] or 'another client'} (pid {holder[2]})" if holder else "another client"
            raise StoreError(f"{self.location} is {what} by {name}: one at a time (search and export still work)")

    # ------------------------------------------------------------------ PageSink (crawl)
    @_guard
    def save_page(self, url: str, blocks: list[Block], chunks: list[Chunk], *, final_url: str | None = None,
                  status: int = 200, content_type: str | None = None, title: str = "",
                  content_hash: str | None = None, markdown: str | None = None, etag: str | None = None,
                  last_modified: str | None = None, body_hash: str | None = None,
                  info: PageInfo | None = None) -> int:
        """SqliteStore.save_page: insert or replace a page (by URL) with its blocks and chunks;
        returns the page id. No commit. Safe beside other writers of other pages (module docstring)."""
        db = self._writable()
        row = db.execute(
            "INSERT INTO pages(url, final_url, status, content_type, title, content_hash, fetched_at, markdown, etag, "
            "last_modified, body_hash, text, kind, kind_score, summary, meta, cluster) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT(url) DO UPDATE SET "
            "final_url=excluded.final_url, status=excluded.status, content_type=excluded.content_type, "
            "title=excluded.title, content_hash=excluded.content_hash, fetched_at=excluded.fetched_at, "
            "markdown=excluded.markdown, etag=excluded.etag, last_modified=excluded.last_modified, "
            "body_hash=excluded.body_hash, text=excluded.text, kind=excluded.kind, kind_score=excluded.kind_score, "
            "summary=excluded.summary, meta=excluded.meta, cluster=excluded.cluster RETURNING id",
            (url, final_url or url, status, content_type, title, content_hash, time.time(), markdown or None, etag,
             last_modified, body_hash, *_info_row(info))).fetchone()
        assert row is not None
        page_id = int(row[0])
        self._put_content(db, page_id, url, blocks, chunks)
        return page_id

    @_guard
    def replace_content(self, url: str, blocks: list[Block], chunks: list[Chunk], *, markdown: str | None = None,
                        content_hash: str | None = None, info: PageInfo | None = None) -> int | None:
        """SqliteStore.replace_content: a stored page re-extracted (site learning), its fetch columns
        kept. None when no page is stored at url. No commit."""
        db = self._writable()
        row = db.execute(
            "UPDATE pages SET markdown=%s, content_hash=coalesce(%s, content_hash), text=%s, kind=%s, kind_score=%s, "
            "summary=%s, meta=%s, cluster=%s WHERE url=%s RETURNING id",
            (markdown or None, content_hash, *_info_row(info), url)).fetchone()
        if row is None:
            return None
        page_id = int(row[0])
        self._put_content(db, page_id, url, blocks, chunks)
        return page_id

    @staticmethod
    def _put_content(db: Conn, page_id: int, url: str, blocks: list[Block], chunks: list[Chunk]) -> None:
        db.execute("DELETE FROM chunk_vectors WHERE chunk_id IN (SELECT id FROM chunks WHERE page_id=%s)", (page_id,))
        db.execute("DELETE FROM blocks WHERE page_id=%s", (page_id,))
        db.execute("DELETE FROM chunks WHERE page_id=%s", (page_id,))
        paths: dict[tuple[str, ...], str] = {}

        def path_json(hp: tuple[str, ...]) -> str:
            js = paths.get(hp)
            if js is None:
                js = paths[hp] = json.dumps(list(hp), ensure_ascii=False)
            return js
        with db.cursor() as cur:
            if blocks:
                cur.executemany(
                    "INSERT INTO blocks(page_id, position, kind, heading_path, tag_path, text, hash) "
                    "VALUES (%s,%s,%s,%s,%s,%s,%s)",
                    [(page_id, b.position, b.kind, path_json(tuple(b.heading_path)), b.tag_path, b.text, b.hash)
                     for b in blocks])
            rows = []
            for c in chunks:
                hp = path_json(tuple(c.heading_path))
                tsv, ntok = tsvector(c.text, hp, c.context)
                rows.append((page_id, c.block_position, c.chunk_index, c.url or url, hp, c.text, c.block_hash,
                             c.n_tokens, c.context, tsv, ntok))
            if rows:
                cur.executemany(
                    "INSERT INTO chunks(page_id, block_position, chunk_index, url, heading_path, text, block_hash, "
                    "n_tokens, context, tsv, n_tok) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::tsvector,%s)", rows)

    # ------------------------------------------------------------------ site models (crawl --algorithm site)
    @_guard
    def save_site_model(self, site: str, model: str, *, version: int, pages: int, fallbacks: int) -> None:
        """Store (or replace) the site's learned model. No commit."""
        self._writable().execute(
            "INSERT INTO site_models(site, version, model, learned_at, pages, fallbacks) VALUES (%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT(site) DO UPDATE SET version=excluded.version, model=excluded.model, "
            "learned_at=excluded.learned_at, pages=excluded.pages, fallbacks=excluded.fallbacks",
            (site, version, model, time.time(), pages, fallbacks))

    @_guard
    def site_models(self) -> list[dict[str, object]]:
        """Every stored site model (site, version, model, learned_at, pages, fallbacks), by site."""
        cols = ("site", "version", "model", "learned_at", "pages", "fallbacks")
        with self._reading() as db:
            return [dict(zip(cols, r)) for r in db.execute(
                "SELECT site, version, model, learned_at, pages, fallbacks FROM site_models ORDER BY site COLLATE \"C\"")]

    @_guard
    def commit(self) -> None:
        if not self._db.autocommit:
            self._db.commit()

    @_guard
    def block_hashes(self, url_prefix: str | None = None) -> list[tuple[str, str]]:
        """(text, hash) of stored blocks in page order, only pages whose URL starts with url_prefix."""
        if url_prefix is None:
            rows = self._db.execute("SELECT text, hash FROM blocks ORDER BY page_id, position").fetchall()
        else:
            rows = self._db.execute(
                "SELECT b.text, b.hash FROM blocks b JOIN pages p ON p.id = b.page_id "
                "WHERE starts_with(p.url, %s) ORDER BY b.page_id, b.position", (url_prefix,)).fetchall()
        return [(str(t), str(h)) for t, h in rows]

    # ------------------------------------------------------------------ recrawl (crawl --recrawl)
    @_guard
    def recrawl_pages(self) -> list[tuple[str, str, float, str | None, str | None, str | None]]:
        """(url, final_url, fetched_at, etag, last_modified, body_hash) of every page, oldest fetch first."""
        return [(str(u), str(f or u), float(t or 0.0), e, m, h) for u, f, t, e, m, h in self._writable().execute(
            "SELECT url, final_url, fetched_at, etag, last_modified, body_hash FROM pages ORDER BY fetched_at, id")]

    @_guard
    def touch_page(self, url: str, *, etag: str | None = None, last_modified: str | None = None) -> None:
        """The page was confirmed unchanged: its fetch time is now, new validators replace the old. No commit."""
        self._writable().execute(
            "UPDATE pages SET fetched_at=%s, etag=coalesce(%s, etag), last_modified=coalesce(%s, last_modified) "
            "WHERE url=%s", (time.time(), etag, last_modified, url))

    @_guard
    def delete_page(self, url: str) -> bool:
        """Remove a gone page with its blocks, chunks and their vector mappings. No commit."""
        db = self._writable()
        row = db.execute("SELECT id FROM pages WHERE url=%s FOR UPDATE", (url,)).fetchone()
        if row is None:
            return False
        db.execute("DELETE FROM chunk_vectors WHERE chunk_id IN (SELECT id FROM chunks WHERE page_id=%s)", (row[0],))
        db.execute("DELETE FROM chunks WHERE page_id=%s", (row[0],))
        db.execute("DELETE FROM blocks WHERE page_id=%s", (row[0],))
        db.execute("DELETE FROM pages WHERE id=%s", (row[0],))
        return True

    @_guard
    def frontier(self) -> PostgresFrontier:
        """The crawl's own frontier and log, on the writer connection (committed with the pages).
        One crawl at a time uses it (a session advisory lock until close): workers that share a
        frontier elsewhere (--frontier redis://) never call this and write pages side by side."""
        db = self._writable()
        self._exclusive(LOCK_FRONTIER, "being crawled")
        return PostgresFrontier(db, self.location, self._secret)

    def crawl_log(self) -> PostgresFrontier:
        """The crawl log of a worker of a shared frontier (crawl --frontier redis://): the same
        object as frontier() without its one-crawl lock, since many workers log into one store
        at once (they only call `log`, which inserts rows; the queue lives in Redis)."""
        return PostgresFrontier(self._writable(), self.location, self._secret)

    # ------------------------------------------------------------------ ChunkSource (index)
    @_guard
    def begin_index(self, model: str, dim: int) -> dict[str, str]:
        db = self._writable()
        self._exclusive(LOCK_INDEX, "being indexed")
        meta = _index_meta(db)
        if meta.get("model") not in (None, model) or meta.get("dim") not in (None, str(dim)):
            db.execute("DELETE FROM chunk_vectors")
            db.execute("DELETE FROM embeddings")
        _set_meta(db, model=model, dim=dim)
        db.commit()
        return meta

    @_guard
    def chunks_to_embed(self) -> list[tuple[int, str]]:
        return [(int(c), embedding_text(str(x), str(t))) for c, x, t in self._db.execute(
            "SELECT c.id, c.context, c.text FROM chunks c LEFT JOIN chunk_vectors v ON v.chunk_id = c.id "
            "LEFT JOIN blocks b ON b.page_id = c.page_id AND b.position = c.block_position "
            "WHERE v.chunk_id IS NULL AND coalesce(b.kind, 'text') <> 'heading' ORDER BY c.id")]

    @_guard
    def vector_keys(self) -> set[bytes]:
        return {bytes(k) for (k,) in self._db.execute("SELECT key FROM embeddings")}

    @_guard
    def map_vectors(self, pairs: Iterable[tuple[int, bytes]]) -> None:
        rows = list(pairs)
        if rows:
            with self._writable().cursor() as cur:
                cur.executemany("INSERT INTO chunk_vectors(chunk_id, key) VALUES (%s,%s) "
                                "ON CONFLICT(chunk_id) DO UPDATE SET key=excluded.key", rows)

    @_guard
    def save_vectors(self, keys: Sequence[bytes], vectors: npt.NDArray[np.float32],
                     chunk_ids: Sequence[Sequence[int]]) -> None:
        import numpy as np

        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._writable().cursor() as cur:
            cur.executemany("INSERT INTO embeddings(key, vec) VALUES (%s,%s) ON CONFLICT(key) DO UPDATE SET vec=excluded.vec",
                            [(bytes(k), vecs[i].tobytes()) for i, k in enumerate(keys)])
        self.map_vectors([(cid, bytes(k)) for k, ids in zip(keys, chunk_ids) for cid in ids])

    @_guard
    def repair_vectors(self, dim: int) -> int:
        """As SqliteStore.repair_vectors. No commit."""
        from .vecblob import damaged_keys

        db = self._writable()
        with db.cursor() as cur:
            bad = damaged_keys(((bytes(k), bytes(v)) for k, v in cur.execute("SELECT key, vec FROM embeddings")), dim)
        if bad:
            db.execute("DELETE FROM embeddings WHERE key = ANY(%s)", (bad,))
        cur2 = db.execute("DELETE FROM chunk_vectors v WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.key = v.key)")
        return int(cur2.rowcount)

    @_guard
    def clear_vectors(self) -> None:
        """Forget every vector (index --rebuild). No commit."""
        db = self._writable()
        db.execute("DELETE FROM chunk_vectors")
        db.execute("DELETE FROM embeddings")

    @_guard
    def drop_unused_vectors(self) -> int:
        cur = self._writable().execute(
            "DELETE FROM embeddings e WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.key = e.key)")
        return int(cur.rowcount)

    @_guard
    def finish_index(self, generation: int, indexed_at: float) -> None:
        _set_meta(self._writable(), generation=generation, indexed_at=indexed_at)
        self._db.commit()

    @_guard
    def count_chunks(self) -> int:
        with self._reading() as db:
            row = db.execute("SELECT count(*) FROM chunks").fetchone()
            return int(row[0]) if row else 0

    # ------------------------------------------------------------------ SearchStore (search, serve)
    @_guard
    def index_meta(self) -> dict[str, str]:
        with self._reading() as db:
            return _index_meta(db)

    @_guard
    def load_vectors(self, dim: int | None = None) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """As store.sqlite.load_vectors: two scans joined in Python, vectors shared by equal texts."""
        import numpy as np

        from .vecblob import usable, warn_damaged

        with self._reading() as db:
            rows = db.execute("SELECT chunk_id, key FROM chunk_vectors ORDER BY chunk_id").fetchall()
            where: dict[bytes, list[int]] = {}
            for i, (_, key) in enumerate(rows):
                where.setdefault(bytes(key), []).append(i)
            matrix: npt.NDArray[np.float32] | None = None
            filled = np.zeros(len(rows), dtype=bool)
            with db.cursor() as cur:
                want = int(dim or _index_meta(db).get("dim", "0") or 0)
                damaged = 0
                for key, blob in cur.stream("SELECT key, vec FROM embeddings"):
                    at = where.get(bytes(key))
                    if at is None:
                        continue
                    vec = usable(blob, want) if want else np.frombuffer(blob, dtype=np.float32)
                    if vec is None:  # damaged: skipped, `index` embeds it again
                        damaged += 1
                        continue
                    if matrix is None:
                        matrix = np.empty((len(rows), len(vec)), dtype=np.float32)
                    matrix[at] = vec
                    filled[at] = True
        warn_damaged(damaged, self.location)
        if matrix is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim or 0), dtype=np.float32)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if not filled.all():
            ids, matrix = ids[filled], matrix[filled]
        return ids, matrix

    @_guard
    def keyword_ranked(self, query: str, n: int, pages: Sequence[int] | None = None) -> list[tuple[int, float]]:
        with self._reading() as db:
            return keyword_ranked(db, query, n, pages=pages)

    @_guard
    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        out: dict[int, StoredChunk] = {}
        if not ids:
            return out
        with self._reading() as db:
            for cid, url, hp, text, title, page_id, pos, idx in db.execute(
                    "SELECT c.id, c.url, c.heading_path, c.text, p.title, c.page_id, c.block_position, c.chunk_index "
                    "FROM chunks c LEFT JOIN pages p ON p.id = c.page_id WHERE c.id = ANY(%s)", ([int(i) for i in ids],)):
                out[int(cid)] = StoredChunk(int(cid), url, tuple(json.loads(hp)), text, title or "", int(page_id),
                                            int(pos), int(idx))
        return out

    @_guard
    def pages_matching(self, site: str | None = None, url_prefix: str | None = None, kind: str | None = None,
                       lang: str | None = None, since: str | None = None) -> list[int]:
        """SqliteStore.pages_matching: ids (ascending) of the pages on host `site` or a subdomain,
        under url_prefix, of that kind, language (or a subtag) and published on or after since."""
        ids: set[int] | None = None
        if site is not None:
            ids = set()
            with_port = ":" in site.lstrip("[").split("]")[-1]
            for hostport, pages in self._page_hosts().items():
                host = hostport if with_port else _strip_port(hostport)
                if host == site or host.endswith("." + site):
                    ids.update(pages)
        where: list[str] = []
        args: list[object] = []
        if url_prefix is not None:
            where.append("starts_with(url, %s)")
            args.append(url_prefix)
        if kind is not None:
            where.append("kind = %s")
            args.append(kind)
        if lang is not None:
            where.append("(lower(meta::jsonb->>'language') = %s OR starts_with(lower(meta::jsonb->>'language'), %s))")
            args += [lang.lower(), lang.lower() + "-"]
        if since is not None:
            where.append("(meta::jsonb->>'published') COLLATE \"C\" >= %s AND (meta::jsonb->>'published') <> ''")
            args.append(since)
        if where:
            with self._reading() as db:
                matched = {int(r[0]) for r in db.execute(f"SELECT id FROM pages WHERE {' AND '.join(where)}", args)}
            ids = matched if ids is None else ids & matched
        if ids is None:
            with self._reading() as db:
                return [int(r[0]) for r in db.execute("SELECT id FROM pages ORDER BY id")]
        return sorted(ids)

    def _page_hosts(self) -> dict[str, list[int]]:
        """host[:port] -> page ids, cached per store while the pages' count and highest id stay (a
        page's URL never changes: save_page updates by URL)."""
        with self._reading() as db:
            row = db.execute("SELECT count(*), max(id) FROM pages").fetchone()
            key = (row[0], row[1]) if row else (0, None)
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
        want = list(dict.fromkeys(keys))
        if not want:
            return {}
        with self._reading() as db:
            return {(int(p), int(q)): str(t) for p, q, t in db.execute(
                "SELECT b.page_id, b.position, b.text FROM blocks b JOIN unnest(%s::bigint[], %s::int[]) AS k(p, q) "
                "ON b.page_id = k.p AND b.position = k.q", ([k[0] for k in want], [k[1] for k in want]))}

    @_guard
    def page_chunks(self, page_id: int) -> list[tuple[int, str]]:
        with self._reading() as db:
            return [(int(i), str(t)) for i, t in db.execute(
                "SELECT id, text FROM chunks WHERE page_id = %s ORDER BY block_position, chunk_index, id", (page_id,))]

    # ------------------------------------------------------------------ RecordSource (export)
    def records(self, what: str) -> Iterator[dict[str, object]]:
        """Streamed through a server-side cursor: a million chunks never sit in memory at once."""
        import psycopg

        from ..crawl.frontier import STATE_NAMES

        if what not in _EXPORTS:
            raise StoreError(f"cannot export {what!r}: one of {', '.join(RECORD_KINDS)}")
        sql, cols = _EXPORTS[what]
        try:
            with self._reading() as db, _streaming(db) as cur:
                cur.execute(sql)
                for row in cur:
                    rec: dict[str, object] = dict(zip(cols, row))
                    if "heading_path" in rec:
                        rec["heading_path"] = json.loads(str(rec["heading_path"]))
                    if what == "pages":
                        rec["meta"] = json.loads(str(rec["meta"])) if rec["meta"] else {}
                        if rec["cluster"] is None:
                            rec["cluster"] = -1
                    if what == "frontier":
                        rec["state"] = STATE_NAMES.get(int(str(rec["state"])), rec["state"])
                    yield rec
        except psycopg.Error as e:
            raise StoreError(f"{self.location}: {_first_line(e, self._secret)}") from e

    def page_markdown(self) -> Iterator[tuple[str, str, str | None, list[tuple[tuple[str, ...], str, str]]]]:
        """SqliteStore.page_markdown: (url, title, markdown, blocks) of every page in crawl order."""
        import psycopg

        try:
            with self._reading() as db, _streaming(db) as cur:
                cur.execute("SELECT id, url, title, markdown FROM pages ORDER BY id")
                for pid, url, title, text in cur:
                    blocks: list[tuple[tuple[str, ...], str, str]] = []
                    if text is None:
                        blocks = [(tuple(json.loads(hp)), str(kind), str(t)) for hp, kind, t in db.execute(
                            "SELECT heading_path, kind, text FROM blocks WHERE page_id=%s ORDER BY position", (pid,))]
                    yield str(url), str(title or ""), None if text is None else str(text), blocks
        except psycopg.Error as e:
            raise StoreError(f"{self.location}: {_first_line(e, self._secret)}") from e


@contextmanager
def _streaming(db: Conn) -> Iterator[psycopg.ServerCursor[tuple[Any, ...]]]:
    """A server-side cursor (fetched 2000 rows at a time), in a transaction of its own when the
    connection is in autocommit (a reader); a writer's cursor lives in its open transaction."""
    if db.autocommit:
        with db.transaction(), db.cursor(name="blockcrawl_export") as cur:
            cur.itersize = 2000
            yield cur
    else:
        with db.cursor(name="blockcrawl_export") as cur:
            cur.itersize = 2000
            yield cur


def _info_row(info: PageInfo | None) -> tuple[object, ...]:
    """The pages columns text, kind, kind_score, summary, meta, cluster of a PageInfo (NULLs, -1)."""
    if info is None:
        return None, None, None, None, None, -1
    return (info.text, info.kind, float(info.kind_score), info.summary,
            json.dumps(info.meta.to_dict(), ensure_ascii=False), int(info.cluster))


def _index_meta(db: Conn) -> dict[str, str]:
    if not exists(db, "index_meta"):
        return {}
    return {str(k): str(v) for k, v in db.execute("SELECT key, value FROM index_meta")}


def _set_meta(db: Conn, **values: object) -> None:
    with db.cursor() as cur:
        cur.executemany("INSERT INTO index_meta(key, value) VALUES (%s,%s) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                        [(k, str(v)) for k, v in values.items()])


_hosts: dict[str, tuple[tuple[object, ...], dict[str, list[int]]]] = {}
_hosts_lock = threading.Lock()


F = TypeVar("F", bound=Callable[..., Any])


def _fguard(fn: F) -> F:
    """psycopg errors of the frontier (a connection lost mid-crawl) as one StoreError line."""
    @functools.wraps(fn)
    def wrapper(self: PostgresFrontier, *args: Any, **kwargs: Any) -> Any:
        import psycopg

        try:
            return fn(self, *args, **kwargs)
        except psycopg.Error as e:
            raise StoreError(f"{self.location}: {_first_line(e, self.secret)}") from e
    return cast("F", wrapper)


class PostgresFrontier:
    """store.frontier.SqliteFrontier in PostgreSQL: same methods, same table, no commit here (the
    crawler commits through the store, so a page and its frontier row land together)."""

    def __init__(self, db: Conn, location: str = "the store", secret: str | None = None) -> None:
        self.db = db
        self.location, self.secret = location, secret

    @_fguard
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM crawl_meta WHERE key=%s", (key,)).fetchone()
        return str(row[0]) if row else None

    @_fguard
    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO crawl_meta(key, value) VALUES (%s,%s) ON CONFLICT(key) DO UPDATE SET "
                        "value=excluded.value", (key, value))

    @_fguard
    def reset(self) -> None:
        self.db.execute("DELETE FROM frontier")
        self.db.execute("DELETE FROM crawl_meta")

    @_fguard
    def size(self) -> int:
        row = self.db.execute("SELECT count(*) FROM frontier").fetchone()
        return int(row[0]) if row else 0

    @_fguard
    def seen_urls(self) -> set[str]:
        return {str(u) for (u,) in self.db.execute("SELECT url FROM frontier")}

    @_fguard
    def restore(self) -> list[Item]:
        from ..crawl.frontier import IN_FLIGHT, QUEUED, Item

        self.db.execute("UPDATE frontier SET state=%s WHERE state=%s", (QUEUED, IN_FLIGHT))
        rows = self.db.execute("SELECT url, host, depth, kind, attempts, hops, via, not_before, fetch_url, trail "
                               "FROM frontier WHERE state=%s ORDER BY depth, id", (QUEUED,)).fetchall()
        return [Item(*r) for r in rows]

    @_fguard
    def add(self, items: Iterable[Item]) -> None:
        now = time.time()
        rows = [(it.url, it.fetch, it.host, it.depth, it.kind, it.hops, it.via, it.trail, now) for it in items]
        if rows:
            with self.db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO frontier(url, fetch_url, host, depth, kind, hops, via, trail, updated) "
                    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT(url) DO NOTHING", rows)

    @_fguard
    def mark(self, url: str, state: int, status: int | None = None, error: str | None = None,
             attempts: int | None = None, not_before: float = 0.0) -> None:
        if attempts is None:
            self.db.execute("UPDATE frontier SET state=%s, status=%s, error=%s, updated=%s WHERE url=%s",
                            (state, status, error, time.time(), url))
        else:
            self.db.execute("UPDATE frontier SET state=%s, status=%s, error=%s, attempts=%s, not_before=%s, "
                            "updated=%s WHERE url=%s", (state, status, error, attempts, not_before, time.time(), url))

    @_fguard
    def log(self, url: str, event: str, status: int | None = None, error: str | None = None,
            detail: str = "", nbytes: int = 0, elapsed: float = 0.0) -> None:
        self.db.execute("INSERT INTO crawl_log(t, url, event, status, error, detail, bytes, elapsed) "
                        "VALUES (%s,%s,%s,%s,%s,%s,%s,%s)", (time.time(), url, event, status, error, detail[:500],
                                                             nbytes, round(elapsed, 4)))


__all__ = ["PostgresFrontier", "PostgresStore", "is_url", "redact"]

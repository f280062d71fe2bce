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

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import StoreError, StoreMissing
from .base import SqlStore
from .pgschema import LOCK_FRONTIER, LOCK_INDEX, SCHEMA_VERSION, exists, migrate, version
from .pgsearch import keyword_ranked, tsvector

if TYPE_CHECKING:
    from pathlib import Path

    import psycopg

    Conn = psycopg.Connection[tuple[Any, ...]]

SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT = 10  # seconds: an unreachable host is one error line, not a hang


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


class PostgresStore(SqlStore):
    """A store in a PostgreSQL database. Implements PageSink, ChunkSource, SearchStore, RecordSource
    (store.base: the methods both backends share; here the hooks for PostgreSQL)."""

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
        self._init_pool()
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

    def _connect_reader(self) -> Conn:
        """An autocommit read-only connection for another thread (store.base._reading)."""
        db = self._connect(autocommit=True)
        db.execute("SET default_transaction_read_only = on")
        return db

    @property
    def db(self) -> Conn:
        """The owner's connection (tests read it; stages use the methods)."""
        return self._db  # type: ignore[no-any-return]

    @property
    def schema_version(self) -> int:
        return version(self._db, self.location) or 0

    def close(self) -> None:
        self._close_pool()
        self._db.close()  # ends the session: its advisory locks go with it

    def commit(self) -> None:
        import psycopg

        if self._db.closed or self._db.autocommit:
            return
        try:
            self._db.commit()
        except psycopg.Error as e:
            raise StoreError(f"{self.location}: {_first_line(e, self._secret)}") from e

    def _holder(self, db: Any, key: int) -> str | None:
        """Who else holds the advisory lock key: "application_name (pid N)", or None."""
        holder = db.execute(
            "SELECT a.application_name, a.client_addr, a.pid FROM pg_locks l JOIN pg_stat_activity a "
            "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND a.pid <> pg_backend_pid() "
            "AND a.datname = current_database() AND ((l.classid::bigint << 32) | l.objid::bigint) = %s",
            (key,)).fetchone()
        return f"{holder[0] or 'another client'} (pid {holder[2]})" if holder else None

    def _exclusive(self, key: int, what: str) -> None:
        """A session advisory lock (kept until close, also across commits); StoreError if taken."""
        row = self._db.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        if not (row and row[0]):
            name = self._holder(self._db, key) or "another client"
            raise StoreError(f"{self.location} is {what} by {name}: one at a time (search and export still work)")

    def _indexer(self, db: Any) -> str | None:
        return self._holder(db, LOCK_INDEX)

    # ------------------------------------------------------------------ dialect hooks (store.base)
    BYTE_ORDER = ' COLLATE "C"'
    FOR_UPDATE = " FOR UPDATE"  # two writers of one URL: the second waits for the first one's commit
    CHUNK_EXTRA = ("tsv", "n_tok")

    def _fault(self, e: BaseException) -> StoreError | None:
        import psycopg

        return StoreError(f"{self.location}: {_first_line(e, self._secret)}") if isinstance(e, psycopg.Error) else None

    def _q(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def _has_table(self, db: Any, name: str) -> bool:
        return exists(db, name)

    def _columns(self, db: Any, table: str) -> set[str]:
        return {str(r[0]) for r in db.execute("SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                                              "AND table_schema = current_schema()", (table,))}

    def _json_text(self, col: str, key: str) -> str:
        return f"({col}::jsonb->>'{key}')"

    def _prefix(self, expr: str, prefix: str) -> tuple[str, list[object]]:
        return f"starts_with({expr}, ?)", [prefix]

    def _chunk_extra(self, text: str, heading_json: str, context: str) -> tuple[object, ...]:
        """The keyword columns (store.pgsearch): FTS5's tokens as a tsvector, and their count."""
        return tsvector(text, heading_json, context)

    def _drop_mappings(self, db: Any, page_id: int, chunk_ids: Sequence[int] | None = None) -> None:
        """No trigger here (store.pgschema): a page's vector mappings go with its chunks by hand."""
        if chunk_ids is not None:
            db.execute("DELETE FROM chunk_vectors WHERE chunk_id = ANY(%s)", (list(chunk_ids),))
            return
        db.execute("DELETE FROM chunk_vectors WHERE chunk_id IN (SELECT id FROM chunks WHERE page_id=%s)", (page_id,))

    def _prepare_index(self, db: Any) -> None:
        self._exclusive(LOCK_INDEX, "being indexed")

    def _has_index(self, db: Any) -> bool:
        return exists(db, "index_meta")

    def _keyword(self, db: Any, query: str, n: int, pages: Sequence[int] | None) -> list[tuple[int, float]]:
        return keyword_ranked(db, query, n, pages=pages)

    def _lock_frontier(self) -> None:
        """One crawl at a time uses the store's own frontier (a session advisory lock until close):
        its reset() would wipe another crawl's queue."""
        self._exclusive(LOCK_FRONTIER, "being crawled")

    @contextmanager
    def _stream(self, db: Any, sql: str, args: Sequence[object] = ()) -> Iterator[Iterable[tuple[Any, ...]]]:
        """A server-side cursor (fetched 2000 rows at a time), in a transaction of its own when the
        connection is in autocommit (a reader); a writer's cursor lives in its open transaction."""
        if db.autocommit:
            with db.transaction(), db.cursor(name="blockcrawl_stream") as cur:
                cur.itersize = 2000
                cur.execute(self._q(sql), args)
                yield cur
        else:
            with db.cursor(name="blockcrawl_stream") as cur:
                cur.itersize = 2000
                cur.execute(self._q(sql), args)
                yield cur


__all__ = ["PostgresStore", "is_url", "redact"]

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

import json
import os
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..errors import StoreError, StoreMissing
from .base import SqlStore, vectors_from
from .base import hostport as _hostport  # noqa: F401 - the names tests import from here
from .base import strip_port as _strip_port  # noqa: F401
from .cjk import is_cjk_char, split_cjk
from .lock import WriterLock, lock_path
from .schema import SCHEMA_VERSION, check, ensure_index_schema, has_table, migrate

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

BUSY_MS = 30000  # a reader meets the writer's checkpoint, a writer a reader's long scan: wait, do not fail

# keyword search (see keyword_ranked)
_TERM = re.compile(r"\w+", re.UNICODE)
# Dropped from keyword queries (terms are OR-ed, so these would match nearly every chunk).
_STOP = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "is", "it", "of", "on", "or", "that",
    "the", "this", "to", "was", "were", "what", "when", "where", "which", "who", "why", "with", "about", "does", "do", "did",
])
COMMON_SHARE = 0.05  # of the chunks: a word in more of them is common (see keyword_ranked)
COMMON_MIN_ROWS = 2000  # chunks: scoring this many costs ~2 ms, so a rarer word is never common
# chunks a query selects (and bm25 scores) at most, over its selecting words (see split_common): the
# cost of keyword search at 10^6 chunks, where a word in 5% of them is in 50,000 (docs/search.md)
SELECT_MAX_ROWS = 20_000
_BM25 = "SELECT rowid, bm25(chunks_fts, 1.0, 0.5, 0.5) AS s FROM chunks_fts WHERE chunks_fts MATCH ?"
# the same restricted to some pages (a JSON array of page ids): FTS5 selects, then each match's
# chunk row is looked up by id and its page tested against the ids (an ephemeral index, built once)
_BM25_IN = ("SELECT chunks_fts.rowid, bm25(chunks_fts, 1.0, 0.5, 0.5) AS s FROM chunks_fts "
            "JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? "
            "AND c.page_id IN (SELECT value FROM json_each(?))")


def _store_fault(e: BaseException) -> bool:
    """A fault of the file or its surroundings (corrupt, read-only, locked, disk full), not of our SQL."""
    return isinstance(e, (sqlite3.OperationalError, sqlite3.DataError, sqlite3.InternalError)) or \
        type(e) is sqlite3.DatabaseError


class SqliteStore(SqlStore):
    """A store in one SQLite file. Implements PageSink, ChunkSource, SearchStore, RecordSource
    (store.base: the methods both backends share; here the hooks for SQLite)."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True, readonly: bool = False,
                 who: str = "a blockcrawl writer") -> None:
        """create: make the file (and its folders) when missing; else StoreMissing. readonly: a
        reader (never creates). who: how a second writer is told who holds the lock."""
        self.path = Path(path)
        self.location = str(self.path)
        self.readonly = readonly
        self.ann_base: Path | None = self.path
        self._lock: WriterLock | None = None
        self._init_pool()
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a folder, not a store")
        memory = str(path) == ":memory:"  # SQLite's in-memory database: no file, no lock
        if not memory and self.path.exists() and not self.path.is_file():
            # /dev/null, a FIFO, a device: SQLite would create its -journal (and we our .lock) beside it
            raise StoreError(f"{self.path} is not a regular file: a store is an SQLite file (give a path like site.db)")
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

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        self._close_pool()
        self._db.close()
        if self._lock is not None:
            self._lock.release()

    @property
    def db(self) -> sqlite3.Connection:
        """The owner's connection (tests and benchmarks read it; stages use the methods)."""
        return self._db  # type: ignore[no-any-return]

    def commit(self) -> None:
        try:
            self._db.commit()
        except sqlite3.Error as e:
            err = self._fault(e)
            if err is None:
                raise
            raise err from e

    # ------------------------------------------------------------------ dialect hooks (store.base)
    def _fault(self, e: BaseException) -> StoreError | None:
        return StoreError(f"{self.location}: {e}") if isinstance(e, sqlite3.Error) and _store_fault(e) else None

    def _many(self, db: Any, sql: str, rows: Sequence[Sequence[object]]) -> None:
        db.executemany(sql, rows)

    def _has_table(self, db: Any, name: str) -> bool:
        return has_table(db, name)

    def _columns(self, db: Any, table: str) -> set[str]:
        return {str(r[1]) for r in db.execute(f"PRAGMA table_info({table})")}

    def _json_text(self, col: str, key: str) -> str:
        return f"json_extract({col}, '$.{key}')"

    def _prefix(self, expr: str, prefix: str) -> tuple[str, list[object]]:
        """A range (SQLite compares text by UTF-8 bytes, as code points order): on pages.url it
        is a search of the url index, where substr() or LIKE would read every row."""
        return f"{expr} >= ? AND {expr} < ?", [prefix, _prefix_end(prefix)]

    def _file_id(self) -> tuple[object, ...]:
        """The file itself (inode, ctime: a checkpoint changes it too, which only costs a rebuild): a
        store deleted and crawled anew at the same path is another file."""
        try:
            st = os.stat(self.path)
        except OSError:
            return (id(self),)
        return (st.st_ino, st.st_ctime_ns)

    def _prepare_index(self, db: Any) -> None:
        ensure_index_schema(db)

    def _has_index(self, db: Any) -> bool:
        return has_table(db, "chunks_fts")

    def _indexer(self, db: Any) -> str | None:
        """The `index` run holding the writer lock (its lock file names it and its pid), if one is
        alive in another process. Read, never locked: a probe would make a starting writer fail."""
        if self._lock is not None:
            return None
        try:
            who = lock_path(self.path).read_text(errors="replace").strip()
        except OSError:
            return None
        m = re.fullmatch(r"(.*\bindex\b.*) \(pid (\d+)\)", who)
        if m is None or int(m.group(2)) == os.getpid():
            return None
        try:
            os.kill(int(m.group(2)), 0)
        except PermissionError:
            pass  # alive, another user's
        except OSError:
            return None  # that run ended (killed: its lock file stays)
        return who

    def _keyword(self, db: Any, query: str, n: int, pages: Sequence[int] | None) -> list[tuple[int, float]]:
        # a reader of a store from before schema 6 (never migrated: readers do not write) asks its
        # keyword index as it was built, CJK runs whole
        split = int(db.execute("PRAGMA user_version").fetchone()[0]) >= 6
        return keyword_ranked(db, query, n, pages=pages, split=split)


def keyword_terms(query: str) -> list[str]:
    """The query's distinct words as quoted FTS5 phrases (no FTS syntax from users), stop words
    dropped unless nothing else is left."""
    terms = [t.lower() for t in _TERM.findall(query)]
    kept = [t for t in terms if t not in _STOP] or terms
    return ['"' + t.replace('"', '""') + '"' for t in dict.fromkeys(kept)]


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


def fts_phrase(term: str, split: bool = True) -> str:
    """A quoted keyword_terms word as chunks_fts matches it: CJK runs as bigram phrases (store.cjk),
    a lone CJK character as a prefix of the bigrams."""
    if not split:
        return term
    word = term[1:-1].replace('""', '"')
    if is_cjk_char(word):
        return f"{term}*"
    parts = split_cjk(word).split()
    return '"' + " ".join(parts).replace('"', '""') + '"' if parts else term


def split_common(terms: Sequence[str], df: dict[str, int], total: int, common_share: float = COMMON_SHARE,
                 common_min_rows: int = COMMON_MIN_ROWS,
                 select_max_rows: int = SELECT_MAX_ROWS) -> tuple[list[str], list[str]]:
    """(rare, common) of a query's terms, each in query order: rare words select and score, common
    ones only score (keyword_ranked). df: chunks holding each term, exact up to probe_limit(); words
    in no chunk are in neither list. Shared by the SQLite and PostgreSQL stores, so both rank alike.

    A word is common in more than common_share of the chunks (and more than common_min_rows). Then,
    rarest first, the words that select are cut where their rows would pass select_max_rows: the
    rarest always selects, a word in at most common_min_rows chunks always does. In a store below
    ~40k chunks nothing changes (no word passes 2,000 rows by much); at 10^6 a query of 5 words in
    8,000 chunks each would score 40,000 rows (~40 ms of bm25) uncut, 20,000 at most cut."""
    present = [t for t in terms if df.get(t, 0) > 0]
    if len(present) <= 1:
        return present, []
    cutoff = max(common_min_rows, common_share * total)
    rare = [t for t in present if df[t] <= cutoff] or present  # only common words: select by them
    keep: set[str] = set()
    rows = 0
    for t in sorted(rare, key=lambda t: df[t]):  # stable: equal counts in query order
        if keep and df[t] > common_min_rows and rows + df[t] > select_max_rows:
            break
        keep.add(t)
        rows += df[t]
    return [t for t in present if t in keep], [t for t in present if t not in keep]


def probe_limit(total: int, common_share: float = COMMON_SHARE, common_min_rows: int = COMMON_MIN_ROWS,
                select_max_rows: int = SELECT_MAX_ROWS) -> int:
    """Rows counted per term at most: past this a term is common or past the select budget whatever its
    exact count, and split_common decides the same (counting all of "the" costs ~1 ms per 10k rows)."""
    return int(max(common_min_rows, min(common_share * total, select_max_rows))) + 1


def indexed_rows(db: sqlite3.Connection) -> int:
    """Rows in chunks_fts (= chunks: the triggers keep them equal), bm25's N. Read from FTS5's
    averages record (chunks_fts_data id 1, its first varint: the row count, fts5_index.c), ~0.1 ms;
    count(*) over chunks walks an index: ~17 ms at 10^6 chunks, on every keyword query."""
    row = db.execute("SELECT block FROM chunks_fts_data WHERE id = 1").fetchone()
    blob = bytes(row[0]) if row and row[0] is not None else b""
    value = 0
    for i, byte in enumerate(blob[:9]):  # SQLite varint: 7 bits a byte, high first; the 9th byte has 8
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])  # no averages record yet


def keyword_ranked(db: sqlite3.Connection, query: str, n: int, common_share: float = COMMON_SHARE,
                   common_min_rows: int = COMMON_MIN_ROWS,
                   pages: Sequence[int] | None = None, split: bool = True,
                   select_max_rows: int = SELECT_MAX_ROWS) -> list[tuple[int, float]]:
    """The n best chunks for the OR of the query's words by bm25 (text counts twice the heading path),
    best first, as (chunk id, score) with score = -bm25 (higher is better).

    Common words (split_common: in more than common_share of the chunks and more than
    common_min_rows of them, or past the select_max_rows budget) score but do not select when the
    query has rarer words, as in Lucene's CommonTermsQuery: bm25 is a sum of independent per-word
    parts, so each chunk returned gets the very score of the plain OR query; left out are chunks
    whose only match is a common word (idf <= log(19) = 2.9 by share, against 7.6 for a word in 1
    of 2000 chunks). The plain query ranks those below every chunk that scores more than
    sum(idf * (k1 + 1)) of the common words, so its top n is unchanged whenever n such chunks
    exist; else the list is shorter. Scoring them was the cost: bm25 of the 18k chunks of 100k that
    hold a word like "news" took ~20 ms a query.

    pages: only chunks of these pages (the filter applies before the top n is cut, so a filter
    matching few pages still gets its n best); the common/rare split stays global, as bm25's idf.
    split: the index splits CJK runs into bigrams (schema 6 on; store.cjk).
    """
    terms = list(dict.fromkeys(fts_phrase(t, split) for t in keyword_terms(query)))
    if not terms:
        return []
    rare, common = terms, list[str]()
    if len(terms) > 1:
        total = indexed_rows(db)
        limit = probe_limit(total, common_share, common_min_rows, select_max_rows)
        # rows per term as FTS5 tokenizes it (the count bm25's idf uses), counted up to the limit
        df = {t: db.execute("SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
                            (t, limit)).fetchone()[0] for t in terms}
        rare, common = split_common(terms, df, total, common_share, common_min_rows, select_max_rows)
        if not rare:
            return []
    either = " OR ".join(rare)
    sql, extra = (_BM25, ()) if pages is None else (_BM25_IN, (json.dumps(list(pages)),))
    if not common:
        rows = db.execute(f"{sql} ORDER BY s, chunks_fts.rowid LIMIT ?", (either, *extra, n)).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]
    # Two statements, each cut to its best n in SQL: the chunks holding a rare word and a common one
    # (their full score), and the rare words alone (bm25 sums over the query's words, a missing one
    # adds 0: a chunk without a common word gets its full score there). A chunk of the second list
    # that holds a common word but missed the first one's n scores less there than its full score,
    # which is below n chunks of the first list: it never reaches the best n. FTS5's bm25 counts each
    # common word's chunks for its idf (~20 ms for the common words of a query at 10^6 chunks), so
    # only the first statement names them.
    scores: dict[int, float] = {}
    for match in (either, f"({either}) AND ({' OR '.join(common)})"):
        scores.update((int(r[0]), -float(r[1])) for r in db.execute(
            f"{sql} ORDER BY s, chunks_fts.rowid LIMIT ?", (match, *extra, n)))
    return sorted(scores.items(), key=lambda r: (-r[1], r[0]))[:n]


def load_vectors(db: sqlite3.Connection, dim: int | None = None) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """(chunk ids int64 ascending, float32 matrix of shape (n, dim)) of a store's connection (see
    store.base.vectors_from; bench/search.py and tests read a connection without a store object)."""
    if not has_table(db, "chunk_vectors"):
        return vectors_from([], [], dim)
    rows = db.execute("SELECT chunk_id, key FROM chunk_vectors ORDER BY chunk_id").fetchall()
    return vectors_from(rows, db.execute("SELECT key, vec FROM embeddings"), dim)


__all__ = ["SCHEMA_VERSION", "SqliteStore", "keyword_ranked", "keyword_terms", "load_vectors", "probe_limit",
           "split_common"]

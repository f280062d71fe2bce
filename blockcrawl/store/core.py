"""The ground the shared store methods stand on (store.base): the dialect hooks, connections, helpers."""
from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, Self, TypeVar, cast

from ..errors import StoreError

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import numpy.typing as npt

    from ..records import PageInfo

P = ParamSpec("P")
R = TypeVar("R")


class Faulty(Protocol):
    def _fault(self, e: BaseException) -> StoreError | None: ...


S = TypeVar("S", bound=Faulty)

POOL_MAX = 8  # idle reader connections kept for other threads (serve's request threads)



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
                 dim: int | None, location: str = "store") -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """(chunk ids ascending, float32 matrix) from the (chunk id, key) mappings in chunk order and a
    stream of (key, vector blob). Two sequential scans joined in Python: a JOIN looks every chunk's
    vector up by its 20-byte key, random B-tree reads that took ~3-5 s at 100k chunks against
    ~0.5 s for the scans. Chunks with the same text share one stored vector. A damaged vector
    (wrong size, NaN: store.vecblob) is left out with one warning; `index` embeds it again."""
    import numpy as np

    from .vecblob import usable, warn_damaged

    where: dict[bytes, list[int]] = {}
    for i, (_, key) in enumerate(rows):
        where.setdefault(bytes(key), []).append(i)
    matrix: npt.NDArray[np.float32] | None = None
    filled = np.zeros(len(rows), dtype=bool)
    damaged = 0
    for key, blob in blobs:
        at = where.get(bytes(key))
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


class SqlCore:
    """What the shared methods stand on: the dialect hooks, the connections and their pool."""

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

    def _drop_mappings(self, db: Any, page_id: int, chunk_ids: Sequence[int] | None = None) -> None:
        """Delete the vector mappings of a page's chunks (those of chunk_ids only, if given) before
        the chunks go."""

    def _prepare_index(self, db: Any) -> None:
        """Create or lock what an index run needs."""

    def _has_index(self, db: Any) -> bool:
        raise NotImplementedError

    def _indexer(self, db: Any) -> str | None:
        """Who runs an `index` on this store now, from another process or session (None: nobody)."""
        return None

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

    def _index_meta(self, db: Any) -> dict[str, str]:
        if not self._has_table(db, "index_meta"):
            return {}
        return {str(k): str(v) for k, v in self._exec(db, "SELECT key, value FROM index_meta")}

    def _set_meta(self, db: Any, **values: object) -> None:
        self._many(db, "INSERT INTO index_meta(key, value) VALUES (?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                   [(k, str(v)) for k, v in values.items()])

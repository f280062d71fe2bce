"""Search a store: exact (or ANN) vector search, FTS5 keyword search, and their reciprocal rank
fusion (RRF, k=60): score(chunk) = sum over the two rankings of 1 / (60 + rank)."""
from __future__ import annotations

import os
import threading
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np

from ..errors import NotIndexed, QueryError
from ..index.embed import Embedder, default_embedder
from ..index.vectors import HalfScan
from ..store.protocols import SearchStore

MODES = ("hybrid", "vector", "keyword")
RRF_K = 60
MAX_K = 100
MAX_QUERY_CHARS = 1000


class SearchError(QueryError):
    """Bad query or arguments: shown to the user as one line (HTTP 400 in serve)."""


@dataclass(slots=True)
class Hit:
    chunk_id: int
    score: float
    url: str
    heading_path: list[str]
    text: str
    title: str = ""
    vector_rank: int | None = None  # 1-based rank in the vector list, None if not in it
    keyword_rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Loaded:
    generation: str  # cache token: index generation @ time of the index run
    model: str
    dim: int
    ids: np.ndarray
    scan: HalfScan
    ann: Any | None = None  # index.ann.HnswIndex


_cache: dict[str, _Loaded] = {}  # by store.cache_key (the resolved path of an SQLite store)
_cache_lock = threading.Lock()


def _vectors(store: SearchStore, meta: dict[str, str]) -> _Loaded:
    """The store's vectors, loaded once per process and index generation."""
    key = store.cache_key
    gen = meta.get("generation", "0")
    # generation and time of the index run: a store deleted and indexed anew under the same path
    # (generation 1 again) is not mistaken for the one cached
    token = f"{gen}@{meta.get('indexed_at', '')}"
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None or cached.generation != token:
            from ..index.ann import load_ann

            dim = int(meta.get("dim", 0))
            ann = load_ann(store.ann_base, gen) if store.ann_base is not None else None
            if ann is None:
                ids, matrix = store.load_vectors(dim)
            else:  # the graph answers alone: no need for the matrix in RAM
                ids, matrix = np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
            cached = _Loaded(token, meta.get("model", ""), dim, ids, HalfScan(matrix), ann)
            _cache[key] = cached
        return cached


def validate(query: str, k: int, mode: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise SearchError("empty query")
    if len(query) > MAX_QUERY_CHARS:
        raise SearchError(f"query too long ({len(query)} characters, at most {MAX_QUERY_CHARS})")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise SearchError(f"k must be between 1 and {MAX_K}")
    if mode not in MODES:
        raise SearchError(f"mode must be one of {', '.join(MODES)}")
    return query.strip()


def _keyword_in_thread(store: SearchStore, query: str, n: int, box: list[object]) -> None:
    try:
        box.append(store.keyword_ranked(query, n))
    except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, raised there
        box.append(e)


def _vector_ranked(loaded: _Loaded, query_vec: np.ndarray, n: int) -> list[tuple[int, float]]:
    if loaded.ann is not None:
        ids, scores = loaded.ann.search(query_vec, n)
        return list(zip(map(int, ids), map(float, scores)))
    pos, scores = loaded.scan.top(query_vec, n)
    return list(zip(map(int, loaded.ids[pos]), map(float, scores)))


def _resolve(store: SearchStore, ranked: list[tuple[int, float, int | None, int | None]], k: int) -> list[Hit]:
    """Hits for the best k ranked chunk ids still in the store (a re-crawl may have dropped some)."""
    rows = store.chunks_by_id([r[0] for r in ranked])
    hits = []
    for cid, score, vr, kr in ranked:
        r = rows.get(cid)
        if r is None:
            continue
        hits.append(Hit(cid, round(score, 6), r.url, list(r.heading_path), r.text, r.title, vr, kr))
        if len(hits) == k:
            break
    return hits


def search(store: SearchStore | str | os.PathLike[str], query: str, k: int = 10, mode: str = "hybrid",
           embedder: Embedder | None = None) -> list[Hit]:
    """The k best chunks of the store for query. Raises SearchError / StoreMissing / NotIndexed /
    StoreError. The caller opens the store (`Store(path, readonly=True)`) and may keep it open for
    many searches; a path is opened read-only for the one call."""
    query = validate(query, k, mode)
    if isinstance(store, (str, os.PathLike)):
        from ..store import Store

        with Store(store, readonly=True) as st:
            return search(st, query, k, mode, embedder)
    meta = store.index_meta()
    if "generation" not in meta:
        raise NotIndexed(f"store {store.location} was never indexed (run 'blockcrawl index --store {store.location}')")
    n = max(100, 3 * k)  # candidates per list: RRF needs depth, and some ids may be gone
    vec: list[tuple[int, float]] = []
    kw: list[tuple[int, float]] = []
    fts_thread = None
    box: list[object] = []
    try:
        if mode == "hybrid":
            # FTS on its own connection while the model embeds the query: both release the GIL
            fts_thread = threading.Thread(target=_keyword_in_thread, args=(store, query, n, box), daemon=True)
            fts_thread.start()
        if mode in ("hybrid", "vector"):
            emb = embedder or default_embedder()
            if emb.name != meta.get("model"):
                raise NotIndexed(f"store {store.location} was indexed with {meta.get('model')}, not {emb.name}: "
                                 "re-run index")
            loaded = _vectors(store, meta)
            qv = emb.embed([query])[0]
            vec = _vector_ranked(loaded, qv, n)
    finally:
        if fts_thread is not None:
            fts_thread.join()  # never leave a thread reading a store the caller may close
    if fts_thread is not None:
        if isinstance(box[0], BaseException):
            raise box[0]
        kw = cast("list[tuple[int, float]]", box[0])
    elif mode == "keyword":
        kw = store.keyword_ranked(query, n)
    ranked: list[tuple[int, float, int | None, int | None]]
    if mode == "vector":
        ranked = [(cid, s, i + 1, None) for i, (cid, s) in enumerate(vec)]
    elif mode == "keyword":
        ranked = [(cid, s, None, i + 1) for i, (cid, s) in enumerate(kw)]
    else:
        score: dict[int, float] = {}
        vrank: dict[int, int] = {}
        krank: dict[int, int] = {}
        for i, (cid, _) in enumerate(vec):
            score[cid] = score.get(cid, 0.0) + 1.0 / (RRF_K + i + 1)
            vrank[cid] = i + 1
        for i, (cid, _) in enumerate(kw):
            score[cid] = score.get(cid, 0.0) + 1.0 / (RRF_K + i + 1)
            krank[cid] = i + 1
        ranked = sorted(((cid, s, vrank.get(cid), krank.get(cid)) for cid, s in score.items()),
                        key=lambda r: (-r[1], r[0]))
    return _resolve(store, ranked, k)

"""The store's vectors held in memory for search: loaded once per process and index generation
(an HNSW graph when `index --ann` wrote one, else the flat matrix, memory-mapped where the index
run wrote a vector file), with each row's page id for the filtered searches, and the vector
side's ranked list."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..index.vectors import HALF_MIN_ROWS, HalfScan
from ..store.protocols import SearchStore


@dataclass
class _Loaded:
    generation: str  # cache token: index generation @ time of the index run
    model: str
    dim: int
    ids: np.ndarray
    scan: HalfScan
    ann: Any | None = None  # index.ann.HnswIndex
    page_of: np.ndarray | None = None  # page id of each row of ids (-1: chunk gone), loaded on first filter


_cache: dict[str, _Loaded] = {}  # by store.cache_key (the resolved path of an SQLite store)
_cache_lock = threading.Lock()


def _matrix(store: SearchStore, meta: dict[str, str], dim: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """(chunk ids, matrix, mapped): the flat file `index` wrote (index.vecfile), memory-mapped, when
    it matches this index run; else the vectors read from the store."""
    if store.ann_base is not None:
        from ..index import vecfile

        got = vecfile.load(store.ann_base, vecfile.token_of(meta), dim)
        if got is not None:
            return got[0], got[1], True
    ids, matrix = store.load_vectors(dim)
    return ids, matrix, False


def _scan(matrix: np.ndarray, mapped: bool) -> HalfScan:
    """The float16 scan needs torch and a float16 copy of the matrix: worth it only in a process
    that has torch loaded already (precision fp32) and holds the matrix in RAM. A memory-mapped
    matrix is scanned in float32 where it lies (one BLAS product, ~10 ms at 100k rows): no copy."""
    import sys

    use_half = not mapped and "torch" in sys.modules
    return HalfScan(matrix, min_rows=HALF_MIN_ROWS if use_half else len(matrix) + 1)


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
                ids, matrix, mapped = _matrix(store, meta, dim)
            else:  # the graph answers alone: no need for the matrix in RAM
                ids, matrix, mapped = np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32), False
            cached = _Loaded(token, meta.get("model", ""), dim, ids, _scan(matrix, mapped), ann)
            _cache[key] = cached
        return cached


def _filter_rows(store: SearchStore, loaded: _Loaded, pages: list[int]) -> np.ndarray:
    """Row positions (ascending) of the vectors whose chunk is on one of pages. The rows' page ids
    are read once per index generation; a query then costs one look-up per row.
    With an HNSW graph the matrix is loaded too, the first time a filter is used: the graph cannot
    be restricted to some rows without a Python callback per visited node."""
    with _cache_lock:
        if loaded.ann is not None and len(loaded.ids) == 0:
            meta = store.index_meta()
            ids, matrix, mapped = _matrix(store, meta, loaded.dim)
            loaded.ids, loaded.scan = ids, _scan(matrix, mapped)
        if loaded.page_of is None:
            cids, pids = store.chunk_pages()
            page_of = np.full(len(loaded.ids), -1, dtype=np.int64)
            if len(cids):
                at = np.minimum(np.searchsorted(cids, loaded.ids), len(cids) - 1)
                found = cids[at] == loaded.ids
                page_of[found] = pids[at[found]]
            loaded.page_of = page_of
        page_of = loaded.page_of
    # a boolean table indexed by page id (pages ascending: the last is the largest): one gather over
    # the rows, ~0.3 ms at 100k, where np.isin sorts them (~8 ms)
    allowed = np.zeros(max(pages[-1], int(page_of.max(initial=0))) + 2, dtype=bool)
    allowed[np.asarray(pages, dtype=np.int64)] = True  # page_of -1 (chunk gone) reads the last, False
    return np.flatnonzero(allowed[page_of])


def _vector_ranked(loaded: _Loaded, query_vec: np.ndarray, n: int,
                   rows: np.ndarray | None = None) -> list[tuple[int, float]]:
    if loaded.ann is not None and rows is None:
        ids, scores = loaded.ann.search(query_vec, n)
        return list(zip(map(int, ids), map(float, scores)))
    pos, scores = loaded.scan.top(query_vec, n, rows)
    return list(zip(map(int, loaded.ids[pos]), map(float, scores)))


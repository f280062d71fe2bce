"""Optional approximate nearest-neighbour index (HNSW via hnswlib) for large stores.

Chosen by measurement (docs/decisions/0004-ann-hnswlib.md): on 100k x 384 synthetic unit vectors hnswlib built in
14 s vs usearch 42 s, answered in 0.2 ms vs 0.65 ms, with higher recall at the same graph settings.
Again on 100k realistic vectors (M 16, ef_construction 100, 2 threads, load ~14): hnswlib
81 s, usearch f32 197 s; usearch i8 81 s in 85 MB (hnswlib 168 MB) but recall@10 against exact
search for real questions stops at 0.91 (ef 400; hnswlib 1.000): int8 distances cannot order the
near-ties of a dense store.
Persisted next to the store as STORE.hnsw plus STORE.hnsw.json (the index generation it was built
from: a stale file is ignored and search falls back to exact). Labels are the chunk ids.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import StoreError

if TYPE_CHECKING:
    import hnswlib

# Measured on realistic synthetic stores (bench/search.py, docs/search.md "Approximate search at 10^6"). At 10^6
# chunks, M 16, ef_construction 100, recall@10 against exact search for real questions / hold-out
# vectors was 0.929 / 0.977 at ef 400, 0.979 / 0.984 at 1600 and 0.985 / 0.991 at 3200, at 1.4, 5.3
# and 8.1 ms a graph query (load ~13 on 2 cores): the store is dense, the exact top 10 a run of
# near-ties, and ef is what buys them. ef_construction 64 built no faster there (457 s against 418,
# load-bound) and found less (0.879 at ef 400, 0.927 at 800). Below 10^6 the same ef costs less.
M = 16
EF_CONSTRUCTION = 100  # half the build time of 200
EF_SEARCH_MIN = 3200
# `index` builds the graph by itself from this many vectors (--ann: always). Below it exact search
# over the memory-mapped matrix is fast enough: ~10 ms at 100k rows, ~100 ms at 10^6 (docs/search.md).
AUTO_MIN_ROWS = 300_000


def ann_paths(store: Path) -> tuple[Path, Path]:
    return store.with_name(store.name + ".hnsw"), store.with_name(store.name + ".hnsw.json")


def available() -> bool:
    try:
        import hnswlib  # noqa: F401
    except ImportError:
        return False
    return True


class HnswIndex:
    def __init__(self, index: hnswlib.Index, dim: int, live: int | None = None) -> None:
        self.index, self.dim = index, dim
        # elements not marked deleted: hnswlib cannot return more than these
        self.live = index.get_current_count() if live is None else live

    def search(self, query: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        n = min(n, self.live)
        if n <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        self.index.set_ef(max(EF_SEARCH_MIN, n))
        labels, dist = self.index.knn_query(query.reshape(1, -1), k=n, num_threads=1)
        return labels[0].astype(np.int64), (1.0 - dist[0]).astype(np.float32)  # 'ip' distance = 1 - dot


def build_ann(store: Path, ids: np.ndarray, matrix: np.ndarray, generation: int | str,
              previous: int | str | None = None, changed: np.ndarray | None = None) -> Path:
    """Build the graph, or with previous (the generation the graph on disk was built for) update it
    in place: new chunk ids added, chunk ids given a new vector in this run (changed) updated,
    gone ones marked deleted, the rest kept. An index run that adds 1% of the chunks then costs 1%
    of a build instead of all of it."""
    if not available():
        raise RuntimeError("--ann needs hnswlib: pip install 'blockcrawl[ann]'")
    import hnswlib

    from ..limits import available_cpus

    path, meta = ann_paths(store)
    dim = matrix.shape[1] if matrix.ndim == 2 and matrix.shape[0] else 1
    idx = None
    if previous is not None:
        idx = _load(store, previous)
    if idx is not None and idx.dim == dim:
        graph = idx.index
        live = np.asarray(graph.get_ids_list(), dtype=np.int64)
        deleted = _deleted(store)
        live = live[~np.isin(live, deleted)] if len(deleted) else live
        gone = live[~np.isin(live, ids)]
        fresh = ~np.isin(ids, live)
        if changed is not None and len(changed):
            fresh |= np.isin(ids, changed)  # hnswlib replaces the vector of a label it holds
        for label in gone.tolist():
            graph.mark_deleted(label)
        need = graph.get_current_count() + int(fresh.sum())
        if need > graph.get_max_elements():
            graph.resize_index(max(need, int(graph.get_max_elements() * 1.25)))
        if fresh.any():
            graph.add_items(matrix[fresh], ids[fresh], num_threads=available_cpus())
        deleted = np.setdiff1d(np.union1d(deleted, gone), ids[fresh])
    else:
        graph = hnswlib.Index(space="ip", dim=dim)
        graph.init_index(max_elements=max(1, len(ids)), ef_construction=EF_CONSTRUCTION, M=M)
        if len(ids):
            graph.add_items(matrix, ids, num_threads=available_cpus())  # every core: a thread per insert
        deleted = np.zeros(0, dtype=np.int64)
    # Every file is written beside its place first; only renames follow, so a write that fails (a
    # full disk) leaves the previous graph and its meta as they were, and the next run rebuilds.
    tmp = path.with_name(path.name + ".tmp")
    deleted_path = _deleted_path(store)
    tmps = (tmp, deleted_path.with_name(deleted_path.name + ".tmp"), meta.with_name(meta.name + ".tmp"))
    info = {"generation": str(generation), "count": int(graph.get_current_count()), "live": int(len(ids)),
            "max": int(graph.get_max_elements()), "dim": dim}
    try:
        graph.save_index(str(tmp))
        # hnswlib writes through a C++ stream that never reports a failed write: on a full disk the
        # file is cut short without an error. Read it back before it replaces the graph (the one
        # built is let go first: one graph in memory at a time).
        del graph, idx
        check = hnswlib.Index(space="ip", dim=dim)
        try:
            check.load_index(str(tmp), max_elements=max(1, int(info["max"])))
        except RuntimeError:
            raise OSError(f"the graph written to {tmp.name} reads back damaged") from None
        del check
        with open(tmps[1], "wb") as f:
            np.save(f, deleted)
        tmps[2].write_text(json.dumps(info))
    except OSError as e:
        for t in tmps:
            t.unlink(missing_ok=True)
        raise StoreError(f"cannot write the HNSW graph {path.name} next to the store ({e.strerror or e}); "
                         "the vectors are stored: run 'blockcrawl index' again when there is room") from None
    meta.unlink(missing_ok=True)  # no searcher trusts the graph while it is swapped
    tmp.replace(path)  # atomic: a searcher never opens half a file
    tmps[1].replace(deleted_path)
    tmps[2].replace(meta)
    return path


def built_for(store: Path) -> str | None:
    """The index generation the graph on disk was built for (None: no graph)."""
    path, meta = ann_paths(store)
    try:
        gen = json.loads(meta.read_text()).get("generation") if path.is_file() else None
    except (OSError, ValueError, AttributeError):
        return None
    return str(gen) if gen is not None else None


def _deleted_path(store: Path) -> Path:
    return store.with_name(store.name + ".hnsw.deleted.npy")


def _deleted(store: Path) -> np.ndarray:
    try:
        return np.asarray(np.load(_deleted_path(store)), dtype=np.int64)
    except (OSError, ValueError):
        return np.zeros(0, dtype=np.int64)


def load_ann(store: Path, generation: int | str) -> HnswIndex | None:
    """The ANN index built for this generation of the store, or None (absent, stale, no hnswlib)."""
    if not available():
        return None
    return _load(store, generation)


def _load(store: Path, generation: int | str) -> HnswIndex | None:
    path, meta = ann_paths(store)
    if not path.is_file() or not meta.is_file():
        return None
    try:
        info = json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
    if info.get("generation") != str(generation):
        return None
    import hnswlib

    idx = hnswlib.Index(space="ip", dim=int(info["dim"]))
    try:
        idx.load_index(str(path), max_elements=max(1, int(info.get("max", info["count"]))))
    except RuntimeError:
        return None
    return HnswIndex(idx, int(info["dim"]), int(info.get("live", idx.get_current_count())))

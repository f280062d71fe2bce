"""`blockcrawl index`: embed the store's chunks that have no vector yet, keep FTS in sync.

Incremental by content: a chunk whose (model, text) key already has a vector is mapped to it, not
embedded again, so re-crawling a site whose pages did not change costs no model time.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..store.protocols import ChunkSource, VectorIndex
from .embed import Embedder, default_embedder
from .schema import vector_key

COMMIT_EVERY = 2000  # vectors: an interrupted run keeps what it embedded
GROUP_BATCHES = 16  # batches handed to the embedder per call (1,024 texts at the default 64)


@dataclass(frozen=True, slots=True)
class IndexStats:
    chunks: int  # chunks in the store
    embedded: int  # texts run through the model in this run
    reused: int  # new chunk rows mapped to an existing vector
    removed: int  # vectors no chunk uses any more
    seconds: float
    ann: bool = False
    repaired: int = 0  # chunks whose stored vector was damaged (wrong size, NaN): embedded again


def build_index(store: ChunkSource | str | os.PathLike[str], embedder: Embedder | None = None,
                batch_size: int = 64, ann: bool | None = None, progress: bool = False,
                rebuild: bool = False) -> IndexStats:
    """Embed the chunks of a store opened for writing (the CLI opens it with
    `open_store(path_or_url, create=False)`: an SQLite path or a postgresql:// URL).
    A path is opened for the call, as a writer (so it must exist and no crawl may be writing it).
    Damaged stored vectors are deleted and their chunks embedded again; rebuild: every vector.
    ann: True builds (or updates) the HNSW graph, False never, None (default) from
    ann.AUTO_MIN_ROWS vectors when hnswlib is installed; an existing graph is kept up to date."""
    if isinstance(store, (str, os.PathLike)):
        from ..store import open_store

        with open_store(store, create=False, who="blockcrawl index") as st:
            return build_index(st, embedder, batch_size, ann, progress, rebuild)
    t0 = time.perf_counter()
    emb = embedder or default_embedder()
    meta = store.begin_index(emb.name, emb.dim)
    repaired = 0
    if rebuild:
        store.clear_vectors()
    else:
        repaired = store.repair_vectors(emb.dim)

    todo = store.chunks_to_embed()
    known = store.vector_keys()
    pending: dict[bytes, tuple[str, list[int]]] = {}  # key -> (text, chunk ids waiting for it)
    reuse: list[tuple[int, bytes]] = []
    for cid, text in todo:
        key = vector_key(emb.name, text)
        if key in known:
            reuse.append((cid, key))
        else:
            pending.setdefault(key, (text, []))[1].append(cid)
    store.map_vectors(reuse)

    # longest texts first in similar-length batches: little padding, like encode() does itself
    order = sorted(pending, key=lambda k: -len(pending[k][0]))
    bar = None
    if progress and order:
        from tqdm import tqdm

        bar = tqdm(total=len(order), unit="chunk", desc="embedding", file=sys.stderr)
    since_commit = 0
    # many batches per call: the embedder sorts them by token length and runs `workers` at once
    group = batch_size * GROUP_BATCHES
    for start in range(0, len(order), group):
        keys = order[start:start + group]
        vecs = emb.embed([pending[k][0] for k in keys])
        if vecs.shape != (len(keys), emb.dim):
            raise RuntimeError(f"embedder {emb.name} returned shape {vecs.shape}, expected ({len(keys)}, {emb.dim})")
        store.save_vectors(keys, vecs, [pending[k][1] for k in keys])
        since_commit += len(keys)
        if since_commit >= COMMIT_EVERY:
            store.commit()
            since_commit = 0
        if bar is not None:
            bar.update(len(keys))
    if bar is not None:
        bar.close()
    removed = store.drop_unused_vectors()
    generation = int(meta.get("generation", "0")) + 1
    indexed_at = time.time()
    store.finish_index(generation, indexed_at)
    n_chunks = store.count_chunks()
    built_ann = False
    vstore = store if isinstance(store, VectorIndex) else None
    base = vstore.ann_base if vstore is not None else None
    if ann and base is None:
        raise RuntimeError("this store keeps no ANN side files")
    if vstore is not None and base is not None:
        from . import ann as ann_mod
        from . import vecfile

        # the flat copy search memory-maps (index.vecfile), and the graph built from the same rows
        ids, matrix = vstore.load_vectors(emb.dim)
        vecfile.write(Path(base), ids, matrix, vecfile.token_of({"generation": str(generation),
                                                                  "indexed_at": str(indexed_at)}))
        prev = meta.get("generation")
        on_disk = ann_mod.built_for(Path(base))
        had_graph = prev is not None and on_disk == prev  # updated in place; an older graph (a run that
        # failed after its commit, e.g. the vector file on a full disk) is rebuilt, not dropped
        if ann or (ann is None and ann_mod.available() and (on_disk is not None or len(ids) >= ann_mod.AUTO_MIN_ROWS)):
            incremental = had_graph and not rebuild and not repaired
            changed = np.fromiter((c for c, _ in todo), dtype=np.int64, count=len(todo))
            ann_mod.build_ann(Path(base), ids, matrix, generation, prev if incremental else None, changed)
            built_ann = True
    return IndexStats(n_chunks, len(order), len(reuse), removed, time.perf_counter() - t0, built_ann, repaired)

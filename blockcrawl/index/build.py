"""`blockcrawl index`: embed the store's chunks that have no vector yet, keep FTS in sync.

Incremental by content: a chunk whose (model, text) key already has a vector is mapped to it, not
embedded again, so re-crawling a site whose pages did not change costs no model time.
"""
from __future__ import annotations

import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .embed import Embedder, default_embedder
from ..errors import StoreMissing
from .schema import ensure_schema, get_meta, has_table, set_meta, vector_key

COMMIT_EVERY = 2000  # vectors: an interrupted run keeps what it embedded


@dataclass(slots=True)
class IndexStats:
    chunks: int  # chunks in the store
    embedded: int  # texts run through the model in this run
    reused: int  # new chunk rows mapped to an existing vector
    removed: int  # vectors no chunk uses any more
    seconds: float
    ann: bool = False


def connect(store_path: str | Path) -> sqlite3.Connection:
    """Open an existing store (never create one: a typo must not leave an empty file behind)."""
    path = Path(store_path)
    if not path.is_file():
        raise StoreMissing(f"no store at {path} (run 'blockcrawl crawl URL --store {path}' first)")
    db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
    db.execute("PRAGMA busy_timeout=30000")
    if not has_table(db, "chunks"):
        db.close()
        raise StoreMissing(f"{path} is not a blockcrawl store (no chunks table)")
    return db


def build_index(store_path: str | Path, embedder: Embedder | None = None, batch_size: int = 64,
                ann: bool = False, progress: bool = False) -> IndexStats:
    t0 = time.perf_counter()
    emb = embedder or default_embedder()
    db = connect(store_path)
    try:
        ensure_schema(db)
        meta = get_meta(db)
        if meta.get("model") not in (None, emb.name) or meta.get("dim") not in (None, str(emb.dim)):
            # another model: its vectors live in another space, start over
            db.execute("DELETE FROM chunk_vectors")
            db.execute("DELETE FROM embeddings")
        set_meta(db, model=emb.name, dim=emb.dim)
        db.commit()

        # Chunks of heading-only blocks ("Europe Countries:") get no vector: alone they are close to
        # every query about their topic yet hold nothing to read; keyword search still finds them.
        todo = db.execute("SELECT c.id, c.text FROM chunks c LEFT JOIN chunk_vectors v ON v.chunk_id = c.id "
                          "LEFT JOIN blocks b ON b.page_id = c.page_id AND b.position = c.block_position "
                          "WHERE v.chunk_id IS NULL AND coalesce(b.kind, 'text') != 'heading'").fetchall()
        known = {k for (k,) in db.execute("SELECT key FROM embeddings")}
        pending: dict[bytes, tuple[str, list[int]]] = {}  # key -> (text, chunk ids waiting for it)
        reuse: list[tuple[int, bytes]] = []
        for cid, text in todo:
            key = vector_key(emb.name, text)
            if key in known:
                reuse.append((cid, key))
            else:
                pending.setdefault(key, (text, []))[1].append(cid)
        db.executemany("INSERT OR REPLACE INTO chunk_vectors(chunk_id, key) VALUES (?,?)", reuse)

        # longest texts first in similar-length batches: little padding, like encode() does itself
        order = sorted(pending, key=lambda k: -len(pending[k][0]))
        bar = None
        if progress and order:
            from tqdm import tqdm

            bar = tqdm(total=len(order), unit="chunk", desc="embedding", file=sys.stderr)
        since_commit = 0
        for start in range(0, len(order), batch_size):
            keys = order[start:start + batch_size]
            vecs = emb.embed([pending[k][0] for k in keys])
            if vecs.shape != (len(keys), emb.dim):
                raise RuntimeError(f"embedder {emb.name} returned shape {vecs.shape}, expected ({len(keys)}, {emb.dim})")
            vecs = np.ascontiguousarray(vecs, dtype=np.float32)
            db.executemany("INSERT OR REPLACE INTO embeddings(key, vec) VALUES (?,?)",
                           [(k, vecs[i].tobytes()) for i, k in enumerate(keys)])
            db.executemany("INSERT OR REPLACE INTO chunk_vectors(chunk_id, key) VALUES (?,?)",
                           [(cid, k) for k in keys for cid in pending[k][1]])
            since_commit += len(keys)
            if since_commit >= COMMIT_EVERY:
                db.commit()
                since_commit = 0
            if bar is not None:
                bar.update(len(keys))
        if bar is not None:
            bar.close()
        removed = db.execute("DELETE FROM embeddings WHERE key NOT IN (SELECT key FROM chunk_vectors)").rowcount
        generation = int(meta.get("generation", "0")) + 1
        set_meta(db, generation=generation, indexed_at=time.time())
        db.commit()
        n_chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        built_ann = False
        if ann:
            from .ann import build_ann
            from .vectors import load_vectors

            ids, matrix = load_vectors(db)
            build_ann(Path(store_path), ids, matrix, generation)
            built_ann = True
        return IndexStats(n_chunks, len(order), len(reuse), removed, time.perf_counter() - t0, built_ann)
    finally:
        db.close()

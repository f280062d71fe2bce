"""The vector matrix of a store: loaded from SQLite once per index generation, kept in RAM,
searched exactly with one matrix-vector product (vectors are unit length: dot = cosine)."""
from __future__ import annotations

import sqlite3

import numpy as np


def load_vectors(db: sqlite3.Connection, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(chunk ids int64 ascending, float32 matrix of shape (n, dim))."""
    rows = db.execute("SELECT v.chunk_id, e.vec FROM chunk_vectors v JOIN embeddings e ON e.key = v.key "
                      "ORDER BY v.chunk_id").fetchall()
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim or 0), dtype=np.float32)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    flat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
    return ids, flat.reshape(len(rows), -1)


def exact_top(matrix: np.ndarray, query: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row positions and scores of the n rows most similar to query, best first."""
    if matrix.shape[0] == 0 or n <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    scores = matrix @ query
    n = min(n, len(scores))
    top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
    top = top[np.argsort(-scores[top], kind="stable")]
    return top, scores[top]

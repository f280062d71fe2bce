"""The vector matrix of a store (loaded by the store once per index generation, see
store.protocols.VectorIndex), kept in RAM, searched exactly (vectors are unit length: dot = cosine)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..store.sqlite import load_vectors  # noqa: F401 - re-exported for bench/search.py
from .threads import torch_single_thread

if TYPE_CHECKING:
    import torch

# Rows from which a scan first runs over a float16 copy (see HalfScan); below, float32 is ~1 ms.
HALF_MIN_ROWS = 20000
# Bound on |float16 score - float32 score| per unit of |row| * |query|: inputs rounded to float16
# (2 * 2^-11), fp32 accumulation, result rounded to float16 (2^-11) give ~1.5e-3; 0.01 leaves room.
HALF_EPS = 0.01
MAX_RERANK = 20000  # candidates: beyond this many (a flat score distribution) one float32 scan is cheaper


def exact_top(matrix: np.ndarray, query: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row positions and scores of the n rows most similar to query, best first."""
    if matrix.shape[0] == 0 or n <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    scores = matrix @ query
    n = min(n, len(scores))
    top = np.argpartition(scores, len(scores) - n)[len(scores) - n:] if n < len(scores) else np.arange(len(scores))
    top = top[np.argsort(-scores[top], kind="stable")]
    return top, scores[top]


class HalfScan:
    """Exact top-n over a float32 matrix, found by scanning a float16 copy on one thread, then
    rescoring in float32 every row whose float16 score is within 2 * eps of the n-th best.

    Why: the scan is memory bound (100k x 384 float32 = 154 MB a query). Half the bytes on one
    thread take about as long as numpy's two BLAS threads over float32 (~8 ms), and OpenBLAS's
    threads keep spinning for a while after each call, which on a busy 2-CPU machine slowed the
    next query's embedding ~2x. numpy has no fast float16 product; torch (already loaded for the
    model) has one with fp32 accumulation. Exact because every score moves by at most eps: a row
    of the true top n scores >= (n-th exact) - eps >= (n-th float16) - 2 * eps. Costs 50% more RAM.
    """

    def __init__(self, matrix: np.ndarray, min_rows: int = HALF_MIN_ROWS) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.half: torch.Tensor | None = None
        if len(self.matrix) >= max(1, min_rows):
            self.half = _half_tensor(self.matrix)
        # only the float16 scan's bound needs it: a pass over every row (and a temporary as large
        # as the matrix) that a memory-mapped float32 scan must not pay on each cold start
        self.max_norm = float(np.linalg.norm(self.matrix, axis=1).max()) if self.half is not None else 0.0

    def top(self, query: np.ndarray, n: int, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Row positions and float32 scores of the n rows most similar to query, best first; with
        rows (ascending positions), only among those rows (search's filters)."""
        if rows is not None:
            return self._top_of(query, n, rows)
        total = len(self.matrix)
        if self.half is None or n <= 0 or n >= total:
            return exact_top(self.matrix, query, n)
        query = np.ascontiguousarray(query, dtype=np.float32)
        approx = _half_scores(self.half, query)
        kth = np.partition(approx, total - n)[total - n]  # the n-th best float16 score
        eps = HALF_EPS * self.max_norm * float(np.linalg.norm(query))
        cand = np.flatnonzero(approx >= kth - 2 * eps)
        if len(cand) > MAX_RERANK:
            return exact_top(self.matrix, query, n)
        scores = self.matrix[cand] @ query
        best = np.argsort(-scores, kind="stable")[:n]
        return cand[best], scores[best]


    def _top_of(self, query: np.ndarray, n: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """top() among rows. Few rows (<= HALF_MIN_ROWS): float32 over just those (a 20k-row gather
        and product, ~4 ms); more: the float16 scan over all rows, restricted to them, then the same
        rescoring as top(), so the cost is an unfiltered query's."""
        total = len(rows)
        if total == 0 or n <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self.half is None or total <= HALF_MIN_ROWS or n >= total:
            # einsum's own loop on this thread, not BLAS: waking OpenBLAS's sleeping threads cost
            # ~15 ms a query on a busy 2-CPU machine, the product itself 0.3 ms for 2,000 rows
            sub = self.matrix[rows]
            sc = np.einsum("ij,j->i", sub, np.asarray(query, dtype=np.float32))
            n = min(n, total)
            top = np.argpartition(sc, total - n)[total - n:] if n < total else np.arange(total)
            top = top[np.argsort(-sc[top], kind="stable")]
            return rows[top], sc[top]
        query = np.ascontiguousarray(query, dtype=np.float32)
        approx = _half_scores(self.half, query)[rows]
        kth = np.partition(approx, total - n)[total - n]
        eps = HALF_EPS * self.max_norm * float(np.linalg.norm(query))
        cand = rows[np.flatnonzero(approx >= kth - 2 * eps)]
        if len(cand) > MAX_RERANK:
            pos, scores = exact_top(self.matrix[rows], query, n)
            return rows[pos], scores
        scores = self.matrix[cand] @ query
        best = np.argsort(-scores, kind="stable")[:n]
        return cand[best], scores[best]


def _half_tensor(matrix: np.ndarray) -> torch.Tensor | None:
    """The matrix as a float16 torch tensor, or None where torch has no usable float16 product."""
    try:
        import torch

        half = torch.from_numpy(matrix.astype(np.float16))
        torch.mv(half[:1], torch.zeros(matrix.shape[1], dtype=torch.float16))  # old torch: not implemented
        return half
    except (ImportError, RuntimeError):
        return None


def _half_scores(half: torch.Tensor, query: np.ndarray) -> np.ndarray:
    import torch

    with torch_single_thread(), torch.inference_mode():  # no spinning thread pool for one memory-bound pass
        return torch.mv(half, torch.from_numpy(query).to(torch.float16)).float().numpy()

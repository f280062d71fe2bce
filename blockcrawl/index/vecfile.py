"""The store's vectors as a flat file next to it (STORE.vecs.npy, STORE.vecs.ids.npy, STORE.vecs.json),
written by `index`, memory-mapped by `search` and `serve`.

Why: reading the vectors out of SQLite costs one Python object per row (~0.5-1 s at 100k chunks,
~10 s at 10^6) on every cold `search`, and a copy of the whole matrix per process. A memory-mapped
.npy costs neither: np.load(mmap_mode="r") returns in ~1 ms, the pages come from the OS page cache
(shared by every process searching the store), and exact search is one BLAS product over them.

The file is a cache: SQLite stays the truth. It is used only when its token (index generation @
time of the index run, as search's in-process cache) matches the store's index meta; otherwise
search reads SQLite as before. Damaged rows never reach it: it is written from load_vectors, which
skips them.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..errors import StoreError


def paths(base: Path) -> tuple[Path, Path, Path]:
    return (base.with_name(base.name + ".vecs.npy"), base.with_name(base.name + ".vecs.ids.npy"),
            base.with_name(base.name + ".vecs.json"))


def token_of(meta: dict[str, str]) -> str:
    return f"{meta.get('generation', '0')}@{meta.get('indexed_at', '')}"


def write(base: Path, ids: np.ndarray, matrix: np.ndarray, token: str) -> None:
    """Write atomically: the .json (read first by load) is replaced last, so a reader sees the old
    files with the old token, or the new ones.

    A write that fails (a full disk: ENOSPC, a quota, a read-only folder) leaves no file behind,
    neither its .tmp nor the previous generation's copy (stale once its .json is gone, and room
    the disk lacks), and raises StoreError: one line from the CLI. SQLite stays the truth, so
    search reads the vectors there until the next `index` writes the file."""
    vec_path, ids_path, meta_path = paths(base)
    tmps = [p.with_name(p.name + ".tmp") for p in (vec_path, ids_path, meta_path)]
    try:
        try:
            meta_path.unlink()  # from here until the end, no reader trusts the files
        except FileNotFoundError:
            pass
        for path, tmp, arr in ((vec_path, tmps[0], np.ascontiguousarray(matrix, dtype=np.float32)),
                               (ids_path, tmps[1], np.ascontiguousarray(ids, dtype=np.int64))):
            with open(tmp, "wb") as f:
                np.save(f, arr)
            os.replace(tmp, path)
        tmps[2].write_text(json.dumps({"token": token, "count": int(len(ids)), "dim": int(matrix.shape[1])}))
        os.replace(tmps[2], meta_path)
    except OSError as e:
        for p in (*tmps, *paths(base)):
            try:
                p.unlink()
            except OSError:
                pass
        why = e.strerror or str(e)
        raise StoreError(f"cannot write the vector file {vec_path.name} next to the store ({why}); the "
                         "vectors are stored: run 'blockcrawl index' again when there is room") from None


def load(base: Path, token: str, dim: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(chunk ids, read-only memory-mapped float32 matrix) for this index token, or None (no file,
    stale, another shape, unreadable)."""
    vec_path, ids_path, meta_path = paths(base)
    try:
        info = json.loads(meta_path.read_text())
        if info.get("token") != token or int(info.get("dim", -1)) != dim:
            return None
        matrix = np.load(vec_path, mmap_mode="r")
        ids = np.load(ids_path, mmap_mode="r")
    except (OSError, ValueError, TypeError):
        return None
    if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape != (len(ids), dim) or \
            len(ids) != int(info.get("count", -1)):
        return None
    return np.asarray(ids), matrix


def remove(base: Path) -> None:
    for p in paths(base):
        try:
            p.unlink()
        except FileNotFoundError:
            pass

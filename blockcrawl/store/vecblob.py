"""Stored vectors as bytes: which blobs are usable, shared by the SQLite and PostgreSQL backends.

A vector blob is dim float32 values (1,536 bytes at 384 dimensions). A row of another length (a
damaged file, `update embeddings set vec=randomblob(10)`) or holding NaN/inf is skipped when
vectors are loaded (one warning per load, so search and serve keep answering from the rest), and
deleted by `index`, which then embeds its chunks again.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger("blockcrawl.index")
SCAN_BATCH = 4096  # rows checked per numpy call in damaged_keys


def usable(blob: bytes | memoryview, dim: int) -> npt.NDArray[np.float32] | None:
    """The vector in blob, or None when it is not dim finite float32 values."""
    import numpy as np

    if dim <= 0 or len(blob) != 4 * dim:
        return None
    vec = np.frombuffer(blob, dtype=np.float32)
    if not np.isfinite(vec).all():
        return None
    return vec


def warn_damaged(n: int, location: str) -> None:
    if n:
        log.warning("blockcrawl: %s: %d damaged vector%s skipped (wrong size or not a number); "
                    "'blockcrawl index' embeds %s again", location, n, "" if n == 1 else "s",
                    "it" if n == 1 else "them")


def damaged_keys(rows: Iterable[tuple[bytes, bytes]], dim: int) -> list[bytes]:
    """Keys of the (key, blob) rows that are not dim finite float32 values; batched numpy checks,
    so a scan of 10^6 rows costs the read, not a Python loop over values."""
    import numpy as np

    bad: list[bytes] = []
    keys: list[bytes] = []
    blobs: list[bytes] = []

    def flush() -> None:
        if keys:
            m = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(keys), dim)
            bad.extend(keys[i] for i in np.flatnonzero(~np.isfinite(m).all(axis=1)))
            keys.clear()
            blobs.clear()

    for key, blob in rows:
        if len(blob) != 4 * dim:
            bad.append(bytes(key))
            continue
        keys.append(bytes(key))
        blobs.append(bytes(blob))
        if len(keys) >= SCAN_BATCH:
            flush()
    flush()
    return bad

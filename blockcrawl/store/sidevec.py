"""The live indexer's side file (`crawl --index`, index.live): vectors by key in an SQLite file of
its own, written by the indexer process while the crawl holds the store's one writer lock, and
read by the crawl's final build_index."""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SCHEMA = "CREATE TABLE IF NOT EXISTS vecs (key BLOB PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID"


class SideVectors:
    def __init__(self, path: str | Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.execute(SCHEMA)
        self.db.commit()

    def keys(self) -> set[bytes]:
        return {bytes(k) for (k,) in self.db.execute("SELECT key FROM vecs")}

    def put(self, keys: Sequence[bytes], vectors: npt.NDArray[np.float32]) -> None:
        """Store vectors[i] under keys[i] and commit (an indexer killed later keeps them)."""
        import numpy as np

        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        self.db.executemany("INSERT OR REPLACE INTO vecs(key, vec) VALUES (?, ?)",
                            [(k, vecs[i].tobytes()) for i, k in enumerate(keys)])
        self.db.commit()

    def get(self, key: bytes) -> bytes | None:
        row = self.db.execute("SELECT vec FROM vecs WHERE key = ?", (key,)).fetchone()
        return bytes(row[0]) if row is not None else None

    def close(self) -> None:
        self.db.close()

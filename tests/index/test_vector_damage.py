"""Damaged vector rows: search and serve keep answering, `index` repairs, `--rebuild`."""
from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from blockcrawl.errors import NotIndexed
from blockcrawl.index import build_index, default_embedder, vecfile
from blockcrawl.retrieval import search
from blockcrawl.store import Store

from ..support.search_pages import PAGES, fill

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture()
def indexed(tmp_path) -> Path:
    path = tmp_path / "site.db"
    fill(path, PAGES)
    build_index(path, embedder=default_embedder(), batch_size=8)
    return path


def damage(path: Path, sql: str, *params: object) -> int:
    """Edit the store behind the index's back; the flat vector file (index.vecfile) is removed
    with it, so search reads the damaged rows from SQLite."""
    vecfile.remove(path)
    db = sqlite3.connect(path)
    n = db.execute(sql, params).rowcount
    db.commit()
    db.close()
    return n


def one_key(path: Path) -> bytes:
    db = sqlite3.connect(path)
    (key,) = db.execute("SELECT key FROM embeddings ORDER BY key LIMIT 1").fetchone()
    db.close()
    return bytes(key)


def test_wrong_size_row_is_skipped_with_one_warning_and_reembedded(indexed, caplog):
    key = one_key(indexed)
    assert damage(indexed, "UPDATE embeddings SET vec = randomblob(10) WHERE key = ?", key) == 1
    with caplog.at_level(logging.WARNING, logger="blockcrawl.index"):
        for mode in ("hybrid", "vector"):
            hits = search(indexed, "how do I bake bread", k=5, mode=mode)
            assert hits and all(math.isfinite(h.score) for h in hits)
    warned = [r for r in caplog.records if "damaged vector" in r.getMessage()]
    assert len(warned) == 1  # loaded once per index generation: one warning, not one per query
    st = build_index(indexed, embedder=default_embedder())
    assert st.repaired >= 1 and st.embedded == 1  # that one text again, nothing else
    db = sqlite3.connect(indexed)
    (size,) = db.execute("SELECT length(vec) FROM embeddings WHERE key = ?", (key,)).fetchone()
    db.close()
    assert size == 4 * default_embedder().dim


def test_nan_row_gives_no_nan_scores_and_is_repaired(indexed):
    key = one_key(indexed)
    nan = np.full(default_embedder().dim, np.nan, dtype=np.float32).tobytes()
    damage(indexed, "UPDATE embeddings SET vec = ? WHERE key = ?", nan, key)
    with Store(indexed, readonly=True) as st:
        ids, matrix = st.load_vectors()
    assert np.isfinite(matrix).all() and len(ids) > 0
    hits = search(indexed, "Germany", k=10, mode="vector", per_page=0)
    assert all(math.isfinite(h.score) for h in hits)
    assert build_index(indexed, embedder=default_embedder()).repaired >= 1
    with Store(indexed, readonly=True) as st:
        ids2, _ = st.load_vectors()
    assert len(ids2) > len(ids)  # the chunks of the damaged row have their vector again


def test_cli_search_and_index_with_a_damaged_row(indexed):
    damage(indexed, "UPDATE embeddings SET vec = randomblob(10) WHERE key = ?", one_key(indexed))
    r = cli("search", "--store", str(indexed), "bread", "--json", "-k", "3")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("damaged vector") == 1
    assert [json.loads(line) for line in r.stdout.splitlines()]
    r = cli("index", "--store", str(indexed), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "1 embedded" in r.stderr and "damaged re-embedded" in r.stderr


def test_dropped_vector_table_is_an_error_that_says_so(indexed):
    damage(indexed, "DROP TABLE embeddings")
    with pytest.raises(NotIndexed, match="vector tables are missing"):
        search(indexed, "bread", mode="hybrid")
    r = cli("search", "--store", str(indexed), "bread")
    assert r.returncode == 2 and "vector tables are missing" in r.stderr and "no hits" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    st = build_index(indexed, embedder=default_embedder())  # index brings them back
    assert st.embedded > 0
    assert search(indexed, "bread", k=3)


def test_rebuild_embeds_every_chunk_again(indexed):
    first = build_index(indexed, embedder=default_embedder())
    assert first.embedded == 0  # nothing new
    again = build_index(indexed, embedder=default_embedder(), rebuild=True)
    db = sqlite3.connect(indexed)
    (n_vec,) = db.execute("SELECT count(*) FROM embeddings").fetchone()
    db.close()
    assert again.embedded == n_vec > 0
    r = cli("index", "--store", str(indexed), "--rebuild", "--quiet")
    assert r.returncode == 0 and f"{n_vec} embedded" in r.stderr, r.stderr

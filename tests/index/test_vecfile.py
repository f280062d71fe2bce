"""The flat vector file `index` writes next to an SQLite store and search memory-maps."""
from __future__ import annotations

import numpy as np
import pytest

from blockcrawl.index import build_index, default_embedder, vecfile
from blockcrawl.retrieval import search, vector_cache
from blockcrawl.store import Store
from blockcrawl.store.sqlite import SqliteStore

from ..support.search_pages import COOKING, PAGES, fill


@pytest.fixture()
def indexed(tmp_path):
    path = tmp_path / "site.db"
    fill(path, PAGES)
    build_index(path, embedder=default_embedder(), batch_size=8)
    vector_cache._cache.clear()
    return path


def ranking(path, query="how do I bake bread"):
    vector_cache._cache.clear()
    return [(h.chunk_id, h.score) for h in search(path, query, k=8, mode="vector", per_page=0)]


def test_search_maps_the_file_and_reads_no_vector_from_sqlite(indexed, monkeypatch):
    vec_path, ids_path, meta_path = vecfile.paths(indexed)
    assert vec_path.is_file() and ids_path.is_file() and meta_path.is_file()
    with Store(indexed, readonly=True) as st:
        ids, matrix = st.load_vectors()
        meta = st.index_meta()
    mapped = vecfile.load(indexed, vecfile.token_of(meta), matrix.shape[1])
    assert mapped is not None and isinstance(mapped[1], np.memmap)
    assert np.array_equal(mapped[0], ids) and np.array_equal(mapped[1], matrix)
    vecfile.remove(indexed)
    from_sqlite = ranking(indexed)  # the file gone: read from SQLite
    build_index(indexed, embedder=default_embedder(), rebuild=True)  # writes it again

    def refuse(self, dim=None):
        raise AssertionError("vectors read from SQLite")

    monkeypatch.setattr(SqliteStore, "load_vectors", refuse)
    assert ranking(indexed) == from_sqlite


def test_a_stale_or_broken_file_is_not_used(indexed):
    before = ranking(indexed)
    vec_path, _, meta_path = vecfile.paths(indexed)
    token = meta_path.read_text()
    fill(indexed, {"http://cook.test/": COOKING})  # a new page ...
    build_index(indexed, embedder=default_embedder())  # ... indexed: a new token, a new file
    assert meta_path.read_text() != token
    vec_path.write_bytes(vec_path.read_bytes()[:200])  # truncated behind the index's back
    after = ranking(indexed)  # read from SQLite instead
    assert after and len(after) == len(before)

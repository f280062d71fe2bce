"""`index` on a full disk while it writes the vector file (STORE.vecs.npy): one line, exit 2, no
`.tmp` (nor a stale copy) left behind, search still answers from SQLite, and the next `index` with
room writes the file. The disk is a real small tmpfs mounted by the test (root only; skipped with
the reason elsewhere), filled up to a few pages by a filler file."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from blockcrawl.index import ann, vecfile

from ..support.crawlsite import Route, Site, page
from ..support.tmpfs import small_tmpfs

ROOT = Path(__file__).resolve().parents[2]
ROOM = 64 * 1024  # left free on the small disk: room for SQLite's index meta, not for the vector file
WORDS = ("river mountain harbour lantern meadow orchard quarry saddle timber velvet anchor beacon "
         "cedar dune ember falcon glacier hollow island juniper kestrel lagoon marble nectar").split()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)


@pytest.fixture
def small_fs(tmp_path):
    yield from small_tmpfs(tmp_path, "8m")


def _indexed_store(tmp_path: Path, *index_args: str) -> Path:
    """A crawled store of 60 pages (~120 chunks) on the big disk, indexed (with index_args)."""
    n = 60
    routes = {"/robots.txt": Route("User-agent: *\n", ctype="text/plain"),
              "/": Route(page("Home", [f"/p{i}.html" for i in range(n)], "The index of every page."))}
    for i in range(n):
        text = " ".join(f"{WORDS[(i + k) % len(WORDS)]} {WORDS[(i * 7 + k) % len(WORDS)]} number {i} part {k}."
                        for k in range(40))
        routes[f"/p{i}.html"] = Route(page(f"Page {i}", [], text))
    site = Site(routes).start()
    big = tmp_path / "s.db"
    try:
        r = cli("crawl", site.origin + "/", "--store", str(big), "--no-progress", "--no-sitemaps", "--workers", "1")
    finally:
        site.stop()
    assert r.returncode == 0, r.stderr[-2000:]
    r = cli("index", "--store", str(big), *index_args)
    assert r.returncode == 0, r.stderr[-2000:]
    return big


def _fill(fs: Path, room: int) -> Path:
    """Fill the small disk up to `room` bytes free; returns the filler file."""
    free = os.statvfs(fs)
    filler = fs / "filler"
    filler.write_bytes(b"\0" * (free.f_bavail * free.f_frsize - room))
    return filler


def test_index_on_a_full_disk_fails_in_one_line_and_the_next_run_writes_the_file(small_fs, tmp_path):
    graph = ann.available()  # with hnswlib: a graph too, which the failed run leaves a generation behind
    big = _indexed_store(tmp_path, *(["--ann"] if graph else []))
    vecs = np_rows(big)
    assert vecs * 384 * 4 > 2 * ROOM  # the vector file needs more room than the disk will have

    # the indexed store, without its vector file, on the small disk; then the disk filled up
    vecfile.remove(big)
    store = small_fs / "s.db"
    shutil.copy(big, store)
    for f in tmp_path.glob("s.db.hnsw*"):
        shutil.copy(f, small_fs / f.name)
    filler = _fill(small_fs, ROOM)

    r = cli("index", "--store", str(store))
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-3000:]
    assert "vector file" in r.stderr and "index" in r.stderr
    left = sorted(p.name for p in small_fs.iterdir() if p.name.endswith(".tmp") or ".vecs." in p.name)
    assert left == [], left
    # search still answers, from the vectors SQLite holds
    r = cli("search", "--store", str(store), "harbour lantern", "-k", "3", "--json")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 3, r.stderr[-2000:]

    filler.unlink()  # room again: the next run finishes the job
    r = cli("index", "--store", str(store))
    assert r.returncode == 0 and " 0 embedded" in r.stderr, r.stderr[-2000:]
    db = sqlite3.connect(store)
    meta = dict(db.execute("SELECT key, value FROM index_meta"))
    db.close()
    got = vecfile.load(store, vecfile.token_of(meta), 384)
    assert got is not None and len(got[0]) == vecs
    info = json.loads(vecfile.paths(store)[2].read_text())
    assert info["count"] == vecs
    if graph:  # the graph is brought up to date, not left behind for good
        assert ann.built_for(store) == meta["generation"]


def np_rows(store: Path) -> int:
    db = sqlite3.connect(store)
    try:
        return int(db.execute("SELECT count(DISTINCT chunk_id) FROM chunk_vectors").fetchone()[0])
    finally:
        db.close()


def test_index_on_a_disk_full_for_the_graph_keeps_the_old_graph_and_the_next_run_rebuilds(small_fs, tmp_path):
    """hnswlib writes through a stream that never reports a failed write: on a full disk its
    graph file is cut short without an error. The graph is read back before it replaces the old
    one: one line, exit 2, no .tmp, the old graph and its meta untouched; the next run rebuilds."""
    if not ann.available():
        pytest.skip("hnswlib not installed (pip install 'blockcrawl[ann]')")
    big = _indexed_store(tmp_path, "--ann")
    graph_bytes = ann.ann_paths(big)[0].stat().st_size
    side = sum(p.stat().st_size for p in vecfile.paths(big))
    vecfile.remove(big)  # written again by the next run: room for it, not for the graph
    store = small_fs / "s.db"
    for f in [big, *tmp_path.glob("s.db.hnsw*")]:
        shutil.copy(f, small_fs / f.name)
    old_graph = ann.ann_paths(store)[0].read_bytes()
    old_meta = ann.ann_paths(store)[1].read_text()
    room = side + ROOM
    assert graph_bytes > room - side  # the graph does not fit in what is left
    filler = _fill(small_fs, room)

    r = cli("index", "--store", str(store), "--ann")  # nothing to embed: the files are all it writes
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1 and "HNSW graph" in r.stderr, r.stderr[-3000:]
    assert sorted(p.name for p in small_fs.iterdir() if p.name.endswith(".tmp")) == []
    assert ann.ann_paths(store)[0].read_bytes() == old_graph and ann.ann_paths(store)[1].read_text() == old_meta

    filler.unlink()
    r = cli("index", "--store", str(store))  # no --ann: a graph on disk is kept up to date
    assert r.returncode == 0 and "ANN built" in r.stderr, r.stderr[-2000:]
    db = sqlite3.connect(store)
    meta = dict(db.execute("SELECT key, value FROM index_meta"))
    db.close()
    assert ann.built_for(store) == meta["generation"]
    assert ann.load_ann(store, meta["generation"]) is not None

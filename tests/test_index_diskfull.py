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

from .crawlsite import Route, Site, page

ROOT = Path(__file__).resolve().parents[1]
ROOM = 64 * 1024  # left free on the small disk: room for SQLite's index meta, not for the vector file
WORDS = ("river mountain harbour lantern meadow orchard quarry saddle timber velvet anchor beacon "
         "cedar dune ember falcon glacier hollow island juniper kestrel lagoon marble nectar").split()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_index_on_a_full_disk_fails_in_one_line_and_the_next_run_writes_the_file(small_fs, tmp_path):
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
    graph = ann.available()  # with hnswlib: a graph too, which the failed run leaves a generation behind
    r = cli("index", "--store", str(big), *(["--ann"] if graph else []))
    assert r.returncode == 0, r.stderr[-2000:]
    vecs = np_rows(big)
    assert vecs * 384 * 4 > 2 * ROOM  # the vector file needs more room than the disk will have

    # the indexed store, without its vector file, on the small disk; then the disk filled up
    vecfile.remove(big)
    store = small_fs / "s.db"
    shutil.copy(big, store)
    for f in tmp_path.glob("s.db.hnsw*"):
        shutil.copy(f, small_fs / f.name)
    free = os.statvfs(small_fs)
    filler = small_fs / "filler"
    filler.write_bytes(b"\0" * (free.f_bavail * free.f_frsize - ROOM))

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

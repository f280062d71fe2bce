"""Disk full during a crawl: the crawl stops with one line, and nothing in
flight is lost: --resume on a larger disk stores every page. The store lives on a real 3 MB
tmpfs mounted by the test (root only; skipped with the reason elsewhere)."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.crawlsite import Route, Site, page
from ..support.tmpfs import small_tmpfs

N = 400
WORDS = ("river mountain harbour lantern meadow orchard quarry saddle timber velvet anchor beacon "
         "cedar dune ember falcon glacier hollow island juniper kestrel lagoon marble nectar").split()


def site_of(n: int) -> Site:
    rnd = random.Random(7)
    s = Site()
    s.routes["/robots.txt"] = Route("User-agent: *\n", ctype="text/plain")
    s.routes["/"] = Route(page("Home", [f"/p{i}.html" for i in range(n)]))
    for i in range(n):
        text = " ".join(" ".join(rnd.choice(WORDS) for _ in range(12)) + f" number {i} part {k}."
                        for k in range(60))
        s.routes[f"/p{i}.html"] = Route(page(f"Page {i}", [], text=text))
    return s.start()


@pytest.fixture
def small_fs(tmp_path):
    yield from small_tmpfs(tmp_path, "3m")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], capture_output=True, text=True, env=env,
                          timeout=240)


def test_disk_full_stops_cleanly_and_resume_loses_nothing(small_fs, tmp_path):
    site = site_of(N)
    try:
        store = small_fs / "s.db"
        r = cli("crawl", site.origin + "/", "--store", str(store), "--no-progress", "--tokenizer", "words",
                "--workers", "1", "--per-host", "8", "--concurrency", "8")
        assert r.returncode != 0, r.stderr[-2000:]
        assert "Traceback" not in r.stderr, r.stderr[-3000:]
        assert "full" in r.stderr.lower()
        fetched_before = len([p for p in site.paths() if p.startswith("/p")])
        assert 0 < fetched_before
        big = tmp_path / "s.db"
        for f in small_fs.iterdir():  # the store and its journal files, to a disk with room
            shutil.copy(f, tmp_path / f.name)
        r = cli("crawl", "--resume", "--store", str(big), "--no-progress", "--tokenizer", "words", "--workers", "1")
        assert r.returncode == 0, r.stderr[-2000:]
        import sqlite3
        db = sqlite3.connect(big)
        stored = {u for (u,) in db.execute("SELECT url FROM pages")}
        failed = list(db.execute("SELECT url, error FROM frontier WHERE state = 3"))
        assert failed == []
        assert {site.origin + f"/p{i}.html" for i in range(N)} <= stored
    finally:
        site.stop()

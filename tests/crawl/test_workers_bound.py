"""`crawl --workers` is bounded like `index --workers` (a one-line error, exit 2, nothing started),
and the analysis processes started never exceed what the machine's CPUs and free memory hold."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from blockcrawl.crawl import CrawlConfig
from blockcrawl.crawl.analysis.pool import PROCESS_BYTES, PoolAnalyzer, processes_for
from blockcrawl.errors import ConfigError
from blockcrawl.limits import MAX_WORKERS, available_cpus
from blockcrawl.pipeline import PipelineConfig

from ..support.crawlsite import Route, Site, page

ROOT = Path(__file__).resolve().parents[2]
GB = 2**30


@pytest.mark.parametrize(("requested", "cpus", "memory", "per_process", "expected"), [
    (0, 8, 64 * GB, PROCESS_BYTES, 0),  # 0: a thread, whatever the machine
    (4, 8, 64 * GB, PROCESS_BYTES, 4),  # room for all
    (1000, 8, 64 * GB, PROCESS_BYTES, 8),  # one per CPU
    (1000, 540, 64 * GB, 50 * 2**20, 540),  # the machine that was asked for 1000: CPUs bound it ...
    (1000, 540, 4 * GB, 50 * 2**20, 81),  # ... and its memory bounds it further
    (16, 32, 1 * GB, 256 * 2**20, 4),  # memory for 4
    (4, 8, 10 * 2**20, PROCESS_BYTES, 1),  # memory for none: still one, as asked for some
    (4, 0, 64 * GB, PROCESS_BYTES, 1),  # an odd CPU count: one
    (6, 4, None, PROCESS_BYTES, 4),  # memory unknown: CPUs alone
    (3, 4, 3 * PROCESS_BYTES, PROCESS_BYTES, 3),  # exactly enough
    (3, 4, 3 * PROCESS_BYTES - 1, PROCESS_BYTES, 2),  # one byte short
])
def test_processes_for(requested, cpus, memory, per_process, expected):
    assert processes_for(requested, cpus, memory, per_process) == expected


def test_crawl_workers_1000_is_one_line_exit_2_and_starts_nothing(tmp_path):
    site = Site({"/robots.txt": Route("User-agent: *\n", ctype="text/plain"),
                 "/": Route(page("Home", [], "Nothing to see."))}).start()
    store = tmp_path / "s.db"
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        r = subprocess.run([sys.executable, "-m", "blockcrawl", "crawl", site.origin + "/", "--store", str(store),
                            "--workers", "1000", "--no-progress"], capture_output=True, text=True, env=env,
                           timeout=120)
    finally:
        site.stop()
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and f"--workers must be between 0 and {MAX_WORKERS} (got 1000)" in r.stderr
    assert not store.exists() and site.hits == []  # refused before the store, the fetcher or any worker


def test_index_workers_has_the_same_bound(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "blockcrawl", "index", "--store", str(tmp_path / "none.db"),
                        "--workers", str(MAX_WORKERS + 1)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"--workers must be between 1 and {MAX_WORKERS} (got {MAX_WORKERS + 1})" in r.stderr


def test_crawl_config_refuses_too_many_workers():
    with pytest.raises(ConfigError, match="workers must be between 0 and"):
        CrawlConfig(seeds=["http://127.0.0.1:9/"], workers=MAX_WORKERS + 1)
    CrawlConfig(seeds=["http://127.0.0.1:9/"], workers=MAX_WORKERS)  # the bound itself is allowed


def test_pool_starts_no_more_processes_than_cpus():
    asked = available_cpus() + 2
    with PoolAnalyzer(PipelineConfig(mode="main"), workers=asked) as pool:
        started = len(pool._pools)
    assert 1 <= started <= available_cpus() < asked

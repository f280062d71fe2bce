"""Incremental recrawl against a local 1,000-page site with ETag / Last-Modified: first crawl vs
`--recrawl` of the unchanged site (share of 304 answers, wall time ratio).

    PYTHONPATH=. python bench/recrawl.py [N_PAGES] [WORKERS]
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import common  # noqa: E402,F401 - puts the repository on sys.path

from blockcrawl.crawl import CrawlConfig, crawl  # noqa: E402
from blockcrawl.pipeline import PipelineConfig  # noqa: E402
from blockcrawl.store import Store  # noqa: E402
from tests.crawl.test_crawl_credentials_proxies_recrawl import Server, Versioned  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    site = Versioned(n)
    s = Server(site)
    spec = PipelineConfig(tokenizer="words")
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "bench.db"
        try:
            with Store(db) as store:
                t = time.perf_counter()
                first = crawl(store, CrawlConfig(seeds=[s.origin + "/p0"], progress=False, workers=workers), spec)
                t_first = time.perf_counter() - t
            s.seen.clear()
            with Store(db) as store:
                t = time.perf_counter()
                again = crawl(store, CrawlConfig(seeds=[], progress=False, recrawl=True, workers=workers), spec)
                t_again = time.perf_counter() - t
        finally:
            s.stop()
    pages = [x for x in s.seen if x.path.startswith("/p")]
    n304 = again.unchanged
    print(f"first crawl: {first.pages} pages in {t_first:.2f} s")
    print(f"recrawl:     {len(pages)} page requests, {n304} answered 304 ({100 * n304 / max(len(pages), 1):.1f} %), "
          f"{t_again:.2f} s = {t_again / t_first:.2f}x the first crawl")
    print(again.summary())


if __name__ == "__main__":
    main()

"""The crawl's progress bar is drawn on a terminal only: in a file or a pipe its `\\r` redraws
are a new line every half second around the one summary line that matters."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from blockcrawl.crawl.config import CrawlStats
from blockcrawl.crawl.engine.progress import TqdmProgress, is_terminal

from ..support.crawlsite import Site, chain_site

ROOT = Path(__file__).resolve().parents[2]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _draw(stream: io.StringIO) -> TqdmProgress:
    bar = TqdmProgress(stream)
    stats = CrawlStats()
    for _ in range(3):
        bar.page(stats)
        bar.tick(stats, 1, lambda: [(5, "a.test")])
    bar.close(stats)
    return bar


def test_a_bar_on_a_terminal_nothing_elsewhere() -> None:
    tty, plain = Tty(), io.StringIO()
    assert _draw(tty).drawing and "\r" in tty.getvalue() and "page" in tty.getvalue()  # the control
    assert not _draw(plain).drawing and plain.getvalue() == ""
    closed = io.StringIO()
    closed.close()
    assert not is_terminal(closed) and not is_terminal(object())


def test_crawl_with_stderr_to_a_file_writes_no_carriage_returns(tmp_path: Path) -> None:
    site = Site(chain_site(5)).start()
    try:
        with open(tmp_path / "err.txt", "wb") as err:
            r = subprocess.run([sys.executable, "-m", "blockcrawl", "crawl", site.origin + "/p0.html", "--store",
                                str(tmp_path / "c.db"), "--workers", "0", "--tokenizer", "words"],
                               cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.DEVNULL,
                               stderr=err, timeout=120)
    finally:
        site.stop()
    out = (tmp_path / "err.txt").read_bytes()
    assert r.returncode == 0, out
    assert b"\r" not in out and out.decode().splitlines()[-1].startswith("crawl done: 5 pages"), out

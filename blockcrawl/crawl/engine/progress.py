"""The progress bar: a CrawlListener drawing pages, errors, requests in flight and the longest
host queues with tqdm (imported only when a bar is drawn).

Only on a terminal: a bar redraws its line with `\\r`, which in a log file or a pipe is a new
line every half second (a 10-minute crawl: ~1,200 lines of noise around the one summary line).
When the stream is not a terminal the listener draws nothing; the crawl's summary line (the
CLI's) is written either way.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from ..config import CrawlStats

REDRAW = 0.5  # seconds between postfix updates: the queue summary walks every host


def is_terminal(stream: object) -> bool:
    """Whether stream is an open terminal (False for files, pipes, closed or odd streams)."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):  # no isatty, or closed
        return False


class TqdmProgress:
    """The bar on `stream` (default: sys.stderr at construction), or nothing when it is not a
    terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        out = sys.stderr if stream is None else stream
        self._bar: Any = None
        self._last = 0.0
        if not is_terminal(out):
            return
        from tqdm import tqdm
        self._bar = tqdm(unit="page", file=out, dynamic_ncols=True, desc="crawl", mininterval=0.5)

    @property
    def drawing(self) -> bool:
        return self._bar is not None

    def page(self, stats: CrawlStats) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def tick(self, stats: CrawlStats, inflight: int, queues: Callable[[], list[tuple[int, str]]]) -> None:
        if self._bar is None:
            return
        now = time.monotonic()
        if now - self._last < REDRAW:
            return
        self._last = now
        q = " ".join(f"{name}:{n}" for n, name in sorted(queues(), reverse=True)[:4])
        self._bar.set_postfix_str(f"err {stats.errors} inflight {inflight} queue {q}", refresh=False)

    def close(self, stats: CrawlStats) -> None:
        if self._bar is not None:
            self._bar.close()

"""The progress bar: a CrawlListener drawing pages, errors, requests in flight and the longest
host queues with tqdm (imported only when a bar is wanted)."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from .config import CrawlStats

REDRAW = 0.5  # seconds between postfix updates: the queue summary walks every host


class TqdmProgress:
    def __init__(self) -> None:
        from tqdm import tqdm
        self._bar: Any = tqdm(unit="page", file=sys.stderr, dynamic_ncols=True, desc="crawl", mininterval=0.5)
        self._last = 0.0

    def page(self, stats: CrawlStats) -> None:
        self._bar.update(1)

    def tick(self, stats: CrawlStats, inflight: int, queues: Callable[[], list[tuple[int, str]]]) -> None:
        now = time.monotonic()
        if now - self._last < REDRAW:
            return
        self._last = now
        q = " ".join(f"{name}:{n}" for n, name in sorted(queues(), reverse=True)[:4])
        self._bar.set_postfix_str(f"err {stats.errors} inflight {inflight} queue {q}", refresh=False)

    def close(self, stats: CrawlStats) -> None:
        self._bar.close()

"""The engine: the one loop that runs a crawl and the one place that records what happens.

* loop.py - `Crawler` and `crawl()`: the asyncio loop (tasks, signals, backpressure, commit cadence).
* record.py - `Recorder.apply`: writes an outcome to the frontier, the stats, the budget and the store.
* context.py - `CrawlContext`: what the parts share (config, store, frontier, clock, stats...).
* setup.py - the default components built from a CrawlConfig, and the page step's wiring.
* politeness.py (the Scheduler: per-host slots and delays), queues.py (the seen-set and the host
  queues), health.py (a host's failures in a row), pacing.py (how long the loop may sleep),
  clock.py (system and fake clocks), progress.py (the progress bar), shared.py (a frontier by URL).
"""
from __future__ import annotations

import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    """`blockcrawl.crawl.engine.Crawler` and `.crawl`: the names of when engine was a module
    (deprecated; they are `blockcrawl.crawl.Crawler` and `blockcrawl.crawl.crawl`)."""
    if name in ("Crawler", "crawl"):
        warnings.warn(f"blockcrawl.crawl.engine.{name} is blockcrawl.crawl.{name} now; the old name goes in "
                      "the next minor version", DeprecationWarning, stacklevel=2)
        from . import loop
        return getattr(loop, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

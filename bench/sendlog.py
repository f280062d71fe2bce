#!/usr/bin/env python3
"""Run the blockcrawl CLI with the moment each request left logged: `python bench/sendlog.py LOG crawl ...`.

Why: websim stamps a request's arrival in its own event loop. On a loaded machine (load 15-17 on
2 cores) websim's process is not scheduled for tens of milliseconds now and then; the request
that arrived meanwhile is stamped late and the gap after it looks short (23 ms against a 50 ms
delay, on all four hosts at the same instant). The crawler's own record of when each request head
was written tells the two apart: the Scheduler's `sent` callback, the moment politeness counts
from, appends `host seconds` per request (time.monotonic, CLOCK_MONOTONIC, the clock websim's
"t" uses, so the two logs line up). bench/crawl.py --send-log uses it and reports the smallest
client-side gap per host beside websim's.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from urllib.parse import urlsplit


def install(path: str) -> None:
    """Wrap Scheduler.sent so every stamp is also written to path (line-buffered)."""
    from blockcrawl.crawl.engine import politeness
    log = open(path, "a", buffering=1, encoding="ascii")
    orig = politeness.Scheduler.sent

    def sent(self: politeness.Scheduler, host: str) -> Callable[[], None]:
        stamp = orig(self, host)
        name = urlsplit(host).hostname or host

        def logged() -> None:
            log.write(f"{name} {time.monotonic():.6f}\n")
            stamp()
        return logged
    politeness.Scheduler.sent = sent  # type: ignore[method-assign]


def min_gaps(path: str) -> dict[str, float]:
    """Smallest gap in ms between two logged sends to one host, per host."""
    by: dict[str, list[float]] = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            host, t = line.split()
            by.setdefault(host, []).append(float(t))
    out = {}
    for host, ts in by.items():
        ts.sort()
        if len(ts) > 1:
            out[host] = round(min(b - a for a, b in zip(ts, ts[1:])) * 1000, 2)
    return out


if __name__ == "__main__":
    install(sys.argv[1])
    from blockcrawl.cli import main
    sys.exit(main(sys.argv[2:]))

"""Frontier entries and their states: what the crawl queues and every store's frontier persists
(store.frontier.SqlFrontier, store.redis_frontier). They sit below both, so the store does not
import the crawl; crawl.frontier re-exports them.

Every URL the crawl ever accepted has one row keyed by its canonical form, so the table is also
the seen-set. A page's outcome and the links it discovered are written in one transaction, hence
after a kill -9 nothing is lost: rows still queued or in_flight are fetched by --resume (in_flight
ones were interrupted and go back to the queue), rows done are never fetched again.
"""
from __future__ import annotations

from dataclasses import dataclass

QUEUED, IN_FLIGHT, DONE, FAILED, SKIPPED = 0, 1, 2, 3, 4
STATE_NAMES = {QUEUED: "queued", IN_FLIGHT: "in_flight", DONE: "done", FAILED: "failed", SKIPPED: "skipped"}


@dataclass(slots=True)
class Item:
    """A frontier entry in memory."""

    url: str  # the key (url_key of the canonical URL)
    host: str
    depth: int
    kind: str = "page"
    attempts: int = 0
    hops: int = 0
    via: str | None = None
    not_before: float = 0.0
    fetch: str | None = None  # URL to request when it differs from the key
    trail: int = 0  # date-chain trail (crawl.traps)

    @property
    def target(self) -> str:
        return self.fetch or self.url

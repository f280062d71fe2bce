"""Frontier entries and their states, the host of a URL, and the Frontier protocol: what the crawl
queues and every store's frontier persists and implements (store.frontier.SqlFrontier,
store.redis_frontier). They sit below both, so the store does not import the crawl;
crawl.frontier, crawl.urls and crawl.protocols name them for the crawl.

Every URL the crawl ever accepted has one row keyed by its canonical form, so the table is also
the seen-set. A page's outcome and the links it discovered are written in one transaction, hence
after a kill -9 nothing is lost: rows still queued or in_flight are fetched by --resume (in_flight
ones were interrupted and go back to the queue), rows done are never fetched again.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

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
    trail: int = 0  # date-chain trail (crawl.decisions.traps)

    @property
    def target(self) -> str:
        return self.fetch or self.url


def host_of(url: str) -> str:
    """scheme://host[:port] of a canonical URL: the unit of politeness."""
    return url[:url.find("/", url.find("//") + 2)]


class Frontier(Protocol):
    """Every URL the crawl accepted, its state (QUEUED, IN_FLIGHT, DONE, FAILED, SKIPPED in
    crawl.frontier), the crawl log and a few meta values (the seeds, for --resume).

    The engine keeps the "next ready URL" in the Scheduler's per-host queues in memory and uses
    the frontier as the durable record: `add` when a URL is accepted, `mark` on each state
    change, `restore` after a crash (in_flight rows go back to queued). Writes become durable at
    the store's commit (the page and its frontier rows in one transaction).

    A frontier shared by many worker processes (Redis) implements the same methods: `add` as
    SADD on the seen-set plus a per-host list, `mark` as a hash update, `restore` returning only
    the items of the hosts this worker leases (hosts partitioned by a hash of the host name, or
    leased with SET NX and a TTL, so that per-host politeness stays in one process), and
    `seen_urls` replaced by a membership test on the shared set (the engine only needs `in`).
    """

    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def reset(self) -> None: ...
    def size(self) -> int: ...
    def seen_urls(self) -> set[str]: ...
    def restore(self, limit: int | None = None) -> list[Item]: ...
    def add(self, items: Iterable[Item]) -> None: ...

    def mark(self, url: str, state: int, status: int | None = None, error: str | None = None,
             attempts: int | None = None, not_before: float = 0.0) -> None: ...

    def log(self, url: str, event: str, status: int | None = None, error: str | None = None,
            detail: str = "", nbytes: int = 0, elapsed: float = 0.0) -> None: ...

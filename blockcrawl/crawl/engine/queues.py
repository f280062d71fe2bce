"""Where the URLs a crawl accepts go: the seen-set, the frontier table (every one, as queued) and
the host queues in memory (the Scheduler's), at most CrawlConfig.max_queued of them.

Why a cap: a queued URL costs about 0.56 KB in memory and the limits allow 50M of them (about
28 GB). Past the cap a URL is still written to the frontier table as queued (it
spills there), so nothing is lost: the run says so once, and when the host queues have run dry
(nothing queued, delayed or in flight) `refill` reads the queued rows back from the table, up to
the cap again (CrawlStats.not_queued counts the URLs that waited there). A run that stops before
(--max-pages, --max-time) leaves them queued, and --resume fetches them. A shared frontier is not capped here: its
workers queue only the URLs of the hosts they lease (crawl.engine.shared).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence

from ..config import CrawlStats
from ..decisions.admission import Known
from ..frontier import Item
from ..protocols import Frontier, SharedFrontier
from .politeness import Scheduler

log = logging.getLogger("blockcrawl.crawl")


class Queues:
    def __init__(self, known: Known, frontier: Frontier, shared: SharedFrontier | None, sched: Scheduler,
                 stats: CrawlStats, cap: int) -> None:
        self.known, self.frontier, self.shared, self.sched, self.stats = known, frontier, shared, sched, stats
        self.cap = cap
        self.held = 0  # URLs in the host queues (and the delayed heap), as this class counts them
        self.peak = 0  # the most held at once (tests: never over the cap)
        self.pending = 0  # URLs that spilled since the last refill (a refill's extra row included)
        self.warned = False

    def accept(self, items: Sequence[Item], listed: bool = False) -> None:
        """New URLs into the seen-set, the frontier and the host queues (listed: found in a sitemap)."""
        if not items:
            return
        for it in items:
            self.known.seen.add(it.url)
        if self.shared is not None:  # only the new URLs of hosts this worker owns are queued here
            for it in self.shared.share(items):
                self.sched.add(it, listed)
        else:
            self.frontier.add(items)
            for it in items:
                self.hold(it, listed)
        self.stats.links_new += len(items)

    def hold(self, it: Item, listed: bool = False, again: bool = False, counted: bool = False) -> None:
        """Queue `it` at its host unless the cap is reached: then it waits in the frontier table
        (again: a retry of a URL that was held, never spilled; counted: read back by a refill,
        counted when it first spilled)."""
        if it.host in self.sched.stopped:
            return  # not queued (Scheduler.add): kept in the frontier table for --resume
        if self.held >= self.cap and not again and self.shared is None:
            if not self.warned:
                self.warned = True
                log.warning("%d URLs queued in memory (max_queued): more wait in the frontier table, "
                            "read back when these are done", self.cap)
            self.stats.not_queued += not counted
            self.pending += 1
            return
        self.held += 1
        self.peak = max(self.peak, self.held)
        self.sched.add(it, listed)

    def refill(self) -> bool:
        """The host queues ran dry (the engine asks only then): the URLs that spilled to the frontier
        table are read back, up to the cap (the rest spill again). True when any was queued."""
        if not self.pending or self.shared is not None:
            return False
        self.pending, self.held = 0, 0  # nothing is held now: the engine's loop is idle
        for it in self.frontier.restore(limit=self.cap + 1):  # one more: whether any is left
            self.hold(it, counted=True)
        return self.held > 0

    def left(self, n: int = 1) -> None:
        """n URLs left the host queues (a fetch started, a robots.txt skip, a host stopped)."""
        self.held -= n

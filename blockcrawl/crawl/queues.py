"""Where the URLs a crawl accepts go: the seen-set, the frontier table (every one, as queued) and
the host queues in memory (the Scheduler's), at most CrawlConfig.max_queued of them.

Why a cap: a queued URL costs about 0.56 KB in memory and the limits allow 50M of them (about
28 GB; issue 23, item 4). Past the cap a URL is still written to the frontier table as queued, so
nothing is lost: the run counts it (CrawlStats.not_queued), says so once, and --resume fetches it
(Frontier.restore, itself held to the cap). A shared frontier is not capped here: its workers
queue only the URLs of the hosts they lease (crawl.shared).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence

from .admission import Known
from .config import CrawlStats
from .frontier import Item
from .politeness import Scheduler
from .protocols import Frontier, SharedFrontier

log = logging.getLogger("blockcrawl.crawl")


class Queues:
    def __init__(self, known: Known, frontier: Frontier, shared: SharedFrontier | None, sched: Scheduler,
                 stats: CrawlStats, cap: int) -> None:
        self.known, self.frontier, self.shared, self.sched, self.stats = known, frontier, shared, sched, stats
        self.cap = cap
        self.held = 0  # URLs in the host queues (and the delayed heap), as this class counts them

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

    def hold(self, it: Item, listed: bool = False, again: bool = False) -> None:
        """Queue `it` at its host unless the cap is reached (again: a retry of a URL that was held,
        never dropped: its row is in the store, but only --resume would fetch it)."""
        if it.host in self.sched.stopped:
            return  # not queued (Scheduler.add): kept in the frontier table for --resume
        if self.held >= self.cap and not again and self.shared is None:
            if not self.stats.not_queued:
                log.warning("%d URLs queued in memory (max_queued): more are kept in the frontier table "
                            "only, for --resume", self.cap)
            self.stats.not_queued += 1
            return
        self.held += 1
        self.sched.add(it, listed)

    def left(self, n: int = 1) -> None:
        """n URLs left the host queues (a fetch started, a robots.txt skip, a host stopped)."""
        self.held -= n

"""Discovery: robots.txt, the sitemaps it names (or a guessed /sitemap.xml), the feeds pages link
and the URLs sitemaps and feeds list. Each step returns items and counts (outcome.RobotsRead,
ListRead; the feed items of a page) for the engine to record; the sitemap bounds are kept by
sitemaps.Sitemaps.
"""
from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..frontier import Item
from ..net.fetch import FetchResult
from ..sources.llmstxt import LLMS_PATHS
from ..sources.robots import ROBOTS_MAX_BYTES, rules_from_response
from ..sources.sitemaps import Sitemaps
from ..urls import host_of, url_key
from .admission import ADMIT_SLICE, Admission, KnownView
from .outcome import Admitted, Links, ListRead, Record, RobotsRead, no_record
from .retry import robots_retry

if TYPE_CHECKING:
    from ..engine.politeness import Scheduler
    from ..protocols import Clock, Fetcher

log = logging.getLogger("blockcrawl.crawl")

ROBOTS_ATTEMPTS = 2  # a failed robots.txt is asked again once, after --backoff s


class Discovery:
    def __init__(self, fetcher: Fetcher, sched: Scheduler, sitemaps: Sitemaps, admission: Admission,
                 known: KnownView, agent: str, clock: Clock, *, backoff: float, use_sitemaps: bool,
                 obey_robots: bool = True, record: Record = no_record, llms_txt: bool = False) -> None:
        """sched: the gate of each host (gate, sent) and its robots.txt test (blocks); record:
        Recorder.apply, for the slices of a long sitemap (read_list)."""
        self.fetcher, self.sched, self.sitemaps, self.admission = fetcher, sched, sitemaps, admission
        self.known, self.agent, self.clock, self.backoff = known, agent, clock, backoff
        self.use_sitemaps, self.obey_robots, self.record = use_sitemaps, obey_robots, record
        self.llms_txt = llms_txt

    async def robots(self, host: str, stopping: Callable[[], bool],
                     record: Callable[[FetchResult, RobotsRead], None]) -> None:
        """Fetch host's robots.txt and `record` what it says (robots_read), also when cancelled."""
        tries: list[FetchResult] = []
        started = self.clock.monotonic()
        try:
            await self._fetch_robots(host, tries)
        finally:
            res = tries[-1] if tries else FetchResult(host + "/robots.txt")
            record(res, self.robots_read(host, res, started, len(tries), stopping()))

    async def _fetch_robots(self, host: str, tries: list[FetchResult]) -> None:
        """Fetch host's robots.txt, asked again once when it failed; each answer goes to `tries`."""
        url = host + "/robots.txt"
        sched = self.sched
        for attempt in range(ROBOTS_ATTEMPTS):
            # cut at the size the parser reads: a larger robots.txt is parsed up to there, not refused
            res = await self.fetcher.get(url, accept=None, follow=True, gate=sched.gate(host),
                                         on_sent=sched.sent(host), max_bytes=ROBOTS_MAX_BYTES, truncate=True)
            tries.append(res)
            if not robots_retry(res.status, res.error, res.body is not None) or attempt + 1 == ROBOTS_ATTEMPTS:
                return
            await asyncio.sleep(self.backoff * (attempt + 1))

    def robots_read(self, host: str, res: FetchResult, started: float, requests: int, stopping: bool) -> RobotsRead:
        """The rules of robots.txt's answer, and the lists to fetch: the sitemaps it names, else the
        /sitemap.xml guess (when the host answered at all); with llms_txt, /llms.txt and /llms-full.txt too."""
        out = self._robots_read(host, res, started, requests, stopping)
        if not self.llms_txt or not self.use_sitemaps or stopping or res.status is None or out.rules.disallow_all:
            return out
        urls = [host + p for p in LLMS_PATHS if not self.obey_robots or out.rules.allowed(host + p, self.agent)]
        items, turned = self.sitemaps.from_robots(urls, self.admission.knows)
        return replace(out, items=out.items + tuple(items), turned=out.turned + turned,
                       probes=out.probes + tuple(it.url for it in items))

    def _robots_read(self, host: str, res: FetchResult, started: float, requests: int, stopping: bool) -> RobotsRead:
        rules = rules_from_response(res.status, res.body, self.agent)
        if res.status is None and res.error in ("dns", "connect"):
            # the host cannot be reached at all: let its pages fail with the real error
            rules.disallow_all = False
        if rules.disallow_all:
            log.warning("%s: robots.txt unreadable (%s), nothing fetched from the host",
                        host, res.error or f"http {res.status}")
        if rules.crawl_delay:
            log.info("%s: Crawl-delay %.2f s", host, rules.crawl_delay)
        if not self.use_sitemaps or stopping:
            return RobotsRead(host, rules, started, requests)
        if rules.sitemaps:
            items, turned = self.sitemaps.from_robots(rules.sitemaps, self.known.seen.__contains__)
            return RobotsRead(host, rules, started, requests, tuple(items), turned)
        if res.status is None or rules.disallow_all:
            return RobotsRead(host, rules, started, requests)
        # robots.txt names no sitemap: try /sitemap.xml, where most sites keep one. It obeys
        # robots.txt like a page; a 404 there is skipped, not an error.
        url = host + "/sitemap.xml"
        if url_key(url) in self.known.seen or (self.obey_robots and not rules.allowed(url, self.agent)):
            return RobotsRead(host, rules, started, requests)
        items, turned = self.sitemaps.from_robots([url], self.admission.knows)
        return RobotsRead(host, rules, started, requests, tuple(items), turned, tuple(it.url for it in items))

    def feeds(self, base: str, hrefs: tuple[str, ...], known: Callable[[str], bool]) -> tuple[list[Item], Counter[str]]:
        """A page's feed links (<link rel=alternate type=rss/atom/json>) as URL sources, bounded
        like sitemaps (--max-sitemaps files per crawl), obeying robots.txt."""
        urls = []
        for h in hrefs:
            u, _ = self.admission.resolver.resolve(base, h)
            if u is not None and not known(url_key(u)) and not self.sched.blocks(host_of(u), u):
                urls.append(u)
        if not urls:
            return [], Counter()
        return self.sitemaps.from_robots(urls, known, kind="feed")

    async def read_list(self, it: Item, res: FetchResult) -> ListRead:
        """A fetched sitemap or feed: the URLs it lists that are new to the crawl."""
        assert res.body is not None
        try:
            sm = await self.sitemaps.read(res.body, base=it.target)
        except Exception as e:  # noqa: BLE001 - a bad sitemap is logged, not fatal
            return ListRead(error=str(e))
        urls, n = sm.urls, len(sm.urls) - ADMIT_SLICE
        for i in range(0, n, ADMIT_SLICE):  # a slice at a time, the loop serving other hosts between
            part, turned = self.sitemaps.listed(it, replace(sm, urls=urls[i:min(i + ADMIT_SLICE, n)]), self.admission.knows)
            self.record(it, None, Admitted(Links(tuple(part), filtered=turned), listed=not sm.is_index))
            await asyncio.sleep(0)
        items, turned = self.sitemaps.listed(it, replace(sm, urls=urls[max(n, 0):]), self.admission.knows)
        if sm.truncated:
            log.info("%s: sitemap cut at %d URLs", it.url, len(sm.urls))
        return ListRead(tuple(items), turned, listed=not sm.is_index, error=sm.error or None)

"""Politeness when the event loop stalls between a request's gate and its send (issue: a burst a
few seconds into every crawl). Measured where it counts: the arrival times at real loopback
servers (the kernel's packet stamps, tests/crawlsite.py)."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from blockcrawl.crawl import CrawlConfig
from blockcrawl.crawl.crawler import Crawler
from blockcrawl.crawl.fetch import AiohttpFetcher
from blockcrawl.crawl.process import PipelineSpec
from blockcrawl.store import Store

from .crawlsite import Route, Site, chain_site, page


class StallingFetcher(AiohttpFetcher):
    """The real fetcher, whose gate - for the URLs in `stalled` - blocks the whole event loop for
    `stall` seconds right after it opens (as a heavy import or a pool starting would), then lets
    the loop run for `lag` seconds before the request is written: every timer that fell due
    meanwhile runs (other requests to the host reach their gates) before this one leaves."""

    def __init__(self, *a, stall: float, lag: float, stalled: set[str], **kw) -> None:
        super().__init__(*a, **kw)
        self.stall, self.lag, self.stalled, self.hits = stall, lag, stalled, 0

    async def get(self, url, *, gate=None, **kw):
        if gate is not None and url.rsplit("/", 1)[-1] in self.stalled:
            inner = gate

            async def gate() -> None:
                await inner()
                self.hits += 1
                time.sleep(self.stall)  # noqa: ASYNC251 - the stall is the point
                await asyncio.sleep(self.lag)
        return await super().get(url, gate=gate, **kw)


def gaps(hits) -> list[float]:
    ts = sorted(h.t for h in hits)
    return [b - a for a, b in zip(ts, ts[1:])]


def test_loop_stall_between_gate_and_send_keeps_the_delay(tmp_path: Path):
    """Three hosts, many requests per host ready at once (per_host 4), the loop blocked 0.3 s
    several times between a gate and its send: no two requests to one host arrive closer than
    the delay (or the robots.txt Crawl-delay)."""
    sites = [Site(chain_site(1)) for _ in range(3)]
    for s in sites:
        s.routes["/"] = Route(page("Hub", [f"/h{i}.html" for i in range(12)]))
        for i in range(12):
            s.routes[f"/h{i}.html"] = Route(page(f"Page {i}", []))
    sites[1].routes["/robots.txt"] = Route("User-agent: *\nCrawl-delay: 0.15\n", ctype="text/plain")
    for s in sites:
        s.start()
    try:
        cfg = CrawlConfig(seeds=[s.origin + "/" for s in sites], delay=0.05, per_host=4, concurrency=12,
                          sitemaps=False, progress=False, timeout=5.0)
        fetcher = StallingFetcher(cfg.user_agent, cfg.timeout, cfg.max_bytes, cfg.concurrency, cfg.per_host,
                                  stall=0.3, lag=0.03, stalled={"h1.html", "h5.html", "h9.html"})
        store = Store(tmp_path / "s.db")
        stats = asyncio.run(Crawler(store, cfg, PipelineSpec(tokenizer="words"), fetcher=fetcher,
                                    listeners=[]).run())
        store.commit()
        assert fetcher.hits == 9  # the stalls happened
        assert stats.pages == 3 * 13
        for s, delay in zip(sites, (0.05, 0.15, 0.05)):
            s.settle()
            assert len(s.hits) == 14  # robots.txt, the hub, 12 pages
            assert min(gaps(s.hits)) >= delay, (s.origin, sorted(gaps(s.hits))[:4])
    finally:
        for s in sites:
            s.stop()


def test_robots_with_a_byte_order_mark_is_obeyed(tmp_path: Path):
    """A robots.txt that starts with a UTF-8 BOM (then CRLF lines, an indented directive): before,
    the first line was read as an unknown directive, `Disallow` belonged to no group, and the crawl
    fetched every page. Now only robots.txt itself is requested."""
    for n, body in enumerate([b"\xef\xbb\xbfUser-agent: *\nDisallow: /\n",
                              b"\xef\xbb\xbf\r\n\xef\xbb\xbf User-agent: *\r\n\tDisallow: /\r\n",
                              "User-agent: *\nDisallow: /\n".encode("utf-16")]):
        site = Site(chain_site(8))
        site.routes["/robots.txt"] = Route(body, ctype="text/plain")
        site.start()
        try:
            store = Store(tmp_path / f"r{n}.db")
            cfg = CrawlConfig(seeds=[site.origin + "/p0.html"], progress=False, sitemaps=False, timeout=5.0)
            stats = asyncio.run(Crawler(store, cfg, PipelineSpec(tokenizer="words"), listeners=[]).run())
            store.commit()
            assert site.paths() == ["/robots.txt"], body
            assert stats.pages == 0 and stats.robots_blocked == 1
        finally:
            site.stop()

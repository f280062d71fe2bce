"""Hostile web: politeness when the event loop stalls between a request's
gate and its send, robots.txt with a byte-order mark, feeds with CDATA and relative links, stacked
content codings. Measured where it counts: at real loopback servers (tests/support/crawlsite.py)."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from blockcrawl.crawl import CrawlConfig, Crawler
from blockcrawl.crawl.net.fetch import AiohttpFetcher
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import Store

from ..support.crawlsite import Route, Site, chain_site, page


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
        stats = asyncio.run(Crawler(store, cfg, PipelineConfig(tokenizer="words"), fetcher=fetcher,
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
            stats = asyncio.run(Crawler(store, cfg, PipelineConfig(tokenizer="words"), listeners=[]).run())
            store.commit()
            assert site.paths() == ["/robots.txt"], body
            assert stats.pages == 0 and stats.robots_blocked == 1
        finally:
            site.stop()


def test_feeds_with_cdata_and_relative_links_are_followed(tmp_path: Path):
    """An RSS <link> wrapped in CDATA, a relative Atom href (against xml:base) and a relative JSON
    Feed url: before, all three were dropped, so their pages were never found."""
    site = Site()
    site.routes.update({
        "/robots.txt": Route("User-agent: *\n", ctype="text/plain"),
        "/": Route(page("Home", [], extra_head='<link rel="alternate" type="application/rss+xml" href="/rss.xml">'
                                   '<link rel="alternate" type="application/atom+xml" href="/blog/atom.xml">'
                                   '<link rel="alternate" type="application/feed+json" href="/f/feed.json">')),
        "/rss.xml": Route("<?xml version='1.0'?><rss><channel><item><link><![CDATA[/from-rss.html]]></link>"
                          "</item></channel></rss>", ctype="application/rss+xml"),
        "/blog/atom.xml": Route('<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" xml:base="/blog/">'
                                '<entry><link href="from-atom.html"/></entry></feed>', ctype="application/atom+xml"),
        "/f/feed.json": Route('{"version": "https://jsonfeed.org/version/1.1", "items": [{"url": "from-json.html"}]}',
                              ctype="application/feed+json"),
        "/from-rss.html": Route(page("R", [])), "/blog/from-atom.html": Route(page("A", [])),
        "/f/from-json.html": Route(page("J", [])),
    })
    site.start()
    try:
        store = Store(tmp_path / "f.db")
        cfg = CrawlConfig(seeds=[site.origin + "/"], progress=False, sitemaps=False, timeout=5.0)
        asyncio.run(Crawler(store, cfg, PipelineConfig(tokenizer="words"), listeners=[]).run())
        store.commit()
        got = set(site.paths())
        assert {"/from-rss.html", "/blog/from-atom.html", "/f/from-json.html"} <= got, got
    finally:
        site.stop()


def test_stacked_content_codings_are_undone(tmp_path: Path):
    """`Content-Encoding: gzip, gzip` (a body compressed twice) used to fail as malformed; the page
    is now stored with its text. A stack too deep to be real is still refused."""
    import gzip
    body = page("Twice", [], text="Double compressed words survive the trip")
    site = Site()
    site.routes.update({
        "/robots.txt": Route("User-agent: *\n", ctype="text/plain"),
        "/": Route(gzip.compress(gzip.compress(body.encode())), headers={"Content-Encoding": "gzip, gzip"}),
    })
    site.start()
    try:
        store = Store(tmp_path / "g.db")
        cfg = CrawlConfig(seeds=[site.origin + "/"], progress=False, sitemaps=False, timeout=5.0)
        stats = asyncio.run(Crawler(store, cfg, PipelineConfig(tokenizer="words"), listeners=[]).run())
        store.commit()
        assert stats.pages == 1 and stats.errors == 0
        texts = [t for (t,) in store.db.execute("SELECT text FROM chunks")]
        assert any("Double compressed words survive" in t for t in texts), texts
    finally:
        site.stop()


def test_extract_rejects_what_is_not_a_page_with_a_blockcrawl_error():
    """extract(None) raised "'NoneType' object is not subscriptable" and extract(memoryview)
    "'memoryview' object has no attribute 'encode'"; a bytes-like page is now read as bytes and
    anything else is one InputError naming the type."""
    import pytest

    import blockcrawl
    from blockcrawl.errors import BlockcrawlError, InputError

    body = b"<html><body><article><p>" + b"Plain words of a page. " * 20 + b"</p></article></body></html>"
    assert blockcrawl.extract(memoryview(body)).text == blockcrawl.extract(body).text != ""
    assert blockcrawl.extract(bytearray(body)).text == blockcrawl.extract(body).text
    for bad in (None, 42, ["<p>x</p>"]):
        with pytest.raises(InputError, match=type(bad).__name__) as e:
            blockcrawl.extract(bad)  # type: ignore[arg-type]
        assert isinstance(e.value, BlockcrawlError)

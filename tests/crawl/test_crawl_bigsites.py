"""Big sites against real servers on loopback: a directory and its index file with
one body are stored once; a page with 200k links does not freeze the other hosts (admission runs
in slices, the loop serving sockets between them: admission.ADMIT_SLICE)."""
from __future__ import annotations

import asyncio
import re
import time

from blockcrawl.crawl import CrawlConfig, Crawler
from blockcrawl.crawl.analysis.process import PageOut
from blockcrawl.crawl.decisions.admission import Admission, Known
from blockcrawl.crawl.decisions.policy import make_policy, scope_of
from blockcrawl.crawl.urls import Resolver
from blockcrawl.store import Store

from ..support.crawlsite import Route, Site, page
from .test_crawl import run
from .test_engine import LinkAnalyzer

_HREF = re.compile(r'href="([^"]*)"')


def test_a_directory_and_its_index_file_with_one_body_are_stored_once(tmp_path):
    same = Route(page("Zip", ["/"], "The zip directory lists the archives, with enough words for a block."))
    routes = {
        "/": Route(page("Home", ["/zip/", "/zip/index.html", "/docs/", "/docs/index.html", "/blog/default.aspx"])),
        "/zip/": same, "/zip/index.html": same,
        # a directory whose index.html is another page: both stored
        "/docs/": Route(page("Docs", ["/"], "The docs directory, listing the manuals of the project here.")),
        "/docs/index.html": Route(page("Docs index", ["/"], "Another text entirely, an old index kept around.")),
        "/blog/default.aspx": Route(page("Blog", ["/blog/"], "The blog's front page, served under two names.")),
        "/blog/": Route(page("Blog", ["/blog/"], "The blog's front page, served under two names.")),
    }
    site = Site(routes).start()
    try:
        stats, store = run(site, tmp_path, sitemaps=False, per_host=1)
        o = site.origin
        stored = {u for (u,) in store.db.execute("SELECT url FROM pages")}
        # both fetched (the second is only known to be the same page once its body is in) ...
        assert {"/zip/", "/zip/index.html", "/blog/", "/blog/default.aspx"} <= set(site.paths())
        # ... one of each pair stored; the other logged as the same page as the first
        assert len(stored & {o + "/zip/", o + "/zip/index.html"}) == 1
        assert len(stored & {o + "/blog/", o + "/blog/default.aspx"}) == 1
        assert {o + "/docs/", o + "/docs/index.html"} <= stored
        details = [d for (d,) in store.db.execute("SELECT detail FROM crawl_log WHERE detail LIKE '%same page as%'")]
        assert len(details) == 2 and stats.pages == 5 and stats.canonical == 2, (details, stats.summary())
    finally:
        site.stop()


class BigLinkAnalyzer(LinkAnalyzer):
    """test_engine's LinkAnalyzer (links by regex in the loop's thread), except the one big page,
    whose 200k links come ready (parsing it runs in a worker process in a real crawl, off the
    loop: what this test measures is what the loop does with the links)."""

    def __init__(self, big_url: str, hrefs: list[str]) -> None:
        self.big_url, self.hrefs = big_url, hrefs

    async def analyse(self, site: str, body: bytes, url: str, content_type: str | None, links: bool,
                      extract: bool | None = None) -> PageOut:
        if url == self.big_url and links:
            return PageOut("t", str(hash(body)), url, list(self.hrefs))
        return await super().analyse(site, body, url, content_type, links, extract)


def test_a_page_with_200k_links_does_not_freeze_a_healthy_host(tmp_path):
    n = 200_000
    hrefs = [f"/l{i}.html" for i in range(n)]
    big = Site({"/": Route("<html><body>big</body></html>")}).start()  # its /l*.html answer 404
    healthy = Site({"/": Route(page("Hub", [f"/p{i}.html" for i in range(3000)]))}).start()
    for i in range(3000):
        healthy.routes[f"/p{i}.html"] = Route(page(f"P{i}", []))
    try:
        cfg = CrawlConfig(seeds=[big.origin + "/", healthy.origin + "/"], progress=False, sitemaps=False, delay=0.005,
                          per_host=2, concurrency=4, max_pages=600, timeout=5.0)
        store = Store(tmp_path / "c.db")
        crawler = Crawler(store, cfg, fetcher=None, analyzer=BigLinkAnalyzer(big.origin + "/", hrefs), listeners=[])
        stats = asyncio.run(crawler.run())
        healthy.settle()
        ts = sorted(h.t for h in healthy.hits)
        worst = max(b - a for a, b in zip(ts, ts[1:]))
        # the same 200k links admitted in one piece, on this machine, now
        policy = make_policy(scope_of([big.origin + "/"], "site"))
        t0 = time.perf_counter()
        links = Admission(Known(), policy, Resolver(), lambda h, u: False, 10).links(big.origin + "/", big.origin + "/",
                                                                                     hrefs, 1)
        one_piece = time.perf_counter() - t0
        assert len(links.items) == n and stats.links_new >= n  # all of them were admitted in the crawl too
        # the healthy host's requests kept flowing: its longest silence is a small part of what the
        # admission holds the loop in one piece (it was longer than that: the loop stalled for it all)
        print(f"healthy host: longest gap {worst:.3f} s; 200k links admitted in one piece: {one_piece:.3f} s")
        assert worst < one_piece / 4, (worst, one_piece, len(ts))
        assert len(ts) > 100
    finally:
        big.stop(), healthy.stop()


def test_a_long_sitemap_is_admitted_in_slices_each_recorded_before_the_next():
    from blockcrawl.crawl.decisions.admission import ADMIT_SLICE
    from blockcrawl.crawl.decisions.discovery import Discovery
    from blockcrawl.crawl.decisions.outcome import Admitted, ListRead
    from blockcrawl.crawl.engine.clock import FakeClock
    from blockcrawl.crawl.engine.politeness import Scheduler
    from blockcrawl.crawl.net.fetch import FetchResult
    from blockcrawl.crawl.sources.sitemaps import Sitemaps, make_item
    a = "http://a.test"
    known = Known()
    adm = Admission(known, make_policy(scope_of([a + "/"], "site")), Resolver(), lambda h, u: False, 10)
    slices: list[int] = []

    def record(it, res, out):  # what Recorder.apply does with a slice: into the seen-set at once
        assert isinstance(out, Admitted) and out.listed
        slices.append(len(out.links.items))
        known.seen.update(i.url for i in out.links.items)

    d = Discovery(None, Scheduler(1, 0.0), Sitemaps(adm.policy, max_files=2, max_depth=3, max_urls=50_000,  # type: ignore[arg-type]
                  max_bytes=10**8), adm, known, "blockcrawl", FakeClock(), backoff=1.0, use_sitemaps=True, record=record)
    n = 2 * ADMIT_SLICE + 500
    urls = [f"{a}/p{i}.html" for i in range(n)]
    body = ("<urlset>" + "".join(f"<url><loc>{u}</loc></url>" for u in urls) + "</urlset>").encode()
    out = asyncio.run(d.read_list(make_item(a + "/s.xml", 0, kind="sitemap"), FetchResult(a, 200, body=body)))
    # all but the last ADMIT_SLICE URLs recorded ahead, a slice at a time; the last in the ListRead
    assert isinstance(out, ListRead) and slices == [ADMIT_SLICE, 500]
    assert len(out.items) == ADMIT_SLICE and len(known.seen | {i.url for i in out.items}) == n

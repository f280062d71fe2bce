"""The crawl engine's logic on an in-memory fetcher and a fake clock (crawl.net.memfetch, crawl.engine.clock):
exact spacings and counts, in milliseconds of real time. The same behaviours against real
servers are in tests/crawl/test_crawl.py."""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Self

import pytest

from blockcrawl.crawl import CrawlConfig, Crawler
from blockcrawl.crawl.analysis.process import PageOut
from blockcrawl.crawl.engine.clock import FakeClock
from blockcrawl.crawl.net.memfetch import MemoryFetcher, Response
from blockcrawl.store import Store

A, B = "http://a.test", "http://b.test"
_HREF = re.compile(rb'href="([^"]*)"')


class LinkAnalyzer:
    """The Analyzer protocol in the loop's thread: links by regex, no blocks."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    async def prime(self, site: str, pairs: list[tuple[str, str]]) -> None:
        pass

    async def analyse(self, site: str, body: bytes, url: str, content_type: str | None, links: bool,
                      extract: bool | None = None) -> PageOut:
        hrefs = [h.decode() for h in _HREF.findall(body)] if links else []
        return PageOut("t", hashlib.blake2b(body, digest_size=16).hexdigest(), url, hrefs)

    async def finish(self, site: str) -> PageOut | None:
        return None


def html(*links: str) -> str:
    return "<html><body>" + "".join(f'<a href="{u}">x</a>' for u in links) + "</body></html>"


def robots(text: str) -> Response:
    return Response(text, content_type="text/plain")


class Run:
    def __init__(self, tmp_path: Path, routes: dict, seeds: list[str] | None = None, **kw) -> None:
        kw.setdefault("progress", False)
        kw.setdefault("backoff", 1.0)
        self.clock = FakeClock()
        self.fetcher = MemoryFetcher(routes, self.clock)
        self.store = Store(tmp_path / "m.db")
        self.crawler = Crawler(self.store, CrawlConfig(seeds=seeds or [A + "/"], **kw), fetcher=self.fetcher,
                               clock=self.clock, analyzer=LinkAnalyzer(), listeners=[])
        self.t0 = self.clock.monotonic()
        self.stats = self.clock.run(self.crawler.run())
        self.store.commit()

    def times(self, prefix: str = "", skip_robots: bool = True) -> list[float]:
        return [r.t - self.t0 for r in self.fetcher.requests if r.url.startswith(prefix)
                and not (skip_robots and r.url.endswith("/robots.txt"))]

    def urls(self) -> list[str]:
        return [r.url for r in self.fetcher.requests]

    def frontier(self) -> dict[str, tuple]:
        return {u: (st, status, err) for u, st, status, err in
                self.store.db.execute("SELECT url, state, status, error FROM frontier")}


def gaps(ts: list[float]) -> list[float]:
    ts = sorted(ts)
    return [b - a for a, b in pairwise(ts)]


def hub(origin: str, n: int, latency: float = 0.0) -> dict:
    r: dict = {f"{origin}/": Response(html(*[f"/p{i}.html" for i in range(n)]))}
    for i in range(n):
        r[f"{origin}/p{i}.html"] = Response(html(), latency=latency)
    return r


def test_delay_and_crawl_delay_space_one_host_not_others(tmp_path):
    routes = hub(A, 8) | hub(B, 8)
    routes[B + "/robots.txt"] = robots("User-agent: *\nCrawl-delay: 0.5\n")
    # sitemaps off: no /sitemap.xml probe among the requests counted
    run = Run(tmp_path, routes, [A + "/", B + "/"], delay=0.2, per_host=4, concurrency=8, sitemaps=False)
    a, b = run.times(A, skip_robots=False), run.times(B, skip_robots=False)
    assert len(a) == len(b) == 10  # robots.txt, the hub, 8 pages
    # every start at least the delay after the previous one, and no slower than needed
    assert min(gaps(a)) >= 0.2 and max(gaps(a)) < 0.25
    assert min(gaps(b)) >= 0.5 and max(gaps(b)) < 0.55  # Crawl-delay larger than --delay wins
    assert max(a) < 9 * 0.25 and max(b) < 9 * 0.55  # the hosts did not wait for each other


def test_per_host_cap_and_global_concurrency(tmp_path):
    routes = hub(A, 20, latency=1.0) | hub(B, 20, latency=1.0)
    run = Run(tmp_path, routes, [A + "/", B + "/"], per_host=3, concurrency=5)
    assert max(r.inflight for r in run.fetcher.requests) == 3
    assert max(r.total for r in run.fetcher.requests) == 5
    assert run.stats.pages == 42


def test_retry_after_backoff_and_give_up(tmp_path):
    """One failing URL per host (a failing host is paused as a whole: test_failing_host_*)."""
    C, D = "http://c.test", "http://d.test"
    routes = {A + "/": Response(html("/busy.html")),
              A + "/busy.html": lambda n: Response(html(), 503, headers={"Retry-After": "3"}) if n == 0
              else Response(html()),
              C + "/": Response(html("/down.html")), C + "/down.html": Response("", 500),
              D + "/": Response(html("/never.html")),
              D + "/never.html": Response("", 503, headers={"Retry-After": "3600"}),
              B + "/": Response(html("/rate.html", "/o1.html", "/o2.html")),
              B + "/rate.html": lambda n: Response("", 429, headers={"Retry-After": "5"}) if n == 0 else Response(html()),
              B + "/o1.html": Response(html()), B + "/o2.html": Response(html())}
    run = Run(tmp_path, routes, [A + "/", B + "/", C + "/", D + "/"], retries=2, backoff=1.0, per_host=1,
              concurrency=4)
    t: dict[str, list[float]] = {}
    for r in run.fetcher.requests:
        t.setdefault(r.url, []).append(r.t)
    assert gaps(t[A + "/busy.html"]) == [pytest.approx(3.0, abs=0.02)]  # Retry-After honoured, exactly
    back = gaps(t[C + "/down.html"])  # back-off 1 s then 2 s, each x 0.75-1.25
    assert len(back) == 2 and 0.75 <= back[0] <= 1.25 and 1.5 <= back[1] <= 2.5
    assert len(t[D + "/never.html"]) == 1  # a Retry-After beyond 600 s: given up at once
    f = run.frontier()
    assert f[C + "/down.html"][2] == "http 500" and f[D + "/never.html"][2] == "http 503"
    assert f[A + "/busy.html"][0] == 2 and f[B + "/rate.html"][0] == 2
    # 429: the whole host stays quiet for the Retry-After, not only the URL
    t429 = t[B + "/rate.html"][0]
    assert min(t[B + "/o1.html"][0], t[B + "/o2.html"][0]) >= t429 + 5.0
    assert run.stats.retries == 4 and run.stats.errors == 2


def test_failing_host_is_paused_as_a_whole_and_stopped_after_a_bound(tmp_path):
    """Every page answers 503 with Retry-After: 30 (a 503 storm). Before, each queued URL was
    asked at once and again all together 30 s later (302 requests in the first second, 300 at
    30 s). Now the host goes quiet after the first 503, the pauses grow, and after ten failures in
    a row it is stopped for the crawl, its URLs left queued; the healthy host is not slowed."""
    n = 300
    routes = {A + "/": Response(html(*[f"/p{i}.html" for i in range(n)]))}
    for i in range(n):
        routes[A + f"/p{i}.html"] = Response("", 503, headers={"Retry-After": "30"})
    routes |= hub(B, 20)
    run = Run(tmp_path, routes, [A + "/", B + "/"], retries=5, backoff=1.0, per_host=4, concurrency=8,
              sitemaps=False)
    ta = sorted(run.times(A))[1:]  # the pages of A (the hub first)
    assert 10 <= len(ta) <= 10 + 3  # stopped after ten failures in a row (+ what was on the wire)
    # never more than per_host requests inside one Retry-After window: no storm, no burst at 30 s
    assert max(sum(1 for u in ta if t <= u < t + 29.9) for t in ta) <= 4
    assert run.stats.hosts_stopped == 1
    f = run.frontier()
    # every page of A is still queued (none failed, none lost): --resume asks again
    assert sum(1 for u, (st, _, _) in f.items() if u.startswith(A + "/p") and st == 0) == n
    assert len(run.times(B)) == 21 and max(run.times(B)) < 5  # B crawled at once, A did not hold it up


def test_redirects_loop_and_chain_limit(tmp_path):
    routes = {A + "/": Response(html("/loop-a", "/hop0")),
              A + "/loop-a": Response("", 302, headers={"Location": "/loop-b"}),
              A + "/loop-b": Response("", 302, headers={"Location": "/loop-a"}),
              A + "/hop4": Response(html())}
    for i in range(4):
        routes[A + f"/hop{i}"] = Response("", 301, headers={"Location": f"/hop{i + 1}"})
    run = Run(tmp_path, routes, max_redirects=2)
    c = Counter(run.urls())
    assert c[A + "/loop-a"] == 1 and c[A + "/loop-b"] == 1
    f = run.frontier()
    assert f[A + "/loop-b/"][2] == "redirect loop"
    assert f[A + "/hop2/"][2] == "too many redirects" and A + "/hop3" not in c
    assert run.stats.redirects == 5  # every 3xx answer, the refused ones too


def test_robots_disallow_and_unreachable_robots(tmp_path):
    routes = {A + "/robots.txt": robots("User-agent: *\nDisallow: /private/\nAllow: /private/open\n"),
              A + "/": Response(html("/private/x.html", "/private/open.html", "/pub.html")),
              A + "/private/open.html": Response(html()), A + "/pub.html": Response(html()),
              B + "/robots.txt": Response("", 503), B + "/": Response(html("/x.html"))}
    run = Run(tmp_path, routes, [A + "/", B + "/"], scope="any")
    urls = run.urls()
    assert urls.index(A + "/robots.txt") < urls.index(A + "/")
    assert A + "/private/x.html" not in urls and A + "/private/open.html" in urls and A + "/pub.html" in urls
    # robots.txt 503 twice: the host is treated as disallowed, its seed recorded as skipped
    assert urls.count(B + "/robots.txt") == 2 and B + "/" not in urls
    assert run.frontier()[B + "/"] == (4, None, "robots")
    assert run.stats.robots_blocked == 2


def test_robots_over_the_size_cap_is_parsed_up_to_the_cap(tmp_path):
    big = "User-agent: *\nDisallow: /private/\n" + "# padding\n" * 80_000  # 800 KB
    routes = {A + "/robots.txt": robots(big), A + "/": Response(html("/private/x.html", "/pub.html")),
              A + "/pub.html": Response(html())}
    run = Run(tmp_path, routes, max_bytes=100_000)
    assert A + "/private/x.html" not in run.urls() and A + "/pub.html" in run.urls()


def test_sitemaps_listed_pages_and_bounds(tmp_path):
    routes = {A + "/robots.txt": robots(f"User-agent: *\nSitemap: {A}/sm.xml\nSitemap: {A}/idx0.xml\n"),
              A + "/": Response(html()),
              A + "/sm.xml": Response(f"<urlset><url><loc>{A}/orphan.html</loc></url></urlset>",
                                      content_type="application/xml"),
              A + "/orphan.html": Response(html())}
    for i in range(50):  # an index linking a new index each time
        routes[A + f"/idx{i}.xml"] = Response(f"<sitemapindex><sitemap><loc>{A}/idx{i + 1}.xml</loc></sitemap>"
                                              "</sitemapindex>", content_type="application/xml")
    run = Run(tmp_path, routes, max_depth=1)
    urls = run.urls()
    assert A + "/orphan.html" in urls
    assert [u for u in urls if "/idx" in u] == [A + "/idx0.xml", A + "/idx1.xml", A + "/idx2.xml"]
    assert run.stats.filtered["sitemap-depth"] == 1 and run.stats.sitemaps == 4
    run = Run(tmp_path / "n", routes, max_sitemaps=1) if (tmp_path / "n").mkdir() is None else None
    assert [u for u in run.urls() if u.endswith(".xml")] == [A + "/sm.xml"]


def test_max_pages_counts_sitemap_fetches(tmp_path):
    routes = hub(A, 30)
    run = Run(tmp_path, routes, max_pages=5)
    # the /sitemap.xml probe (robots.txt names no sitemap) found nothing: it uses up no fetch
    assert A + "/sitemap.xml" in run.urls()
    assert len([u for u in run.urls() if not u.endswith(("/robots.txt", "/sitemap.xml"))]) == 5
    assert run.stats.pages == 5 and run.stats.stopped == "stopped: page limit"
    routes[A + "/robots.txt"] = robots(f"Sitemap: {A}/idx0.xml\n")
    for i in range(50):
        routes[A + f"/idx{i}.xml"] = Response(f"<sitemapindex><sitemap><loc>{A}/idx{i + 1}.xml</loc></sitemap>"
                                              "</sitemapindex>", content_type="application/xml")
    (tmp_path / "s").mkdir()
    run = Run(tmp_path / "s", routes, max_pages=5, max_sitemap_depth=50)
    assert len(run.times(A)) == 5 and run.stats.sitemaps + run.stats.pages == 5


@pytest.mark.parametrize("hard", [False, True])
def test_stop_graceful_or_hard(tmp_path, hard):
    """stop() once: the requests in flight finish; twice: they are cancelled and stay queued."""
    routes = hub(A, 30, latency=1.0)
    holder: list[Crawler] = []

    def stopping(n: int) -> Response:
        for _ in range(2 if hard else 1):
            holder[0].stop("interrupted")
        return Response(html(), latency=1.0)
    routes[A + "/p3.html"] = stopping
    clock = FakeClock()
    fetcher = MemoryFetcher(routes, clock)
    store = Store(tmp_path / "s.db")
    crawler = Crawler(store, CrawlConfig(seeds=[A + "/"], progress=False, per_host=2), fetcher=fetcher, clock=clock,
                      analyzer=LinkAnalyzer(), listeners=[])
    holder.append(crawler)
    stats = clock.run(crawler.run())
    store.commit()
    assert stats.stopped == "stopped: interrupted"
    states = dict(store.db.execute("SELECT url, state FROM frontier"))
    assert 1 not in states.values()  # nothing left in flight ...
    assert sum(1 for v in states.values() if v == 0) > 20  # ... the rest queued for --resume
    fetched = [r.url for r in fetcher.requests if r.url.endswith(".html")]
    if hard:  # p2 and p3 were on the wire: cancelled, back in the queue
        assert stats.pages == 1 + len(fetched) - 2 and states[A + "/p3.html"] == 0
    else:
        assert stats.pages == 1 + len(fetched) and states[A + "/p3.html"] == 2


def test_max_time_on_the_fake_clock(tmp_path):
    run = Run(tmp_path, hub(A, 40, latency=1.0), max_time=3.5, per_host=2)
    assert run.stats.stopped == "stopped: time limit"
    assert max(run.times(A)) < 3.5 and 3.5 <= run.stats.elapsed < 4.6


@pytest.mark.parametrize("allow", [False, True])
def test_private_addresses_not_fetched_from_public_seeds(tmp_path, allow):
    """A public site linking to loopback or private addresses (in any spelling) must not make
    the crawler reach into the machine's own network, unless --allow-private."""
    private = ["http://127.0.0.1/admin", "http://0x7f.1/x", "http://2130706433/y", "http://10.0.0.1/",
               "http://[::1]/z", "http://169.254.169.254/latest/meta-data/"]
    routes = {A + "/robots.txt": robots(""), A + "/": Response(html(*private, A + "/ok"))}
    routes[A + "/ok"] = Response(html())
    for u in private:
        host = u.split("/")[2]
        routes[f"http://{host}/robots.txt"] = robots("")
        routes[u] = Response(html())
    run = Run(tmp_path, routes, scope="any", allow_private=allow)
    fetched = set(run.urls())
    assert A + "/ok" in fetched
    reached = [u for u in fetched if not u.startswith(A)]
    if allow:
        assert reached
    else:
        assert reached == [] and run.stats.filtered["private"] == len(private)

"""Per-page analysis has a bound: attributes are capped before the parser sees
them, a page whose analysis outlasts the limit is killed with its worker and recorded as failed
("too complex"), and --max-time holds whatever the workers are doing. Crawls run against real
loopback servers (tests/support/crawlsite.py) with real worker processes."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from blockcrawl.crawl import CrawlConfig, Crawler
from blockcrawl.crawl.frontier import FAILED, QUEUED
from blockcrawl.parse import load
from blockcrawl.parse.build import MAX_ELEMENT_ATTRS, cap_attributes
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import Store

from ..support.crawlsite import Route, Site, page


def one_element(n: int) -> str:
    attrs = " ".join(f'data-a{i}="v{i}"' for i in range(n))
    return f"<html><body><div {attrs}>kept text</div><p>after the element</p></body></html>"


def evasive(n: int) -> str:
    """n attributes on one element whose first run is cut short by a quoted '>': the attribute
    cap does not see it, so only the analysis time limit bounds it."""
    attrs = " ".join(f'q{i}=">"' if i % 300 == 0 else f"a{i}=v" for i in range(n))
    return f"<html><body><div {attrs}>x</div><p>slow page</p></body></html>"


def test_attributes_capped_per_element_and_parse_grows_linearly():
    for n in (MAX_ELEMENT_ATTRS - 1, MAX_ELEMENT_ATTRS, 3 * MAX_ELEMENT_ATTRS):
        d = load(one_element(n))
        div = d.tag.index("div")
        assert len(d.attrs[div] or {}) == min(n, MAX_ELEMENT_ATTRS)
        assert [t for t in d.text if t.strip()] == ["kept text", "after the element"]
    small, big = one_element(20_000), one_element(160_000)  # 8x the attributes
    t0 = time.process_time()
    load(small)
    t1 = time.process_time()
    load(big)
    t2 = time.process_time()
    # linear: ~8x; lexbor uncapped is quadratic there (~64x)
    assert (t2 - t1) < 24 * max(t1 - t0, 1e-3)


def test_attribute_cap_leaves_scripts_and_ordinary_pages_alone():
    script = "<script>" + "if(a<b){" + " x=1;" * 5000 + "}</script>"
    html = f"<html><head>{script}</head><body><img src='data:x' alt='{'y' * 5000}'><p>t</p></body></html>"
    assert cap_attributes(html) == html
    assert cap_attributes("<p " + "a=1 " * 2_000_000 + ">") is None  # over the page bound: given up


def crawl(site: Site, tmp_path: Path, name: str, **kw) -> tuple[object, Store, float]:
    store = Store(tmp_path / name)
    cfg = CrawlConfig(seeds=[site.origin + "/"], progress=False, sitemaps=False, timeout=10.0, workers=1, **kw)
    t = time.monotonic()
    stats = asyncio.run(Crawler(store, cfg, PipelineConfig(tokenizer="words"), listeners=[]).run())
    store.commit()
    return stats, store, time.monotonic() - t


def slow_site() -> Site:
    site = Site()
    site.routes.update({
        "/robots.txt": Route("User-agent: *\n", ctype="text/plain"),
        "/": Route(page("Home", ["/a.html", "/slow.html", "/b.html"])),
        "/a.html": Route(page("A", [], text="First ordinary page")),
        "/b.html": Route(page("B", [], text="Second ordinary page")),
        "/slow.html": Route(evasive(40_000)),
    })
    return site.start()


def test_page_over_the_analysis_limit_fails_as_too_complex_and_the_crawl_goes_on(tmp_path):
    site = slow_site()
    try:
        t = time.process_time()
        load(evasive(40_000))
        alone = time.process_time() - t
        limit = alone / 4  # the page alone takes 4x the limit: it must be cut
        stats, store, _ = crawl(site, tmp_path, "t.db", analysis_timeout=limit)
        rows = dict(store.db.execute("SELECT url, error FROM frontier WHERE state = ?", (FAILED,)))
        assert rows == {site.origin + "/slow.html": "too complex"}
        assert stats.error_kinds["too complex"] == 1
        assert stats.pages == 3  # home, a, b stored: a fresh worker took over
        texts = " ".join(t for (t,) in store.db.execute("SELECT text FROM chunks"))
        assert "First ordinary page" in texts and "Second ordinary page" in texts
    finally:
        site.stop()


def test_max_time_holds_while_a_worker_is_busy(tmp_path):
    """The home page itself takes the worker many seconds; --max-time 3 (past the worker's
    start-up) ends the crawl about a second after the deadline, the page left queued."""
    page_html = evasive(60_000)
    t = time.process_time()
    load(page_html)
    alone = time.process_time() - t
    site = Site()
    site.routes.update({"/robots.txt": Route("User-agent: *\n", ctype="text/plain"), "/": Route(page_html)})
    site.start()
    try:
        stats, store, wall = crawl(site, tmp_path, "m.db", max_time=3.0)
        assert stats.stopped == "stopped: time limit"
        # the crawl did not wait for the page: it ended well before its analysis would have
        assert wall < 3.0 + alone / 2, (wall, alone)
        state = dict(store.db.execute("SELECT url, state FROM frontier"))
        assert state[site.origin + "/"] == QUEUED  # kept for --resume, not failed
    finally:
        site.stop()

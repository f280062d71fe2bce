"""Recrawl and --max-pages on the in-memory fetcher: an unchanged page does
not use up the budget, and the URLs a capped crawl left queued survive a recrawl; and the
URLs held in memory are capped (CrawlConfig.max_queued), the rest wait in the frontier table."""
from __future__ import annotations

from blockcrawl.crawl.frontier import QUEUED

from .test_engine import A, Run, hub


def test_a_recrawl_of_an_unchanged_site_is_not_stopped_by_its_unchanged_pages(tmp_path):
    routes = hub(A, 30)
    first = Run(tmp_path, routes, max_pages=10)
    assert first.stats.pages == 10
    queued = sum(st == QUEUED for st, _, _ in first.frontier().values())
    assert queued == 31 - 10  # the hub's other pages, still queued
    first.store.close()
    again = Run(tmp_path, routes, max_pages=10, recrawl=True)
    st = again.stats
    # the 10 stored pages answer the same body (no validators): unchanged, refunded; the budget
    # goes to the 10 next pages the first run left queued (they used to be deleted, and the run
    # stopped at "page limit: 0 pages ... 10 unchanged")
    assert st.unchanged == 10 and st.new == 10 and st.pages == 10, st.summary()
    left = [u for u, (s, _, _) in again.frontier().items() if s == QUEUED]
    assert len(left) == 31 - 20 + 1 and A + "/sitemap.xml" in left  # the recrawl's own /sitemap.xml guess too
    again.store.close()
    final = Run(tmp_path, routes, resume=True)
    assert final.stats.pages == 11 and not any(s == QUEUED for s, _, _ in final.frontier().values())


def test_urls_past_the_memory_cap_wait_in_the_store_and_are_read_back(tmp_path, caplog):
    routes = hub(A, 60)
    run = Run(tmp_path, routes, max_queued=8)
    st = run.stats
    # the hub's 60 links (and the /sitemap.xml guess): 8 held at most, the rest read back from the
    # frontier table each time the queues ran dry; all fetched in the one run, warned once
    assert run.crawler.rec.queues.peak == 8 and st.not_queued > 0 and st.pages == 61, st.summary()
    assert "waited in the frontier table" in st.summary()
    assert sum("max_queued" in r.getMessage() for r in caplog.records) == 1
    assert not any(s == QUEUED for s, _, _ in run.frontier().values())
    assert len(run.urls()) == len(set(run.urls()))  # nothing fetched twice
    run.store.close()
    # a run stopped before the queues run dry leaves the rest queued in the store for --resume
    (tmp_path / "b").mkdir()
    first = Run(tmp_path / "b", routes, max_queued=8, max_pages=20)
    assert first.stats.pages == 20 and sum(s == QUEUED for s, _, _ in first.frontier().values()) > 8
    first.store.close()
    rest = Run(tmp_path / "b", routes, max_queued=8, resume=True)
    assert rest.crawler.rec.queues.peak <= 8 and first.stats.pages + rest.stats.pages == 61
    assert not any(s == QUEUED for s, _, _ in rest.frontier().values())

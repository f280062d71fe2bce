"""Recrawl and --max-pages on the in-memory fetcher (issue 23, 9a and 9b): an unchanged page does
not use up the budget, and the URLs a capped crawl left queued survive a recrawl; and (item 4) the
URLs held in memory are capped (CrawlConfig.max_queued), the rest counted and fetched by --resume."""
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


def test_urls_past_the_memory_cap_are_counted_kept_in_the_store_and_fetched_by_resume(tmp_path, caplog):
    routes = hub(A, 30)
    runs = [Run(tmp_path, routes, max_queued=8)]
    st = runs[0].stats
    # the hub's 30 links (and the /sitemap.xml guess) came with 8 held: the rest counted, once warned
    assert st.not_queued > 0 and st.pages + st.not_queued + st.errors + st.skipped >= 30, st.summary()
    assert "left queued for --resume" in st.summary()
    assert sum("max_queued" in r.getMessage() for r in caplog.records) == 1
    queued = [u for u, (s, _, _) in runs[0].frontier().items() if s == QUEUED]
    assert len(queued) == st.not_queued  # nothing lost: queued in the store
    while queued:
        runs[-1].store.close()
        runs.append(Run(tmp_path, routes, resume=True, max_queued=8))
        queued = [u for u, (s, _, _) in runs[-1].frontier().items() if s == QUEUED]
        assert len(runs) < 10
    assert sum(r.stats.pages for r in runs) == 31 and len(runs) > 2

"""The crawl engine's decisions, one table each: triage of a fetch result, link admission (links,
canonical fold, redirects), the page decision, discovery (robots.txt, sitemaps, feeds), seeding
(fresh, resume, recrawl) and site models. Each returns a value (crawl.decisions.outcome); the engine's
Recorder applies it, and tests/crawl/test_engine.py checks the whole against a fake clock."""
from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from blockcrawl.crawl.analysis.process import PageOut
from blockcrawl.crawl.config import CrawlConfig, CrawlStats
from blockcrawl.crawl.decisions.admission import Admission, Known
from blockcrawl.crawl.decisions.discovery import Discovery
from blockcrawl.crawl.decisions.outcome import (
    Failed,
    FailKind,
    Gone,
    NotStored,
    Redirected,
    Retry,
    Skipped,
    SkipReason,
    Stored,
    Unchanged,
    refunds,
)
from blockcrawl.crawl.decisions.pagestep import PageRules, decide, same_index
from blockcrawl.crawl.decisions.policy import make_policy, scope_of
from blockcrawl.crawl.decisions.retry import decide_retry
from blockcrawl.crawl.decisions.seeding import conditional, fresh, recrawl, resume
from blockcrawl.crawl.decisions.sitemodels import SiteModels, model_counts, stored_content
from blockcrawl.crawl.decisions.triage import FOLLOW, READ, triage
from blockcrawl.crawl.engine.clock import FakeClock
from blockcrawl.crawl.engine.politeness import Scheduler
from blockcrawl.crawl.frontier import Item
from blockcrawl.crawl.net.fetch import FetchResult, parse_retry_after
from blockcrawl.crawl.sources.links import PageSignals
from blockcrawl.crawl.sources.sitemaps import Sitemaps, make_item
from blockcrawl.crawl.urls import url_key
from blockcrawl.records import PageInfo

A = "http://a.test"


def K(path: str) -> str:
    """The frontier key of a path of A (extension-less paths end in a slash)."""
    return url_key(A + path)


def item(path: str = "/p", **kw: object) -> Item:
    return make_item(A + path, 1, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------- triage
@pytest.mark.parametrize("res,stored,probe,attempts,want", [
    (FetchResult(A, 200, body=b"x"), False, False, 0, READ),
    (FetchResult(A, 503), False, False, 0, Retry(1.0)),
    (FetchResult(A, 429, retry_after=5.0), False, False, 0, Retry(5.0)),  # the host is paused by health.py
    (FetchResult(A, 503), False, False, 2, Failed(FailKind.HTTP, "http 503")),  # retries used up
    (FetchResult(A, 503, retry_after=700.0), False, False, 0,
     Failed(FailKind.HTTP, "http 503", "Retry-After 700 s is beyond 600 s")),
    (FetchResult(A, None, error="content_type", detail="image/png"), False, False, 0,
     Skipped(SkipReason.CONTENT_TYPE, "image/png")),
    (FetchResult(A, None, error="too_large", detail="big"), False, False, 0, Failed(FailKind.TOO_LARGE, "too_large", "big")),
    (FetchResult(A, None, error="brand-new", detail="?"), False, False, 0, Failed(FailKind.OTHER, "brand-new", "?")),
    (FetchResult(A, 304), True, False, 0, Unchanged()),
    (FetchResult(A, 304), False, False, 0, Failed(FailKind.HTTP, "http 304")),  # not asked for: no body
    (FetchResult(A, 410), True, False, 0, Gone()),
    (FetchResult(A, 404), False, False, 0, Failed(FailKind.HTTP, "http 404")),
    (FetchResult(A, 404), False, True, 0, Skipped(SkipReason.NO_SITEMAP, "")),  # a guessed /sitemap.xml
    (FetchResult(A, 503), False, True, 2, Failed(FailKind.HTTP, "http 503")),  # a 5xx there is an error
    (FetchResult(A, 301, location="/b"), False, False, 0, FOLLOW),
    (FetchResult(A, 301), False, False, 0, Failed(FailKind.HTTP, "http 301")),  # no Location
    (FetchResult(A, 200), False, False, 0, Failed(FailKind.HTTP, "http 200")),  # no body
])
def test_triage(res, stored, probe, attempts, want):
    it = item()
    it.attempts = attempts
    assert triage(it, res, stored=stored, probe=probe, retries=2, backoff=1.0, jitter=0.5, stopping=False) == want


def test_a_retry_after_of_a_day_is_reported_as_sent():
    # it was capped at 3600 by the fetcher and logged as "3600 s is beyond 600 s"
    ra = parse_retry_after("99999")
    assert decide_retry(503, None, ra, 0, 2, 1.0, 0.5).give_up == "Retry-After 99999 s is beyond 600 s"


@pytest.mark.parametrize("out,want", [
    (Retry(1.0), True), (Redirected("x"), True), (Skipped(SkipReason.CONTENT_TYPE), True),
    (Skipped(SkipReason.NO_SITEMAP), True), (Skipped(SkipReason.ROBOTS), False),
    (Failed(FailKind.HTTP, "http 404"), False), (Failed(FailKind.REDIRECT_LOOP, "redirect loop", redirect=True), True),
    (Unchanged(), True), (Gone(), False),  # an unchanged page (304 or the same body) is no new page
])
def test_what_refunds_a_max_pages_fetch(out, want):
    assert refunds(out) is want


def test_error_kinds_are_whole_names_in_the_summary():
    st = CrawlStats()
    st.error_kinds[FailKind.TOO_MANY_REDIRECTS] += 1
    st.error_kinds[FailKind.BAD_REDIRECT] += 2
    assert "(bad_redirect 2, too_many_redirects 1)" in st.summary()
    assert "too 1" not in st.summary() and st.error_kinds["bad_redirect"] == 2


# ---------------------------------------------------------------- admission
def admission(known: Known | None = None, blocked: tuple[str, ...] = (), **policy: object) -> Admission:
    pol = make_policy(scope_of([A + "/"], "host"), **policy)  # type: ignore[arg-type]
    from blockcrawl.crawl.urls import Resolver
    return Admission(known or Known(), pol, Resolver(), lambda host, url: url.endswith(blocked) if blocked else False, 5)


def test_links_are_new_once_and_say_why_others_are_not():
    known = Known(seen={K("/seen")}, rejected={K("/gone-for-good")})
    a = admission(known, blocked=("/private",), exclude=[r"/skip"])
    links = a.links(A + "/", A + "/", ["/n1", "/n1", "/seen", "/gone-for-good", "/skip", "/skip", "/private",
                                       "http://other.test/", "mailto:x@y", "/n2"], depth=1)
    assert [it.url for it in links.items] == [K("/n1"), K("/n2")]
    assert links.filtered == Counter({"repeat": 2, "exclude": 1, "scope": 1})
    assert sum(links.invalid.values()) == 1 and links.robots_blocked == 1 and links.seen == 10
    assert links.rejected == {K("/skip"), K("/private"), "http://other.test/"}


@pytest.mark.parametrize("canonical,known,want", [
    (None, Known(), None),
    ("/p", Known(), None),  # itself
    ("/c", Known(), A + "/c"),
    ("/c", Known(folded={K("/c")}), None),  # A <-> B: the second is kept
    ("/c", Known(gone={K("/c")}), None),  # failed: cannot stand for it
    ("/c", Known(rejected={K("/c")}), None),
    ("http://other.test/c", Known(), None),  # another host
    ("/skip", Known(), None),  # excluded by the policy
    ("/c-private", Known(), None),  # robots.txt
])
def test_canonical_fold(canonical, known, want):
    a = admission(known, blocked=("-private",), exclude=[r"/skip"])
    c, new = a.fold(item(), A + "/p", canonical, a.links(A + "/p", A + "/p", [], 2))
    assert c == want and (new is None or new.url == url_key(want))


def test_a_canonical_that_redirected_here_is_not_folded_onto():
    known = Known(redirect_via={K("/p"): K("/c")})
    a = admission(known)
    assert a.fold(item(via=K("/c")), A + "/p", "/c", a.links(A + "/p", A + "/p", [], 2)) == (None, None)
    known.seen.add(K("/c"))
    assert a.fold(item(), A + "/p", "/c", a.links(A + "/p", A + "/p", [], 2)) == (A + "/c", None)  # known: no item


@pytest.mark.parametrize("location,hops,known,want", [
    ("/b", 0, Known(), (None, K("/b"))),
    ("/b", 0, Known(seen={K("/b")}), (None, None)),
    ("/skip", 0, Known(), ("exclude", None)),
    ("/p", 0, Known(), FailKind.REDIRECT_LOOP),
    ("/b", 5, Known(), FailKind.TOO_MANY_REDIRECTS),
    ("http://[bad/", 0, Known(), FailKind.BAD_REDIRECT),
])
def test_redirect(location, hops, known, want):
    out = admission(known, exclude=[r"/skip"]).redirect(item(hops=hops), location)
    if isinstance(want, FailKind):
        assert isinstance(out, Failed) and out.kind is want and out.redirect
    else:
        assert isinstance(out, Redirected) and (out.filtered, out.target and out.target.url) == want


# ---------------------------------------------------------------- the page decision
def page(hrefs=(), **sig: object) -> PageOut:
    info = PageInfo(text="t", kind=str(sig.pop("kind", "article")))
    return PageOut("T", "h", A + "/p", list(hrefs), blocks=["b"], info=info, signals=PageSignals(**sig))  # type: ignore[arg-type,list-item]


@pytest.mark.parametrize("pg,robots_tag,rules,want", [
    (page(["/x"]), (), PageRules(), (Stored, 1, 0)),
    (page(["/x"], noindex=True), (), PageRules(), (NotStored, 1, 0)),  # links followed all the same
    (page(["/x"]), ("noindex",), PageRules(), (NotStored, 1, 0)),
    (page(["/x"]), ("otherbot: noindex",), PageRules(), (Stored, 1, 0)),
    (page(["/x"], nofollow=True), (), PageRules(), (Stored, 0, 1)),
    (page(["/x"], nofollow_hrefs=("/y",)), (), PageRules(), (Stored, 1, 1)),
    (page(["/x"], nofollow_hrefs=("/y",)), (), PageRules(follow_nofollow=True), (Stored, 2, 0)),
    (page(["/x"]), (), PageRules(max_depth=1), (Stored, 0, 0)),  # at --max-depth: no links
    (page(["/x"], canonical="/c"), (), PageRules(), (NotStored, 1, 0)),
])
def test_page_decision(pg, robots_tag, rules, want):
    res = FetchResult(A + "/p", 200, body=b"x", robots_tag=robots_tag)
    out = decide(item(), res, pg, pg, "hash", rules=rules, admission=admission(), discovery=None, stored_before=False)
    assert (type(out), len(out.links.items), out.links.nofollow) == want


@pytest.mark.parametrize("path,directories,want", [
    ("/zip/index.html", {K("/zip/"): (K("/zip/"), "h")}, K("/zip/")),  # the directory came first
    ("/zip/", {K("/zip/"): (K("/zip/INDEX.HTM"), "h")}, K("/zip/INDEX.HTM")),  # the index came first
    ("/zip/default.aspx", {K("/zip/"): (K("/zip/"), "h")}, K("/zip/")),
    ("/zip/index.html", {K("/zip/"): (K("/zip/"), "other")}, None),  # another body: a page of its own
    ("/zip/index.html", {K("/zip/"): (K("/zip/index.html"), "h")}, None),  # itself (a recrawl)
    ("/zip/about.html", {K("/zip/"): (K("/zip/"), "h")}, None),  # not an index file
    ("/zip/index.html?x=1", {K("/zip/"): (K("/zip/"), "h")}, None),  # a query: another page
    ("/other/index.html", {K("/zip/"): (K("/zip/"), "h")}, None),
])
def test_a_directory_index_with_the_directorys_body_is_folded_onto_it(path, directories, want):
    assert same_index(K(path), "h", directories) == want
    pg = page(["/x"])
    out = decide(item(path), FetchResult(A + path, 200, body=b"x"), pg, pg, "h", rules=PageRules(),
                 admission=admission(Known(directories=directories)), discovery=None, stored_before=False)
    if want is None:
        assert isinstance(out, Stored)
    else:  # not stored, its links followed all the same
        assert isinstance(out, NotStored) and out.why is SkipReason.INDEX and out.detail == "same page as " + want
        assert len(out.links.items) == 1


@pytest.mark.parametrize("kind,only,want", [("article", True, (1, False)), ("listing", True, (0, True)),
                                            ("listing", False, (1, False))])
def test_only_articles_stores_articles_blocks(kind, only, want):
    pg = page(kind=kind)
    out = decide(item(), FetchResult(A, 200, body=b""), pg, pg, "h", rules=PageRules(only_articles=only),
                 admission=admission(), discovery=None, stored_before=False)
    assert isinstance(out, Stored) and (len(out.blocks), out.not_article) == want
    assert stored_content(pg, only)[3] is want[1]


# ---------------------------------------------------------------- discovery
def discovery(known: Known) -> Discovery:
    a = admission(known)
    return Discovery(None, Scheduler(1, 0.0), Sitemaps(a.policy, max_files=2, max_depth=3, max_urls=10, max_bytes=10**6),
                     a, known, "blockcrawl", FakeClock(), backoff=1.0, use_sitemaps=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("res,want_items,want_probes,disallow", [
    (FetchResult(A, 200, body=b"Sitemap: http://a.test/s1.xml\nSitemap: http://a.test/s2.xml\n"
                 b"Sitemap: http://a.test/s3.xml"), [A + "/s1.xml", A + "/s2.xml"], [], False),  # max_files 2
    (FetchResult(A, 404), [A + "/sitemap.xml"], [A + "/sitemap.xml"], False),  # the guess
    (FetchResult(A, 200, body=b"User-agent: *\nDisallow: /sitemap"), [], [], False),  # guess disallowed
    (FetchResult(A, 503), [], [], True),  # unreachable: stay out
    (FetchResult(A, None, error="dns"), [], [], False),  # let its pages fail with the real error
])
def test_robots_read(res, want_items, want_probes, disallow):
    out = discovery(Known()).robots_read(A, res, 0.0, 1, stopping=False)
    assert [it.url for it in out.items] == want_items and list(out.probes) == want_probes
    assert out.rules.disallow_all is disallow and out.requests == 1


def test_sitemap_listing_skips_known_urls_and_counts_the_rest():
    known = Known(seen={K("/a")})
    d = discovery(known)
    body = b"<urlset>" + b"".join(b"<url><loc>%s</loc></url>" % u.encode()
                                   for u in (A + "/a", A + "/b", "http://other.test/c")) + b"</urlset>"
    out = asyncio.run(d.read_list(make_item(A + "/s.xml", 0, kind="sitemap"), FetchResult(A, 200, body=body)))
    assert [it.url for it in out.items] == [K("/b")] and out.turned == Counter({"scope": 1}) and out.listed


# ---------------------------------------------------------------- seeding
def test_seeding_fresh_resume_and_recrawl():
    f = fresh([A + "/", A + "/"])
    assert f.reset and [it.url for it in f.accept] == [K("/")] and json.loads(f.meta["seeds"]) == [A + "/", A + "/"]
    restored = [item("/q")]
    r = resume([A + "/", A + "/new"], [A + "/"], {K("/")}, restored, False, ())
    assert not r.reset and r.restore == restored and [it.url for it in r.accept] == [K("/new")] and not r.baseline
    rows = [(K("/old"), A + "/old", 0.0, "e1", None, "h1"), (K("/recent"), A + "/recent", 990.0, None, "m", "h2")]
    rc = recrawl([], [A + "/"], rows, now=1000.0, max_age=60.0)
    assert rc.recrawl and rc.reset and [it.url for it in rc.done] == [K("/recent")] and rc.seen == {K("/recent")}
    assert [it.url for it in rc.accept] == [K("/old"), K("/")] and rc.baseline[K("/old")] == ("e1", None, "h1")
    assert conditional(rc.baseline[K("/old")]) == {"If-None-Match": "e1"}
    assert conditional(rc.baseline[K("/recent")]) == {"If-Modified-Since": "m"}
    assert conditional((None, None, "h")) is None
    # the previous run's queued URLs come after the stored pages and the seeds, as they were
    left = [item("/q1"), item("/old"), item("/q2")]
    rc = recrawl([], [A + "/"], rows, now=1000.0, max_age=60.0, pending=left)
    assert [it.url for it in rc.accept] == [K("/old"), K("/"), K("/q1"), K("/q2")] and rc.accept[2].depth == 1


# ---------------------------------------------------------------- site models
@pytest.mark.parametrize("model,want", [
    ('{"pages": 5, "fallbacks": 1}', (5, 1)), ('{"pages": true, "fallbacks": 1}', (-1, -1)),
    ('{"pages": -1, "fallbacks": 0}', (-1, -1)), ("[1]", (-1, -1)), ("not json", (-1, -1)),
])
def test_model_counts(model, want):
    assert model_counts(model) == want


def test_site_models_versions_counts_and_idle_sites():
    rows = [{"site": A, "version": 3, "model": "{}", "pages": 9, "fallbacks": 0}]
    m = SiteModels(lambda: rows, learning=True, learn_seconds=5.0)
    art, fb = PageInfo(text="", cluster=0), PageInfo(text="", cluster=-1)
    assert m.learned(A, None, [], (art,)) is None  # no model yet: nothing to write
    row = m.learned(A, "{}", [art, fb], (art,))  # learned: version after the stored one, counted here
    assert row is not None and (row.version, row.pages, row.fallbacks) == (4, 3, 1)
    assert m.learned(A, None, [], (fb,)) is None and m.flush() == [(A, row)] and row.fallbacks == 2
    assert m.learned(A, '{"pages": 7, "fallbacks": 2}', [art], None).row() == ('{"pages": 7, "fallbacks": 2}', 5, 7, 2)
    m.page_stored(A, 10.0)
    m.page_stored("http://b.test", 14.0)
    assert m.idle(15.0) == [A] and m.idle(None) == ["http://b.test"] and m.idle(None) == []


def test_a_library_crawl_with_only_articles_keeps_listings_out_of_the_dedup(tmp_path):
    """CrawlConfig(only_articles=True) alone: the pipeline gets it too, so a front page running
    the top story in full stores nothing and does not make the story "already seen"."""
    from blockcrawl.crawl import Crawler
    from blockcrawl.crawl.net.memfetch import MemoryFetcher, Response
    from blockcrawl.pipeline import PipelineConfig
    from blockcrawl.store import Store
    from tests.extraction.test_pageinfo import PROSE, article_page, listing_page

    story = "<h2>Flood hits the lower town</h2>" + "".join(f"<p>{p}</p>" for p in PROSE)
    art = A + "/2024/03/05/flood-hits-the-lower-town"
    listing = listing_page().replace("<h1>Latest news</h1>",
                                     f'<h1>Latest news</h1><section>{story}</section><a href="{art}">more</a>')
    routes = {A + "/robots.txt": Response("", 404), A + "/": Response(listing), art: Response(article_page())}
    store = Store(tmp_path / "s.db")
    cfg = CrawlConfig(seeds=[A + "/"], only_articles=True, progress=False, sitemaps=False, workers=0)
    crawler = Crawler(store, cfg, PipelineConfig(mode="main", tokenizer="words"), fetcher=MemoryFetcher(routes))
    assert crawler.spec.only_articles
    stats = asyncio.run(crawler.run())
    assert stats.pages == 2 and stats.not_articles == 1
    text = {r["url"]: r["text"] for r in store.records("pages")}
    blocks = " ".join(b["text"] for b in store.records("blocks"))
    assert url_key(art) in text and PROSE[0][:40] in blocks
    store.close()


def test_a_spec_that_disagrees_with_the_crawl_config_is_refused():
    from blockcrawl.crawl.analysis.process import crawl_spec
    from blockcrawl.errors import ConfigError
    from blockcrawl.pipeline import PipelineConfig
    with pytest.raises(ConfigError, match="only_articles is a crawl setting"):
        crawl_spec(CrawlConfig(seeds=[A]), PipelineConfig(only_articles=True))
    with pytest.raises(ConfigError, match="max_bytes is a crawl setting"):
        crawl_spec(CrawlConfig(seeds=[A], max_bytes=4096), PipelineConfig(max_bytes=1000))
    assert crawl_spec(CrawlConfig(seeds=[A], max_bytes=4096), PipelineConfig(mode="blocks")).max_bytes == 4096


# ---------------------------------------------------------------- settings in one place
def test_the_crawl_cli_defaults_are_the_crawl_config_defaults():
    from blockcrawl.cli import build_parser
    from blockcrawl.crawl.config import CRAWL_DEFAULTS as D
    from blockcrawl.pipeline import DEFAULTS
    a = build_parser().parse_args(["crawl", "--store", "x.db"])
    same = {"concurrency": a.concurrency, "per_host": a.per_host, "delay": a.delay, "timeout": a.timeout,
            "retries": a.retries, "max_bytes": a.max_bytes, "max_redirects": a.max_redirects, "scope": a.scope,
            "user_agent": a.user_agent, "max_sitemaps": a.max_sitemaps, "date_hops": a.date_hops,
            "render": a.render, "lease_seconds": a.lease_seconds,
            "content_types": tuple(a.content_types.split(","))}
    assert same == {k: getattr(D, k) for k in same}
    assert (a.chunk_size, a.overlap, a.tokenizer, a.algorithm) == (DEFAULTS.chunk_size, DEFAULTS.overlap,
                                                                   DEFAULTS.tokenizer, DEFAULTS.algorithm)


def test_the_top_level_package_reaches_the_crawl_and_open_store():
    import subprocess
    import sys
    code = ("import blockcrawl, sys; f = blockcrawl.crawl.crawl; o = blockcrawl.open_store; "
            "from blockcrawl.store import open_store, SqliteStore; "
            "assert o is open_store and blockcrawl.Store is SqliteStore and callable(f); "
            "from blockcrawl.crawl import protocols; from blockcrawl.crawl.analysis import process; "
            "assert not hasattr(process, 'Analyzer') and hasattr(protocols, 'Analyzer')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_host_health_counts_failures_in_a_row_and_a_page_ends_the_run():
    from blockcrawl.crawl.decisions.retry import HOST_MAX_FAILURES, HOST_PAUSE_AFTER
    from blockcrawl.crawl.engine.health import HostHealth
    h = HostHealth(backoff=1.0)
    seq = [h.answer(A, 500, None, None) for _ in range(HOST_PAUSE_AFTER)]
    assert [v.pause > 0 for v in seq] == [False] * (HOST_PAUSE_AFTER - 1) + [True]  # from the third in a row
    assert h.answer(A, 503, None, 30.0).pause >= 30.0  # an overload answer: at once, Retry-After honoured
    assert h.answer(A, 404, None, None).pause == 0 and A not in h.failures  # it answered: the run is over
    assert h.answer(A, None, "content_type", None).pause == 0  # not the host's trouble
    vs = [h.answer(A, None, "timeout", None) for _ in range(HOST_MAX_FAILURES)]
    assert vs[-1].stop and not any(v.stop for v in vs[:-1]) and h.answer("http://b.test", 200, None, None).stop is None

"""Table tests of the crawl's pure decisions: URL policy, retry and redirect rules, robots.txt
outcomes, CrawlConfig validation, sitemap bounds."""
from __future__ import annotations

import math

import pytest

from blockcrawl.crawl import CrawlConfig
from blockcrawl.crawl.decisions.policy import (
    date_trail,
    in_scope,
    make_policy,
    non_html_extension,
    page_is_dated,
    reject_reason,
    scope_of,
)
from blockcrawl.crawl.decisions.retry import (
    MAX_RETRY_WAIT,
    backoff_wait,
    decide_retry,
    redirect_chain,
    redirect_problem,
    robots_failed,
    robots_retry,
)
from blockcrawl.crawl.frontier import Item
from blockcrawl.crawl.sources.robots import rules_from_response
from blockcrawl.crawl.sources.sitemap_parse import Sitemap
from blockcrawl.crawl.sources.sitemaps import Sitemaps
from blockcrawl.errors import ConfigError

SEEDS = ["http://www.example.org/", "http://docs.other.net/start"]


@pytest.mark.parametrize("mode,url,want", [
    ("site", "http://www.example.org/a", True),
    ("site", "http://blog.example.org/a", True),  # same site, other subdomain
    ("site", "https://example.org/a", True),
    ("site", "http://example.com/a", False),
    ("site", "http://notexample.org/a", False),
    ("host", "http://www.example.org/a", True),
    ("host", "http://blog.example.org/a", False),
    ("host", "https://www.example.org/a", False),  # another scheme is another origin
    ("host", "http://docs.other.net/x", True),
    ("any", "http://anything.test/", True),
])
def test_scope(mode, url, want):
    assert in_scope(scope_of(SEEDS, mode), url) is want


@pytest.mark.parametrize("url,want", [
    ("http://a.test/x.pdf", True), ("http://a.test/x.PNG", True), ("http://a.test/x.pdf?download=1", True),
    ("http://a.test/x.html", False), ("http://a.test/x", False), ("http://a.test/.htaccess", False),
    ("http://a.test/v1.2/", False), ("http://a.test/page?file=x.pdf", False), ("http://a.test/archive.tar", True),
])
def test_non_html_extension(url, want):
    assert non_html_extension(url) is want


POLICY = make_policy(scope_of(["http://a.test/"], "site"), max_depth=2, include=[r"/docs/"], exclude=[r"\?print"])


@pytest.mark.parametrize("url,depth,kind,want", [
    ("http://a.test/docs/x.html", 1, "page", None),
    ("http://b.test/docs/x.html", 1, "page", "scope"),
    ("http://a.test/docs/x.html", 3, "page", "depth"),
    ("http://a.test/docs/x.xml", 3, "sitemap", None),  # depth of a sitemap is its nesting, not a link depth
    ("http://a.test/docs/b/b/b/x.html", 1, "page", "trap"),
    ("http://a.test/blog/x.html", 1, "page", "include"),
    ("http://a.test/docs/x.html?print=1", 1, "page", "exclude"),
    ("http://a.test/docs/x.pdf", 1, "page", "extension"),
    ("http://a.test/docs/sitemap.xml", 0, "sitemap", None),  # sitemaps are not pages: no extension rule
    ("http://a.test/docs/" + "x" * 2100, 1, "page", "trap"),
])
def test_reject_reason(url, depth, kind, want):
    assert reject_reason(POLICY, url, depth, kind) == want


def test_extension_rule_only_when_html_only():
    p = make_policy(scope_of(["http://a.test/"], "site"), content_types=("text/html", "application/pdf"))
    assert reject_reason(p, "http://a.test/x.pdf", 0) is None


@pytest.mark.parametrize("page,page_trail,url,hops,want", [
    ("http://a.test/cal/2024/01/", 0, "http://a.test/cal/2024/02/", 2, 1),
    ("http://a.test/cal/2024/01/", 2, "http://a.test/cal/2024/02/", 2, None),  # past the limit
    ("http://a.test/cal/2024/01/", 2, "http://a.test/about/", 2, 0),  # undated link: a new start
    ("http://a.test/", 0, "http://a.test/cal/2024/02/", 2, 0),  # from an undated page
    ("http://a.test/cal/2024/01/", 9, "http://a.test/cal/2024/02/", None, 10),  # no limit
])
def test_date_trail(page, page_trail, url, hops, want):
    p = make_policy(scope_of(["http://a.test/"], "site"), date_hops=hops)
    assert date_trail(p, page, page_trail, page_is_dated(p, page) or hops is None, url) == want


# ---------------------------------------------------------------- retries
@pytest.mark.parametrize("status,error,retry_after,attempts,retries,want", [
    (503, None, None, 0, 2, (True, 1.0, None)),
    (503, None, None, 1, 2, (True, 2.0, None)),  # doubling
    (503, None, None, 2, 2, (False, 0.0, None)),  # retries used up: the caller records the failure
    (503, None, 7.0, 0, 2, (True, 7.0, None)),  # Retry-After wins over the back-off
    (429, None, MAX_RETRY_WAIT + 1, 0, 2, (False, 0.0, "Retry-After 601 s is beyond 600 s")),
    (404, None, None, 0, 2, (False, 0.0, None)),  # not retryable
    (200, None, None, 0, 2, (False, 0.0, None)),
    (None, "timeout", None, 0, 5, (True, 1.0, None)),
    (None, "timeout", None, 1, 5, (False, 0.0, None)),  # a timeout is retried once whatever --retries says
    (None, "connect", None, 1, 2, (True, 2.0, None)),
    (None, "too_large", None, 0, 2, (False, 0.0, None)),
    (None, "dns", None, 0, 0, (False, 0.0, None)),  # --retries 0
])
def test_decide_retry(status, error, retry_after, attempts, retries, want):
    d = decide_retry(status, error, retry_after, attempts, retries, backoff=1.0, jitter=0.5)
    assert (d.retry, d.wait, d.give_up) == want


def test_decide_retry_not_while_stopping_and_jitter_bounds():
    assert not decide_retry(503, None, None, 0, 2, 1.0, 0.5, stopping=True).retry
    assert backoff_wait(1.0, 1, 0.0) == 0.75 and backoff_wait(1.0, 1, 0.999999) == pytest.approx(1.25, abs=1e-5)
    assert backoff_wait(0.5, 3, 0.5) == 2.0


@pytest.mark.parametrize("target,chain,hops,limit,want", [
    ("u:a", {"u:b", "u:c"}, 1, 10, None),
    ("u:b", {"u:a", "u:b"}, 1, 10, "redirect loop"),
    ("u:z", {"u:a"}, 3, 3, "too many redirects"),
    ("u:z", {"u:a"}, 2, 3, None),
    ("u:a", {"u:a"}, 99, 3, "redirect loop"),  # a loop is named a loop even when long
])
def test_redirect_problem(target, chain, hops, limit, want):
    assert redirect_problem(target, chain, hops, limit) == want


def test_redirect_chain_stops_at_a_cycle():
    via = {"b": "a", "a": "c", "c": "b"}
    assert redirect_chain("b", "a", via) == {"a", "b", "c"}
    assert redirect_chain("x", None, via) == {"x"}


# ---------------------------------------------------------------- robots.txt
@pytest.mark.parametrize("status,error,body,failed,retry,disallow_all", [
    (200, None, b"User-agent: *\nDisallow:\n", False, False, False),
    (404, None, b"", False, False, False),  # none: allow all
    (503, None, b"", True, True, True),
    (None, "timeout", None, True, True, True),
    (None, "dns", None, True, False, True),  # not asked again; the engine lets pages fail with "dns"
    (200, "too_large", None, True, True, True),  # a body that could not be read is no permission
    (200, "bomb", None, True, True, True),
    (200, "timeout", None, True, True, True),  # stalled mid-body
])
def test_robots_outcomes(status, error, body, failed, retry, disallow_all):
    assert robots_failed(status, error, body is not None) is failed
    assert robots_retry(status, error, body is not None) is retry
    assert rules_from_response(status, body, "blockcrawl").disallow_all is disallow_all


# ---------------------------------------------------------------- config
@pytest.mark.parametrize("kw,msg", [
    ({"timeout": 0}, "timeout must be more than 0"),
    ({"timeout": -1.0}, "timeout must be more than 0"),
    ({"delay": -0.1}, "delay must not be negative"),
    ({"delay": math.nan}, "delay must be a finite number"),
    ({"delay": math.inf}, "delay must be a finite number"),
    ({"timeout": math.inf}, "timeout must be a finite number"),
    ({"max_time": math.inf}, "max_time must be a finite number"),
    ({"max_time": 0.0}, "max_time must be more than 0"),
    ({"backoff": math.nan}, "backoff must be a finite number"),
    ({"concurrency": 0}, "concurrency must be at least 1"),
    ({"per_host": 0}, "per_host must be at least 1"),
    ({"content_types": ()}, "content_types is empty"),
    ({"content_types": ("",)}, "content_types is empty"),
    ({"max_pages": -1}, "max_pages must not be negative"),
    ({"max_depth": -1}, "max_depth must not be negative"),
    ({"retries": -1}, "retries must not be negative"),
    ({"max_sitemaps": -1}, "max_sitemaps must not be negative"),
    ({"scope": "world"}, "scope must be one of host, site, any"),
    ({"include": ["("]}, "bad regular expression"),
    ({"seeds": "http://a.test/"}, "seeds must be a list"),
])
def test_config_refuses(kw, msg):
    args = {"seeds": ["http://a.test/"], **kw}
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(")):
        CrawlConfig(**args)


def test_config_accepts_defaults_and_is_frozen():
    c = CrawlConfig(seeds=["http://a.test/"], max_pages=0, max_depth=0, delay=0, date_hops=None)
    with pytest.raises(AttributeError):
        c.delay = 1.0  # type: ignore[misc]


# ---------------------------------------------------------------- sitemap bounds
def _sitemaps(**kw) -> Sitemaps:
    args = {"max_files": 1000, "max_depth": 3, "max_urls": 50_000, "max_bytes": 1 << 20, **kw}
    return Sitemaps(make_policy(scope_of(["http://a.test/"], "site"), max_depth=1), **args)


def test_sitemap_nesting_is_bounded_and_listed_pages_start_at_depth_0():
    sm = _sitemaps()
    index = Sitemap(True, ("http://a.test/s1.xml", "http://b.test/s.xml"), False)
    parent = Item("http://a.test/s0.xml", "http://a.test", 0, "sitemap")
    items, turned = sm.listed(parent, index, lambda k: False)
    assert [(i.url, i.depth, i.kind) for i in items] == [("http://a.test/s1.xml", 1, "sitemap")]
    assert turned == {"scope": 1}
    deep = Item("http://a.test/s2.xml", "http://a.test", 2, "sitemap")  # the third level
    items, turned = sm.listed(deep, Sitemap(True, ("http://a.test/s3.xml",), False), lambda k: False)
    assert items == [] and turned == {"sitemap-depth": 1}
    pages, _ = sm.listed(deep, Sitemap(False, ("http://a.test/p.html", "http://a.test/p.html"), False), lambda k: False)
    assert [(i.url, i.depth, i.kind) for i in pages] == [("http://a.test/p.html", 0, "page")]


def test_sitemap_file_count_is_bounded():
    sm = _sitemaps(max_files=3)
    items, turned = sm.from_robots([f"http://a.test/s{i}.xml" for i in range(2)], lambda k: False)
    assert len(items) == 2
    parent = Item("http://a.test/s0.xml", "http://a.test", 0, "sitemap")
    items, turned = sm.listed(parent, Sitemap(True, tuple(f"http://a.test/t{i}.xml" for i in range(5)), False),
                              lambda k: False)
    assert len(items) == 1 and turned == {"sitemap-limit": 4}


@pytest.mark.parametrize("failures, status, error, retry_after, pause, stop", [
    (1, 503, None, 30.0, 30.0, None),      # overload: quiet at once, for the Retry-After
    (1, 429, None, None, 1.0, None),       # overload without Retry-After: the back-off
    (4, 503, None, 2.0, 8.0, None),        # the back-off grows past a short Retry-After
    (1, 500, None, None, 0.0, None),       # one 5xx: the URL retries, the host is not paused
    (2, None, "timeout", None, 0.0, None),
    (3, None, "disconnect", None, 4.0, None),  # the third failure in a row pauses the host
    (1, 503, None, 3600.0, 1.0, None),     # a Retry-After beyond 600 s does not freeze the host
    (9, 500, None, None, 256.0, None),
    (2, 503, None, 500.0, 300.0, None),    # capped
    (10, 503, None, 30.0, 0.0, "10 failures in a row (last: http 503)"),
    (10, None, "connect", None, 0.0, "10 failures in a row (last: connect)"),
])
def test_host_verdict(failures, status, error, retry_after, pause, stop):
    from blockcrawl.crawl.decisions.retry import host_verdict
    v = host_verdict(failures, status, error, retry_after, backoff=1.0, jitter=0.5)
    assert v.stop == stop
    if stop is None:
        assert v.pause == pytest.approx(pause)


@pytest.mark.parametrize("status, error, failing", [
    (503, None, True), (429, None, True), (500, None, True), (404, None, False), (200, None, False),
    (None, "timeout", True), (None, "disconnect", True), (None, "too_large", False), (None, "content_type", False),
])
def test_host_failure(status, error, failing):
    from blockcrawl.crawl.decisions.retry import host_failure
    assert host_failure(status, error) is failing

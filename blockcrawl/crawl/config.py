"""What a crawl is asked to do (CrawlConfig) and what it did (CrawlStats).

CrawlConfig checks itself when built: a bad value (a zero timeout, a NaN delay, an empty list of
content types) raises ConfigError with one clear message before anything is fetched, for the
CLI (which prints it as one line, exit 2) and the library alike: a timeout of 0 or a delay of NaN
accepted would make every request fail, or every host wait forever.
"""
from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from ..errors import ConfigError
from ..limits import MAX_BODY_BYTES, workers_error
from .decisions.traps import DEFAULT_DATE_HOPS
from .net.credentials import Credentials, parse_header
from .net.fetch import HTML_TYPES
from .net.resolve import parse_resolve

DEFAULT_USER_AGENT = "blockcrawl/0.1 (+https://pypi.org/project/blockcrawl)"
SCOPES = ("host", "site", "any")
PROXY_SCHEMES = ("http://", "https://", "socks4://", "socks5://", "socks5h://")
# Sitemap bounds. One sitemap may list 50,000 URLs (sitemaps.org), and Google reads one level of
# index; three levels (robots.txt's sitemap, an index, its children) cover every real site. An
# index that links a new index on each fetch makes 17,963 requests in 30 s without these bounds.
MAX_SITEMAP_DEPTH = 3  # levels of sitemap files, counting the one robots.txt names
MAX_SITEMAPS = 1000  # sitemap files fetched per crawl
MAX_SITEMAP_URLS = 50_000  # URLs read from one sitemap file


# URLs held in the host queues in memory. A queued URL costs about 0.56 KB there (its Item, the
# deque slot, its seen-set key), and the limits allow 50M URLs: about 28 GB. Past the cap an
# accepted URL is written to the frontier table as queued all the same, but not held in memory:
# it is read back when the host queues run dry (crawl.engine.queues; CrawlStats.not_queued counts them).
MAX_QUEUED = 1_000_000  # about 560 MB


# why 30 s: crawl/analysis/process.py, ANALYSIS_TIMEOUT
DEFAULT_ANALYSIS_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    seeds: Sequence[str]
    concurrency: int = 32
    per_host: int = 4
    delay: float = 0.0
    timeout: float = 10.0
    retries: int = 2
    max_pages: int | None = None  # page and sitemap fetches started
    max_time: float | None = None
    max_depth: int | None = None
    date_hops: int | None = DEFAULT_DATE_HOPS  # longest date chain followed (crawl.decisions.traps); None: no limit
    include: Sequence[str] = field(default_factory=list)
    exclude: Sequence[str] = field(default_factory=list)
    scope: str = "site"  # host | site | any
    allow_private: bool = False  # fetch private/loopback/link-local addresses though the seeds are public
    user_agent: str = DEFAULT_USER_AGENT
    robots: bool = True
    sitemaps: bool = True
    llms_txt: bool = False  # also each host's /llms.txt and /llms-full.txt as URL lists (crawl.sources.llmstxt)
    max_bytes: int = MAX_BODY_BYTES
    max_redirects: int = 10
    content_types: tuple[str, ...] = HTML_TYPES
    resume: bool = False
    progress: bool = True
    backoff: float = 1.0  # first retry after ~backoff s, doubling
    commit_interval: float = 0.1  # seconds between commits (a kill -9 re-fetches at most this much)
    workers: int = 0  # processes analysing pages; 0: one thread of this process
    analysis_timeout: float = DEFAULT_ANALYSIS_TIMEOUT  # seconds one page's analysis may take in a worker
    max_sitemaps: int = MAX_SITEMAPS
    max_sitemap_depth: int = MAX_SITEMAP_DEPTH
    max_sitemap_urls: int = MAX_SITEMAP_URLS
    # JavaScript rendering (crawl/net/render.py)
    render: str = "auto"  # never | auto (app shells only, crawl/net/appshell.py) | always
    # headers, cookies, per-host credentials, proxy (crawl.net.credentials); its repr shows no secret
    credentials: Credentials = Credentials()
    feeds: bool = True  # RSS/Atom/JSON feeds a page links (<link rel=alternate>) are URL sources
    follow_nofollow: bool = False  # follow rel=nofollow (ugc, sponsored) links too
    recrawl: bool = False  # revisit the store's pages with conditional requests (incremental)
    max_age: float | None = None  # recrawl: only pages fetched more than this many seconds ago
    only_articles: bool = False  # store blocks and chunks of article pages only (PageInfo.kind)
    # --- redis: a frontier shared by many worker processes (crawl.engine.shared, store.redis_frontier) ---
    frontier: str | None = None  # redis://HOST:PORT/DB, rediss://..., unix:///path.sock?db=N; None: the store's
    worker_id: str | None = None  # this worker's name in the shared frontier (default hostname:pid)
    lease_seconds: float = 30.0  # a host's lease: a dead worker's hosts are taken over this long after
    resolve: Sequence[str] = ()  # "HOST:PORT:ADDR": connect there without DNS (curl's --resolve)
    max_queued: int = MAX_QUEUED  # URLs held in memory; the rest wait in the frontier table (MAX_QUEUED)

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem:
            raise ConfigError(problem)


def _problem(c: CrawlConfig) -> str | None:
    """The first thing wrong with c, as a message naming the option, or None."""
    if isinstance(c.seeds, str):
        return "seeds must be a list of URLs, not one string"
    for f in fields(c):
        v = getattr(c, f.name)
        if isinstance(v, float) and not math.isfinite(v):
            return f"{f.name} must be a finite number, not {v}"
    if c.timeout <= 0:
        return f"timeout must be more than 0 seconds (got {c.timeout:g})"
    if c.max_age is not None and c.max_age < 0:
        return f"max_age must not be negative (got {c.max_age:g})"
    if c.max_age is not None and not c.recrawl:
        return "max_age applies to a recrawl only: add recrawl (--recrawl)"
    if c.recrawl and c.resume:
        return "recrawl and resume exclude each other (an interrupted recrawl continues with --resume alone)"
    if c.analysis_timeout <= 0:
        return f"analysis_timeout must be more than 0 seconds (got {c.analysis_timeout:g})"
    if c.max_time is not None and c.max_time <= 0:
        return f"max_time must be more than 0 seconds (got {c.max_time:g}); leave it unset for no limit"
    for name in ("delay", "backoff", "commit_interval"):
        if getattr(c, name) < 0:
            return f"{name} must not be negative (got {getattr(c, name):g})"
    for name in ("concurrency", "per_host", "max_bytes", "max_sitemap_depth", "max_sitemap_urls", "max_queued"):
        if getattr(c, name) < 1:
            return f"{name} must be at least 1 (got {getattr(c, name)})"
    for name in ("retries", "max_redirects", "workers", "max_sitemaps", "max_pages", "max_depth", "date_hops"):
        v = getattr(c, name)
        if v is not None and v < 0:
            return f"{name} must not be negative (got {v})"
    if bad := workers_error(c.workers, 0):  # processes: more than the bound is a typo, not a machine
        return bad
    if c.frontier is not None:
        if not c.frontier.lower().startswith(("redis://", "rediss://", "unix://")):
            return f"frontier must be a redis://, rediss:// or unix:// URL (got {c.frontier.split('://')[0]!r}://...)"
        if c.recrawl:
            return "frontier: a recrawl runs on one store; a shared frontier (--frontier) is for crawls only"
    if c.lease_seconds <= 0:
        return f"lease_seconds must be more than 0 (got {c.lease_seconds:g})"
    if c.worker_id is not None and not c.worker_id.strip():
        return "worker_id must not be empty"
    # --- jsrender ---
    if c.render not in ("never", "auto", "always"):
        return f"render must be one of never, auto, always (got {c.render!r})"
    if c.scope not in SCOPES:
        return f"scope must be one of {', '.join(SCOPES)} (got {c.scope!r})"
    if not c.content_types or not all(t.strip() for t in c.content_types):
        return "content_types is empty: give at least one media type, e.g. text/html"
    cred = c.credentials
    if cred.cookies is not None and not os.path.isfile(cred.cookies):
        return f"cookies: no such file {cred.cookies!r}"
    if cred.proxy is not None and not cred.proxy.lower().startswith(PROXY_SCHEMES):
        return "proxy must be an http://, https://, socks4:// or socks5:// URL"
    if cred.proxy is not None and not _proxy_parses(cred.proxy):  # the value is not repeated: it may hold a password
        return "proxy is not a valid URL: give scheme://[user:password@]host:port (IPv6 in brackets)"
    try:  # the one check --header values pass: a line break would end the header and start another
        parse_header(f"User-Agent: {c.user_agent}")
    except ConfigError:
        return "user_agent must not hold a line break or a NUL character (refused as in --header)"
    if isinstance(c.resolve, str):
        return "resolve must be a list of HOST:PORT:ADDR entries, not one string"
    try:
        parse_resolve(c.resolve)
    except ValueError as e:
        return str(e)
    for rx in (*c.include, *c.exclude):
        try:
            re.compile(rx)
        except re.error as e:
            return f"bad regular expression {rx!r}: {e}"
    return None


def _proxy_parses(proxy: str) -> bool:
    """Whether the proxy URL has a host (and a valid port, if any) as aiohttp will read it (yarl)."""
    import yarl

    try:
        u = yarl.URL(proxy)
        _ = u.port  # a bad port raises here
        return bool(u.host)
    except (ValueError, TypeError):
        return False


# The defaults, for the crawl CLI's options (a slotted class hides them), as extract_cmd reads
# pipeline.DEFAULTS: each default is written once, here.
CRAWL_DEFAULTS = CrawlConfig(seeds=())


@dataclass
class CrawlStats:
    pages: int = 0  # HTML pages fetched and stored
    requests: int = 0
    errors: int = 0  # URLs given up on
    retries: int = 0
    redirects: int = 0
    robots_blocked: int = 0
    skipped: int = 0  # non-HTML answers etc.
    links_seen: int = 0
    links_new: int = 0
    filtered: Counter[str] = field(default_factory=Counter)  # scope, include, exclude, depth, extension...
    invalid: Counter[str] = field(default_factory=Counter)  # fragment, scheme, empty, malformed
    error_kinds: Counter[str] = field(default_factory=Counter)
    hosts_stopped: int = 0  # hosts given up for this crawl after failing again and again
    not_queued: int = 0  # URLs accepted past CrawlConfig.max_queued: they waited in the frontier table (crawl.engine.queues)
    bytes: int = 0
    blocks: int = 0
    chunks: int = 0
    sitemaps: int = 0  # sitemap files fetched (counted in --max-pages)
    feeds: int = 0  # feed files fetched (counted in --max-pages and --max-sitemaps)
    noindex: int = 0  # pages fetched but not stored: meta robots / X-Robots-Tag noindex
    canonical: int = 0  # pages not stored: their rel=canonical is another URL of the host
    nofollow: int = 0  # links not followed: rel=nofollow/ugc/sponsored, or on a nofollow page
    recrawl: bool = False  # the run was a --recrawl (the summary reports the four counts below)
    unchanged: int = 0  # recrawl: 304, or 200 with the same text
    changed: int = 0  # recrawl: stored page replaced by its new content
    gone: int = 0  # recrawl: 404/410, page removed from the store
    new: int = 0  # recrawl: pages stored for the first time
    not_articles: int = 0  # --only-articles: pages stored without blocks (kind not "article")
    models: int = 0  # site models learned (crawl --algorithm site)
    revised: int = 0  # stored pages re-extracted with a newly learned site model
    elapsed: float = 0.0
    stopped: str = "done"
    crawl_id: int = 0  # the run's id in the store's change log (store.changelog)
    finished: bool = False  # the run ended as asked (not interrupted): its change log is complete
    # --- jsrender: counted by crawl.net.render.RenderingFetcher ---
    renders: int = 0  # pages whose stored body is the DOM Chromium built
    render_requests: int = 0  # scripts / XHR / fetch requests made for them
    render_failed: int = 0  # renders that fell back to the static page

    def summary(self) -> str:
        rate = self.pages / self.elapsed if self.elapsed > 0 else 0.0
        inv = sum(self.invalid.values())
        filt = sum(self.filtered.values())
        errs = ", ".join(f"{k} {v}" for k, v in self.error_kinds.most_common()) or "none"
        return (f"crawl {self.stopped}: {self.pages} pages in {self.elapsed:.1f} s ({rate:.1f}/s), "
                f"{self.requests} requests, {self.errors} failed ({errs}), {self.retries} retries, "
                f"{self.redirects} redirects, {self.robots_blocked} blocked by robots.txt, "
                f"{self.skipped} skipped, {self.blocks} blocks, {self.chunks} chunks; links: "
                f"{self.links_new} new, {filt} filtered, {inv} invalid"
                + (f", {self.nofollow} nofollow" if self.nofollow else "")
                + (f"; {self.hosts_stopped} hosts stopped after repeated failures" if self.hosts_stopped else "")
                + (f"; {self.not_queued} URLs waited in the frontier table (over max_queued in memory)"
                   if self.not_queued else "")
                + (f"; not stored: {self.noindex} noindex, {self.canonical} canonical elsewhere"
                   if self.noindex or self.canonical else "")
                + (f"; {self.not_articles} pages not articles (stored without blocks)" if self.not_articles else "")
                + (f"; site learning: {self.models} models, {self.revised} pages revised" if self.models else "")
                + (f"; recrawl: {self.unchanged} unchanged, {self.changed} changed, {self.gone} gone, "
                   f"{self.new} new" if self.recrawl else "")
                + f"; rendered {self.renders} pages ({self.render_requests} requests, {self.render_failed} failed)")


def finished(stopped: str) -> bool:
    """Whether a run that stopped so is over as asked (done, or its page or time limit): its change
    log is complete and its webhook fires. An interrupted run (a signal) is not: --resume goes on
    with it under the same crawl id."""
    return stopped != "stopped: interrupted"

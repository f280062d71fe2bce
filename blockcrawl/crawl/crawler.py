"""The crawl engine: one asyncio loop; fetches run concurrently, everything else (scheduling, link
handling, the pipeline, SQLite writes) happens in the loop's thread, so the store has one writer.

Flow per URL: frontier -> per-host scheduler (robots.txt first, slot + delay) -> fetch ->
  redirect: the target is canonicalised and queued like a link (robots, politeness, dedup apply
            to every hop; loops and over-long chains are recorded as errors);
  HTML:     parse once -> links (resolved, canonicalised, filtered, queued) and blocks/chunks
            (SitePipeline of the host) -> Store.save_page, in the same transaction as the
            frontier update and the new links;
  error:    retried with exponential back-off (or after Retry-After) when it may pass, else
            recorded as failed. Nothing is fatal.
"""
from __future__ import annotations

import asyncio
import heapq
import html as _html
import json
import logging
import random
import re
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from ..store import Store
from .fetch import HTML_TYPES, Fetcher, FetchResult, decompress
from .frontier import DONE, FAILED, IN_FLIGHT, QUEUED, SKIPPED, Frontier, Item
from .politeness import DELAY_MARGIN, Host, Scheduler
from .process import CRAWL_DEFAULT, Analyzer, PipelineConfig
from .robots import agent_token, rules_from_response
from .traps import DEFAULT_DATE_HOPS, dated, pathological
from .traps import trail as trail_of
from .urls import Resolver, canonicalize, host_of, site_key, url_key

log = logging.getLogger("blockcrawl.crawl")

DEFAULT_USER_AGENT = "blockcrawl/0.1 (+https://pypi.org/project/blockcrawl)"
# Extensions that are not HTML: links to them are not fetched when only HTML is wanted.
NON_HTML_EXT = frozenset(
    "pdf png jpg jpeg gif webp svg ico bmp tif tiff avif css js mjs json xml rss atom txt csv zip gz tgz "
    "bz2 xz 7z rar tar mp3 mp4 m4a m4v ogg oga ogv webm wav flac avi mov mkv wmv doc docx xls xlsx ppt "
    "pptx odt ods odp rtf epub exe dmg msi apk deb rpm iso bin woff woff2 ttf otf eot".split())
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_RETRY_WAIT = 600.0  # a server asking for a longer pause gets its URL recorded as failed
RETRY_ERRORS = frozenset({"timeout", "connect", "disconnect", "dns"})
MAX_BACKLOG_FACTOR = 4  # fetched pages waiting for analysis: at most this many times --concurrency ...
MAX_BACKLOG_BYTES = 256 * 1024 * 1024  # ... holding at most this many body bytes
_LOC_RE = re.compile(rb"<loc>\s*(.*?)\s*</loc>", re.S | re.I)


@dataclass
class CrawlConfig:
    seeds: list[str]
    concurrency: int = 32
    per_host: int = 4
    delay: float = 0.0
    timeout: float = 10.0
    retries: int = 2
    max_pages: int | None = None
    max_time: float | None = None
    max_depth: int | None = None
    date_hops: int | None = DEFAULT_DATE_HOPS  # longest date chain followed (crawl.traps); None: no limit
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    scope: str = "site"  # host | site | any
    user_agent: str = DEFAULT_USER_AGENT
    robots: bool = True
    sitemaps: bool = True
    max_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 10
    content_types: tuple[str, ...] = HTML_TYPES
    resume: bool = False
    progress: bool = True
    backoff: float = 1.0  # first retry after ~backoff s, doubling
    commit_interval: float = 0.1  # seconds between commits (a kill -9 re-fetches at most this much)
    workers: int = 0  # processes analysing pages; 0: one thread of this process


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
    filtered: Counter = field(default_factory=Counter)  # scope, include, exclude, depth, extension
    invalid: Counter = field(default_factory=Counter)  # fragment, scheme, empty, malformed
    error_kinds: Counter = field(default_factory=Counter)
    bytes: int = 0
    blocks: int = 0
    chunks: int = 0
    elapsed: float = 0.0
    stopped: str = "done"

    def summary(self) -> str:
        rate = self.pages / self.elapsed if self.elapsed > 0 else 0.0
        inv = sum(self.invalid.values())
        filt = sum(self.filtered.values())
        errs = ", ".join(f"{k} {v}" for k, v in self.error_kinds.most_common()) or "none"
        return (f"crawl {self.stopped}: {self.pages} pages in {self.elapsed:.1f} s ({rate:.1f}/s), "
                f"{self.requests} requests, {self.errors} failed ({errs}), {self.retries} retries, "
                f"{self.redirects} redirects, {self.robots_blocked} blocked by robots.txt, "
                f"{self.skipped} skipped, {self.blocks} blocks, {self.chunks} chunks; links: "
                f"{self.links_new} new, {filt} filtered, {inv} invalid")


def make_item(url: str, depth: int, kind: str = "page", **kw) -> Item:
    """A frontier item for a canonical URL in fetch form (keyed by its url_key)."""
    key = url_key(url)
    return Item(key, host_of(url), depth, kind, fetch=url if url != key else None, **kw)


class Crawler:
    def __init__(self, store: Store, config: CrawlConfig, spec: PipelineConfig | None = None) -> None:
        self.store, self.cfg = store, config
        self.frontier = Frontier(store.db)
        self.stats = CrawlStats()
        self.sched = Scheduler(config.per_host, config.delay)
        self.resolver = Resolver()
        self.agent = agent_token(config.user_agent)
        self.spec = spec or CRAWL_DEFAULT.replace(max_bytes=config.max_bytes)
        self._primed: set[str] = set()
        self._include = [re.compile(p) for p in config.include]
        self._exclude = [re.compile(p) for p in config.exclude]
        self._seen: set[str] = set()
        self._rejected: set[str] = set()
        self._later: list[tuple[float, int, Item]] = []  # retries waiting for their time
        self._later_seq = 0
        self._redirect_via: dict[str, str] = {}
        self._scope_sites: set[str] = set()
        self._scope_hosts: set[str] = set()
        self._inflight: set[asyncio.Task] = set()  # requests and pages being analysed or stored
        # Requests on the wire count against --concurrency; fetched pages waiting for a worker do
        # not (a 5 MB page keeping a worker busy for seconds must not stall every host), but
        # their number and bytes are bounded so that memory stays bounded.
        self._fetching = 0
        self._backlog = 0
        self._backlog_bytes = 0
        self._pages_started = 0
        self._wake = asyncio.Event()
        self._stopping: str | None = None
        self._last_commit = 0.0
        self._bar = None
        self._bar_update = 0.0

    # ------------------------------------------------------------------ set-up
    def _prepare(self) -> None:
        cfg, fr = self.cfg, self.frontier
        seeds = [u for u in (canonicalize(s.strip(), merge_slash=False) for s in cfg.seeds) if u]
        if cfg.resume and fr.size():
            old = json.loads(fr.get_meta("seeds") or "[]")
            seeds_all = list(dict.fromkeys(old + seeds))
            self._set_scope(seeds_all)
            self._seen = fr.seen_urls()
            items = fr.restore()
            for it in items:
                self._queue(it)
            new = [make_item(u, 0) for u in seeds if url_key(u) not in self._seen]
            self._accept(new)
            fr.set_meta("seeds", json.dumps(seeds_all))
            log.info("resuming: %d URLs known, %d to fetch", len(self._seen), len(items) + len(new))
        else:
            fr.reset()
            self._set_scope(seeds)
            fr.set_meta("seeds", json.dumps(seeds))
            self._accept(list({url_key(u): make_item(u, 0) for u in seeds}.values()))
        self.store.commit()

    def _set_scope(self, seeds: list[str]) -> None:
        self._scope_hosts = {host_of(u) for u in seeds}
        self._scope_sites = {site_key(h) for h in self._scope_hosts}

    def in_scope(self, url: str) -> bool:
        if self.cfg.scope == "any":
            return True
        host = host_of(url)
        if self.cfg.scope == "host":
            return host in self._scope_hosts
        s = site_key(host)
        return s in self._scope_sites or any(s.endswith("." + k) for k in self._scope_sites)

    # ------------------------------------------------------------------ frontier in memory
    def _queue(self, it: Item, listed: bool = False) -> None:
        if it.not_before > time.time():
            self._later_seq += 1
            heapq.heappush(self._later, (it.not_before, self._later_seq, it))
            return
        h = self.sched.host(it.host)
        (h.listed if listed else h.queue).append(it)
        self.sched.poke(h, self.cfg.robots)

    def _accept(self, items: list[Item], listed: bool = False) -> None:
        """New URLs into the seen-set, the frontier table and the host queues (listed: found in
        a sitemap)."""
        if not items:
            return
        for it in items:
            self._seen.add(it.url)
        self.frontier.add(items)
        for it in items:
            self._queue(it, listed)
        self.stats.links_new += len(items)

    def _filter(self, url: str, depth: int, kind: str = "page") -> str | None:
        """Why url is not crawled (scope, depth, include, exclude, extension), or None."""
        if not self.in_scope(url):
            return "scope"
        if self.cfg.max_depth is not None and depth > self.cfg.max_depth:
            return "depth"
        if pathological(url):
            return "trap"
        if self._include and not any(p.search(url) for p in self._include):
            return "include"
        if self._exclude and any(p.search(url) for p in self._exclude):
            return "exclude"
        if kind == "page" and self.cfg.content_types == HTML_TYPES:
            path = url.split("?", 1)[0]
            last = path[path.rfind("/") + 1:]
            dot = last.rfind(".")
            if dot > 0 and last[dot + 1:].lower() in NON_HTML_EXT:
                return "extension"
        return None

    def add_links(self, page_url: str, base: str, hrefs: list[str], depth: int, trail: int = 0) -> int:
        """Resolve, canonicalise, filter and queue the links of one page; returns how many were new.
        trail: the page's own date-chain trail (crawl.traps)."""
        new: list[Item] = []
        seen, rejected, resolve = self._seen, self._rejected, self.resolver.resolve
        stats = self.stats
        robots, hosts, agent = self.cfg.robots, self.sched.hosts, self.agent
        max_trail = self.cfg.date_hops
        page_dated = max_trail is not None and dated(page_url)
        for href in hrefs:
            url, why = resolve(base, href)
            if url is None:
                stats.invalid[why] += 1
                continue
            key = url_key(url)
            if key in seen:
                continue
            if key in rejected:
                stats.filtered["repeat"] += 1
                continue
            why = self._filter(url, depth)
            if why:
                stats.filtered[why] += 1
                if why != "depth":  # a shallower path may reach it later
                    rejected.add(key)
                continue
            t = trail_of(page_url, trail, page_dated, url) if page_dated else 0
            if max_trail is not None and t > max_trail:
                stats.filtered["date-trap"] += 1  # not rejected for good: a shorter chain may reach it
                continue
            host = host_of(url)
            if robots:
                rules = hosts[host].rules if host in hosts else None
                if rules is not None and not rules.allowed(url, agent):
                    stats.robots_blocked += 1
                    rejected.add(key)
                    continue
            seen.add(key)
            new.append(Item(key, host, depth, fetch=url if url != key else None, trail=t))
        stats.links_seen += len(hrefs)
        self._accept(new)
        return len(new)

    # ------------------------------------------------------------------ main loop
    async def run(self) -> CrawlStats:
        t0 = time.monotonic()
        self._prepare()
        loop = asyncio.get_running_loop()
        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.stop, "interrupted")
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        if self.cfg.progress:
            from tqdm import tqdm
            self._bar = tqdm(unit="page", file=sys.stderr, dynamic_ncols=True, desc="crawl",
                             mininterval=0.5)
        deadline = t0 + self.cfg.max_time if self.cfg.max_time else None
        try:
            with Analyzer(self.spec, self.cfg.workers) as analyzer:
                self.analyzer = analyzer
                async with Fetcher(self.cfg.user_agent, self.cfg.timeout, self.cfg.max_bytes,
                                   self.cfg.concurrency, self.cfg.per_host) as fetcher:
                    self.fetcher = fetcher
                    await self._loop(deadline)
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            self.store.commit()
            self.stats.elapsed = time.monotonic() - t0
            if self._bar is not None:
                self._bar.close()
        return self.stats

    def stop(self, reason: str = "interrupted") -> None:
        """Graceful stop: no new requests; in-flight ones finish. A second call cancels them
        (their URLs stay in the frontier and are fetched by --resume)."""
        if self._stopping is None:
            self._stopping = reason
            log.warning("stopping (%s): waiting for %d requests in flight", reason, len(self._inflight))
        else:
            for t in list(self._inflight):
                t.cancel()
        self._wake.set()

    async def _loop(self, deadline: float | None) -> None:
        robots = self.cfg.robots
        sched = self.sched
        while True:
            now = time.monotonic()
            if deadline and now >= deadline and not self._stopping:
                self._stopping = "time limit"
            if self.cfg.max_pages is not None and self._pages_started >= self.cfg.max_pages and not self._stopping:
                if not self._inflight or self.stats.pages >= self.cfg.max_pages:
                    self._stopping = "page limit"
            wall = time.time()
            while self._later and self._later[0][0] <= wall:
                it = heapq.heappop(self._later)[2]
                it.not_before = 0.0
                self._queue(it)
            if not self._stopping:
                while self._can_fetch():
                    if self.cfg.max_pages is not None and self._pages_started >= self.cfg.max_pages:
                        break
                    h = sched.take_ready(robots)
                    if h is None:
                        break
                    self._launch(h)
            if self._stopping and not self._inflight:
                self.stats.stopped = "stopped: " + self._stopping
                return
            if not self._inflight and not sched._ready and not sched._timed and not self._later:
                return  # nothing left anywhere
            self._maybe_commit()
            timeout = None
            can_launch = (not self._stopping and self._can_fetch()
                          and (self.cfg.max_pages is None or self._pages_started < self.cfg.max_pages))
            wt = sched.wake_time() if can_launch else None  # else a finishing task wakes us
            if wt is not None:
                timeout = max(0.0, wt - time.monotonic())
            if self._later:
                lt = self._later[0][0] - time.time()
                timeout = lt if timeout is None else min(timeout, lt)
            if deadline and not self._stopping:
                dt = deadline - time.monotonic()
                timeout = dt if timeout is None else min(timeout, dt)
            self._wake.clear()
            if timeout is None or timeout > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=max(timeout, 0.001) if timeout is not None else None)
                except asyncio.TimeoutError:
                    pass
            else:
                await asyncio.sleep(0)

    def _can_fetch(self) -> bool:
        return (self._fetching < self.cfg.concurrency and self._backlog < MAX_BACKLOG_FACTOR * self.cfg.concurrency
                and self._backlog_bytes < MAX_BACKLOG_BYTES)

    def _launch(self, h: Host) -> None:
        robots = self.cfg.robots
        if robots and h.robots_state == 0:
            h.robots_state = 1
            self.sched.started(h, robots)
            self._fetching += 1
            self._spawn(self._fetch_robots(h))
            return
        it = self.sched.next_item(h)
        if robots and it.kind == "page" and h.rules is not None and not h.rules.allowed(it.target, self.agent):
            self.stats.robots_blocked += 1
            self.frontier.mark(it.url, SKIPPED, error="robots")
            self.frontier.log(it.url, "skipped", error="robots")
            self.sched.poke(h, robots)
            self._wake.set()
            return
        if it.kind == "page":
            self._pages_started += 1
        self.sched.started(h, robots)
        self.frontier.mark(it.url, IN_FLIGHT)
        self._fetching += 1
        self._spawn(self._fetch_item(h, it))

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._inflight.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._inflight.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("internal error: %r", task.exception(), exc_info=task.exception())
        self._wake.set()

    def _maybe_commit(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_commit >= self.cfg.commit_interval:
            self.store.commit()
            self._last_commit = now

    # ------------------------------------------------------------------ robots.txt and sitemaps
    async def _fetch_robots(self, h: Host) -> None:
        url = h.name + "/robots.txt"
        res = FetchResult(url)
        t_start = time.monotonic()
        try:
            for attempt in range(2):
                await self.sched.turn(h)
                res = await self.fetcher.get(url, accept=None, follow=True, on_sent=self.sched.sent(h))
                self.stats.requests += 1
                if res.status is not None and res.status < 500:
                    break
                if res.error in ("dns",):
                    break
                await asyncio.sleep(self.cfg.backoff * (attempt + 1))
        finally:
            rules = rules_from_response(res.status, res.body, self.agent)
            if res.status is None and res.error in ("dns", "connect"):
                # the host cannot be reached at all: let its pages fail with the real error
                rules.disallow_all = False
            h.rules = rules
            h.robots_state = 2
            self.sched.set_crawl_delay(h, rules.crawl_delay)
            if h.delay > 0:  # the robots.txt request itself counts
                h.next_allowed = max(h.next_allowed, t_start + h.delay + DELAY_MARGIN)
            self.frontier.log(url, "robots", res.status, res.error, res.detail, res.nbytes, res.elapsed)
            if rules.crawl_delay:
                log.info("%s: Crawl-delay %.2f s", h.name, rules.crawl_delay)
            if self.cfg.sitemaps and rules.sitemaps and not self._stopping:
                items = []
                for sm in rules.sitemaps:
                    u = canonicalize(sm.strip(), merge_slash=False)
                    if u and url_key(u) not in self._seen and self.in_scope(u):
                        items.append(make_item(u, 0, kind="sitemap"))
                self._accept(items)
            self.sched.finished(h, self.cfg.robots)
            self._fetching -= 1

    def _sitemap_links(self, it: Item, body: bytes) -> None:
        if body[:2] == b"\x1f\x8b":
            try:
                body = decompress(body, "gzip", self.cfg.max_bytes)
            except Exception as e:  # noqa: BLE001 - a bad sitemap is logged, not fatal
                self.frontier.log(it.url, "failed", error="sitemap", detail=str(e))
                return
        is_index = b"<sitemapindex" in body[:2000]
        items, seen = [], self._seen
        for m in _LOC_RE.finditer(body):
            raw = _html.unescape(m.group(1).decode("utf-8", "replace"))
            u = canonicalize(raw.strip(), merge_slash=False)
            if not u or url_key(u) in seen or url_key(u) in self._rejected:
                continue
            kind = "sitemap" if is_index else "page"
            if (why := self._filter(u, it.depth, kind)) is not None:
                self.stats.filtered[why] += 1
                continue
            x = make_item(u, it.depth, kind=kind)
            seen.add(x.url)
            items.append(x)
        self._accept(items, listed=not is_index)

    # ------------------------------------------------------------------ one URL
    async def _fetch_item(self, h: Host, it: Item) -> None:
        try:
            accept = None if it.kind == "sitemap" else self.cfg.content_types
            await self.sched.turn(h)
            res = await self.fetcher.get(it.target, accept=accept, on_sent=self.sched.sent(h))
        except asyncio.CancelledError:
            # hard stop: the URL goes back to the queue (resume fetches it)
            self.frontier.mark(it.url, QUEUED)
            self.sched.finished(h, self.cfg.robots)
            self._fetching -= 1
            raise
        self.sched.finished(h, self.cfg.robots)
        self._fetching -= 1
        size = len(res.body or b"")
        self._backlog += 1
        self._backlog_bytes += size
        self._wake.set()
        try:
            await self._handle(h, it, res)
        except asyncio.CancelledError:
            self.frontier.mark(it.url, QUEUED)
            raise
        except Exception as e:  # noqa: BLE001 - one bad page never stops the crawl
            log.exception("processing %s failed", it.url)
            self._fail(it, res, "internal", f"{type(e).__name__}: {e}")
        finally:
            self._backlog -= 1
            self._backlog_bytes -= size
            self._wake.set()
        self._maybe_commit()
        self._progress()

    async def _handle(self, h: Host, it: Item, res: FetchResult) -> None:
        st = self.stats
        st.requests += 1
        st.bytes += res.nbytes
        fr = self.frontier
        status = res.status
        if res.retry_after is not None and res.retry_after > MAX_RETRY_WAIT and self._should_retry(res):
            self._fail(it, res, f"http {status}", f"Retry-After {res.retry_after:.0f} s is beyond {MAX_RETRY_WAIT:.0f} s")
            return
        # A timed-out request is retried once at most: a server too slow twice in a row is slow, not
        # unlucky, and each try holds a host slot for the whole timeout.
        retries = min(self.cfg.retries, 1) if res.error == "timeout" else self.cfg.retries
        if self._should_retry(res) and it.attempts < retries and not self._stopping:
            it.attempts += 1
            wait = res.retry_after if res.retry_after is not None else (
                self.cfg.backoff * 2 ** (it.attempts - 1) * (0.75 + 0.5 * random.random()))
            if status == 429:
                self.sched.push_back(h, wait)
            it.not_before = time.time() + wait
            st.retries += 1
            fr.mark(it.url, QUEUED, status, res.error, attempts=it.attempts, not_before=it.not_before)
            fr.log(it.url, "retry", status, res.error, f"attempt {it.attempts}, again in {wait:.1f} s; {res.detail}",
                   res.nbytes, res.elapsed)
            log.info("retry %s in %.1f s (%s)", it.url, wait, res.error or status)
            if it.kind == "page":
                self._pages_started -= 1
            self._queue(it)
            return
        if res.error == "content_type":
            st.skipped += 1
            fr.mark(it.url, SKIPPED, status, "content_type")
            fr.log(it.url, "skipped", status, "content_type", res.detail, res.nbytes, res.elapsed)
            if it.kind == "page":
                self._pages_started -= 1
            return
        if res.error:
            self._fail(it, res, res.error, res.detail)
            return
        assert status is not None
        if 300 <= status < 400 and res.location:
            self._redirect(it, res)
            return
        if status >= 400 or status < 200 or res.body is None:
            self._fail(it, res, f"http {status}", "")
            return
        if it.kind == "sitemap":
            self._sitemap_links(it, res.body)
            fr.mark(it.url, DONE, status)
            fr.log(it.url, "fetched", status, None, "sitemap", res.nbytes, res.elapsed)
            return
        await self._page(it, res)

    def _should_retry(self, res: FetchResult) -> bool:
        if res.status is not None:
            return res.status in RETRY_STATUS
        return res.error in RETRY_ERRORS

    def _fail(self, it: Item, res: FetchResult, kind: str, detail: str) -> None:
        self.stats.errors += 1
        self.stats.error_kinds[kind.split()[0]] += 1
        self.frontier.mark(it.url, FAILED, res.status, kind)
        self.frontier.log(it.url, "failed", res.status, kind, detail, res.nbytes, res.elapsed)
        log.info("failed %s: %s %s", it.url, kind, detail)

    def _redirect(self, it: Item, res: FetchResult) -> None:
        self.stats.redirects += 1
        if it.kind == "page":
            self._pages_started -= 1
        target, why = self.resolver.resolve(it.target, res.location or "")
        fr = self.frontier
        if target is None:
            self._fail(it, res, "bad redirect", f"Location {res.location!r}: {why}")
            return
        # the chain that led here, to tell a loop from a redirect to an already known page
        chain, u = {it.url}, it.via
        while u is not None and u not in chain:
            chain.add(u)
            u = self._redirect_via.get(u)
        tkey = url_key(target)
        if tkey in chain:
            self._fail(it, res, "redirect loop", f"-> {target}")
            return
        if it.hops + 1 > self.cfg.max_redirects:
            self._fail(it, res, "too many redirects", f"{it.hops + 1} hops -> {target}")
            return
        fr.mark(it.url, DONE, res.status, None)
        fr.log(it.url, "redirect", res.status, None, target, res.nbytes, res.elapsed)
        if tkey in self._seen:
            return
        why = self._filter(target, it.depth, it.kind)
        if why:
            self.stats.filtered[why] += 1
            fr.log(it.url, "skipped", res.status, "redirect " + why, target)
            return
        self._redirect_via[tkey] = it.url
        self._accept([make_item(target, it.depth, it.kind, hops=it.hops + 1, via=it.url, trail=it.trail)])

    async def _page(self, it: Item, res: FetchResult) -> None:
        if self.cfg.resume and it.host not in self._primed:
            # blocks kept before the interruption: the site's dedup state continues
            self._primed.add(it.host)
            await self.analyzer.prime(it.host, self.store.block_hashes(it.host + "/"))
        follow = self.cfg.max_depth is None or it.depth < self.cfg.max_depth
        result = await self.analyzer.analyse(it.host, res.body or b"", it.target, res.content_type, follow)
        if follow:
            self.add_links(it.target, result.base, result.hrefs, it.depth + 1, it.trail)
        self.store.save_page(it.url, result.blocks, result.chunks, final_url=it.target, status=res.status or 200,
                             content_type=res.content_type, title=result.title, content_hash=result.content_hash)
        self.frontier.mark(it.url, DONE, res.status)
        self.frontier.log(it.url, "fetched", res.status, None, "", res.nbytes, res.elapsed)
        st = self.stats
        st.pages += 1
        st.blocks += len(result.blocks)
        st.chunks += len(result.chunks)
        if self._bar is not None:
            self._bar.update(1)

    def _progress(self) -> None:
        if self._bar is None:
            return
        now = time.monotonic()
        if now - self._bar_update < 0.5:
            return
        self._bar_update = now
        queues = sorted(((len(h.queue) + len(h.listed), h.name.split("//", 1)[-1]) for h in self.sched.hosts.values()
                         if h.queue or h.listed), reverse=True)
        q = " ".join(f"{n}:{c}" for c, n in queues[:4])
        self._bar.set_postfix_str(f"err {self.stats.errors} inflight {len(self._inflight)} queue {q}", refresh=False)


def crawl(store: Store, config: CrawlConfig, spec: PipelineConfig | None = None) -> CrawlStats:
    """Run a crawl to completion (or until a limit or a signal stops it)."""
    return asyncio.run(Crawler(store, config, spec).run())

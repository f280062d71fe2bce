"""The crawl engine: one asyncio loop wiring the components; fetches run concurrently, everything
else (scheduling, link handling, the pipeline's results, SQLite writes) happens in the loop's
thread, so the store has one writer.

    seeds -> Frontier (durable record, protocols.Frontier)
          -> Scheduler (per-host queues, robots.txt rules, slots, delays: politeness.py)
          -> Fetcher.get(gate=Scheduler.turn) (protocols.Fetcher: fetch.py, memfetch.py)
          -> redirect: retry.redirect_problem, then queued like a link (robots, politeness,
                       dedup apply to every hop)
             sitemap:  sitemaps.Sitemaps (bounded nesting and count), URLs queued as listed
             HTML:     Analyzer (process.py: links, blocks, chunks off the loop)
                       -> policy.reject_reason for each link -> Store.save_page, in the same
                       transaction as the frontier update and the new links
             error:    retry.decide_retry (back-off with jitter, Retry-After), else failed.
    Listeners (progress.TqdmProgress) are told of each page. Nothing is fatal.

Time comes from an injected clock (clock.SystemClock; clock.FakeClock in tests).
"""
from __future__ import annotations

import asyncio
import hashlib
import heapq
import json
import logging
import random
import signal
from collections.abc import Coroutine, Sequence
from typing import Any, cast

from ..errors import StoreError
from ..pipeline import PipelineConfig
from ..records import Block, Chunk, PageInfo
from ..store import AnyStore as Store  # either backend (SQLite file, PostgreSQL)
from .addresses import AddressPolicy, parse_resolve
from .clock import SystemClock
from .config import DEFAULT_USER_AGENT, CrawlConfig, CrawlStats
from .fetch import FetchResult
from .frontier import DONE, FAILED, IN_FLIGHT, QUEUED, SKIPPED, Item
from .links import canonical_elsewhere, x_robots_tag
from .policy import (
    date_trail,
    make_policy,
    page_is_dated,
    permanent,
    reject_reason,
    scope_of,
)
from .politeness import Scheduler
from .process import CRAWL_DEFAULT, TOO_COMPLEX, PageOut
from .protocols import Analyzer, Clock, CrawlListener, Fetcher, Frontier, SharedFrontier
from .retry import decide_retry, host_failure, host_verdict, redirect_chain, redirect_problem, robots_retry
from .robots import ROBOTS_MAX_BYTES, agent_token, rules_from_response
from .sitemaps import Sitemaps, make_item
from .urls import Resolver, canonicalize, host_of, url_key

log = logging.getLogger("blockcrawl.crawl")

MAX_BACKLOG_FACTOR = 4  # fetched pages waiting for analysis: at most this many times --concurrency ...
MAX_BACKLOG_BYTES = 256 * 1024 * 1024  # ... holding at most this many body bytes
ROBOTS_ATTEMPTS = 2  # a failed robots.txt is asked again once, after --backoff s
STOP_GRACE = 1.0  # seconds in-flight work may finish after --max-time or Ctrl-C before it is cancelled
CLAIM_INTERVAL = 0.5  # shared frontier: seconds between claim() calls (lease renewal, other workers' links)

__all__ = ["DEFAULT_USER_AGENT", "CrawlConfig", "CrawlStats", "Crawler", "crawl", "make_item"]


class Crawler:
    def __init__(self, store: Store, config: CrawlConfig, spec: PipelineConfig | None = None, *,
                 fetcher: Fetcher | None = None, frontier: Frontier | None = None, clock: Clock | None = None,
                 analyzer: Analyzer | None = None, listeners: Sequence[CrawlListener] | None = None) -> None:
        """fetcher, frontier, clock, analyzer: injected components (protocols.py); by default the
        aiohttp fetcher, the SQLite frontier in the store, the system clock and the page analyser
        of `spec`. listeners: default a progress bar when config.progress."""
        self.store, self.cfg = store, config
        if frontier is None:
            if config.frontier is not None:
                from .shared import open_shared
                frontier = open_shared(config, store)
            else:
                frontier = store.frontier()
        self.frontier: Frontier = frontier
        # a frontier shared with other worker processes: hosts are leased (protocols.SharedFrontier)
        self._shared = cast(SharedFrontier, frontier) if hasattr(frontier, "claim") else None
        self._next_claim = 0.0
        self.clock: Clock = clock or SystemClock()
        self.spec = spec or CRAWL_DEFAULT.replace(max_bytes=config.max_bytes)
        self._fetcher, self._analyzer, self._listeners = fetcher, analyzer, listeners
        self.stats = CrawlStats()
        self.agent = agent_token(config.user_agent)
        self.sched = Scheduler(config.per_host, config.delay, config.robots, self.agent, self.clock)
        self.resolver = Resolver()
        if self._shared is not None:
            self._shared.delay_of = self.sched.delay_of
        self._primed: set[str] = set()
        # site learning: each site's current model (the store's row: version, JSON, counts)
        self._models: dict[str, _SiteModel] = {}
        self._stored_models: dict[str, _SiteModel] | None = None  # the store's, read on first need
        self._model_sent: set[str] = set()
        self._models_dirty: set[str] = set()  # sites whose counts changed since their row was written
        # sites whose pipeline may still be collecting pages for its model -> when their last page
        # was analysed: idle for learn_seconds, or at the end of the crawl, they learn on what they
        # have (_finish_sites); else a site under learn_pages pages crawled fast never learns
        self._site_learning = self.spec.mode == "main" and self.spec.algorithm == "site" and self.spec.extract
        self._idle_sites: dict[str, float] = {}
        self._next_sweep = 0.0
        self._seen: set[str] = set()
        self._rejected: set[str] = set()
        self._later: list[tuple[float, int, Item]] = []  # retries waiting for their (wall) time
        self._later_seq = 0
        self._redirect_via: dict[str, str] = {}
        self._probes: set[str] = set()  # /sitemap.xml guessed (robots.txt named none): a 404 is no error
        self._folded: set[str] = set()  # pages not stored because their canonical is another URL
        self._gone: set[str] = set()  # URLs that failed (a canonical pointing there is not followed)
        # recrawl: the stored pages (key -> (etag, last_modified, body_hash)) before this run
        self._stored: dict[str, tuple[str | None, str | None, str | None]] = {}
        self._inflight: set[asyncio.Task[None]] = set()  # requests and pages being analysed or stored
        # Requests on the wire count against --concurrency; fetched pages waiting for a worker do
        # not (a 5 MB page keeping a worker busy for seconds must not stall every host), but
        # their number and bytes are bounded so that memory stays bounded.
        self._fetching = 0
        self._backlog = 0
        self._backlog_bytes = 0
        self._started = 0  # page and sitemap fetches started (--max-pages)
        self._wake = asyncio.Event()
        self._stopping: str | None = None
        self._stop_at = 0.0  # when the stop began (monotonic)
        self._fatal: StoreError | None = None  # the store refused a write: the crawl stops with it
        self._host_fails: dict[str, int] = {}  # failures in a row per host (retry.host_verdict)
        self._stopped_hosts: dict[str, str] = {}  # host -> why it was given up for this crawl
        self._last_commit = 0.0
        self._set_policy([])

    # ------------------------------------------------------------------ set-up
    def _set_policy(self, seeds: list[str]) -> None:
        cfg = self.cfg
        self.policy = make_policy(scope_of(seeds, cfg.scope), max_depth=cfg.max_depth, include=cfg.include,
                                  exclude=cfg.exclude, content_types=cfg.content_types, date_hops=cfg.date_hops,
                                  addresses=AddressPolicy.from_seeds(seeds, cfg.allow_private))
        self.sitemaps = Sitemaps(self.policy, max_files=cfg.max_sitemaps, max_depth=cfg.max_sitemap_depth,
                                 max_urls=cfg.max_sitemap_urls, max_bytes=cfg.max_bytes)

    def _prepare(self) -> None:
        cfg, fr = self.cfg, self.frontier
        seeds = [u for u in (canonicalize(s.strip(), merge_slash=False) for s in cfg.seeds) if u]
        if self._shared is not None:
            from .shared import crawl_options
            seeds = self._shared.join(seeds, crawl_options(cfg), cfg.resume)
            self._set_policy(seeds)
            self._accept([make_item(u, 0) for u in dict.fromkeys(seeds)])
        elif cfg.recrawl:
            self._prepare_recrawl(seeds)
        elif cfg.resume and fr.size():
            old = json.loads(fr.get_meta("seeds") or "[]")
            seeds_all = list(dict.fromkeys(old + seeds))
            self._set_policy(seeds_all)
            self._seen = fr.seen_urls()
            items = fr.restore()
            for it in items:
                self._queue(it)
            new = [make_item(u, 0) for u in seeds if url_key(u) not in self._seen]
            self._accept(new)
            fr.set_meta("seeds", json.dumps(seeds_all))
            if fr.get_meta("recrawl") == "1":  # an interrupted recrawl goes on as one
                self.stats.recrawl = True
                self._stored = {u: (e, m, h) for u, _, _, e, m, h in self.store.recrawl_pages()}
            log.info("resuming: %d URLs known, %d to fetch", len(self._seen), len(items) + len(new))
        else:
            fr.reset()
            self._set_policy(seeds)
            fr.set_meta("seeds", json.dumps(seeds))
            fr.set_meta("recrawl", "0")
            self._accept(list({url_key(u): make_item(u, 0) for u in seeds}.values()))
        self.store.commit()

    def _prepare_recrawl(self, seeds: list[str]) -> None:
        """Revisit the store's pages: every stored page (those fetched less than --max-age ago are
        known but not fetched) is queued at depth 0 with its validators, then the seeds (the
        store's and any given); links are followed as in any crawl. The frontier starts afresh."""
        cfg, fr = self.cfg, self.frontier
        self.stats.recrawl = True
        old = json.loads(fr.get_meta("seeds") or "[]")
        seeds_all = list(dict.fromkeys(old + seeds))
        fr.reset()
        self._set_policy(seeds_all)
        fr.set_meta("seeds", json.dumps(seeds_all))
        fr.set_meta("recrawl", "1")
        now = self.clock.time()
        due: dict[str, Item] = {}
        fresh: list[Item] = []
        for url, final, fetched_at, etag, modified, digest in self.store.recrawl_pages():
            self._stored[url] = (etag, modified, digest)
            it = make_item(final, 0) if url_key(final) == url else make_item(url, 0)
            if cfg.max_age is not None and now - fetched_at < cfg.max_age:
                fresh.append(it)
            else:
                due[it.url] = it
        for it in fresh:  # known, so not fetched again when linked; recorded as done
            self._seen.add(it.url)
        fr.add(fresh)
        for it in fresh:
            fr.mark(it.url, DONE)
        self._accept(list(due.values()) + [make_item(u, 0) for u in seeds_all
                                           if url_key(u) not in due and url_key(u) not in self._seen])
        log.info("recrawl: %d stored pages, %d due, %d fresh", len(self._stored), len(due), len(fresh))

    def _conditional(self, key: str) -> dict[str, str] | None:
        """If-None-Match / If-Modified-Since for a stored page with validators (recrawl)."""
        v = self._stored.get(key)
        if v is None or not (v[0] or v[1]):
            return None
        h = {}
        if v[0]:
            h["If-None-Match"] = v[0]
        if v[1]:
            h["If-Modified-Since"] = v[1]
        return h

    # ------------------------------------------------------------------ frontier in memory
    def _queue(self, it: Item, listed: bool = False) -> None:
        if it.host in self._stopped_hosts:
            return  # the host failed too often: the URL stays queued in the frontier (--resume)
        if it.not_before > self.clock.time():
            self._later_seq += 1
            heapq.heappush(self._later, (it.not_before, self._later_seq, it))
            return
        self.sched.add(it, listed)

    def _accept(self, items: list[Item], listed: bool = False) -> None:
        """New URLs into the seen-set, the frontier and the host queues (listed: found in a sitemap)."""
        if not items:
            return
        for it in items:
            self._seen.add(it.url)
        if self._shared is not None:  # only the new URLs of hosts this worker owns are queued here
            mine = self._shared.share(items)
        else:
            self.frontier.add(items)
            mine = items
        for it in mine:
            self._queue(it, listed)
        self.stats.links_new += len(items)

    def _known(self, key: str) -> bool:
        return key in self._seen or key in self._rejected

    def add_links(self, page_url: str, base: str, hrefs: list[str], depth: int, trail: int = 0) -> int:
        """Resolve, canonicalise, filter and queue the links of one page; returns how many were new.
        trail: the page's own date-chain trail (crawl.traps)."""
        new: list[Item] = []
        seen, rejected, resolve = self._seen, self._rejected, self.resolver.resolve
        stats, policy, sched = self.stats, self.policy, self.sched
        page_dated = page_is_dated(policy, page_url)
        for href in hrefs:
            url, why = resolve(base, href)
            if url is None:
                stats.invalid[why or "malformed"] += 1
                continue
            key = url_key(url)
            if key in seen:
                continue
            if key in rejected:
                stats.filtered["repeat"] += 1
                continue
            reason = reject_reason(policy, url, depth)
            if reason:
                stats.filtered[reason] += 1
                if permanent(reason):
                    rejected.add(key)
                continue
            t = date_trail(policy, page_url, trail, page_dated, url)
            if t is None:
                stats.filtered["date-trap"] += 1  # not rejected for good: a shorter chain may reach it
                continue
            it = make_item(url, depth, trail=t)
            if sched.blocks(it.host, url):
                stats.robots_blocked += 1
                rejected.add(key)
                continue
            seen.add(key)
            new.append(it)
        stats.links_seen += len(hrefs)
        self._accept(new)
        return len(new)

    # ------------------------------------------------------------------ main loop
    async def run(self) -> CrawlStats:
        t0 = self.clock.monotonic()
        self._prepare()
        loop = asyncio.get_running_loop()
        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.stop, "interrupted")
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        if self._listeners is None:
            from .progress import TqdmProgress
            self._listeners = [TqdmProgress()] if self.cfg.progress else []
        deadline = t0 + self.cfg.max_time if self.cfg.max_time else None
        try:
            with self._make_analyzer() as analyzer:
                self.analyzer = analyzer
                async with self._make_fetcher() as fetcher:
                    self.fetcher = fetcher
                    try:
                        await self._loop(deadline)
                    except StoreError as e:
                        self._store_failed(e)
                    finally:
                        # nothing is left running when the fetcher closes: a request cut by the
                        # closing session would be recorded as failed ("Connector is closed")
                        if self._inflight:
                            self._cancel_inflight()
                            await asyncio.gather(*self._inflight, return_exceptions=True)
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            try:
                self._flush_models()
                self.store.commit()
            except StoreError as e:
                if self._fatal is None:
                    raise
                log.debug("final commit after a store error: %s", e)
            if self._shared is not None:
                self._shared.release()
            self.stats.elapsed = self.clock.monotonic() - t0
            for listener in self._listeners:
                listener.close(self.stats)
        if self._fatal is not None:
            raise self._fatal
        return self.stats

    def _store_failed(self, e: StoreError) -> None:
        """The store refused a write (disk full, file gone read-only): the crawl stops at once.
        Nothing in flight is recorded as failed: it stays in flight in the store, which --resume
        queues again, and the run ends with this error as one line."""
        if self._fatal is None:
            self._fatal = e
            log.error("stopping: the store cannot be written: %s", e)
        self._stopping = self._stopping or "store error"
        me = asyncio.current_task()
        for t in list(self._inflight):
            if t is not me:
                t.cancel()
        self._wake.set()

    def _make_analyzer(self) -> Analyzer:
        if self._analyzer is not None:
            return self._analyzer
        from .process import Analyzer as PoolAnalyzer
        return PoolAnalyzer(self.spec, self.cfg.workers, self.cfg.analysis_timeout)

    def _make_fetcher(self) -> Fetcher:
        if self._fetcher is not None:
            return self._fetcher
        from .fetch import AiohttpFetcher
        cfg = self.cfg
        addresses = self.policy.addresses
        proxy = cfg.credentials.proxy
        if proxy and addresses is not None and not addresses.allow_private:
            # through a proxy, our DNS check sees the proxy's address (a local proxy is usual):
            # its block is allowed to the fetcher; links to literal private hosts stay filtered
            # by the URL policy
            own = addresses.allowed_blocks
            addresses = AddressPolicy.from_seeds([*self.cfg.seeds, proxy])
            addresses.allowed_blocks |= own
        fetcher = AiohttpFetcher(cfg.user_agent, cfg.timeout, cfg.max_bytes, cfg.concurrency, cfg.per_host,
                                 addresses=addresses, credentials=cfg.credentials,
                                 resolve=parse_resolve(cfg.resolve) if cfg.resolve else None)
        if cfg.render != "never":  # app-shell pages rendered in headless Chromium (crawl/render.py)
            from .render import RenderingFetcher
            return RenderingFetcher(fetcher, cfg.render, timeout=2 * cfg.timeout, hosts=self.sched, stats=self.stats,
                                    user_agent=cfg.user_agent, max_bytes=cfg.max_bytes)
        return fetcher

    def stop(self, reason: str = "interrupted") -> None:
        """Graceful stop: no new requests; in-flight ones finish. A second call cancels them
        (their URLs stay in the frontier and are fetched by --resume)."""
        if self._stopping is None:
            self._stopping = reason
            self._stop_at = self.clock.monotonic()
            log.warning("stopping (%s): waiting for %d requests in flight", reason, len(self._inflight))
        else:
            self._cancel_inflight()
        self._wake.set()

    def _cancel_inflight(self) -> None:
        """Hard stop: requests and analyses in flight are cancelled; their URLs go back to the
        queue (--resume fetches them), none is recorded as failed."""
        for t in list(self._inflight):
            t.cancel()

    def _under_page_limit(self) -> bool:
        return self.cfg.max_pages is None or self._started < self.cfg.max_pages

    async def _loop(self, deadline: float | None) -> None:
        sched, clock = self.sched, self.clock
        while True:
            now = clock.monotonic()
            if deadline and now >= deadline and not self._stopping:
                self._stopping, self._stop_at = "time limit", now
            if (self._stopping in ("time limit", "interrupted") and self._inflight
                    and now >= self._stop_at + STOP_GRACE):
                # --max-time and Ctrl-C hold within about a second whatever is in flight (a page
                # that takes a worker 14 s, a server that answers slowly): the rest stays queued
                self._cancel_inflight()
            if not self._under_page_limit() and not self._stopping:
                assert self.cfg.max_pages is not None
                if not self._inflight or self.stats.pages >= self.cfg.max_pages:
                    self._stopping = "page limit"
            if self._shared is not None and not self._stopping and now >= self._next_claim:
                self._claim()
            wall = clock.time()
            while self._later and self._later[0][0] <= wall:
                it = heapq.heappop(self._later)[2]
                if self._shared is not None and not self._shared.holds(it):
                    continue  # the host's lease was lost or given back: its owner has this URL
                it.not_before = 0.0
                self._queue(it)
            if not self._stopping:
                while self._can_fetch() and self._under_page_limit():
                    turn = sched.take()
                    if turn is None:
                        break
                    self._launch(turn.host, turn.item, turn.blocked)
            if self._stopping and not self._inflight:
                if self._stopping == "page limit" and self._finish_sites(None):
                    continue  # the pages asked for are in: their sites learn before the end
                self.stats.stopped = "stopped: " + self._stopping
                return
            if not self._inflight and sched.idle() and not self._later:
                if self._finish_sites(None):
                    continue
                if self._shared is None:
                    return  # nothing left anywhere
                self._maybe_commit(force=True)
                if self._shared.finished():
                    return  # nothing left at any worker
                if now >= self._next_claim:
                    continue  # idle: look for work at once
            self._maybe_commit()
            timeout = None
            if self._shared is not None and not self._stopping:
                timeout = max(0.0, self._next_claim - clock.monotonic())
            if self._idle_sites and not self._stopping:
                if now >= self._next_sweep:
                    self._next_sweep = now + SWEEP_INTERVAL
                    self._finish_sites(now)
                st = max(0.0, self._next_sweep - clock.monotonic())
                timeout = st if timeout is None else min(timeout, st)
            can_launch = not self._stopping and self._can_fetch() and self._under_page_limit()
            wt = sched.wake_time() if can_launch else None  # else a finishing task wakes us
            if wt is not None:
                wait = max(0.0, wt - clock.monotonic())
                timeout = wait if timeout is None else min(timeout, wait)
            if self._later:
                lt = self._later[0][0] - clock.time()
                timeout = lt if timeout is None else min(timeout, lt)
            if deadline and not self._stopping:
                dt = deadline - clock.monotonic()
                timeout = dt if timeout is None else min(timeout, dt)
            if self._stopping in ("time limit", "interrupted") and self._inflight:
                gt = max(0.0, self._stop_at + STOP_GRACE - clock.monotonic())
                timeout = gt if timeout is None else min(timeout, gt)
            self._wake.clear()
            if timeout is None or timeout > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=max(timeout, 0.001) if timeout is not None else None)
                except asyncio.TimeoutError:
                    pass
            else:
                await asyncio.sleep(0)

    def _claim(self) -> None:
        """Shared frontier: renew leases, queue the work of newly leased hosts and what other workers
        found for ours; a host no longer held is dropped (its new owner fetches it)."""
        assert self._shared is not None
        self._maybe_commit(force=True)  # done marks out first: a host given back has none pending
        self._next_claim = self.clock.monotonic() + CLAIM_INTERVAL
        items, lost = self._shared.claim()
        for host in lost:
            self.sched.drop(host)
            self._primed.discard(host)  # primed again from the store if this worker gets it back
        for it in items:
            self._seen.add(it.url)
            self._queue(it)

    def _can_fetch(self) -> bool:
        return (self._fetching < self.cfg.concurrency and self._backlog < MAX_BACKLOG_FACTOR * self.cfg.concurrency
                and self._backlog_bytes < MAX_BACKLOG_BYTES)

    def _launch(self, host: str, it: Item | None, blocked: bool) -> None:
        if it is None:
            self._fetching += 1
            self._spawn(self._fetch_robots(host))
            return
        if blocked:
            self.stats.robots_blocked += 1
            self.frontier.mark(it.url, SKIPPED, error="robots")
            self.frontier.log(it.url, "skipped", error="robots")
            self._wake.set()
            return
        if self._shared is not None and not self._shared.may_fetch(host):
            # the lease was not renewed lately (this process stalled): another worker may own the
            # host by now, so nothing is sent until the next claim renews it (or finds it lost)
            self.sched.finished(host)
            it.not_before = self.clock.time() + CLAIM_INTERVAL / 2
            self._queue(it)
            return
        self._started += 1
        self.frontier.mark(it.url, IN_FLIGHT)
        self._fetching += 1
        self._spawn(self._fetch_item(host, it))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._inflight.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        exc = None if task.cancelled() else task.exception()
        if isinstance(exc, StoreError):
            self._store_failed(exc)
        elif exc is not None:
            log.error("internal error: %r", exc, exc_info=exc)
        self._wake.set()

    def _requeue(self, it: Item) -> None:
        """A cancelled URL back to the queue; if the store cannot take even that, the row stays
        in flight, which --resume also queues again."""
        try:
            self.frontier.mark(it.url, QUEUED)
        except StoreError:
            pass

    def _maybe_commit(self, force: bool = False) -> None:
        if self._fatal is not None:
            return
        try:
            self._commit_if_due(force)
        except StoreError as e:
            self._store_failed(e)

    def _commit_if_due(self, force: bool) -> None:
        now = self.clock.monotonic()
        if force or now - self._last_commit >= self.cfg.commit_interval:
            self._flush_models()
            self.store.commit()
            if self._shared is not None:  # after the commit: a page is stored before it is done
                self._shared.flush()
            self._last_commit = now

    # ------------------------------------------------------------------ robots.txt and sitemaps
    async def _fetch_robots(self, host: str) -> None:
        url = host + "/robots.txt"
        res = FetchResult(url)
        t_start = self.clock.monotonic()
        sched = self.sched
        try:
            for attempt in range(ROBOTS_ATTEMPTS):
                # cut at the size the parser reads: a larger robots.txt is parsed up to there, not refused
                res = await self.fetcher.get(url, accept=None, follow=True, gate=sched.gate(host),
                                             on_sent=sched.sent(host), max_bytes=ROBOTS_MAX_BYTES, truncate=True)
                self.stats.requests += 1
                if not robots_retry(res.status, res.error, res.body is not None) or attempt + 1 == ROBOTS_ATTEMPTS:
                    break
                await asyncio.sleep(self.cfg.backoff * (attempt + 1))
        finally:
            rules = rules_from_response(res.status, res.body, self.agent)
            if res.status is None and res.error in ("dns", "connect"):
                # the host cannot be reached at all: let its pages fail with the real error
                rules.disallow_all = False
            sched.set_rules(host, rules, t_start)
            self.frontier.log(url, "robots", res.status, res.error, res.detail, res.nbytes, res.elapsed)
            if rules.disallow_all:
                log.warning("%s: robots.txt unreadable (%s), nothing fetched from the host",
                            host, res.error or f"http {res.status}")
            if rules.crawl_delay:
                log.info("%s: Crawl-delay %.2f s", host, rules.crawl_delay)
            if self.cfg.sitemaps and rules.sitemaps and not self._stopping:
                items, turned = self.sitemaps.from_robots(rules.sitemaps, self._seen.__contains__)
                self.stats.filtered.update(turned)
                self._accept(items)
            elif self.cfg.sitemaps and res.status is not None and not rules.disallow_all and not self._stopping:
                self._probe_sitemap(host)
            sched.finished(host)
            self._fetching -= 1

    def _probe_sitemap(self, host: str) -> None:
        """robots.txt names no sitemap (or there is none): try /sitemap.xml, where most sites keep
        one. Obeys robots.txt like a page; a 404 there is skipped, not an error."""
        url = host + "/sitemap.xml"
        if url_key(url) in self._seen or self.sched.blocks(host, url):
            return
        items, turned = self.sitemaps.from_robots([url], self._known)
        self.stats.filtered.update(turned)
        self._probes.update(it.url for it in items)
        self._accept(items)

    def _feeds(self, base: str, hrefs: tuple[str, ...]) -> None:
        """A page's feed links (<link rel=alternate type=rss/atom/json>) as URL sources, bounded
        like sitemaps (--max-sitemaps files per crawl), obeying robots.txt."""
        urls = []
        for h in hrefs:
            u, _ = self.resolver.resolve(base, h)
            if u is not None and not self._known(url_key(u)) and not self.sched.blocks(host_of(u), u):
                urls.append(u)
        if urls:
            items, turned = self.sitemaps.from_robots(urls, self._known, kind="feed")
            self.stats.filtered.update(turned)
            self._accept(items)

    async def _sitemap(self, it: Item, res: FetchResult) -> None:
        assert res.body is not None
        try:
            sm = await self.sitemaps.read(res.body, base=it.target)
        except Exception as e:  # noqa: BLE001 - a bad sitemap is logged, not fatal
            self.frontier.log(it.url, "failed", error="sitemap", detail=str(e))
        else:
            items, turned = self.sitemaps.listed(it, sm, self._known)
            self.stats.filtered.update(turned)
            self._accept(items, listed=not sm.is_index)
            if sm.error:  # parsed what it could; say what was wrong
                self.frontier.log(it.url, "failed", error="sitemap", detail=sm.error)
            if sm.truncated:
                log.info("%s: sitemap cut at %d URLs", it.url, len(sm.urls))
        if it.kind == "feed":
            self.stats.feeds += 1
        else:
            self.stats.sitemaps += 1
        self.frontier.mark(it.url, DONE, res.status)
        self.frontier.log(it.url, "fetched", res.status, None, it.kind, res.nbytes, res.elapsed)

    # ------------------------------------------------------------------ one URL
    async def _fetch_item(self, host: str, it: Item) -> None:
        sched = self.sched
        try:
            accept = None if it.kind != "page" else self.cfg.content_types
            cond = self._conditional(it.url) if self._stored and it.kind == "page" else None
            if cond:
                res = await self.fetcher.get(it.target, accept=accept, gate=sched.gate(host), on_sent=sched.sent(host),
                                             headers=cond)
            else:
                res = await self.fetcher.get(it.target, accept=accept, gate=sched.gate(host), on_sent=sched.sent(host))
        except asyncio.CancelledError:
            # hard stop: the URL goes back to the queue (resume fetches it)
            self._requeue(it)
            sched.finished(host)
            self._fetching -= 1
            raise
        sched.finished(host)
        self._fetching -= 1
        size = len(res.body or b"")
        self._backlog += 1
        self._backlog_bytes += size
        self._wake.set()
        try:
            await self._handle(host, it, res)
        except asyncio.CancelledError:
            self._requeue(it)
            raise
        except StoreError as e:  # the store is full or gone: the crawl stops, the URL is kept
            self._store_failed(e)
            return
        except Exception as e:  # one bad page never stops the crawl (logged with its traceback)
            log.exception("processing %s failed", it.url)
            try:
                self._fail(it, res, "internal", f"{type(e).__name__}: {e}")
            except StoreError as e2:
                self._store_failed(e2)
                return
        finally:
            self._backlog -= 1
            self._backlog_bytes -= size
            self._wake.set()
        self._maybe_commit()
        if self._listeners:
            for listener in self._listeners:
                listener.tick(self.stats, len(self._inflight), sched.queue_sizes)

    async def _handle(self, host: str, it: Item, res: FetchResult) -> None:
        st = self.stats
        st.requests += 1
        st.bytes += res.nbytes
        fr = self.frontier
        status = res.status
        d = decide_retry(status, res.error, res.retry_after, it.attempts, self.cfg.retries, self.cfg.backoff,
                         random.random(), self._stopping is not None)
        self._host_health(host, res)
        if d.give_up:
            self._fail(it, res, f"http {status}", d.give_up)
            return
        if d.retry:
            it.attempts += 1
            it.not_before = self.clock.time() + d.wait
            st.retries += 1
            fr.mark(it.url, QUEUED, status, res.error, attempts=it.attempts, not_before=it.not_before)
            fr.log(it.url, "retry", status, res.error, f"attempt {it.attempts}, again in {d.wait:.1f} s; {res.detail}",
                   res.nbytes, res.elapsed)
            log.info("retry %s in %.1f s (%s)", it.url, d.wait, res.error or status)
            self._started -= 1
            self._queue(it)
            return
        if res.error == "content_type":
            st.skipped += 1
            fr.mark(it.url, SKIPPED, status, "content_type")
            fr.log(it.url, "skipped", status, "content_type", res.detail, res.nbytes, res.elapsed)
            self._started -= 1
            return
        if res.error:
            self._fail(it, res, res.error, res.detail)
            return
        assert status is not None
        if it.url in self._stored and it.kind == "page":
            if status == 304:
                self._unchanged(it, res)
                return
            if status in (404, 410):
                self._page_gone(it, res)
                return
        if 300 <= status < 400 and res.location:
            self._redirect(it, res)
            return
        if status >= 400 or status < 200 or res.body is None:
            self._fail(it, res, f"http {status}", "")
            return
        if it.kind != "page":  # sitemap or feed
            await self._sitemap(it, res)
            return
        await self._page(it, res)

    def _host_health(self, host: str, res: FetchResult) -> None:
        """A failing host is paused as a whole, growing, and stopped after a bound (retry.host_verdict)."""
        if not host_failure(res.status, res.error):
            if res.status is not None:
                self._host_fails.pop(host, None)  # it answered: whatever failed before is over
            return
        n = self._host_fails[host] = self._host_fails.get(host, 0) + 1
        v = host_verdict(n, res.status, res.error, res.retry_after, self.cfg.backoff, random.random())
        if v.pause:
            self.sched.push_back(host, v.pause)
        if v.stop and host not in self._stopped_hosts:
            self._stopped_hosts[host] = v.stop
            dropped = self.sched.drop(host)
            self.stats.hosts_stopped += 1
            log.warning("%s: stopped for this crawl: %s; %d queued URLs kept for --resume", host, v.stop, dropped)

    def _fail(self, it: Item, res: FetchResult, kind: str, detail: str) -> None:
        self._gone.add(it.url)
        if it.url in self._probes and res.status is not None and 400 <= res.status < 500:
            # the guessed /sitemap.xml is not there: nothing failed
            self._started -= 1  # and it does not use up a --max-pages fetch
            self.frontier.mark(it.url, SKIPPED, res.status, "no sitemap")
            self.frontier.log(it.url, "skipped", res.status, "no sitemap", "", res.nbytes, res.elapsed)
            return
        self.stats.errors += 1
        self.stats.error_kinds[kind if kind == TOO_COMPLEX else kind.split()[0]] += 1
        self.frontier.mark(it.url, FAILED, res.status, kind)
        self.frontier.log(it.url, "failed", res.status, kind, detail, res.nbytes, res.elapsed)
        log.info("failed %s: %s %s", it.url, kind, detail)

    def _redirect(self, it: Item, res: FetchResult) -> None:
        self.stats.redirects += 1
        self._started -= 1
        target, why = self.resolver.resolve(it.target, res.location or "")
        fr = self.frontier
        if target is None:
            self._fail(it, res, "bad redirect", f"Location {res.location!r}: {why}")
            return
        # the chain that led here, to tell a loop from a redirect to an already known page
        tkey = url_key(target)
        problem = redirect_problem(tkey, redirect_chain(it.url, it.via, self._redirect_via), it.hops,
                                   self.cfg.max_redirects)
        if problem:
            detail = f"-> {target}" if problem == "redirect loop" else f"{it.hops + 1} hops -> {target}"
            self._fail(it, res, problem, detail)
            return
        fr.mark(it.url, DONE, res.status, None)
        fr.log(it.url, "redirect", res.status, None, target, res.nbytes, res.elapsed)
        if tkey in self._seen:
            return
        reason = reject_reason(self.policy, target, it.depth, it.kind)
        if reason:
            self.stats.filtered[reason] += 1
            fr.log(it.url, "skipped", res.status, "redirect " + reason, target)
            return
        self._redirect_via[tkey] = it.url
        self._accept([make_item(target, it.depth, it.kind, hops=it.hops + 1, via=it.url, trail=it.trail)])

    async def _page(self, it: Item, res: FetchResult) -> None:
        if (self.cfg.resume or self._shared is not None) and not self.stats.recrawl and it.host not in self._primed:
            # (not in a resumed recrawl: a changed page's own stored blocks would count as seen)
            # blocks kept before the interruption (or by the worker whose host this was, in a
            # shared store): the site's dedup state continues
            self._primed.add(it.host)
            await self.analyzer.prime(it.host, self.store.block_hashes(it.host + "/"))
        if (self.cfg.resume or self.stats.recrawl) and it.host not in self._model_sent:
            await self._send_model(it.host)
        follow = self.cfg.max_depth is None or it.depth < self.cfg.max_depth
        # X-Robots-Tag is known before the analysis: a noindex page is parsed for links only
        h_noindex, h_nofollow = x_robots_tag(list(res.robots_tag), self.agent)
        body = res.body or b""
        body_hash = hashlib.blake2b(body, digest_size=16).hexdigest()
        before = self._stored.get(it.url)
        if before is not None and before[2] == body_hash:
            # recrawl, a 200 with the same body (a server without validators): kept as it is, and
            # not analysed (its links are the ones it had)
            self._unchanged(it, res)
            return
        result = await self.analyzer.analyse(it.host, body, it.target, res.content_type, follow,
                                             False if h_noindex else None)
        if result.error is not None:  # a PDF that cannot be read, a page too complex: nothing stored
            self._fail(it, res, result.error_kind, result.error)
            return
        sig = result.signals
        st = self.stats
        if follow and (sig.nofollow or h_nofollow):
            st.nofollow += len(result.hrefs) + len(sig.nofollow_hrefs)
            follow = False
        if follow:
            hrefs = result.hrefs
            if sig.nofollow_hrefs:
                if self.cfg.follow_nofollow:
                    hrefs = hrefs + list(sig.nofollow_hrefs)
                else:
                    st.nofollow += len(sig.nofollow_hrefs)
            self.add_links(it.target, result.base, hrefs, it.depth + 1, it.trail)
            if self.cfg.feeds and sig.feeds:
                self._feeds(result.base, sig.feeds)
        if sig.noindex or h_noindex:
            st.noindex += 1
            self._not_stored(it, res, "noindex")
            return
        canonical = self._fold_onto(it, result.base, sig.canonical)
        if canonical is not None:
            st.canonical += 1
            self._not_stored(it, res, "canonical " + canonical)
            return
        if not result.blocks and canonical_elsewhere(it.target, result.base, sig.canonical) and self.spec.extract:
            # the worker skipped the pipeline expecting a fold that the engine refused: run it now
            result = await self.analyzer.analyse(it.host, body, it.target, res.content_type, False, True)
        blocks, chunks, markdown = self._content(result)
        self.store.save_page(it.url, blocks, chunks, final_url=it.target, status=res.status or 200,
                             content_type=res.content_type, title=result.title, content_hash=result.content_hash,
                             markdown=markdown, etag=res.etag, last_modified=res.last_modified, body_hash=body_hash,
                             info=result.info)
        self._learned(it.host, result)
        if self._site_learning:
            self._idle_sites[it.host] = self.clock.monotonic()
        if st.recrawl:
            if before is None:
                st.new += 1
            else:
                st.changed += 1
        self.frontier.mark(it.url, DONE, res.status)
        self.frontier.log(it.url, "fetched", res.status, None, "", res.nbytes, res.elapsed)
        st.pages += 1
        st.blocks += len(blocks)
        st.chunks += len(chunks)
        for listener in self._listeners or ():
            listener.page(st)

    # ------------------------------------------------------------------ page info and site learning
    def _content(self, page: PageOut, revised: bool = False) -> tuple[list[Block], list[Chunk], str]:
        """What is stored of a page: its blocks, chunks and Markdown; with --only-articles none of
        them unless its info says "article" (a page without info is not known to be one)."""
        if self.cfg.only_articles and (page.info is None or page.info.kind != "article"):
            self.stats.not_articles += not revised
            return [], [], ""
        return page.blocks, page.chunks, page.markdown

    def _finish_sites(self, now: float | None) -> bool:
        """Sites idle for the pipeline's learn_seconds (every site when now is None: the crawl
        is over) learn their model on the pages they collected (Analyzer.finish), one task a
        site; True when any was started. A site is asked once per idle spell: O(sites) a sweep,
        one sweep a SWEEP_INTERVAL."""
        if not self._idle_sites:
            return False
        sites = [s for s, t in self._idle_sites.items() if now is None or now - t >= self.spec.learn_seconds]
        for site in sites:
            del self._idle_sites[site]
            self._spawn(self._finish_site(site))
        return bool(sites)

    async def _finish_site(self, site: str) -> None:
        try:
            out = await self.analyzer.finish(site)
        except Exception as e:  # a worker lost: the pages stay as stored (auto)
            log.warning("%s: site model not learned at the end of its pages (%r)", site, e)
            return
        if out is not None and (out.model is not None or out.revised):
            log.info("%s: site model learned on its last %d pages", site, len(out.revised))
            self._learned(site, out, own_page=False)
            self._wake.set()

    def _learned(self, site: str, page: PageOut, own_page: bool = True) -> None:
        """After a page is stored: the earlier pages its pipeline revised replace their stored
        versions, and a model learned on it is saved (version + 1 for the site). The site's row
        counts the pages extracted with the model and those that fell back to auto (cluster -1):
        from the model JSON's "pages" and "fallbacks" when it states them, else from the pages
        revised at learning; every later page of the site adds to them."""
        m = self._models.get(site)
        fresh = page.model is not None
        engine_counts = False
        if page.model is not None:
            old = m or self._stored_model(site)
            m = self._models[site] = _SiteModel(old.version + 1 if old else 1, page.model)
            m.pages, m.fallbacks = _model_counts(page.model)
            engine_counts = m.pages < 0
            if engine_counts:
                m.pages = m.fallbacks = 0
            self._model_sent.add(site)  # the pipeline has its own: no stored model is sent after this
            self.stats.models += 1
        for r in page.revised:
            if r.url is None:
                continue
            blocks, chunks, markdown = self._content(r, revised=True)
            if self.store.replace_content(url_key(r.url), blocks, chunks, markdown=markdown,
                                          content_hash=r.content_hash, info=r.info) is None:
                continue  # not stored (noindex, canonical elsewhere): nothing to revise
            self.stats.revised += 1
            if m is not None and engine_counts:
                m.count(r.info)
        if m is None:
            return
        if own_page and (not fresh or engine_counts):
            m.count(page.info)
        if fresh:  # a new model is written with the page it was learned on
            self._models_dirty.discard(site)
            self.store.save_site_model(site, m.model, version=m.version, pages=m.pages, fallbacks=m.fallbacks)
        else:  # new counts at the next commit: a model may be large, pages are many
            self._models_dirty.add(site)

    def _flush_models(self) -> None:
        for site in self._models_dirty:
            m = self._models[site]
            self.store.save_site_model(site, m.model, version=m.version, pages=m.pages, fallbacks=m.fallbacks)
        self._models_dirty.clear()

    def _stored_model(self, site: str) -> _SiteModel | None:
        if self._stored_models is None:
            self._stored_models = {}
            for row in self.store.site_models():
                sm = _SiteModel(int(str(row["version"] or 0)), str(row["model"] or ""))
                sm.pages, sm.fallbacks = int(str(row["pages"] or 0)), int(str(row["fallbacks"] or 0))
                self._stored_models[str(row["site"])] = sm
        return self._stored_models.get(site)

    async def _send_model(self, site: str) -> None:
        """Resume (and recrawl): the model the store holds for the site goes to its pipeline before
        its first page, so the crawl goes on extracting with it instead of learning it again."""
        self._model_sent.add(site)
        m = self._stored_model(site)
        if m is None or not m.model:
            return
        if await self.analyzer.load_model(site, m.model):
            self._models[site] = m


    def _unchanged(self, it: Item, res: FetchResult) -> None:
        self.stats.unchanged += 1
        self.store.touch_page(it.url, etag=res.etag, last_modified=res.last_modified)
        self.frontier.mark(it.url, DONE, res.status)
        self.frontier.log(it.url, "unchanged", res.status, None, "", res.nbytes, res.elapsed)

    def _page_gone(self, it: Item, res: FetchResult) -> None:
        """A stored page answers 404/410: it, its blocks, chunks and their index rows are removed."""
        self.stats.gone += 1
        self._gone.add(it.url)
        self.store.delete_page(it.url)
        self.frontier.mark(it.url, FAILED, res.status, "gone")
        self.frontier.log(it.url, "gone", res.status, None, "removed from the store", res.nbytes, res.elapsed)

    def _not_stored(self, it: Item, res: FetchResult, why: str) -> None:
        if it.url in self._stored and self.store.delete_page(it.url):  # recrawl: stored before, not now
            self.stats.gone += 1
        self.frontier.mark(it.url, DONE, res.status)
        self.frontier.log(it.url, "fetched", res.status, None, "not stored: " + why, res.nbytes, res.elapsed)

    def _fold_onto(self, it: Item, base: str, href: str | None) -> str | None:
        """The canonical URL this page defers to (then it is not stored), or None (stored).

        A page naming another URL of its host as canonical is not stored twice: the canonical URL
        is stored (queued here if new) and this one is skipped. It is stored after all when the
        canonical cannot stand for it: out of scope or excluded, disallowed by robots.txt,
        failed, itself folded onto another page (A <-> B canonicals: the second one is kept), or
        the URL that redirected here."""
        c = canonical_elsewhere(it.target, base, href)
        if c is None:
            return None
        key = url_key(c)
        if (key in self._folded or key in self._gone or key in self._rejected
                or (it.via is not None and key in redirect_chain(it.url, it.via, self._redirect_via))
                or reject_reason(self.policy, c, 0) or self.sched.blocks(host_of(c), c)):
            return None
        if key not in self._seen:
            self._accept([make_item(c, it.depth, trail=it.trail)])
        self._folded.add(it.url)
        return c


SWEEP_INTERVAL = 1.0  # seconds between looks for sites idle long enough to learn their model


class _SiteModel:
    """A site's model as the store keeps it, with the counts the engine updates."""

    __slots__ = ("fallbacks", "model", "pages", "version")

    def __init__(self, version: int, model: str) -> None:
        self.version, self.model = version, model
        self.pages = self.fallbacks = 0

    def count(self, info: PageInfo | None) -> None:
        self.pages += 1
        self.fallbacks += info is None or info.cluster < 0


def _model_counts(model: str) -> tuple[int, int]:
    """The "pages" and "fallbacks" a model's JSON states at its top level, else (-1, -1)."""
    try:
        d = json.loads(model)
    except ValueError:
        return -1, -1
    if not isinstance(d, dict):
        return -1, -1
    p, f = d.get("pages"), d.get("fallbacks")
    if type(p) is int and type(f) is int and p >= 0 and f >= 0:  # not bool
        return p, f
    return -1, -1


def crawl(store: Store, config: CrawlConfig, spec: PipelineConfig | None = None) -> CrawlStats:
    """Run a crawl to completion (or until a limit or a signal stops it)."""
    return asyncio.run(Crawler(store, config, spec).run())

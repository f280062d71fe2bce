"""The crawl engine: one asyncio loop that starts fetches and records what the decisions make of
them. Fetches run concurrently; everything else happens in the loop's thread, so the store has
one writer.

    seeds -> seeding (fresh, resume, recrawl)                     -> SeedPlan
          -> Scheduler (per-host queues, robots.txt rules, slots, delays, delayed retries)
          -> Fetcher.get(gate=...)                                 (fetch.py, memfetch.py)
          -> triage (retry, skip, fail, unchanged, gone)           -> Outcome, or
             redirect:  admission.Admission.redirect               -> Redirected / Failed
             page:      pagestep.PageStep.take (Analyzer off the loop) -> Stored / NotStored / ...
             list:      discovery.Discovery.read_list              -> ListRead
          -> Recorder.apply (record.py): the one writer of the frontier, stats, budget and store.
    Listeners (progress.TqdmProgress) are told of each page. Nothing is fatal.

Time comes from an injected clock (clock.SystemClock; clock.FakeClock in tests).
"""
from __future__ import annotations

import asyncio
import logging
import random
import signal
from collections.abc import Coroutine, Sequence
from typing import Any, cast

from ..pipeline import PipelineConfig
from ..store import AnyStore as Store  # either backend (SQLite file, PostgreSQL)
from .admission import Admission, Known
from .clock import SystemClock
from .config import CrawlConfig, CrawlStats
from .discovery import Discovery
from .fetch import FetchResult
from .frontier import Item
from .outcome import Failed, FailKind, Skipped, SkipReason
from .pagestep import PageRules, PageStep
from .policy import make_policy, scope_of
from .politeness import Scheduler
from .process import crawl_spec
from .protocols import Analyzer, Clock, CrawlListener, Fetcher, Frontier, SharedFrontier
from .record import Claimed, Fetched, Launched, Recorder, Requeued, SiteLearned
from .robots import agent_token
from .seeding import conditional
from .setup import make_analyzer, make_fetcher, seed_plan
from .sitemaps import Sitemaps
from .sitemodels import SWEEP_INTERVAL, SiteModels
from .triage import FOLLOW, triage
from .urls import Resolver

log = logging.getLogger("blockcrawl.crawl")

MAX_BACKLOG_FACTOR = 4  # fetched pages waiting for analysis: at most this many times --concurrency ...
MAX_BACKLOG_BYTES = 256 * 1024 * 1024  # ... holding at most this many body bytes
CLAIM_INTERVAL = 0.5  # shared frontier: seconds between claim() calls (lease renewal, other workers' links)


class Crawler:
    def __init__(self, store: Store, config: CrawlConfig, spec: PipelineConfig | None = None, *,
                 fetcher: Fetcher | None = None, frontier: Frontier | None = None, clock: Clock | None = None,
                 analyzer: Analyzer | None = None, listeners: Sequence[CrawlListener] | None = None) -> None:
        """fetcher, frontier, clock, analyzer: injected components (protocols.py); by default the
        aiohttp fetcher, the store's frontier (or the shared one config.frontier names), the system
        clock and the page analyser of `spec`. listeners: default a progress bar when config.progress."""
        self.store, self.cfg, self.clock = store, config, clock or SystemClock()
        self.spec = crawl_spec(config, spec)
        self.stats = CrawlStats()
        self.agent = agent_token(config.user_agent)
        self.sched = Scheduler(config.per_host, config.delay, config.robots, self.agent, self.clock)
        if frontier is None and config.frontier is not None:
            from .shared import open_shared
            frontier = open_shared(config, store, self.sched.delay_of)
        self.frontier: Frontier = frontier if frontier is not None else store.frontier()
        # a frontier shared with other worker processes: hosts are leased (protocols.SharedFrontier)
        self._shared = cast(SharedFrontier, self.frontier) if hasattr(self.frontier, "claim") else None
        self.known, self.resolver = Known(), Resolver()
        s = self.spec
        self.models = SiteModels(store.site_models, s.mode == "main" and s.algorithm == "site" and s.extract,
                                 s.learn_seconds)
        self.rec = Recorder(store, self.frontier, self._shared, self.sched, self.known, self.stats, self.models, {},
                            self.clock, only_articles=config.only_articles)
        self._fetcher, self._analyzer, self._listeners = fetcher, analyzer, listeners
        self._inflight: set[asyncio.Task[None]] = set()  # requests and pages being analysed or stored
        # Requests on the wire count against --concurrency; fetched pages waiting for a worker do
        # not (a 5 MB page keeping a worker busy for seconds must not stall every host), but
        # their number and bytes are bounded so that memory stays bounded.
        self._fetching = self._backlog = self._backlog_bytes = 0
        self._wake = asyncio.Event()
        self._stopping: str | None = None
        self._last_commit = self._next_claim = 0.0
        self._set_policy([])

    def _set_policy(self, seeds: list[str]) -> None:
        cfg = self.cfg
        from .addresses import AddressPolicy
        self.policy = make_policy(scope_of(seeds, cfg.scope), max_depth=cfg.max_depth, include=cfg.include,
                                  exclude=cfg.exclude, content_types=cfg.content_types, date_hops=cfg.date_hops,
                                  addresses=AddressPolicy.from_seeds(seeds, cfg.allow_private))
        self.sitemaps = Sitemaps(self.policy, max_files=cfg.max_sitemaps, max_depth=cfg.max_sitemap_depth,
                                 max_urls=cfg.max_sitemap_urls, max_bytes=cfg.max_bytes)
        self.admission = Admission(self.known, self.policy, self.resolver, self.sched.blocks, cfg.max_redirects)

    def _prepare(self) -> None:
        plan = seed_plan(self.cfg, self.frontier, self._shared, self.store, self.clock.time())
        self._set_policy(plan.seeds)
        self.rec.apply(None, None, plan)
        self.store.commit()

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
        self.rec.listeners = self._listeners
        deadline = t0 + self.cfg.max_time if self.cfg.max_time else None
        cfg, st, tally = self.cfg, self.stats, None
        try:
            with self._analyzer or make_analyzer(self.spec, cfg.workers) as analyzer:
                self.analyzer = analyzer
                if self._fetcher is None:
                    self._fetcher, tally = make_fetcher(cfg, self.policy, self.sched)
                self.fetcher: Fetcher = self._fetcher
                async with self.fetcher:
                    self.discovery = Discovery(self.fetcher, self.sched, self.sitemaps, self.admission, self.known,
                                               self.agent, backoff=cfg.backoff, use_sitemaps=cfg.sitemaps)
                    rules = PageRules(cfg.max_depth, cfg.follow_nofollow, cfg.feeds, cfg.only_articles,
                                      self.spec.extract, self.agent)
                    self.pages = PageStep(analyzer, self.admission, self.discovery, self.models, rules,
                                          self.rec.baseline, block_hashes=self.store.block_hashes,
                                          prime=(cfg.resume or self._shared is not None) and not st.recrawl,
                                          send_models=cfg.resume or st.recrawl)
                    await self._loop(deadline)
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            self.rec.finish(tally)
            if self._shared is not None:
                self._shared.release()
            st.elapsed = self.clock.monotonic() - t0
            for listener in self._listeners:
                listener.close(st)
        return st

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

    def _may_launch(self) -> bool:
        """Below --concurrency, the analysis backlog bounds and the --max-pages budget."""
        return (self._fetching < self.cfg.concurrency and self._backlog < MAX_BACKLOG_FACTOR * self.cfg.concurrency
                and self._backlog_bytes < MAX_BACKLOG_BYTES
                and (self.cfg.max_pages is None or self.rec.started < self.cfg.max_pages))

    async def _loop(self, deadline: float | None) -> None:
        sched, clock, shared, models = self.sched, self.clock, self._shared, self.models
        while True:
            now = clock.monotonic()
            if deadline and now >= deadline and not self._stopping:
                self._stopping = "time limit"
            mp = self.cfg.max_pages
            if mp is not None and self.rec.started >= mp and not self._stopping:
                if not self._inflight or self.stats.pages >= mp:
                    self._stopping = "page limit"
            if shared is not None and not self._stopping and now >= self._next_claim:
                self._claim(shared)
            sched.due(shared.holds if shared is not None else None)
            while not self._stopping and self._may_launch():
                turn = sched.take()
                if turn is None:
                    break
                self._launch(turn.host, turn.item, turn.blocked)
            if self._stopping and not self._inflight:
                if self._stopping == "page limit" and self._learn_sites(None):
                    continue  # the pages asked for are in: their sites learn before the end
                self.stats.stopped = "stopped: " + self._stopping
                return
            if not self._inflight and sched.idle() and sched.next_due() is None:
                if self._learn_sites(None):
                    continue
                if shared is None:
                    return  # nothing left anywhere
                self._commit(force=True)
                if shared.finished():
                    return  # nothing left at any worker
                if now >= self._next_claim:
                    continue  # idle: look for work at once
            self._commit()
            waits = []
            if shared is not None and not self._stopping:
                waits.append(self._next_claim - clock.monotonic())
            if models.idle_since and not self._stopping:
                if now >= models.next_sweep:
                    models.next_sweep = now + SWEEP_INTERVAL
                    self._learn_sites(now)
                waits.append(models.next_sweep - clock.monotonic())
            wt = sched.wake_time() if not self._stopping and self._may_launch() else None  # else a task wakes us
            if wt is not None:
                waits.append(wt - clock.monotonic())
            due = sched.next_due()
            if due is not None:
                waits.append(due - clock.time())
            if deadline and not self._stopping:
                waits.append(deadline - clock.monotonic())
            self._wake.clear()
            timeout = min(waits) if waits else None
            if timeout is None or timeout > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=max(timeout, 0.001) if timeout is not None else None)
                except asyncio.TimeoutError:
                    pass
            else:
                await asyncio.sleep(0)

    def _claim(self, shared: SharedFrontier) -> None:
        """Shared frontier: renew leases, queue the work of newly leased hosts and what other workers
        found for ours; a host no longer held is dropped (its new owner fetches it)."""
        self._commit(force=True)  # done marks out first: a host given back has none pending
        self._next_claim = self.clock.monotonic() + CLAIM_INTERVAL
        items, lost = shared.claim()
        for host in lost:
            self.sched.drop(host)
            if hasattr(self, "pages"):
                self.pages.forget(host)
        self.rec.apply(None, None, Claimed(items))

    def _launch(self, host: str, it: Item | None, blocked: bool) -> None:
        if it is None:
            self._fetching += 1
            self._spawn(self._fetch_robots(host))
        elif blocked:
            self.rec.apply(it, None, Skipped(SkipReason.ROBOTS))
            self._wake.set()
        elif self._shared is not None and not self._shared.may_fetch(host):
            # the lease was not renewed lately (this process stalled): another worker may own the
            # host by now, so nothing is sent until the next claim renews it (or finds it lost)
            self.sched.finished(host)
            it.not_before = self.clock.time() + CLAIM_INTERVAL / 2
            self.sched.add(it)
        else:
            self.rec.apply(it, None, Launched())
            self._fetching += 1
            self._spawn(self._fetch_item(host, it))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._inflight.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("internal error: %r", task.exception(), exc_info=task.exception())
        self._wake.set()

    def _commit(self, force: bool = False) -> None:
        now = self.clock.monotonic()
        if force or now - self._last_commit >= self.cfg.commit_interval:
            self.rec.commit()
            self._last_commit = now

    def _learn_sites(self, now: float | None) -> bool:
        """Sites idle for the pipeline's learn_seconds (every site when now is None: the crawl is
        over) learn their model on the pages they collected, one task a site; True when any did."""
        sites = self.models.idle(now)
        for site in sites:
            self._spawn(self._learn_site(site))
        return bool(sites)

    async def _learn_site(self, site: str) -> None:
        try:
            out = await self.analyzer.finish(site)
        except Exception as e:  # a worker lost: the pages stay as stored (auto)
            log.warning("%s: site model not learned at the end of its pages (%r)", site, e)
            return
        if out is not None and (out.model is not None or out.revised):
            log.info("%s: site model learned on its last %d pages", site, len(out.revised))
            self.rec.apply(None, None, SiteLearned(site, out))
            self._wake.set()

    # ------------------------------------------------------------------ one fetch
    async def _fetch_robots(self, host: str) -> None:
        tries: list[FetchResult] = []
        t_start = self.clock.monotonic()
        try:
            await self.discovery.fetch_robots(host, tries)
        finally:
            res = tries[-1] if tries else FetchResult(host + "/robots.txt")
            out = self.discovery.robots_read(host, res, t_start, len(tries), self._stopping is not None)
            self.rec.apply(None, res, out)
            self.sched.finished(host)
            self._fetching -= 1

    async def _fetch_item(self, host: str, it: Item) -> None:
        sched, page = self.sched, it.kind == "page"
        try:
            accept = self.cfg.content_types if page else None
            cond = conditional(self.rec.baseline.get(it.url)) if page and self.rec.baseline else None
            if cond:
                res = await self.fetcher.get(it.target, accept=accept, gate=sched.gate(host), on_sent=sched.sent(host),
                                             headers=cond)
            else:
                res = await self.fetcher.get(it.target, accept=accept, gate=sched.gate(host), on_sent=sched.sent(host))
        except asyncio.CancelledError:
            self.rec.apply(it, None, Requeued())
            raise
        finally:
            sched.finished(host)
            self._fetching -= 1
        self.rec.apply(it, res, Fetched())
        size = len(res.body or b"")
        self._backlog += 1
        self._backlog_bytes += size
        self._wake.set()
        try:
            out = triage(it, res, stored=it.url in self.rec.baseline, probe=it.url in self.known.probes,
                         retries=self.cfg.retries, backoff=self.cfg.backoff, jitter=random.random(),
                         stopping=self._stopping is not None)
            if out == FOLLOW:
                out = self.admission.redirect(it, res.location or "")
            elif isinstance(out, str):
                out = await (self.pages.take(it, res) if page else self.discovery.read_list(it, res))
            self.rec.apply(it, res, out)
        except asyncio.CancelledError:
            self.rec.apply(it, None, Requeued())
            raise
        except Exception as e:  # one bad page never stops the crawl (logged with its traceback)
            log.exception("processing %s failed", it.url)
            self.rec.apply(it, res, Failed(FailKind.INTERNAL, "internal", f"{type(e).__name__}: {e}"))
        finally:
            self._backlog -= 1
            self._backlog_bytes -= size
            self._wake.set()
        self._commit()
        for listener in self._listeners or ():
            listener.tick(self.stats, len(self._inflight), sched.queue_sizes)


def crawl(store: Store, config: CrawlConfig, spec: PipelineConfig | None = None) -> CrawlStats:
    """Run a crawl to completion (or until a limit or a signal stops it)."""
    return asyncio.run(Crawler(store, config, spec).run())

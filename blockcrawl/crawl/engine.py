"""The crawl engine: one asyncio loop that starts fetches and records what the decisions make of
them. Fetches run concurrently; the rest runs in the loop's thread (the store has one writer).

    seeds -> seeding (fresh, resume, recrawl)                     -> SeedPlan
          -> Scheduler (per-host queues, robots.txt rules, slots, delays, delayed retries)
          -> Fetcher.get(gate=...)                                 (fetch.py, memfetch.py)
          -> triage (retry, skip, fail, unchanged, gone)           -> Outcome, or
             redirect:  admission.Admission.redirect               -> Redirected / Failed
             page:      pagestep.PageStep.take (Analyzer off the loop) -> Stored / NotStored / ...
             list:      discovery.Discovery.read_list              -> ListRead
          -> Recorder.apply (record.py): the one writer of the frontier, stats, budget and store.
    Listeners (progress.TqdmProgress) are told of each page. Nothing is fatal. Time comes from an
    injected clock (clock.SystemClock; clock.FakeClock in tests).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from contextlib import suppress
from functools import partial
from typing import Any

from ..pipeline import PipelineConfig
from ..store import AnyStore  # either backend (SQLite file, PostgreSQL)
from . import setup
from .admission import Admission, Known
from .clock import SystemClock
from .config import CrawlConfig, CrawlStats
from .frontier import Item
from .health import HostHealth
from .outcome import Answered, Claimed, Failed, FailKind, Launched, Requeued, Skipped, SkipReason
from .politeness import Scheduler
from .process import crawl_spec
from .protocols import Analyzer, Clock, CrawlListener, Fetcher, Frontier, SharedFrontier
from .record import Recorder
from .robots import agent_token
from .seeding import conditional
from .sitemodels import SWEEP_INTERVAL
from .urls import Resolver

log = logging.getLogger("blockcrawl.crawl")

MAX_BACKLOG_FACTOR = 4  # fetched pages waiting for analysis: at most this many times --concurrency ...
MAX_BACKLOG_BYTES = 256 * 1024 * 1024  # ... holding at most this many body bytes
STOP_GRACE = 1.0  # seconds in-flight work may finish after --max-time or Ctrl-C before it is cancelled
CLAIM_INTERVAL = 0.5  # shared frontier: seconds between claim() calls (lease renewal, other workers' links)


class Crawler:
    def __init__(self, store: AnyStore, config: CrawlConfig, spec: PipelineConfig | None = None, *,
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
        # a frontier shared with other worker processes: hosts are leased (protocols.SharedFrontier)
        self.frontier, self._shared = setup.open_frontier(config, store, frontier, self.sched.delay_of)
        self.known, self.resolver, self.models = Known(), Resolver(), setup.site_models(self.spec, store)
        self.rec = Recorder(store, self.frontier, self._shared, self.sched, self.known, self.stats, self.models, {},
                            self.clock, only_articles=config.only_articles, health=HostHealth(config.backoff))
        self._fetcher, self._analyzer, self._listeners = fetcher, analyzer, listeners
        self._inflight: set[asyncio.Task[None]] = set()  # requests and pages being analysed or stored
        # Requests on the wire count against --concurrency; fetched pages waiting for a worker do not (a
        # 5 MB page keeping a worker busy for seconds must not stall every host) but are bounded too.
        self._fetching = self._backlog = self._backlog_bytes = 0
        self._wake = asyncio.Event()
        self._stopping: str | None = None  # why no new request starts
        self._stop_at = 0.0  # when the stop began (monotonic)
        self._stopped = "done"  # how the run ended (CrawlStats.stopped)
        self._last_commit = self._next_claim = 0.0

    def _prepare(self) -> None:
        """The seed plan, the URL policy of its seeds, and the sitemap bounds and link admission under it."""
        plan = setup.seed_plan(self.cfg, self.frontier, self._shared, self.store, self.clock.time())
        self.policy, self.sitemaps = setup.make_policy_for(self.cfg, plan.seeds)
        self.admission = Admission(self.known, self.policy, self.resolver, self.sched.blocks, self.cfg.max_redirects)
        self.rec.apply(None, None, plan)
        self.store.commit()

    # ------------------------------------------------------------------ main loop
    async def run(self) -> CrawlStats:
        t0 = self.clock.monotonic()
        self._prepare()
        ls = self._listeners
        self.rec.listeners = self._listeners = setup.default_listeners(self.cfg.progress) if ls is None else ls
        deadline = t0 + self.cfg.max_time if self.cfg.max_time else None
        cfg, st, tally = self.cfg, self.stats, None
        try:
            with setup.signals(self.stop), self._analyzer or setup.make_analyzer(cfg, self.spec) as analyzer:
                self.analyzer = analyzer
                if self._fetcher is None:
                    self._fetcher, tally = setup.make_fetcher(cfg, self.policy, self.sched)
                self.fetcher: Fetcher = self._fetcher
                async with self.fetcher:
                    self.discovery, self.pages = setup.make_steps(
                        cfg, self.spec, self.fetcher, analyzer, self.sched, self.sitemaps, self.admission, self.known,
                        self.models, self.rec.baseline, self.store, self.clock, self._shared is not None, st.recrawl)
                    await self._loop(deadline)
        finally:
            self.rec.finish(tally, self._stopped, self.clock.monotonic() - t0)
            if self._shared is not None:
                self._shared.release()
            for listener in self._listeners:
                listener.close(st)
        return st

    def stop(self, reason: str = "interrupted") -> None:
        """Graceful stop: no new requests; in-flight ones finish. A second call cancels them
        (their URLs stay in the frontier and are fetched by --resume)."""
        if self._stopping is None:
            self._stopping, self._stop_at = reason, self.clock.monotonic()
            log.warning("stopping (%s): waiting for %d requests in flight", reason, len(self._inflight))
        else:
            self._cancel_inflight()
        self._wake.set()

    def _cancel_inflight(self) -> None:
        """Hard stop: in-flight work is cancelled, its URLs requeued (--resume), none failed."""
        for t in list(self._inflight):
            t.cancel()

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
                self._stopping, self._stop_at = "time limit", now
            grace = self._stopping in ("time limit", "interrupted") and self._inflight
            if grace and now >= self._stop_at + STOP_GRACE:
                # --max-time and Ctrl-C hold within a second whatever is in flight (a 14 s page, a slow server)
                self._cancel_inflight()
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
                self._stopped = "stopped: " + self._stopping
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
            live = not self._stopping
            if live and models.idle_since and now >= models.next_sweep:
                models.next_sweep = now + SWEEP_INTERVAL
                self._learn_sites(now)
            wt = sched.wake_time() if live and self._may_launch() else None  # else a finishing task wakes us
            mono, due = clock.monotonic(), sched.next_due()
            waits = [t - mono for t in (self._next_claim if live and shared is not None else None,
                                        models.next_sweep if live and models.idle_since else None,
                                        wt, deadline if live else None) if t is not None]
            if due is not None:
                waits.append(due - clock.time())
            if grace:
                waits.append(self._stop_at + STOP_GRACE - mono)
            self._wake.clear()
            timeout = min(waits) if waits else None
            if timeout is not None and timeout <= 0:
                await asyncio.sleep(0)
            else:
                with suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=None if timeout is None else max(timeout, 0.001))

    def _claim(self, shared: SharedFrontier) -> None:
        """Shared frontier: renew leases, take new work; a host no longer held is dropped (its owner has it)."""
        self._commit(force=True)  # done marks out first: a host given back has none pending
        self._next_claim = self.clock.monotonic() + CLAIM_INTERVAL
        items, lost = shared.claim()
        for host in lost:
            self.sched.drop(host)
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
        out = await self.pages.finish_site(site)
        if out is not None:
            self.rec.apply(None, None, out)
            self._wake.set()

    # ------------------------------------------------------------------ one fetch
    async def _fetch_robots(self, host: str) -> None:
        try:
            await self.discovery.robots(host, lambda: self._stopping is not None, partial(self.rec.apply, None))
        finally:
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
        self.rec.apply(it, res, Answered())
        size = len(res.body or b"")
        self._backlog += 1
        self._backlog_bytes += size
        self._wake.set()
        try:
            self.rec.apply(it, res, await self.pages.outcome(it, res, self._stopping is not None))
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


def crawl(store: AnyStore, config: CrawlConfig, spec: PipelineConfig | None = None) -> CrawlStats:
    """Run a crawl to completion (or until a limit or a signal stops it)."""
    return asyncio.run(Crawler(store, config, spec).run())

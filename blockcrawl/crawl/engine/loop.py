"""The crawl engine: one asyncio loop that starts fetches and records what the decisions make of
them (fetches run concurrently; the rest in the loop's thread, so the store has one writer).

    Scheduler.take -> Fetcher.get -> Recorder.apply(Answered) -> PageStep.outcome (triage.py, then
    admission.py, pagestep.py or discovery.py) -> Recorder.apply(outcome), the one writer of the
    frontier, stats, budget and store. docs/crawling.md has the components; time is a Clock.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from ...errors import StoreError
from ...pipeline import PipelineConfig
from ...store import AnyStore  # either backend (SQLite file, PostgreSQL)
from ..analysis.process import crawl_spec
from ..config import CrawlConfig, CrawlStats, finished
from ..decisions.admission import Admission, Known
from ..decisions.outcome import Answered, Claimed, Failed, FailKind, Launched, Requeued, Skipped, SkipReason
from ..decisions.seeding import conditional_get
from ..decisions.sitemodels import SWEEP_INTERVAL
from ..frontier import Item
from ..net.credentials import redact
from ..protocols import Analyzer, Clock, CrawlListener, Fetcher, Frontier, SharedFrontier
from ..sources.robots import agent_token
from ..urls import Resolver
from . import setup
from .clock import SystemClock
from .context import CrawlContext
from .pacing import CLAIM_INTERVAL, STOP_GRACE, may_launch, nap, wait_time
from .politeness import Scheduler
from .record import Recorder

log = logging.getLogger("blockcrawl.crawl")


class Crawler:
    def __init__(self, store: AnyStore, config: CrawlConfig, spec: PipelineConfig | None = None, *,
                 fetcher: Fetcher | None = None, frontier: Frontier | None = None, clock: Clock | None = None,
                 analyzer: Analyzer | None = None, listeners: Sequence[CrawlListener] | None = None) -> None:
        """Injected components (protocols.py); by default the aiohttp fetcher, the store's frontier (or
        the shared one config.frontier names), the system clock, `spec`'s analyser, a progress bar."""
        self.store, self.cfg, self.clock = store, config, clock or SystemClock()
        self.spec = crawl_spec(config, spec)
        self.stats = CrawlStats()
        self.agent = agent_token(config.user_agent)
        self.sched = Scheduler(config.per_host, config.delay, config.robots, self.agent, self.clock)
        # a frontier shared with other worker processes: hosts are leased (protocols.SharedFrontier)
        self.frontier, self._shared = setup.open_frontier(config, store, frontier, self.sched.delay_of)
        self.known, self.resolver, self.models = Known(), Resolver(), setup.site_models(self.spec, store)
        self.ctx = CrawlContext(config, self.spec, store, self.frontier, self._shared, self.clock, self.stats,
                                self.sched, self.known, self.models, {}, self.agent)
        self.rec = Recorder(self.ctx)
        self._fetcher, self._analyzer, self._listeners = fetcher, analyzer, listeners
        self._inflight: set[asyncio.Task[None]] = set()  # requests and pages being analysed or stored
        self._fetching = self._backlog = self._backlog_bytes = 0  # on the wire; fetched, not analysed
        self._wake = asyncio.Event()
        self._stopping: str | None = None  # why no new request starts
        self._stop_at = 0.0  # when the stop began (monotonic)
        self._fatal: StoreError | None = None  # the store refused a write: the crawl stops with it
        self._stopped, self._last_commit, self._next_claim = "done", 0.0, 0.0  # how the run ended (CrawlStats.stopped)

    # ------------------------------------------------------------------ main loop
    async def run(self) -> CrawlStats:
        t0 = self.clock.monotonic()  # the seed plan, the URL policy of its seeds, sitemap bounds, admission
        plan = setup.seed_plan(self.cfg, self.frontier, self._shared, self.store, self.clock.time())
        self.policy, self.sitemaps = setup.make_policy_for(self.cfg, plan.seeds)
        self.admission = Admission(self.known, self.policy, self.resolver, self.sched.blocks, self.cfg.max_redirects)
        cfg, st, tally = self.cfg, self.stats, None
        st.crawl_id = self.store.begin_crawl(resume=cfg.resume)  # the change log's run, with the seed plan
        self.rec.apply(None, None, plan)
        self.store.commit()
        ls = self._listeners
        self.rec.listeners = self._listeners = setup.default_listeners(self.cfg.progress) if ls is None else ls
        deadline = t0 + self.cfg.max_time if self.cfg.max_time else None
        try:
            with setup.signals(self.stop), self._analyzer or setup.make_analyzer(cfg, self.spec) as analyzer:
                self.analyzer = analyzer
                if self._fetcher is None:
                    self._fetcher, tally = setup.make_fetcher(cfg, self.policy, self.sched)
                self.fetcher: Fetcher = self._fetcher
                async with self.fetcher, self._store_guard():
                    self.discovery, self.pages = setup.make_steps(self.ctx, self.fetcher, analyzer, self.sitemaps,
                                                                  self.admission, self.rec.apply)
                    await self._loop(deadline)
        finally:
            self.rec.finish(tally, self._stopped, self.clock.monotonic() - t0, after_error=self._fatal is not None)
            if self._shared is not None:
                self._shared.release()
            for listener in self._listeners:
                listener.close(st)
        if self._fatal is not None:
            raise self._fatal
        st.finished = finished(st.stopped) and self.store.finish_crawl() is not None
        return st

    @asynccontextmanager
    async def _store_guard(self) -> AsyncIterator[None]:
        """A store refusing a write stops the crawl; nothing runs on when the fetcher closes."""
        try:
            yield
        except StoreError as e:
            self._store_failed(e)
        finally:
            if self._inflight:
                self._cancel_inflight()
                await asyncio.gather(*self._inflight, return_exceptions=True)

    def _store_failed(self, e: StoreError) -> None:
        """Disk full, file read-only: stop at once, nothing in flight failed (--resume), one line."""
        if self._fatal is None:
            self._fatal = e
            log.error("stopping: the store cannot be written: %s", e)
        self._stopping = self._stopping or "store error"
        self._cancel_inflight(but=asyncio.current_task())

    def stop(self, reason: str = "interrupted") -> None:
        """Graceful stop: no new requests; in-flight ones finish. A second call cancels them
        (their URLs stay in the frontier and are fetched by --resume)."""
        if self._stopping is None:
            self._stopping, self._stop_at = reason, self.clock.monotonic()
            log.warning("stopping (%s): waiting for %d requests in flight", reason, len(self._inflight))
        else:
            self._cancel_inflight()
        self._wake.set()

    def _cancel_inflight(self, but: object = None) -> None:
        """Hard stop: in-flight work is cancelled, its URLs requeued (--resume), none failed."""
        for t in list(self._inflight):
            if t is not but:
                t.cancel()
        self._wake.set()

    def _may_launch(self) -> bool:
        c = self.cfg
        return may_launch(self._fetching, self._backlog, self._backlog_bytes, c.concurrency, self.rec.started, c.max_pages)

    async def _loop(self, deadline: float | None) -> None:
        sched, clock, shared, models = self.sched, self.clock, self._shared, self.models
        while True:
            now = clock.monotonic()
            if deadline and now >= deadline and not self._stopping:
                self._stopping, self._stop_at = "time limit", now
            grace = self._stopping in ("time limit", "interrupted") and self._inflight
            if grace and now >= self._stop_at + STOP_GRACE:
                self._cancel_inflight()
            if not self._stopping and self.rec.budget_spent(self.cfg.max_pages, bool(self._inflight)):
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
                if self._learn_sites(None) or self.rec.queues.refill():
                    continue  # sites learned; or URLs that spilled past max_queued read back
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
            timeout = wait_time(clock.monotonic(), clock.time(), (
                self._next_claim if live and shared is not None else None,
                models.next_sweep if live and models.idle_since else None, wt, deadline if live else None,
                self._stop_at + STOP_GRACE if grace else None), sched.next_due())
            self._wake.clear()
            await nap(self._wake, timeout)

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
        exc = None if task.cancelled() else task.exception()
        if isinstance(exc, StoreError):
            self._store_failed(exc)
        elif exc is not None:
            log.error("internal error: %r", exc, exc_info=exc)
        self._wake.set()

    def _commit(self, force: bool = False) -> None:
        now = self.clock.monotonic()
        if self._fatal is None and (force or now - self._last_commit >= self.cfg.commit_interval):
            try:
                self.rec.commit()
            except StoreError as e:
                self._store_failed(e)
            self._last_commit = now

    def _learn_sites(self, now: float | None) -> bool:
        """Idle sites (all when now is None) learn on the pages they collected; True when any did."""
        for site in (sites := self.models.idle(now)):
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
            res = await conditional_get(self.fetcher, it, self.cfg.content_types if page else None, sched.gate(host),
                                        sched.sent(host), self.rec.baseline.get(it.url) if page else None)
        except asyncio.CancelledError:
            self.rec.apply(it, None, Requeued())
            raise
        finally:
            sched.finished(host)
            self._fetching -= 1
        self.rec.apply(it, res, Answered())
        size = len(res.body or b"")
        self._backlog, self._backlog_bytes = self._backlog + 1, self._backlog_bytes + size
        self._wake.set()
        try:
            self.rec.apply(it, res, await self.pages.outcome(it, res, self._stopping is not None))
        except asyncio.CancelledError:
            self.rec.apply(it, None, Requeued())
            raise
        except StoreError as e:  # the store is full or gone: the crawl stops, the URL is kept
            return self._store_failed(e)
        except Exception as e:  # one bad page never stops the crawl (logged with its traceback)
            log.exception("processing %s failed", it.url)
            try:
                why = redact(f"{type(e).__name__}: {e}", [])  # no URL's userinfo to the store
                self.rec.apply(it, res, Failed(FailKind.INTERNAL, "internal", why))
            except StoreError as e2:
                return self._store_failed(e2)
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

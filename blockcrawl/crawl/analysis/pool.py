"""The engine side of page analysis (process.py is the worker side): PoolAnalyzer, the default
protocols.Analyzer, runs process.analyse in worker processes (or one thread), a site pinned to one
worker, and replaces a worker stuck on one page."""
from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
import time
from collections import deque
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ...pipeline import PipelineConfig
from ..config import DEFAULT_ANALYSIS_TIMEOUT
from ..engine.pacing import STOP_GRACE  # a worker busy when the crawl ends gets the same grace as in-flight work
from .process import PageOut, analyse, finish, init_state, load_model, prime

# Seconds one page's analysis may take in a worker process before the engine kills the worker,
# starts a new one and records the page as failed ("too complex"). The slowest of 2,000 fuzzed
# pages took 0.76 s and a 5 MB page a few seconds; a page with 40k attributes on one element
# took 14 s in lexbor before the attribute cap (parse/build.py). 30 s leaves real pages alone on
# a loaded machine and still bounds what a hostile page can hold a worker for.
log = logging.getLogger("blockcrawl.crawl")

ANALYSIS_TIMEOUT = DEFAULT_ANALYSIS_TIMEOUT
TOO_COMPLEX = "too complex"

# What one analysis process is counted to need: ~60 MB resident once started (measured: VmRSS of a
# warm worker), plus the DOM, blocks and chunks of a page of up to 10 MiB being analysed.
PROCESS_BYTES = 160 * 2**20


def processes_for(requested: int, cpus: int, memory: int | None, per_process: int = PROCESS_BYTES) -> int:
    """How many analysis processes to start when `requested` are asked for: no more than the CPUs
    (analysis is CPU-bound; more processes only contend and cost memory), no more than the
    available memory holds at `per_process` bytes each (unknown memory: no memory bound), and at
    least one when any was asked for (0 stays 0: one thread of the crawler process)."""
    if requested <= 0:
        return 0
    n = min(requested, max(1, cpus))
    if memory is not None:
        n = min(n, memory // max(1, per_process))
    return max(1, n)


class PoolAnalyzer:
    """The default protocols.Analyzer: runs `analyse` in worker processes (or one thread with workers=0), a site pinned to one
    worker. In process mode a page over `timeout` seconds gets its worker killed and replaced
    (the sites pinned to it lose their dedup state: their next pages start a fresh pipeline);
    with a thread nothing can be killed, so no limit is enforced there."""

    def __init__(self, spec: PipelineConfig, workers: int = 0, timeout: float = ANALYSIS_TIMEOUT) -> None:
        self.spec, self.workers, self.timeout = spec, workers, timeout
        self._pools: list[Executor] = []
        self._pin: dict[str, int] = {}
        self._queues: dict[int, deque[list[Any]]] = {}  # per process pool: its jobs (_track)
        self._warm: dict[int, Future[int]] = {}  # per process pool: its start-up job

    def __enter__(self) -> PoolAnalyzer:
        if self.workers <= 0:
            init_state(self.spec)
            self._pools = [ThreadPoolExecutor(1, thread_name_prefix="blockcrawl-analyse")]
        else:
            from ...limits import available_cpus, available_memory

            n = processes_for(self.workers, available_cpus(), available_memory())
            if n < self.workers:
                log.warning("starting %d analysis processes, not %d: what this machine's CPUs and free "
                            "memory hold", n, self.workers)
            self._pools = [self._new_pool() for _ in range(n)]
        return self

    def _new_pool(self) -> ProcessPoolExecutor:
        from ..._worker import init

        ctx = multiprocessing.get_context("spawn")
        # the config goes pickled: the worker unpickles it after tying itself to our life
        args = (os.getpid(), pickle.dumps(self.spec))
        pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=init, initargs=args)
        # start the worker now (spawn + imports: ~1-2 s) rather than on the first page, so that a
        # page's time limit never includes the worker's start
        self._warm[id(pool)] = pool.submit(os.getpid)
        return pool

    def __exit__(self, *exc: object) -> None:
        """Stop at once: queued jobs are cancelled and a worker still busy (a crawl stopped by
        --max-time or Ctrl-C while a page was being analysed) is killed, not waited for."""
        for p in self._pools:
            if isinstance(p, ProcessPoolExecutor):
                _kill(p, grace=STOP_GRACE)
            else:
                p.shutdown(wait=True, cancel_futures=True)

    def _pool(self, site: str) -> Executor:
        i = self._pin.get(site)
        if i is None:  # least-loaded worker by sites pinned (sites arrive in crawl order)
            counts = [0] * len(self._pools)
            for j in self._pin.values():
                counts[j] += 1
            i = self._pin[site] = counts.index(min(counts))
        return self._pools[i]

    async def prime(self, site: str, pairs: list[tuple[str, str]]) -> None:
        if pairs:
            await asyncio.get_running_loop().run_in_executor(self._pool(site), prime, site, pairs)

    async def load_model(self, site: str, model: str) -> bool:
        return await asyncio.get_running_loop().run_in_executor(self._pool(site), load_model, site, model)

    async def analyse(self, site: str, body: bytes, url: str, content_type: str | None, links: bool,
                      extract: bool | None = None) -> PageOut:
        loop = asyncio.get_running_loop()
        for attempt in range(2):
            pool = self._pool(site)
            warm = self._warm.pop(id(pool), None)
            if warm is not None and not warm.done():
                await asyncio.wrap_future(warm)  # the worker is still starting
            fut = loop.run_in_executor(pool, analyse, site, body, url, content_type, links, extract)
            if not isinstance(pool, ProcessPoolExecutor):
                return await fut
            job = self._track(pool, fut)
            try:
                while True:
                    # the clock of a page starts when its worker takes it up (the jobs ahead of
                    # it in that worker's queue done), not when it was handed over
                    await asyncio.wait({fut}, timeout=self.timeout)
                    if fut.done():
                        return fut.result()
                    if job[1] is not None and loop.time() - job[1] >= self.timeout:
                        self._replace(pool)
                        return PageOut("", "", url, [], error=f"analysis over {self.timeout:g} s, worker replaced",
                                       error_kind=TOO_COMPLEX)
            except BrokenProcessPool:
                # the worker was killed for another site's page while this one waited for it
                if attempt:
                    raise
            finally:
                if not fut.done():
                    fut.cancel()
                elif not fut.cancelled():
                    fut.exception()  # retrieved: a worker killed at the end is no news
        raise AssertionError("unreachable")

    async def finish(self, site: str) -> PageOut | None:
        if site not in self._pin:
            return None
        return await asyncio.get_running_loop().run_in_executor(self._pool(site), finish, site)

    def _track(self, pool: Executor, fut: asyncio.Future[Any]) -> list[Any]:
        """Queue bookkeeping of one worker: [future, start] entries in submission order; the
        head's start is when the job before it ended (the worker runs one job at a time)."""
        q = self._queues.setdefault(id(pool), deque())
        loop = asyncio.get_running_loop()
        job: list[Any] = [fut, loop.time() if not q else None]
        q.append(job)

        def done(_: object) -> None:
            if q and q[0] is job:
                q.popleft()
                if q:
                    q[0][1] = loop.time()
            elif job in q:
                q.remove(job)
        fut.add_done_callback(done)
        return job

    def _replace(self, pool: ProcessPoolExecutor) -> None:
        """Kill a worker stuck on one page and put a fresh one in its place."""
        _kill(pool)
        self._queues.pop(id(pool), None)
        self._pools = [self._new_pool() if p is pool else p for p in self._pools]


def _kill(pool: ProcessPoolExecutor, grace: float = 0.0) -> None:
    """Stop a pool's worker: queued jobs are cancelled, the worker gets `grace` seconds to end its
    job and exit, then is killed. The grace matters: a worker killed while it writes its result
    leaves half a message in the pipe, and the pool's manager thread then waits for the rest
    forever - and the interpreter waits for that thread at exit (seen: 1 run in 3 of a crawl
    stopped by a full disk never ended). A worker stuck on one page is computing, not writing."""
    procs = list(getattr(pool, "_processes", {}).values())  # no public way to reach them
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + grace
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(1.0)



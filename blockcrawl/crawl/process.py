"""Page analysis off the event loop: parse once, take the links, run the site's SitePipeline.

The pipeline is CPU work (a 5 MB page takes seconds to chunk), and the event loop must keep
answering sockets meanwhile, or requests in flight time out. So pages are analysed in worker
processes (--workers N) or, with --workers 0, in one background thread. Each site is pinned to
one worker, which holds its SitePipeline: pages of a site are processed in the order they were
fetched and its dedup state stays in one place.
"""
from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
import pickle
import time
from collections import deque
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from ..extraction.api import DEFAULT_MAX_BYTES, raw_body
from ..extraction.pdf import is_pdf
from ..pipeline import PageResult, PipelineConfig, SitePipeline
from ..records import Block, Chunk, PageInfo
from .config import DEFAULT_ANALYSIS_TIMEOUT
from .links import PageSignals

# The crawl's pipeline description is the shared PipelineConfig (frozen, slotted, picklable: each
# worker process builds its own SitePipeline per site from it). PipelineSpec is its old name.
PipelineSpec = PipelineConfig
# What a crawl stores when given no config: the main content by the default algorithm.
CRAWL_DEFAULT = PipelineConfig(mode="main")


@dataclass(slots=True)
class PageOut:
    title: str
    content_hash: str
    base: str  # URL relative links resolve against (<base href> or the page)
    hrefs: list[str]
    blocks: list[Block] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    duplicates: int = 0
    markdown: str = ""  # the main content as Markdown (extraction.markdown), stored with the page
    error: str | None = None  # why nothing is stored (a PDF encrypted, broken, too long): one log line
    error_kind: str = "pdf"  # the failure's kind in the frontier and the crawl summary
    signals: PageSignals = PageSignals()  # meta robots, canonical, feeds, rel=nofollow links (links.scan)
    info: PageInfo | None = None  # metadata, kind, summary, main text (PageResult.info)
    # site learning: earlier pages of the site re-processed with a newly learned model (stored
    # over the old ones), and the model's JSON to save in the store (PageResult.revised, .model)
    revised: list[PageOut] = field(default_factory=list)
    model: str | None = None
    url: str | None = None  # a revised page's URL (as fetched); None on the page analysed itself


# --------------------------------------------------------------------------- worker side
_PIPES: dict[str, SitePipeline] = {}
_SPEC: PipelineConfig | None = None


def init_state(spec: PipelineConfig) -> None:
    """Set the process's (or the analysis thread's) config; sites get pipelines on first page.
    Worker processes come here from blockcrawl._worker.init, which first ties them to the
    crawler's life."""
    global _SPEC
    _SPEC = spec
    _PIPES.clear()


def _pipe(site: str) -> SitePipeline:
    p = _PIPES.get(site)
    if p is None:
        assert _SPEC is not None
        p = _PIPES[site] = SitePipeline(_SPEC)
    return p


def prime(site: str, pairs: list[tuple[str, str]]) -> int:
    """Feed a site's dedup state with blocks stored before (resume)."""
    d = _pipe(site).deduper
    if d is not None:
        for i in range(0, len(pairs), 1000):
            d.seen_many(pairs[i:i + 1000])
    return len(pairs)


def load_model(site: str, model: str) -> bool:
    """Give a site's pipeline the model stored by an earlier run (resume); False when the
    pipeline cannot take one (an algorithm without site learning)."""
    fn = getattr(_pipe(site), "load_model", None)
    if fn is None:
        return False
    fn(model)
    return True


def finish(site: str) -> PageOut | None:
    """The site has no more pages for now: its pipeline learns a site model on the pages it
    collected, if it still collects (SitePipeline.finish); the revised pages and the model
    come back as a PageOut carrying only those."""
    p = _PIPES.get(site)
    res = p.finish(markdown=True) if p is not None else None
    return None if res is None else page_out(res, "", [])


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def page_out(res: PageResult, base: str, hrefs: list[str], signals: PageSignals | None = None) -> PageOut:
    """The pipeline's result as the engine gets it: the page's info, the earlier pages it revised
    (each with its URL, no links: those were followed when it was first analysed) and the model.
    A result without info (a PDF; a pipeline that makes none) gets one with its text alone, so
    that every page stored by an extracting crawl has its main text in the store."""
    revised = [PageOut(r.title, _digest(r.text), r.url or "", [], r.blocks, r.chunks, r.duplicates, r.markdown,
                       info=_info(r), url=r.url) for r in res.revised if r.url]
    return PageOut(res.title, _digest(res.text), base, hrefs, res.blocks, res.chunks, res.duplicates, res.markdown,
                   signals=signals or PageSignals(), info=_info(res), revised=revised, model=res.model)


def _info(res: PageResult) -> PageInfo:
    return res.info if res.info is not None else PageInfo(text=res.text)


def analyse(site: str, body: bytes, url: str, content_type: str | None, links: bool,
            extract: bool | None = None) -> PageOut:
    """extract (realweb): None, the pipeline runs unless the page will not be stored (meta robots
    noindex, or a canonical URL elsewhere on its host: links.canonical_elsewhere), so such a page
    neither costs the pipeline's time nor marks its blocks as seen for the site's dedup (the
    canonical page would then be stored without them); True: always; False: never."""
    from ..parse import load
    from .links import base_url, canonical_elsewhere, scan
    # a gzip file served as HTML without Content-Encoding: inflated (extraction.api.raw_body)
    body = raw_body(body, _SPEC.max_bytes if _SPEC is not None else DEFAULT_MAX_BYTES)
    if is_pdf(content_type, body):
        return _analyse_pdf(site, body, url)
    dom = load(body, url, content_type)
    # realweb: one pass for links and the page's signals (canonical is needed even at max depth)
    base = base_url(dom, url)
    hrefs, signals = scan(dom)
    if not links:
        hrefs, signals = [], signals.replace_links()
    if extract is None:
        extract = not (signals.noindex or canonical_elsewhere(url, base, signals.canonical))
    if (_SPEC is not None and not _SPEC.extract) or not extract:
        title = dom.title()
        return PageOut(title, hashlib.blake2b(body, digest_size=16).hexdigest(), base, hrefs, signals=signals)
    return page_out(_pipe(site).process_dom(dom, markdown=True), base, hrefs, signals)


def _analyse_pdf(site: str, body: bytes, url: str) -> PageOut:
    """A PDF (extraction.pdf): blocks with page numbers in their heading paths, no links. One that
    cannot be read comes back with error set: the crawler logs it and stores nothing."""
    from ..extraction.pdf import PdfError, pdf_blocks

    if _SPEC is not None and not _SPEC.extract:
        return PageOut("", hashlib.blake2b(body, digest_size=16).hexdigest(), url, [])
    try:
        title, blocks = pdf_blocks(body, url, max_chars=_SPEC.max_bytes if _SPEC is not None else DEFAULT_MAX_BYTES,
                                   full_path=_SPEC.full_path if _SPEC is not None else False)
    except PdfError as e:
        return PageOut("", "", url, [], error=str(e))
    except ImportError as e:  # pypdf missing from the environment
        return PageOut("", "", url, [], error=f"PDF support not installed ({e})")
    return page_out(_pipe(site).process_blocks(blocks, url, title, markdown=True), url, [])


# --------------------------------------------------------------------------- engine side
# Seconds one page's analysis may take in a worker process before the engine kills the worker,
# starts a new one and records the page as failed ("too complex"). The slowest of 2,000 fuzzed
# pages took 0.76 s and a 5 MB page a few seconds; a page with 40k attributes on one element
# took 14 s in lexbor before the attribute cap (parse/dom.py). 30 s leaves real pages alone on
# a loaded machine and still bounds what a hostile page can hold a worker for.
ANALYSIS_TIMEOUT = DEFAULT_ANALYSIS_TIMEOUT
TOO_COMPLEX = "too complex"
STOP_GRACE = 1.0  # seconds a worker may finish its page when the crawl ends before it is killed


class Analyzer:
    """Runs `analyse` in worker processes (or one thread with workers=0), a site pinned to one
    worker. In process mode a page over `timeout` seconds gets its worker killed and replaced
    (the sites pinned to it lose their dedup state: their next pages start a fresh pipeline);
    with a thread nothing can be killed, so no limit is enforced there."""

    def __init__(self, spec: PipelineConfig, workers: int = 0, timeout: float = ANALYSIS_TIMEOUT) -> None:
        self.spec, self.workers, self.timeout = spec, workers, timeout
        self._pools: list[Executor] = []
        self._pin: dict[str, int] = {}
        self._queues: dict[int, deque[list[Any]]] = {}  # per process pool: its jobs (_track)
        self._warm: dict[int, Future[int]] = {}  # per process pool: its start-up job

    def __enter__(self) -> Analyzer:
        if self.workers <= 0:
            init_state(self.spec)
            self._pools = [ThreadPoolExecutor(1, thread_name_prefix="blockcrawl-analyse")]
        else:
            self._pools = [self._new_pool() for _ in range(self.workers)]
        return self

    def _new_pool(self) -> ProcessPoolExecutor:
        from .._worker import init

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



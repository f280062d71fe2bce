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
import signal
import threading
import time
import zlib
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field

from ..pipeline import SitePipeline
from ..records import Block, Chunk


@dataclass(frozen=True)
class PipelineSpec:
    """How to build a site's pipeline; picklable, so worker processes can build their own."""

    chunk_size: int = 200
    overlap: int = 40
    tokenizer: str = "model"
    dedup: bool = True
    algorithm: str = "all"
    extract: bool = True  # False: parse for links and title only (no blocks)

    def build(self) -> SitePipeline:
        from ..chunk import get_tokenizer
        from ..extraction.registry import page_selector
        return SitePipeline(chunk_size=self.chunk_size, overlap=self.overlap,
                            tokenizer=_tokenizer(self.tokenizer, get_tokenizer),
                            dedup=self.dedup, selector=page_selector(self.algorithm, for_blocks=True))


_TOKENIZERS: dict = {}


def _tokenizer(name: str, get):  # one tokenizer per process, shared by its sites
    if name not in _TOKENIZERS:
        _TOKENIZERS[name] = get(name)
    return _TOKENIZERS[name]


@dataclass(slots=True)
class PageOut:
    title: str
    content_hash: str
    base: str  # URL relative links resolve against (<base href> or the page)
    hrefs: list[str]
    blocks: list[Block] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    duplicates: int = 0


# --------------------------------------------------------------------------- worker side
_PIPES: dict[str, SitePipeline] = {}
_SPEC: PipelineSpec | None = None


def _init_worker(spec: PipelineSpec) -> None:
    global _SPEC
    _SPEC = spec
    # Ctrl-C goes to the whole process group; the engine decides how to stop, not the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # if the crawler is killed (kill -9), its workers must not linger: watch the parent
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)
    threading.Thread(target=watch, daemon=True, name="blockcrawl-parent-watch").start()


def _pipe(site: str) -> SitePipeline:
    p = _PIPES.get(site)
    if p is None:
        assert _SPEC is not None
        p = _PIPES[site] = _SPEC.build()
    return p


def prime(site: str, pairs: list[tuple[str, str]]) -> int:
    """Feed a site's dedup state with blocks stored before (resume)."""
    d = _pipe(site).deduper
    if d is not None:
        for i in range(0, len(pairs), 1000):
            d.seen_many(pairs[i:i + 1000])
    return len(pairs)


def analyse(site: str, body: bytes, url: str, content_type: str | None, links: bool) -> PageOut:
    from ..parse import load
    from .links import base_url, raw_links
    if body[:2] == b"\x1f\x8b":  # a gzip file served as HTML without Content-Encoding
        try:
            body = zlib.decompressobj(47).decompress(body, 50 * 1024 * 1024)
        except zlib.error:
            pass
    dom = load(body, url, content_type)
    base = base_url(dom, url) if links else url
    hrefs = raw_links(dom) if links else []
    if _SPEC is not None and not _SPEC.extract:
        title = dom.title()
        return PageOut(title, hashlib.blake2b(body, digest_size=16).hexdigest(), base, hrefs)
    res = _pipe(site).process_dom(dom)
    digest = hashlib.blake2b(res.text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return PageOut(res.title, digest, base, hrefs, res.blocks, res.chunks, res.duplicates)


# --------------------------------------------------------------------------- engine side
class Analyzer:
    def __init__(self, spec: PipelineSpec, workers: int = 0) -> None:
        self.spec, self.workers = spec, workers
        self._pools: list[Executor] = []
        self._pin: dict[str, int] = {}

    def __enter__(self) -> "Analyzer":
        if self.workers <= 0:
            _init_thread(self.spec)
            self._pools = [ThreadPoolExecutor(1, thread_name_prefix="blockcrawl-analyse")]
        else:
            ctx = multiprocessing.get_context("spawn")
            self._pools = [ProcessPoolExecutor(1, mp_context=ctx, initializer=_init_worker, initargs=(self.spec,))
                           for _ in range(self.workers)]
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self._pools:
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

    async def analyse(self, site: str, body: bytes, url: str, content_type: str | None, links: bool) -> PageOut:
        return await asyncio.get_running_loop().run_in_executor(
            self._pool(site), analyse, site, body, url, content_type, links)


def _init_thread(spec: PipelineSpec) -> None:
    global _SPEC
    _SPEC = spec
    _PIPES.clear()

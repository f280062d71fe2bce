"""The seams of the crawl engine: what it needs from a fetcher, a frontier, a clock, a page
analyser and a progress listener. The engine (crawl.engine) imports only these protocols; the
implementations are injected (defaults: fetch.AiohttpFetcher, frontier.Frontier on the store's
SQLite file, clock.SystemClock, process.PoolAnalyzer, progress.TqdmProgress). Adding a fetcher (an
in-memory one: crawl.net.memfetch; a headless browser later) touches no engine file. The Frontier
protocol is blockcrawl.frontier_item's (the store implements it, below the crawl), named here too.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

from ..frontier_item import Frontier as Frontier

if TYPE_CHECKING:
    from .analysis.process import PageOut
    from .config import CrawlStats
    from .frontier import Item
    from .net.fetch import FetchResult


class Fetcher(Protocol):
    """One HTTP GET per call, never raising for what the network or the server does: every
    failure is a FetchResult with `error` set (timeout, dns, connect, too_large, bomb, ...).

    accept:    media types whose body is read; another Content-Type gives error "content_type"
               without reading the body (None: any).
    follow:    follow redirects inside the fetcher (robots.txt only; pages' redirects go back to
               the engine, which sends each hop through robots and politeness).
    gate:      the politeness gate of the host (Scheduler.turn): awaited once the connection is
               ready, right before the request head is sent, so the delay is measured the way
               the server sees it.
    on_sent:   called when the request head has left; later requests to the host count from then.
    max_bytes: the size cap for this request (default: the fetcher's own).
    truncate:  a body over max_bytes is cut there and returned (robots.txt), not an error.
    headers:   extra request headers (crawl --recrawl: If-None-Match / If-Modified-Since; the
               engine passes it only when it has some, so a fetcher without it still works for
               a plain crawl). FetchResult.etag / last_modified / robots_tag carry the answer's.
    """

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    async def get(self, url: str, *, accept: tuple[str, ...] | None, follow: bool = False,
                  gate: Callable[[], Awaitable[None]] | None = None, on_sent: Callable[[], None] | None = None,
                  max_bytes: int | None = None, truncate: bool = False,
                  headers: Mapping[str, str] | None = None) -> FetchResult: ...


class SharedFrontier(Frontier, Protocol):
    """A Frontier that many worker processes share (store.redis_frontier), on one machine or many.

    Hosts are owned, not shared: a worker leases a host (expiring, renewed by `claim`) and alone
    fetches it, so politeness, robots.txt rules, block dedup and site learning of a host stay in
    one process. The engine keeps its in-memory host queues for the hosts it owns only; the
    frontier is the shared seen-set and the queues of every host. Four extra calls, used by the
    engine only when its frontier has them (a plain Frontier never does):

    join:     check (and on first use record) the crawl's identity and blockcrawl version; returns
              the crawl's seeds (those recorded, when none are given). Refuses another crawl.
    share:    like `add`, but returns the items to queue in this process: new to the whole crawl
              AND of a host this worker owns; the others go to their host's shared queue.
    claim:    renew this worker's leases, lease free hosts that have work (a fair share of them),
              and return (items to queue here, hosts no longer held here: their lease was lost or
              given back; the engine drops their queues and, should it lease one again, reloads
              its dedup state from the store, where the other worker may have added blocks).
              Called every CLAIM_INTERVAL seconds and whenever the worker is idle.
    holds:    whether this worker still holds this very item: its host's lease was not lost or given
              back since the item was handed out (a retry waiting for its time is dropped when not:
              the host's owner has it, maybe this worker again, with the item handed out anew).
    may_fetch: owns the host and its lease was renewed recently enough that it cannot have expired
              before a request started now reaches the server (checked at each launch: a process
              that stalled longer than its lease sends nothing until it has renewed it).
    finished: no host has work left anywhere (every URL of the crawl is done, failed or skipped).
    flush:    buffered state changes go out; called right after each store commit, so a page is
              stored before the frontier says it is done (a crash in between refetches it).
    release:  give up every lease (end of the run).
    A shared frontier is built with `delay_of` (shared.open_shared): a host's delay as the
    engine's Scheduler knows it (robots.txt Crawl-delay included). A host given back stays
    unleased that long, so the next owner's first request keeps the delay after this worker's last one.
    """

    def join(self, seeds: list[str], options: str, resume: bool) -> list[str]: ...
    def share(self, items: Iterable[Item]) -> list[Item]: ...
    def claim(self) -> tuple[list[Item], list[str]]: ...
    def holds(self, it: Item) -> bool: ...
    def may_fetch(self, host: str) -> bool: ...
    def finished(self) -> bool: ...
    def flush(self) -> None: ...
    def release(self) -> None: ...


class RenderTally(Protocol):
    """Counts a rendering fetcher keeps (render.RenderCounts; CrawlStats has the same fields)."""

    renders: int
    render_requests: int
    render_failed: int


class Clock(Protocol):
    """Time as the engine sees it. Sleeping goes through the running event loop (asyncio.sleep,
    wait_for), whose time a fake clock replaces too (clock.FakeClock.run)."""

    def monotonic(self) -> float: ...
    def time(self) -> float: ...


class Analyzer(Protocol):
    """Parses a fetched page off the event loop: links and the blocks/chunks of the site's pipeline."""

    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> None: ...
    async def prime(self, site: str, pairs: list[tuple[str, str]]) -> None: ...

    async def load_model(self, site: str, model: str) -> bool:
        """Hand the site's pipeline a site model stored by an earlier run (crawl --resume), before
        the site's first page; False when its algorithm learns no model."""

    async def analyse(self, site: str, body: bytes, url: str, content_type: str | None,
                      links: bool, extract: bool | None = None) -> PageOut:
        """extract: None lets the analyser skip the pipeline for a page that will not be stored
        (noindex, canonical elsewhere: process.analyse); True / False force it on / off."""

    async def finish(self, site: str) -> PageOut | None:
        """The site has no more pages for now (the crawl ends, or the site was idle for the
        pipeline's learn_seconds): a site model still collecting pages learns on what it has.
        The result carries only the revised pages and the model (None: nothing learned)."""


class CrawlListener(Protocol):
    """Told about the crawl's progress (the progress bar is one)."""

    def page(self, stats: CrawlStats) -> None: ...

    def tick(self, stats: CrawlStats, inflight: int, queues: Callable[[], list[tuple[int, str]]]) -> None:
        """Called after each request; `queues()` (URLs waiting, host) costs a walk over the hosts,
        so a listener calls it only when it redraws."""

    def close(self, stats: CrawlStats) -> None: ...

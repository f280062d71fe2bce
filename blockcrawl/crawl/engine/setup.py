"""Building the engine's default components from a CrawlConfig: the page analyser, the fetcher
(aiohttp, wrapped for JavaScript rendering), and the seed plan read from the frontier and the
store. Kept out of engine.py so that the engine only runs the loop and records."""
from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

from ..config import CrawlConfig
from ..decisions import seeding
from ..decisions.seeding import SeedPlan
from ..sources.sitemaps import Sitemaps, make_item
from ..urls import canonicalize

if TYPE_CHECKING:

    from ...pipeline import PipelineConfig
    from ...store import AnyStore
    from ..decisions.admission import Admission
    from ..decisions.discovery import Discovery
    from ..decisions.outcome import Record
    from ..decisions.pagestep import PageStep
    from ..decisions.policy import UrlPolicy
    from ..decisions.sitemodels import SiteModels
    from ..protocols import Analyzer, CrawlListener, Fetcher, Frontier, RenderTally, SharedFrontier
    from .context import CrawlContext
    from .politeness import Scheduler


@contextmanager
def signals(stop: Callable[[str], None]) -> Iterator[None]:
    """SIGINT and SIGTERM stop the crawl gracefully (a second one cancels the requests in flight)."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop, "interrupted")
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def open_frontier(cfg: CrawlConfig, store: AnyStore, frontier: Frontier | None,
                  delay_of: Callable[[str], float]) -> tuple[Frontier, SharedFrontier | None]:
    """The frontier given, else the shared one cfg.frontier names, else the store's; and the same
    as a SharedFrontier when it is one (it has `claim`)."""
    if frontier is None and cfg.frontier is not None:
        from .shared import open_shared
        frontier = open_shared(cfg, store, delay_of)
    fr = frontier if frontier is not None else store.frontier()
    return fr, cast("SharedFrontier", fr) if hasattr(fr, "claim") else None


def site_models(spec: PipelineConfig, store: AnyStore) -> SiteModels:
    from ...pipeline import LEARNING
    from ..decisions.sitemodels import SiteModels
    learning = spec.mode == "main" and spec.algorithm in LEARNING and spec.extract
    return SiteModels(store.site_models, learning, spec.learn_seconds)


def default_listeners(progress: bool) -> list[CrawlListener]:
    from .progress import TqdmProgress
    return [TqdmProgress()] if progress else []


def make_policy_for(cfg: CrawlConfig, seeds: list[str]) -> tuple[UrlPolicy, Sitemaps]:
    """The URL policy of a crawl from these seeds, and its sitemap bounds."""
    from ..decisions.policy import make_policy, scope_of
    from ..net.addresses import AddressPolicy
    policy = make_policy(scope_of(seeds, cfg.scope), max_depth=cfg.max_depth, include=cfg.include,
                         exclude=cfg.exclude, content_types=cfg.content_types, date_hops=cfg.date_hops,
                         addresses=AddressPolicy.from_seeds(seeds, cfg.allow_private))
    return policy, Sitemaps(policy, max_files=cfg.max_sitemaps, max_depth=cfg.max_sitemap_depth,
                            max_urls=cfg.max_sitemap_urls, max_bytes=cfg.max_bytes)


def make_analyzer(cfg: CrawlConfig, spec: PipelineConfig) -> Analyzer:
    from ..analysis.pool import PoolAnalyzer
    return PoolAnalyzer(spec, cfg.workers, cfg.analysis_timeout)


def make_fetcher(cfg: CrawlConfig, policy: UrlPolicy, sched: Scheduler) -> tuple[Fetcher, RenderTally | None]:
    """The aiohttp fetcher for cfg, and the render counts when it renders (cfg.render)."""
    from ..net.addresses import AddressPolicy
    from ..net.fetch import AiohttpFetcher
    from ..net.resolve import parse_resolve
    addresses = policy.addresses
    proxy = cfg.credentials.proxy
    if proxy and addresses is not None and not addresses.allow_private:
        # through a proxy, our DNS check sees the proxy's address (a local proxy is usual):
        # its block is allowed to the fetcher; links to literal private hosts stay filtered
        # by the URL policy
        own = addresses.allowed_blocks
        addresses = AddressPolicy.from_seeds([*cfg.seeds, proxy])
        addresses.allowed_blocks |= own
    fetcher = AiohttpFetcher(cfg.user_agent, cfg.timeout, cfg.max_bytes, cfg.concurrency, cfg.per_host,
                             addresses=addresses, credentials=cfg.credentials,
                             resolve=parse_resolve(cfg.resolve) if cfg.resolve else None)
    if cfg.render == "never":
        return fetcher, None
    from ..net.render import RenderingFetcher  # app-shell pages rendered in headless Chromium
    r = RenderingFetcher(fetcher, cfg.render, timeout=2 * cfg.timeout, hosts=sched, user_agent=cfg.user_agent,
                         max_bytes=cfg.max_bytes)
    return r, r.stats


def make_steps(ctx: CrawlContext, fetcher: Fetcher, analyzer: Analyzer, sitemaps: Sitemaps, admission: Admission,
               record: Record) -> tuple[Discovery, PageStep]:
    """Discovery and the page step of a crawl. A resumed crawl (or a shared frontier's worker)
    primes each site's dedup state from the store; a resumed crawl or a recrawl sends each site
    its stored model."""
    from ..decisions.discovery import Discovery
    from ..decisions.pagestep import PageRules, PageStep
    cfg, spec, agent = ctx.config, ctx.spec, ctx.agent
    recrawl, shared = ctx.stats.recrawl, ctx.shared is not None
    discovery = Discovery(fetcher, ctx.sched, sitemaps, admission, ctx.known, agent, ctx.clock, backoff=cfg.backoff,
                          use_sitemaps=cfg.sitemaps, obey_robots=cfg.robots, record=record, llms_txt=cfg.llms_txt)
    rules = PageRules(cfg.max_depth, cfg.follow_nofollow, cfg.feeds, cfg.only_articles, spec.extract, agent)
    return discovery, PageStep(analyzer, admission, discovery, ctx.models, rules, ctx.baseline,
                               block_hashes=ctx.store.block_hashes, prime=(cfg.resume or shared) and not recrawl,
                               send_models=cfg.resume or recrawl, retries=cfg.retries, backoff=cfg.backoff,
                               record=record)


def seed_plan(cfg: CrawlConfig, fr: Frontier, shared: SharedFrontier | None, store: AnyStore,
              now: float) -> SeedPlan:
    """What the crawl starts from (seeding.py decides; this reads its inputs)."""
    seeds = [u for u in (canonicalize(s.strip(), merge_slash=False) for s in cfg.seeds) if u]
    if shared is not None:
        from .shared import crawl_options
        seeds = shared.join(seeds, crawl_options(cfg), cfg.resume)
        return SeedPlan(seeds, accept=[make_item(u, 0) for u in dict.fromkeys(seeds)])
    old = seeding.old_seeds(fr.get_meta("seeds"))
    if cfg.recrawl:
        return seeding.recrawl(seeds, old, store.recrawl_pages(), now, cfg.max_age, fr.restore() if fr.size() else ())
    if cfg.resume and fr.size():
        was_recrawl = fr.get_meta("recrawl") == "1"  # an interrupted recrawl goes on as one
        seen = fr.seen_urls()
        # at most max_queued (+1: whether more wait) read now, the rest when the queues run dry (crawl.engine.queues)
        return seeding.resume(seeds, old, seen, fr.restore(limit=cfg.max_queued + 1), was_recrawl,
                              store.recrawl_pages() if was_recrawl else ())
    return seeding.fresh(seeds)

"""Building the engine's default components from a CrawlConfig: the page analyser, the fetcher
(aiohttp, wrapped for JavaScript rendering), and the seed plan read from the frontier and the
store. Kept out of engine.py so that the engine only runs the loop and records."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import seeding
from .config import CrawlConfig
from .seeding import SeedPlan
from .sitemaps import make_item
from .urls import canonicalize

if TYPE_CHECKING:
    from ..pipeline import PipelineConfig
    from ..store import AnyStore
    from .policy import UrlPolicy
    from .politeness import Scheduler
    from .protocols import Analyzer, Fetcher, Frontier, RenderTally, SharedFrontier


def make_analyzer(spec: PipelineConfig, workers: int) -> Analyzer:
    from .process import PoolAnalyzer
    return PoolAnalyzer(spec, workers)


def make_fetcher(cfg: CrawlConfig, policy: UrlPolicy, sched: Scheduler) -> tuple[Fetcher, RenderTally | None]:
    """The aiohttp fetcher for cfg, and the render counts when it renders (cfg.render)."""
    from .addresses import AddressPolicy, parse_resolve
    from .fetch import AiohttpFetcher
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
    from .render import RenderingFetcher  # app-shell pages rendered in headless Chromium
    r = RenderingFetcher(fetcher, cfg.render, timeout=2 * cfg.timeout, hosts=sched, user_agent=cfg.user_agent,
                         max_bytes=cfg.max_bytes)
    return r, r.stats


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
        return seeding.recrawl(seeds, old, store.recrawl_pages(), now, cfg.max_age)
    if cfg.resume and fr.size():
        was_recrawl = fr.get_meta("recrawl") == "1"  # an interrupted recrawl goes on as one
        seen = fr.seen_urls()
        return seeding.resume(seeds, old, seen, fr.restore(), was_recrawl,
                              store.recrawl_pages() if was_recrawl else ())
    return seeding.fresh(seeds)

"""Opening a frontier shared by many worker processes (crawl --frontier URL): the one place that
knows which implementation a URL scheme means, so the engine (engine.py) names none."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..config import CrawlConfig

if TYPE_CHECKING:
    from ...store import AnyStore
    from ..protocols import SharedFrontier

FRONTIER_SCHEMES = ("redis://", "rediss://", "unix://")


def open_shared(config: CrawlConfig, store: AnyStore, delay_of: Callable[[str], float]) -> SharedFrontier:
    """The shared frontier config.frontier names; its crawl log goes to the worker's own store.
    delay_of: a host's delay as the engine's Scheduler knows it (a host given back stays unleased
    that long). StoreError (one line) when it cannot be reached."""
    from ...store.redis_frontier import RedisFrontier
    assert config.frontier is not None
    return RedisFrontier(config.frontier, store.crawl_log(), worker_id=config.worker_id,
                         lease_seconds=config.lease_seconds, cooldown=config.delay,
                         delay_of=delay_of)


def crawl_options(config: CrawlConfig) -> str:
    """The options that decide which URLs belong to the crawl: with the seeds they are the crawl's
    identity (workers with other options are refused, as they would crawl something else)."""
    c = config
    return json.dumps({"scope": c.scope, "include": list(c.include), "exclude": list(c.exclude),
                       "max_depth": c.max_depth, "date_hops": c.date_hops, "content_types": list(c.content_types),
                       "robots": c.robots, "sitemaps": c.sitemaps, "feeds": c.feeds,
                       "follow_nofollow": c.follow_nofollow, "allow_private": c.allow_private}, sort_keys=True)

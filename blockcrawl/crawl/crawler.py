"""The old name of the crawl engine's module: the engine is crawl/engine/loop.py (Crawler, crawl); the
decisions it records are in triage.py, admission.py, pagestep.py, discovery.py, seeding.py and
sitemodels.py, and record.py writes their outcomes."""
from .config import DEFAULT_USER_AGENT, CrawlConfig, CrawlStats
from .engine.loop import Crawler, crawl
from .sources.sitemaps import make_item

__all__ = ["DEFAULT_USER_AGENT", "CrawlConfig", "CrawlStats", "Crawler", "crawl", "make_item"]

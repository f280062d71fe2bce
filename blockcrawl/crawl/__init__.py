"""Crawl stage: polite asynchronous crawling into the store (seed 002).

The map (docs/architecture.md, docs/crawling.md "Modules"):

* config.py, urls.py, frontier.py, protocols.py - what every part speaks: the validated config,
  URLs, frontier entries, and the seams (Fetcher, Frontier, Clock, Analyzer, CrawlListener).
* engine/ - the one loop (engine.loop.Crawler) and the one writer (engine.record.Recorder).
* decisions/ - pure functions returning frozen outcomes (triage, page step, admission, policy...).
* analysis/ - a page through the SitePipeline in worker processes.
* sources/ - robots.txt, sitemaps, feeds, llms.txt, a page's links.
* net/ - the fetcher and what goes on the wire.
* _moved.py - the modules' old flat names (blockcrawl.crawl.fetch...), deprecated.
"""
from . import _moved
from .config import DEFAULT_USER_AGENT, CrawlConfig, CrawlStats
from .engine.loop import Crawler, crawl
from .urls import Resolver, canonicalize

_moved.install()  # the modules' names before the sub-packages, with a DeprecationWarning

__all__ = ["DEFAULT_USER_AGENT", "CrawlConfig", "CrawlStats", "Crawler", "Resolver", "canonicalize", "crawl"]

"""Crawl stage: polite asynchronous crawling into the store (seed 002).

The engine (engine.Crawler) wires components behind the protocols of crawl.protocols: a
Fetcher (fetch.py; memfetch.py in memory), a Frontier (frontier.py, SQLite), a Scheduler
(politeness.py), URL policy (policy.py), retry rules (retry.py), sitemaps (sitemaps.py) and
listeners (progress.py). docs/crawling.md ("Components and protocols") has the diagram.
"""
from .config import DEFAULT_USER_AGENT, CrawlConfig, CrawlStats
from .engine import Crawler, crawl
from .urls import Resolver, canonicalize

__all__ = ["DEFAULT_USER_AGENT", "CrawlConfig", "CrawlStats", "Crawler", "Resolver", "canonicalize", "crawl"]

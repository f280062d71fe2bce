"""Crawl stage: polite asynchronous crawling into the store (seed 002)."""
from .crawler import DEFAULT_USER_AGENT, CrawlConfig, Crawler, CrawlStats, crawl
from .urls import Resolver, canonicalize

__all__ = ["DEFAULT_USER_AGENT", "CrawlConfig", "CrawlStats", "Crawler", "Resolver", "canonicalize", "crawl"]

"""Sitemap discovery: the sitemaps robots.txt names, the URLs they list, and the bounds that keep
a sitemap from becoming a trap.

A sitemap item's `depth` is its nesting level below robots.txt (0: named by robots.txt, 1: listed
by that index, ...), not a link depth: --max-depth does not apply to sitemap files, and pages a
sitemap lists start at depth 0 as seeds do. Bounds (CrawlConfig, defaults in crawl.config):
max_sitemap_depth levels of files (3), max_sitemaps files per crawl (1,000), max_sitemap_urls
URLs read from one file (50,000, the protocol's own limit). A URL turned away by them is counted
in CrawlStats.filtered as "sitemap-depth" or "sitemap-limit". Parsing runs in a thread
(crawl.sources.sitemap_parse), off the event loop.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable

from ..decisions.policy import UrlPolicy, in_scope, reject_reason
from ..frontier import Item
from ..urls import canonicalize, host_of, url_key
from .sitemap_parse import Sitemap, parse_sitemap


def make_item(url: str, depth: int, kind: str = "page", *, hops: int = 0, via: str | None = None,
              trail: int = 0) -> Item:
    """A frontier item for a canonical URL in fetch form (keyed by its url_key)."""
    key = url_key(url)
    return Item(key, host_of(url), depth, kind, hops=hops, via=via, fetch=url if url != key else None, trail=trail)


class Sitemaps:
    def __init__(self, policy: UrlPolicy, *, max_files: int, max_depth: int, max_urls: int, max_bytes: int) -> None:
        self.policy = policy
        self.max_files, self.max_depth, self.max_urls, self.max_bytes = max_files, max_depth, max_urls, max_bytes
        self.accepted = 0  # sitemap files queued in this run

    def _admit(self, depth: int) -> str | None:
        """Why a sitemap file at nesting `depth` is not fetched, or None (then it is counted)."""
        if depth + 1 > self.max_depth:
            return "sitemap-depth"
        if self.accepted >= self.max_files:
            return "sitemap-limit"
        self.accepted += 1
        return None

    def from_robots(self, urls: Iterable[str], known: Callable[[str], bool],
                    kind: str = "sitemap") -> tuple[list[Item], Counter[str]]:
        """Items for the sitemaps a robots.txt names (in scope, not known yet); kind "feed": the
        feeds a page links (absolute URLs), counted against the same file bound."""
        items: list[Item] = []
        turned: Counter[str] = Counter()
        for raw in urls:
            u = canonicalize(raw.strip(), merge_slash=False)
            if not u or known(url_key(u)) or not in_scope(self.policy.scope, u):
                continue
            why = self._admit(0)
            if why:
                turned[why] += 1
                continue
            items.append(make_item(u, 0, kind=kind))
        return items, turned

    async def read(self, body: bytes, base: str | None = None) -> Sitemap:
        """Parse in a thread: a 50,000-URL file takes tens of ms, the loop must keep serving sockets.
        A feed (RSS, Atom, JSON Feed: crawl.sources.feeds) is read as a sitemap of its items: a page's feed
        link, or a robots.txt Sitemap: line naming a feed (search engines accept those). base: the
        file's URL, against which a feed's relative links resolve (a sitemap's must be absolute)."""
        from .feeds import is_feed, parse_feed
        from .llmstxt import is_llms, parse_llms
        if base is not None and is_llms(base):  # crawl --llms-txt: its Markdown links
            return await asyncio.to_thread(parse_llms, body, base, max_urls=self.max_urls, max_bytes=self.max_bytes)
        if is_feed(body):
            return await asyncio.to_thread(parse_feed, body, max_urls=self.max_urls, max_bytes=self.max_bytes,
                                           base=base)
        return await asyncio.to_thread(parse_sitemap, body, max_urls=self.max_urls, max_bytes=self.max_bytes)

    def listed(self, parent: Item, sm: Sitemap, known: Callable[[str], bool]) -> tuple[list[Item], Counter[str]]:
        """Items for the URLs a sitemap lists: pages (depth 0) or, from an index, sitemaps one level
        deeper. `known(key)`: already seen or rejected. Returns the items and why others were not taken."""
        items: list[Item] = []
        turned: Counter[str] = Counter()
        kind = "sitemap" if sm.is_index else "page"
        depth = parent.depth + 1 if sm.is_index else 0
        keys: set[str] = set()
        for raw in sm.urls:
            u = canonicalize(raw, merge_slash=False)
            if not u:
                continue
            key = url_key(u)
            if key in keys or known(key):
                continue
            why = reject_reason(self.policy, u, depth, kind) or (self._admit(depth) if sm.is_index else None)
            if why:
                turned[why] += 1
                continue
            keys.add(key)
            items.append(make_item(u, depth, kind=kind))
        return items, turned

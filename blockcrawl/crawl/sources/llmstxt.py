"""llms.txt (llmstxt.org) as a URL source beside sitemaps: `crawl --llms-txt` asks each host for
/llms.txt and /llms-full.txt, and the links in them are seeds (pages at depth 0, as a sitemap's).

Pure: the file's Markdown links to URLs, bounded as a sitemap is (max_urls links, max_bytes read),
in one linear pass (a regex without nested quantifiers over each line). Read by
sitemaps.Sitemaps.read for an item whose URL is one of LLMS_PATHS; fetched as a sitemap probe
(discovery.py: bounded by --max-sitemaps, obeying robots.txt, a 404 is no error).
"""
from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from .sitemap_parse import Sitemap

LLMS_PATHS = ("/llms.txt", "/llms-full.txt")
MAX_LINE = 8192  # characters of one line looked at (a minified file is one huge line: cut, not scanned)
# [text](url) or [text](url "title"): the url is the part up to white space or ')'
_LINK = re.compile(r"\[[^\]\n]{0,500}\]\(\s*<?([^\s)>]{1,2048})>?(?:\s+\"[^\"\n]{0,500}\")?\s*\)")


def is_llms(url: str) -> bool:
    """Whether a URL is a host's llms.txt or llms-full.txt."""
    parts = urlsplit(url)
    return parts.path in LLMS_PATHS and not parts.query


def parse_llms(body: bytes, base: str, *, max_urls: int, max_bytes: int) -> Sitemap:
    """The http(s) URLs an llms.txt links, resolved against base, in order, without repeats (the
    host's own llms files left out: they are probed themselves)."""
    text = body[:max_bytes].decode("utf-8", "replace")
    urls: dict[str, None] = {}
    truncated, skipped = len(body) > max_bytes, 0
    for line in text.splitlines():
        for m in _LINK.finditer(line[:MAX_LINE]):
            u = urljoin(base, m.group(1))
            if not u.lower().startswith(("http://", "https://")) or is_llms(u):
                skipped += 1
                continue
            if len(urls) >= max_urls:
                return Sitemap(False, tuple(urls), True, "llms", skipped)
            urls[u.split("#", 1)[0]] = None
    return Sitemap(False, tuple(urls), truncated, "llms", skipped)

"""PLACEHOLDER sitemap parser (branch engine): the signature and record are final, the body is
replaced at merge by helper fetchsm's streaming, bounded parser.

parse_sitemap runs off the event loop (asyncio.to_thread): a 50,000-URL sitemap takes tens of ms
to scan, during which no socket would be served.
"""
from __future__ import annotations

import html
import re
import zlib
from dataclasses import dataclass

_LOC_RE = re.compile(rb"<loc>\s*(.*?)\s*</loc>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Sitemap:
    is_index: bool  # a <sitemapindex>: its URLs are sitemaps
    urls: tuple[str, ...]  # <loc> values, unescaped, in document order
    truncated: bool  # stopped at max_urls or max_bytes


def parse_sitemap(body: bytes, *, max_urls: int, max_bytes: int) -> Sitemap:
    """The <loc> URLs of a sitemap or sitemap index (gzip-compressed or not), at most max_urls of
    them, reading at most max_bytes of (decompressed) XML. A bad gzip stream raises ValueError."""
    truncated = False
    if body[:2] == b"\x1f\x8b":
        try:
            d = zlib.decompressobj(47)
            out = d.decompress(body, max_bytes)
        except zlib.error as e:
            raise ValueError(f"bad gzip sitemap: {e}") from None
        truncated = bool(d.unconsumed_tail)
        body = out
    elif len(body) > max_bytes:
        body, truncated = body[:max_bytes], True
    is_index = b"<sitemapindex" in body[:2000]
    urls: list[str] = []
    for m in _LOC_RE.finditer(body):
        if len(urls) >= max_urls:
            truncated = True
            break
        urls.append(html.unescape(m.group(1).decode("utf-8", "replace")).strip())
    return Sitemap(is_index, tuple(urls), truncated)

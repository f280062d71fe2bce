"""RSS, Atom and JSON Feed bodies to the URLs of their items, as a sitemap_parse.Sitemap (a feed is
one more URL source, bounded like a sitemap: the engine counts feed files in --max-sitemaps and
reads at most max_urls URLs from one).

Feeds are often not well-formed (a raw `&`, HTML pasted into <description>), so, as for sitemaps,
no XML parser: one left-to-right pass over the bytes with bounded patterns. Each pattern's
repeated part is capped (MAX_TAG bytes), so a body of 10 MB of unclosed `<link` costs at most
MAX_TAG per start position, never a rescan to the end of the body per start (quadratic).

RSS: <item>...<link>URL</link> (the channel's own <link>, the site's home, is kept too: it is a
page of the site). Atom: <link href="URL"> with rel absent or "alternate" (not "self", "edit",
"enclosure"...). JSON Feed (https://jsonfeed.org): items[].url, else items[].external_url.
An RSS <link> may wrap its URL in CDATA (WordPress plug-ins do); Atom hrefs and JSON Feed urls
may be relative (RFC 4287 3.1.1 via xml:base, else the feed's own URL): they are resolved
against the feed's URL when the caller gives it.
"""
from __future__ import annotations

import html
import json
import re
from urllib.parse import urljoin

from ...compress import inflate
from .sitemap_parse import Sitemap

MAX_TAG = 4096  # bytes of one <link ...> start tag or one RSS <link> text
_RSS_LINK = re.compile(rb"<link>\s*(?:<!\[CDATA\[\s*([^<>\s\]]{1,%d})\s*\]\]>|([^<\s]{1,%d}))\s*</link>"
                       % (MAX_TAG, MAX_TAG))
_XML_BASE = re.compile(rb"<feed\s[^<>]{0,%d}?xml:base\s*=\s*[\"']([^\"'<>]{1,%d})[\"']" % (MAX_TAG, MAX_TAG))
_ATOM_LINK = re.compile(rb"<(?:atom:)?link\s([^<>]{0,%d})/?>" % MAX_TAG)
_ATTR = re.compile(r"""([a-zA-Z:_-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_SKIP_RELS = frozenset({"self", "edit", "enclosure", "related", "via", "replies", "hub", "license"})


def is_feed(body: bytes) -> bool:
    """Does this body look like a feed (rather than a sitemap or a page)?"""
    head = body[:2048].lstrip().lower()
    return head.startswith(b"{") or b"<rss" in head or b"<feed" in head or b"<rdf:rdf" in head


def parse_feed(body: bytes, *, max_urls: int = 50_000, max_bytes: int = 50 * 1024 * 1024,
               base: str | None = None) -> Sitemap:
    """The item URLs of a feed (http(s) only, document order, no repeats); relative ones are
    resolved against `base` (the feed's URL; Atom: its xml:base), else skipped."""
    if body[:2] == b"\x1f\x8b":
        body = inflate(body, max_bytes).data
    body = body[:max_bytes]
    urls: list[str] = []
    seen: set[str] = set()
    skipped = 0
    truncated = False

    def take(u: str) -> bool:
        nonlocal skipped, truncated
        u = html.unescape(u.strip())
        if base and not u.lower().startswith(("http://", "https://")):
            try:
                u = urljoin(base, u)
            except ValueError:
                skipped += 1
                return True
        if not u.lower().startswith(("http://", "https://")) or len(u) > MAX_TAG:
            skipped += 1
            return True
        if u in seen:
            return True
        if len(urls) >= max_urls:
            truncated = True
            return False
        seen.add(u)
        urls.append(u)
        return True

    if body.lstrip()[:1] == b"{":
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError) as e:
            return Sitemap(False, (), False, "json", 0, f"bad JSON feed: {e}")
        items = doc.get("items") if isinstance(doc, dict) else None
        feed_url = doc.get("feed_url") if isinstance(doc, dict) else None
        if base and isinstance(feed_url, str) and feed_url.lower().startswith(("http://", "https://")):
            base = feed_url
        for it in items if isinstance(items, list) else ():
            if isinstance(it, dict):
                u = it.get("url") or it.get("external_url")
                if isinstance(u, str) and not take(u):
                    break
        return Sitemap(False, tuple(urls), truncated, "json", skipped)
    for m in _RSS_LINK.finditer(body):
        if not take((m.group(1) or m.group(2)).decode("utf-8", "replace")):
            break
    if not truncated:
        xb = _XML_BASE.search(body[:MAX_TAG * 4])
        if xb is not None and base:
            try:
                base = urljoin(base, html.unescape(xb.group(1).decode("utf-8", "replace")))
            except ValueError:
                pass
        for m in _ATOM_LINK.finditer(body):
            attrs = {k.lower(): v or w for k, v, w in _ATTR.findall(m.group(1).decode("utf-8", "replace"))}
            href = attrs.get("href")
            if not href or attrs.get("rel", "alternate").lower() in _SKIP_RELS:
                continue
            if not take(href):
                break
    return Sitemap(False, tuple(urls), truncated, "feed", skipped)

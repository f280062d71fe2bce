"""Sitemap bodies (sitemaps.org XML urlset / sitemapindex, gzip, TXT) to URLs, in linear time and
bounded memory whatever the body holds.

Why a hand-written scanner and not expat / XMLPullParser: sitemaps in the wild are often not
well-formed (a raw `&` in a query string, a file cut off by a proxy, an HTML error page with a
200), and expat stops at the first error, so a fallback scanner would be needed anyway; expat
also expands internal DTD entities (billion laughs: libexpat refuses it only since 2.4, and the
libexpat is the system's). This scanner never expands anything but the five XML entities and
character references, reads a DOCTYPE (with its internal subset) as a thing to skip, and yields
every complete <loc> it can find in a broken document.

Linear: one left-to-right pass; every search (`<`, `>`, `-->`, `]]>`) starts where the previous
one ended and the position only moves forward, so each byte is looked at a bounded number of
times. The regex it replaces, `<loc>\\s*(.*?)\\s*</loc>`, rescanned to the end of the body for
every unclosed <loc>: 60 KB of them froze the crawl for 14 s.

Bounded: at most `max_bytes` bytes are parsed (a gzip body is decompressed incrementally up to
that, a bomb stops there), at most `max_urls` URLs are kept (then truncated=True), URLs longer
than MAX_URL_CHARS are skipped (the protocol's limit is 2,048). A <loc> cut off by the end of the
data (truncation, a bad gzip stream) is dropped, never returned half.
"""
from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from ...compress import inflate

MAX_URL_CHARS = 8192
# raw text of one <loc> (entities and padding whitespace included) beyond which it is skipped undecoded
MAX_LOC_BYTES = 16 * MAX_URL_CHARS
_GZIP_MAGIC = b"\x1f\x8b"
_XML_WS = b" \t\r\n"
_NAME = re.compile(rb"/?\s*([^\s/>]*)")
_DOCTYPE_END = re.compile(rb"\]\s*>")
_ENTITY = re.compile(r"&(#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,8}|amp|lt|gt|quot|apos);")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


@dataclass(frozen=True, slots=True)
class Sitemap:
    is_index: bool  # a <sitemapindex>: the URLs are more sitemaps
    urls: tuple[str, ...]  # absolute http(s) URLs in document order, without repeats
    truncated: bool  # stopped at max_urls or max_bytes: there may be more
    format: str = "xml"  # xml | txt | empty
    skipped: int = 0  # <loc>s / lines that were not an http(s) URL, or were too long
    error: str = ""  # why the body could not be read to its end (bad gzip data), if so


def _unescape_ref(m: re.Match[str]) -> str:
    ref = m.group(1)
    if ref[0] != "#":
        return _NAMED[ref]
    try:
        cp = int(ref[2:], 16) if ref[1] in "xX" else int(ref[1:])  # noqa: FURB166
        return chr(cp) if 0 < cp < 0x110000 else m.group(0)
    except ValueError:
        return m.group(0)


def _url(raw: str) -> str | None:
    u = raw.strip(" \t\r\n")
    if len(u) > MAX_URL_CHARS:
        return None
    low = u[:8].lower()
    if not low.startswith(("http://", "https://")):
        return None
    return u


def parse_sitemap(body: bytes, *, max_urls: int = 50_000, max_bytes: int = 50 * 1024 * 1024) -> Sitemap:
    """The URLs a sitemap body lists. Never raises on any input."""
    error, cut = "", False
    if body[:2] == _GZIP_MAGIC:
        z = inflate(body, max_bytes)
        body, cut, error = z.data, z.over, z.error
    elif len(body) > max_bytes:
        body, cut = body[:max_bytes], True
    if body[:3] == codecs.BOM_UTF8:
        body = body[3:]
    elif body[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        body = body.decode("utf-16", "replace").encode("utf-8")  # at most 1.5x: bounded
    start = len(body) - len(body.lstrip(_XML_WS))
    if start == len(body):
        return Sitemap(False, (), cut, "empty", 0, error)
    if body[start:start + 1] != b"<":
        return _parse_txt(body, max_urls, cut or bool(error), error)
    return _parse_xml(body, start, max_urls, cut or bool(error), error)


def _parse_txt(body: bytes, max_urls: int, cut: bool, error: str) -> Sitemap:
    """One URL per line; other lines are skipped. A last line without a newline is dropped
    when the body was cut (it may be half a URL)."""
    lines = body.split(b"\n")
    if cut and lines:
        lines.pop()
    urls: dict[str, None] = {}
    skipped, truncated = 0, cut
    for line in lines:
        if not line.strip():
            continue
        u = _url(line.decode("utf-8", "replace"))
        if u is None:
            skipped += 1
        elif u not in urls:
            if len(urls) >= max_urls:
                truncated = True
                break
            urls[u] = None
    return Sitemap(False, tuple(urls), truncated, "txt", skipped, error)


def _parse_xml(data: bytes, pos: int, max_urls: int, cut: bool, error: str) -> Sitemap:
    """The scanner (see the module docstring). A <loc> counts when its namespace prefix is the
    root's (<urlset>/<sitemapindex>, or before any root the enclosing <url>/<sitemap>'s): so
    <sm:loc> in <sm:urlset> counts and <image:loc> in an image sitemap does not; an unprefixed
    <loc> always counts."""
    find, startswith = data.find, data.startswith
    n = len(data)
    urls: dict[str, None] = {}
    skipped, truncated = 0, cut
    root_prefix: bytes | None = None
    container_prefix: bytes | None = None
    is_index: bool | None = None
    saw_sitemap = saw_url = False
    while pos < n:
        lt = find(b"<", pos)
        if lt < 0:
            break
        c = data[lt + 1:lt + 2]
        if c == b"!" or c == b"?":
            if startswith(b"<!--", lt):
                end, skip = find(b"-->", lt + 4), 3
            elif startswith(b"<![CDATA[", lt):  # outside a <loc>: skipped whole
                end, skip = find(b"]]>", lt + 9), 3
            elif c == b"?":
                end, skip = find(b"?>", lt + 2), 2
            else:  # DOCTYPE and the like: skipped with an internal subset, nothing expanded
                end, skip = find(b">", lt + 2), 1
                bracket = find(b"[", lt, end) if end >= 0 else -1
                if bracket >= 0:
                    dm = _DOCTYPE_END.search(data, bracket)
                    end = dm.end() - 1 if dm is not None else -1
            if end < 0:
                break
            pos = end + skip
            continue
        gt = find(b">", lt + 1)
        if gt < 0:
            break
        m = _NAME.match(data, lt + 1, gt)
        qname = m.group(1) if m else b""
        closing = c == b"/"
        colon = qname.rfind(b":")
        prefix, local = qname[:colon + 1], qname[colon + 1:].lower()
        pos = gt + 1
        if closing:
            if local in (b"url", b"sitemap"):
                container_prefix = None
            continue
        if local in (b"urlset", b"sitemapindex"):
            if root_prefix is None:
                root_prefix, is_index = prefix, local == b"sitemapindex"
            continue
        if local in (b"url", b"sitemap"):
            container_prefix = prefix
            saw_sitemap |= local == b"sitemap"
            saw_url |= local == b"url"
            continue
        if local != b"loc" or data[gt - 1:gt] == b"/":
            continue
        want = root_prefix if root_prefix is not None else container_prefix
        ok = prefix == b"" or prefix == want  # unprefixed: lenient (the default namespace)
        # the text up to the next tag, CDATA sections included; cut off by the end: dropped.
        # Pieces stay bytes until the end; text longer than MAX_LOC_BYTES is not even decoded.
        pieces: list[tuple[bool, bytes]] = []  # (is CDATA, raw bytes)
        p, complete, size = pos, False, 0
        while True:
            nxt = find(b"<", p)
            if nxt < 0:
                break
            size += nxt - p
            if size <= MAX_LOC_BYTES:
                pieces.append((False, data[p:nxt]))
            if startswith(b"<![CDATA[", nxt):
                end = find(b"]]>", nxt + 9)
                if end < 0:
                    break
                size += end - nxt - 9
                if size <= MAX_LOC_BYTES:
                    pieces.append((True, data[nxt + 9:end]))
                p = end + 3
                continue
            p, complete = nxt, True
            break
        pos = p if complete else n
        if not ok or not complete:
            continue
        if size > MAX_LOC_BYTES:
            skipped += 1
            continue
        text = "".join(raw.decode("utf-8", "replace") if cdata else
                       _ENTITY.sub(_unescape_ref, raw.decode("utf-8", "replace")) for cdata, raw in pieces)
        u = _url(text)
        if u is None:
            skipped += 1
        elif u not in urls:
            if len(urls) >= max_urls:
                truncated = True
                break
            urls[u] = None
    if is_index is None:
        is_index = saw_sitemap and not saw_url
    return Sitemap(is_index, tuple(urls), truncated, "xml", skipped, error)

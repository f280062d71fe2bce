"""Crawler traps: URL spaces a site generates without end.

Two kinds are recognised from URLs alone, before anything is fetched:

- date chains: calendars and archives link each day or month to the next one, forever. A URL
  that carries a date (a /2024/05/ or /2024-05-17 path, a date=, month=, ... parameter) gets a
  *trail*: 0 when the page linking to it has no date (the way in, e.g. "Events" in a menu), the
  linking page's trail + 1 when that page is itself dated and on the same host. Links whose trail
  would exceed the limit are not followed. Pages linked from undated pages (a blog's home, its
  category pages, the sitemap) keep trail 0 however old their date, so real archives stay reachable.
- pathological paths (as Heritrix's rules): one to three path segments repeated three times in a
  row (/a/b/b/b/, /a/b/a/b/a/b/: relative links resolved against the wrong base), more than MAX_SEGMENTS segments,
  or a URL longer than MAX_URL_CHARS.
"""
from __future__ import annotations

import re

DEFAULT_DATE_HOPS = 2
MAX_SEGMENTS = 32
MAX_URL_CHARS = 2048
_MONTH = r"(?:0?[1-9]|1[0-2])"
# /2024/05/(17/), /2024-05(-17) and /20240517 (a plausible year) starting a path segment
_PATH_DATE = re.compile(
    rf"/(?:\d{{4}}/{_MONTH}(?:/|$)"
    rf"|\d{{4}}-{_MONTH}(?:-\d{{1,2}})?(?=[/._-]|$)"
    rf"|(?:1[5-9]|2\d)\d\d(?:0[1-9]|1[0-2])(?:[0-2]\d|3[01])(?=[/._-]|$))")
_QUERY_DATE = re.compile(
    r"(?:^|&)[^=&]*(?:date|day|month|year|week|cal)[^=&]*=\d"  # ?month=5, ?date=2024-05-17, ?calYear=2024
    r"|=\d{4}-\d{1,2}(?:-\d{1,2})?(?:&|$)", re.IGNORECASE)   # ?d=2024-05


def dated(url: str) -> bool:
    """Whether a canonical URL names a date in its path or query."""
    rest = url.find("/", url.find("//") + 2)
    if rest < 0:
        return False
    q = url.find("?", rest)
    path = url[rest:] if q < 0 else url[rest:q]
    if _PATH_DATE.search(path):
        return True
    return q >= 0 and _QUERY_DATE.search(url[q + 1:]) is not None


def trail(parent_url: str, parent_trail: int, parent_dated: bool, url: str) -> int:
    """The date-chain trail of url found on parent_url (see the module doc); 0 if url has no date."""
    if not dated(url):
        return 0
    if not parent_dated:
        return 0
    host = url[:url.find("/", url.find("//") + 2)]
    same = parent_url.startswith(host) and parent_url[len(host):len(host) + 1] in ("/", "")
    return parent_trail + 1 if same else 0


def pathological(url: str) -> bool:
    """A URL no real site needs: too long, too many segments, or a segment repeated 3x in a row."""
    if len(url) > MAX_URL_CHARS:
        return True
    rest = url.find("/", url.find("//") + 2)
    if rest < 0:
        return False
    q = url.find("?", rest)
    segs = (url[rest + 1:] if q < 0 else url[rest + 1:q]).split("/")
    if len(segs) > MAX_SEGMENTS:
        return True
    # a group of 1-3 segments repeated three times in a row: /b/b/b/, /a/b/a/b/a/b/
    for g in (1, 2, 3):
        for i in range(len(segs) - 3 * g + 1):
            if segs[i] and segs[i:i + g] == segs[i + g:i + 2 * g] == segs[i + 2 * g:i + 3 * g]:
                return True
    return False

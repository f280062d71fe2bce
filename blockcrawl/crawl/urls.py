"""URLs: resolve an href against its page, classify what cannot be crawled, canonicalise.

Parsing and resolution are the WHATWG URL Standard's (what browsers do), by the `can_ada` binding
of the ada parser: backslashes as slashes, `http:foo` relative to an http page, IPv4 in any number
form (`0x7f.1`, `2130706433` -> `127.0.0.1`), UTS-46 IDNA (`faß` -> `xn--fa-hia`), IPv6 with an
embedded IPv4, control characters rejected. On the web-platform-tests URL data it agrees with the
standard on 819 of 820 cases (the one miss is a lone surrogate, which we replace by U+FFFD first as
a browser's UTF-16 -> UTF-8 step does); the ada-url binding scored 809 and costs ~4x more per call
(docs/benchmarks.md, "URL parsing").

The crawler's canonical form is the WHATWG serialisation with a few rules on top, and it is
itself a WHATWG-normal URL (parsing it again gives it back byte for byte), so canonicalising is
idempotent and the request on the wire can carry exactly the frontier key's bytes (wire_url):
no fragment, no user:password@, no trailing dot on the host, percent-escapes of unreserved
characters decoded (`%7e` -> `~`) and the others upper-cased (`%2f` -> `%2F`), tracking
parameters (utm_*, gclid, fbclid, ...) and empty parameters dropped, parameters sorted, an empty
query dropped; and, for the frontier key only (url_key), a trailing slash added to an
extension-less last path segment ("/x" and "/x/" are one page).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

# the unit of politeness, below the crawl as the store needs it too; crawl.urls.host_of is public API
from ..frontier_item import host_of as host_of

if TYPE_CHECKING:  # heavy / native imports stay lazy
    import can_ada
    import yarl

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
# Tracking parameters that never change the page (compared lower-case; prefixes end with "_").
TRACKING_PARAMS = frozenset({"gclid", "fbclid", "dclid", "msclkid", "yclid", "mc_cid", "mc_eid",
                             "_ga", "_gl", "igshid", "ref_src", "spm", "_hsenc", "_hsmi", "mkt_tok"})
TRACKING_PREFIXES = ("utm_",)
# Schemes that are links but not to crawlable documents: skipped and counted as "invalid". A fast
# path only: any scheme but http(s) is refused after parsing anyway.
_SKIP_SCHEMES = ("javascript:", "mailto:", "tel:", "data:", "about:", "blob:", "sms:", "callto:",
                 "file:", "ftp:", "vbscript:", "urn:", "news:", "irc:", "magnet:", "skype:", "whatsapp:")
DEFAULT_PORTS = {"http": 80, "https": 443}
_HTTP = ("http:", "https:")
# What the URL parser strips around its input (C0 controls and space) and drops inside it.
_C0_SPACE = "".join(chr(i) for i in range(0x21))
# An href whose result does not depend on the page: special scheme + "//" (WHATWG: the scheme's
# authority follows whatever the base). "http:x" and "http:/x" DO depend on it (relative to an
# http page), and so does anything with a backslash: those are never cached per href alone.
_ABSOLUTE = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://")
_SURROGATE = re.compile("[\ud800-\udfff]")



def parse(url: str, base: can_ada.URL | None = None) -> can_ada.URL:
    """The WHATWG parse of url (relative to base if given); ValueError when it is not a URL.
    A lone surrogate (only a str from Python can hold one) becomes U+FFFD, as a browser's
    UTF-16 -> UTF-8 conversion does."""
    import can_ada  # lazy: a native module; after the first call this is a dict lookup

    try:
        return can_ada.parse(url) if base is None else base + url
    except (ValueError, UnicodeError, TypeError):  # TypeError: a str the binding cannot encode
        if not _SURROGATE.search(url):
            raise ValueError(f"not a URL: {url[:200]!r}") from None
    url = _SURROGATE.sub("\ufffd", url)
    return can_ada.parse(url) if base is None else base + url


def _fix_pct(m: re.Match[str]) -> str:
    c = chr(int(m.group(1), 16))
    return c if c in _UNRESERVED else "%" + m.group(1).upper()


def _norm_query(query: str) -> str:
    """Parameters percent-normalised, tracking and empty ones dropped, sorted."""
    parts = []
    for p in query.split("&"):
        if not p:
            continue
        if "%" in p:
            p = _PCT.sub(_fix_pct, p)
        key = p.split("=", 1)[0].lower()
        if key in TRACKING_PARAMS or key.startswith(TRACKING_PREFIXES):
            continue
        parts.append(p)
    parts.sort()
    return "&".join(parts)


def _canonical(u: can_ada.URL, merge_slash: bool) -> tuple[str | None, str | None]:
    """(canonical URL, None) or (None, reason) for a parsed URL (see the module docstring)."""
    proto: str = u.protocol
    if proto not in _HTTP:
        return None, "scheme"
    host: str = u.hostname
    if host.endswith("."):
        # "a.example." and "a.example" are one host, but the Host header must match the name the
        # site serves. Stripping may turn a domain into an IPv4 number ("0x7f.1.." is a domain,
        # "0x7f.1" is 127.0.0.1): the host is parsed again so the key stays in standard form.
        host = host.rstrip(".")
        if not host:
            return None, "malformed"
        try:
            host = parse(f"{proto}//{host}/").hostname
        except ValueError:
            return None, "malformed"
    port: str = u.port
    path: str = u.pathname
    if "%" in path:
        path = _PCT.sub(_fix_pct, path)
    if merge_slash:
        last = path[path.rfind("/") + 1:]
        if last and "." not in last:
            path += "/"
    search: str = u.search
    query = _norm_query(search[1:]) if len(search) > 1 else ""
    netloc = f"{host}:{port}" if port else host
    if query:
        return f"{proto}//{netloc}{path}?{query}", None
    return f"{proto}//{netloc}{path}", None


def canonicalize(url: str, merge_slash: bool = True) -> str | None:
    """The canonical form of an absolute http(s) URL, or None if it is not one / malformed.
    merge_slash=False keeps "/x" as it is (the form to fetch: a server may not serve "/x/")."""
    try:
        u = parse(clean_href(url))
    except ValueError:
        return None
    return _canonical(u, merge_slash)[0]


def url_key(url: str) -> str:
    """The identity of a canonical URL in the frontier: "/x" and "/x/" are one page."""
    q = url.find("?")
    path = url if q < 0 else url[:q]
    last = path[path.rfind("/") + 1:]
    if last and "." not in last and path.count("/") >= 3:
        return path + "/" + ("" if q < 0 else url[q:])
    return url


def clean_href(href: str) -> str:
    """What the URL parser does to its input first: strip leading and trailing C0 controls and
    spaces, drop tabs and newlines inside (so the classification and the cache see what the
    parser sees)."""
    href = href.strip(_C0_SPACE)
    if "\n" in href or "\t" in href or "\r" in href:
        href = href.replace("\n", "").replace("\t", "").replace("\r", "")
    return href


def classify(href: str) -> str | None:
    """Why a (cleaned) href is not a link to a document ("empty", "fragment", "scheme"), or None."""
    if not href:
        return "empty"
    if href[0] == "#":
        return "fragment"
    if ":" in href[:12] and href[:12].lower().startswith(_SKIP_SCHEMES):
        return "scheme"
    return None


# (base as given, its parse or None, its origin for cache keys or "" for no caching)
_Page = tuple["str | None", "can_ada.URL | None", str]


class Resolver:
    """Resolves the hrefs of pages to canonical URLs (fetch form: see url_key).

    The page's URL is parsed once for all its links (links arrive page by page). Results are
    cached only where they cannot depend on the page beyond what the key holds: hrefs that are
    absolute with "//" (key: the href) and root-relative ones (key: the page's origin, parsed by
    the standard, + href). Parsing + canonicalising costs ~3 us a link; a hit ~0.5 us.
    Thread-safe: the per-page memo is one tuple swapped whole."""

    def __init__(self, cache_size: int = 200_000) -> None:
        self._cache: dict[tuple[str, str], tuple[str | None, str | None]] = {}
        self._cache_size = cache_size
        self._page: _Page = (None, None, "")

    def _set_page(self, base: str) -> _Page:
        try:
            b = parse(clean_href(base))
        except ValueError:
            page: _Page = (base, None, "")
        else:
            page = (base, b, b.origin if b.protocol in _HTTP else "")
        self._page = page
        return page

    def resolve(self, base: str, href: str) -> tuple[str | None, str | None]:
        """(canonical URL, None) or (None, reason) for one raw href found on page `base`.
        Reasons: "empty", "fragment" (the page itself), "scheme" (not http/https), "malformed"
        (not a URL by the standard, or a bad base)."""
        href = clean_href(href)
        why = classify(href)
        if why:
            return None, why
        page = self._page
        if page[0] != base:
            page = self._set_page(base)
        key: tuple[str, str] | None = None
        if href[0] == "/":
            if page[2] and (len(href) == 1 or (href[1] != "/" and href[1] != "\\")):
                key = (page[2], href)
        elif _ABSOLUTE.match(href):
            key = ("", href)
        if key is not None:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        try:
            u = parse(href, page[1])
        except ValueError:
            res: tuple[str | None, str | None] = (None, "malformed")
        else:
            res = _canonical(u, False)
        if key is not None:
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[key] = res
        return res


_default = Resolver(cache_size=20_000)


def resolve(base: str, href: str) -> str | None:
    """The absolute URL the crawler fetches for a link `href` found on a page at `base`, or
    None when it rejects the link (Resolver.resolve says why)."""
    return _default.resolve(base, href)[0]


def join(base: str, href: str) -> str | None:
    """The plain WHATWG resolution of href against base (no crawler rules), or None: for
    <base href>, which keeps its path, query and all."""
    try:
        return parse(clean_href(href), parse(clean_href(base))).href
    except ValueError:
        return None


def wire_url(url: str) -> yarl.URL:
    """The URL to hand aiohttp for a canonical URL, so that the request line and Host header
    carry exactly its bytes. Without encoded=True yarl re-quotes the path and query its own
    way (it decodes %7E-style escapes it considers safe and encodes characters the WHATWG sets
    leave alone), so the server would be asked for something other than the frontier key.
    The fetcher must call this for every request (pages, robots.txt, sitemaps)."""
    import yarl

    return yarl.URL(url, encoded=True)


def site_key(host: str) -> str:
    """The site a host belongs to for scope checks (host without port and leading 'www.')."""
    h = host.split("//", 1)[-1]
    if h.startswith("["):
        return h[:h.find("]") + 1]
    h = h.rsplit(":", 1)[0] if ":" in h else h
    return h.removeprefix("www.")

"""URLs: resolve an href against its page, classify what cannot be crawled, canonicalise.

The canonical form is the frontier's identity key, so every variant of a page is fetched once:
lower-case scheme and host, no default port, no fragment, dot segments removed, percent-encoding
normalised (unreserved characters decoded, hex upper-cased, everything else encoded as UTF-8),
tracking parameters (utm_*, gclid, fbclid, ...) dropped, query parameters sorted, and a trailing
slash added to an extension-less last path segment ("/x" and "/x/" are one page).
"""
from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters left as they are in a path / query (RFC 3986 pchar + "/" "?"); the rest is encoded.
_PATH_KEEP = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
                       "!$&'()*+,;=:@/")
_QUERY_KEEP = _PATH_KEEP | frozenset("?")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_NEEDS_WORK = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]")
# Tracking parameters that never change the page (compared lower-case; prefixes end with "_").
TRACKING_PARAMS = frozenset({"gclid", "fbclid", "dclid", "msclkid", "yclid", "mc_cid", "mc_eid",
                             "_ga", "_gl", "igshid", "ref_src", "spm", "_hsenc", "_hsmi", "mkt_tok"})
TRACKING_PREFIXES = ("utm_",)
# Schemes that are links but not to crawlable documents: skipped and counted as "invalid".
_SKIP_SCHEMES = ("javascript:", "mailto:", "tel:", "data:", "about:", "blob:", "sms:", "callto:",
                 "file:", "ftp:", "vbscript:", "urn:", "news:", "irc:", "magnet:", "skype:", "whatsapp:")
DEFAULT_PORTS = {"http": 80, "https": 443}


def _fix_pct(m: re.Match[str]) -> str:
    c = chr(int(m.group(1), 16))
    return c if c in _UNRESERVED else "%" + m.group(1).upper()


def _encode(s: str, keep: frozenset[str]) -> str:
    """Normalise percent-encoding: decode unreserved escapes, upper-case the others, and encode
    any character outside `keep` (non-ASCII as UTF-8 bytes). Existing escapes are kept."""
    if "%" in s:
        s = _PCT.sub(_fix_pct, s)
    if not _NEEDS_WORK.search(s):
        return s
    out = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in keep:
            out.append(c)
        elif c == "%" and _PCT.match(s, i):
            out.append(s[i:i + 3])
            i += 3
            continue
        else:
            out.append("".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")))
        i += 1
    return "".join(out)


def _remove_dots(path: str) -> str:
    if "." not in path:
        return path
    segs = path.split("/")
    out: list[str] = []
    for s in segs[1:]:
        if s == ".":
            continue
        if s == "..":
            if out:
                out.pop()
            continue
        out.append(s)
    res = "/" + "/".join(out)
    if segs[-1] in (".", "..") and not res.endswith("/"):
        res += "/"
    return res


def _norm_query(query: str) -> str:
    parts = []
    for p in query.split("&"):
        if not p:
            continue
        key = p.split("=", 1)[0].lower()
        if key in TRACKING_PARAMS or key.startswith(TRACKING_PREFIXES):
            continue
        parts.append(_encode(p.replace("+", "%20"), _QUERY_KEEP))
    parts.sort()
    return "&".join(parts)


def canonicalize(url: str, merge_slash: bool = True) -> str | None:
    """The canonical form of an absolute http(s) URL, or None if it is not one / malformed.
    merge_slash=False keeps "/x" as it is (the form to fetch: a server may not serve "/x/")."""
    try:
        sp = urlsplit(url)
        scheme = sp.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            return None
        host = sp.hostname
        if not host:
            return None
        port = sp.port
    except ValueError:  # bad port, bad IPv6 literal
        return None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    host = host.rstrip(".")
    if not host or any(c in host for c in " <>\"{}|\\^`%"):
        return None
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = _remove_dots(_encode(sp.path or "/", _PATH_KEEP))
    if not path.startswith("/"):
        path = "/" + path
    if merge_slash:
        last = path[path.rfind("/") + 1:]
        if last and "." not in last:
            path += "/"
    query = _norm_query(sp.query) if sp.query else ""
    return f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"


def url_key(url: str) -> str:
    """The identity of a canonical URL in the frontier: "/x" and "/x/" are one page."""
    q = url.find("?")
    path = url if q < 0 else url[:q]
    last = path[path.rfind("/") + 1:]
    if last and "." not in last and path.count("/") >= 3:
        return path + "/" + ("" if q < 0 else url[q:])
    return url


def clean_href(href: str) -> str:
    """What a browser does to an href before resolving: strip surrounding whitespace and drop
    tabs and newlines inside."""
    href = href.strip(" \t\n\r\f")
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


class Resolver:
    """Resolves the hrefs of pages to canonical URLs (fetch form: see url_key), caching results that do not depend on the
    page's path (absolute and root-relative hrefs repeat across every page of a site)."""

    def __init__(self, cache_size: int = 200_000) -> None:
        self._cache: dict[tuple[str, str], str | None] = {}
        self._cache_size = cache_size

    def resolve(self, base: str, href: str) -> tuple[str | None, str | None]:
        """(canonical URL, None) or (None, reason) for one raw href found on page `base`."""
        href = clean_href(href)
        why = classify(href)
        if why:
            return None, why
        c0 = href[0]
        key = None
        if (c0 == "/" and not href.startswith("//")) or href[:4].lower() == "http":
            # independent of base's path: cache per origin (scheme://netloc)
            origin = base[:base.find("/", base.find("//") + 2)] if c0 == "/" else ""
            key = (origin, href)
            hit = self._cache.get(key, False)
            if hit is not False:
                return (hit, None) if hit else (None, "malformed")
        try:
            absolute = urljoin(base, href)
        except ValueError:
            absolute = None
        url = canonicalize(absolute, merge_slash=False) if absolute else None
        if url is None and absolute:
            lower = absolute.split(":", 1)[0].lower()
            why = "scheme" if lower not in DEFAULT_PORTS and ":" in absolute else "malformed"
        else:
            why = None if url else "malformed"
        if key is not None and (url or why == "malformed"):
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[key] = url
        return url, why


def host_of(url: str) -> str:
    """scheme://host[:port] of a canonical URL: the unit of politeness."""
    return url[:url.find("/", url.find("//") + 2)]


def site_key(host: str) -> str:
    """The site a host belongs to for scope checks (host without port and leading 'www.')."""
    h = host.split("//", 1)[-1]
    if h.startswith("["):
        return h[:h.find("]") + 1]
    h = h.rsplit(":", 1)[0] if ":" in h else h
    return h[4:] if h.startswith("www.") else h

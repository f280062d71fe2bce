"""Which URLs a crawl follows: scope, depth, traps, include/exclude, extensions, date chains.

Pure functions over a frozen UrlPolicy built once from the config and the seeds, so every rule
is a table test (tests/crawl/test_crawl_policy.py) and the engine only asks `reject_reason`. The
reasons are the keys of CrawlStats.filtered.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..net.addresses import AddressPolicy
from ..net.fetch import HTML_TYPES
from ..urls import host_of, site_key
from .traps import dated, pathological
from .traps import trail as trail_of

# Extensions that are not HTML: links to them are not fetched when only HTML is wanted.
NON_HTML_EXT = frozenset(
    "pdf png jpg jpeg gif webp svg ico bmp tif tiff avif css js mjs json xml rss atom txt csv zip gz tgz "  # noqa: SIM905
    "bz2 xz 7z rar tar mp3 mp4 m4a m4v ogg oga ogv webm wav flac avi mov mkv wmv doc docx xls xlsx ppt "
    "pptx odt ods odp rtf epub exe dmg msi apk deb rpm iso bin woff woff2 ttf otf eot".split())


@dataclass(frozen=True, slots=True)
class Scope:
    """The seeds' hosts and sites, and how far beyond them a crawl may go (host | site | any)."""

    mode: str
    hosts: frozenset[str]
    sites: frozenset[str]


def scope_of(seeds: Iterable[str], mode: str) -> Scope:
    hosts = frozenset(host_of(u) for u in seeds)
    return Scope(mode, hosts, frozenset(site_key(h) for h in hosts))


def in_scope(scope: Scope, url: str) -> bool:
    if scope.mode == "any":
        return True
    host = host_of(url)
    if scope.mode == "host":
        return host in scope.hosts
    s = site_key(host)
    return s in scope.sites or any(s.endswith("." + k) for k in scope.sites)


# Extensions fetched all the same when their media type is asked for (--content-types ...,application/pdf).
EXT_TYPES = {"pdf": "application/pdf"}


def non_html_extension(url: str, wanted: frozenset[str] = frozenset()) -> bool:
    """The last path segment ends in an extension that is never HTML (.pdf, .png, ...) and not
    one of wanted."""
    path = url.split("?", 1)[0]
    last = path[path.rfind("/") + 1:]
    dot = last.rfind(".")
    ext = last[dot + 1:].lower()
    return dot > 0 and ext in NON_HTML_EXT and ext not in wanted


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    scope: Scope
    max_depth: int | None = None
    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    html_only: bool = True  # skip links whose extension is never HTML
    date_hops: int | None = None  # longest date chain followed (crawl.decisions.traps); None: no limit
    addresses: AddressPolicy | None = None  # private/loopback hosts refused unless the seeds are there
    wanted_ext: frozenset[str] = frozenset()  # extensions not filtered (pdf when application/pdf is wanted)


def make_policy(scope: Scope, *, max_depth: int | None = None, include: Iterable[str] = (),
                exclude: Iterable[str] = (), content_types: tuple[str, ...] = HTML_TYPES,
                date_hops: int | None = None, addresses: AddressPolicy | None = None) -> UrlPolicy:
    # HTML plus PDF still filters the other extensions (.png, .css...); only .pdf links pass
    wanted = frozenset(e for e, t in EXT_TYPES.items() if t in content_types)
    html_only = content_types == HTML_TYPES or (
        bool(wanted) and set(content_types) <= set(HTML_TYPES) | set(EXT_TYPES.values()))
    return UrlPolicy(scope, max_depth, tuple(re.compile(p) for p in include), tuple(re.compile(p) for p in exclude),
                     html_only, date_hops, addresses, wanted)


def reject_reason(p: UrlPolicy, url: str, depth: int, kind: str = "page") -> str | None:
    """Why url is not crawled (private address, scope, depth, trap, include, exclude, extension), or None.
    The depth limit is on link hops from a seed: it applies to pages, not to sitemap files
    (their nesting has its own limit, crawl.sources.sitemaps)."""
    if p.addresses is not None and not p.addresses.url_allowed(url):
        return "private"
    if not in_scope(p.scope, url):
        return "scope"
    if kind == "page" and p.max_depth is not None and depth > p.max_depth:
        return "depth"
    if pathological(url):
        return "trap"
    if p.include and not any(rx.search(url) for rx in p.include):
        return "include"
    if p.exclude and any(rx.search(url) for rx in p.exclude):
        return "exclude"
    if kind == "page" and p.html_only and non_html_extension(url, p.wanted_ext):
        return "extension"
    return None


def permanent(reason: str) -> bool:
    """Whether a rejected URL stays rejected for the crawl: a URL too deep by one path may be
    reached by a shorter one later, so "depth" is not remembered."""
    return reason != "depth"


def date_trail(p: UrlPolicy, page_url: str, page_trail: int, page_dated: bool, url: str) -> int | None:
    """The date-chain trail of a link (crawl.decisions.traps), or None when it is past the limit."""
    t = trail_of(page_url, page_trail, page_dated, url) if page_dated else 0
    if p.date_hops is not None and t > p.date_hops:
        return None
    return t


def page_is_dated(p: UrlPolicy, url: str) -> bool:
    """Only a dated page starts chains; without a limit the check is skipped."""
    return p.date_hops is not None and dated(url)

"""Links of a parsed page: a[href] and area[href], resolved against <base href> if the page has
one. A loop over the Dom's flat arrays (no recursion: pages nest 100,000 deep)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..urls import join

if TYPE_CHECKING:
    from ...parse import Dom

LINK_TAGS = frozenset({"a", "area"})


def base_url(dom: Dom, page_url: str) -> str:
    """The URL relative links resolve against: the first <base href> resolved by the URL
    standard, else the page's URL (also when the base is no URL, or a data:/javascript: one,
    as the HTML standard says)."""
    i = dom.find("base")
    if i >= 0:
        href = dom.get_attr(i, "href")
        if href and href.strip():
            url = join(page_url, href)
            if url and not url.startswith(("data:", "javascript:")):
                return url
    return page_url


def raw_links(dom: Dom) -> list[str]:
    """The href of every <a>/<area> in document order (raw attribute values)."""
    tags, attrs = dom.tag, dom.attrs
    out = []
    for i, t in enumerate(tags):
        if t in LINK_TAGS:
            a = attrs[i]
            if a:
                h = a.get("href")
                if h is not None:
                    out.append(h)
    return out


FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/feed+json",
                        "application/json"})  # JSON Feed's own type and the one it is often served as
MAX_FEEDS = 8  # feed links taken from one page (a page listing 500 category feeds is not 500 sources)


@dataclass(frozen=True, slots=True)
class PageSignals:
    """What a page says about itself and its links, beyond the links (raw attribute values: the
    engine resolves them against the base).

    noindex / nofollow: from <meta name="robots"> or <meta name="AGENT"> (content "noindex",
    "nofollow", "none" = both). canonical: the first <link rel="canonical" href>. feeds: <link
    rel="alternate"> of an RSS, Atom or JSON Feed type (at most MAX_FEEDS). nofollow_hrefs: links
    with rel="nofollow" (or "ugc", "sponsored"), left out of PageOut.hrefs."""

    noindex: bool = False
    nofollow: bool = False
    canonical: str | None = None
    feeds: tuple[str, ...] = ()
    nofollow_hrefs: tuple[str, ...] = ()

    def replace_links(self) -> PageSignals:
        """The signals without links to follow (the page is at --max-depth): canonical and noindex stay."""
        return PageSignals(self.noindex, self.nofollow, self.canonical)


NOFOLLOW_RELS = frozenset({"nofollow", "ugc", "sponsored"})


def robots_directives(content: str) -> tuple[bool, bool]:
    """(noindex, nofollow) from a robots meta content or an X-Robots-Tag value's directives."""
    noindex = nofollow = False
    for tok in content.lower().replace(";", ",").split(","):
        tok = tok.strip()
        if tok in ("noindex", "none"):
            noindex = True
        if tok in ("nofollow", "none"):
            nofollow = True
    return noindex, nofollow


def x_robots_tag(values: list[str], agent: str) -> tuple[bool, bool]:
    """(noindex, nofollow) from X-Robots-Tag header values: "noindex", "noindex, nofollow", or
    "AGENT: noindex" (applies only when AGENT is our robots token)."""
    agent = agent.lower()
    noindex = nofollow = False
    for v in values:
        head, sep, rest = v.partition(":")
        if sep and head.strip().lower() not in ("unavailable_after",) and " " not in head.strip():
            if head.strip().lower() != agent:
                continue
            v = rest
        a, b = robots_directives(v)
        noindex, nofollow = noindex or a, nofollow or b
    return noindex, nofollow


def scan(dom: Dom, agent: str = "blockcrawl") -> tuple[list[str], PageSignals]:
    """One pass over the flat Dom: the followable hrefs of <a>/<area> in document order, and the
    page's signals (PageSignals). Linear in the number of nodes, no recursion."""
    tags, attrs = dom.tag, dom.attrs
    agent = agent.lower()
    hrefs: list[str] = []
    nofollow_hrefs: list[str] = []
    feeds: list[str] = []
    canonical: str | None = None
    noindex = nofollow = False
    for i, t in enumerate(tags):
        a = attrs[i]
        if not a:
            continue
        if t in LINK_TAGS:
            h = a.get("href")
            if h is not None:
                rel = a.get("rel")
                if rel and not NOFOLLOW_RELS.isdisjoint(rel.lower().split()):
                    nofollow_hrefs.append(h)
                else:
                    hrefs.append(h)
        elif t == "meta":
            name = (a.get("name") or "").strip().lower()
            if name == "robots" or (name and name == agent):
                x, y = robots_directives(a.get("content") or "")
                noindex, nofollow = noindex or x, nofollow or y
        elif t == "link":
            rels = (a.get("rel") or "").lower().split()
            h = a.get("href")
            if not rels or not h or not h.strip():
                continue
            if "canonical" in rels and canonical is None:
                canonical = h.strip()
            elif "alternate" in rels and len(feeds) < MAX_FEEDS:
                ctype = (a.get("type") or "").split(";", 1)[0].strip().lower()
                if ctype in FEED_TYPES:
                    feeds.append(h.strip())
    return hrefs, PageSignals(noindex, nofollow, canonical, tuple(feeds), tuple(nofollow_hrefs))


def canonical_elsewhere(page_url: str, base: str, href: str | None) -> str | None:
    """The canonical URL a page names, in canonical form, when it is another URL (another frontier
    key) on the page's own host; else None. Cross-host canonicals are not followed (a syndicated
    copy naming the original site is still this site's page), and neither are unparsable ones.
    The worker (process.analyse) and the engine apply this same rule, so a page the worker did not
    extract is exactly one the engine folds."""
    if not href:
        return None
    from ..urls import canonicalize, host_of, url_key
    url = join(base, href)
    c = canonicalize(url, merge_slash=False) if url else None
    if c is None or host_of(c) != host_of(page_url) or url_key(c) == url_key(page_url):
        return None
    return c

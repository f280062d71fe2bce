"""Links of a parsed page: a[href] and area[href], resolved against <base href> if the page has
one. A loop over the Dom's flat arrays (no recursion: pages nest 100,000 deep)."""
from __future__ import annotations

from ..parse import Dom
from .urls import join

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

"""Links of a parsed page: a[href] and area[href], resolved against <base href> if the page has
one. A loop over the Dom's flat arrays (no recursion: pages nest 100,000 deep)."""
from __future__ import annotations

from urllib.parse import urljoin

from ..parse import Dom

LINK_TAGS = frozenset({"a", "area"})


def base_url(dom: Dom, page_url: str) -> str:
    """The URL relative links resolve against: the first <base href>, else the page's URL."""
    i = dom.find("base")
    if i >= 0:
        href = dom.get_attr(i, "href")
        if href and href.strip():
            try:
                return urljoin(page_url, href.strip())
            except ValueError:
                pass
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

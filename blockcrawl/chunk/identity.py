"""What a page is, in a few words, for the context line of each of its chunks: its <title> without
the site's name, or its <h1> where the title is only the site's brand."""
from __future__ import annotations

import re

# the separators sites put between a page's name and their own: "Page | Shop", "Site :: Page",
# "Page - Site", "Page — Site", "Page · Site", "Site » Page" (spaces around them required, so
# "e-mail" or "a-b" are not cut)
_SEPARATORS = re.compile(r"\s+(?:\||::|-|–|—|·|»|«|/|\\)\s+")
_MARKS = "¶#§"  # the permalink marks documentation generators append to headings


def _clean(s: str) -> str:
    return " ".join(s.split()).strip(_MARKS + " ")


def page_identity(title: str, heading: str = "", site_name: str = "") -> str:
    """The page's name: the <title>'s segments (cut at " | ", " - ", " :: " ...) without the one
    that is the site's name (site_name, from og:site_name or application-name), or, when the
    page's own heading (its h1) is one of the segments or lies inside one, that segment alone
    ("NLTK :: nltk.tokenize.punkt module" with h1 "nltk.tokenize.punkt module" -> the h1's
    segment); the h1 where the title is the site's name alone; else the title whole (no evidence which segment is
    the brand: "Mischa Barton - Wikipedia, the free encyclopedia" stays as it is).
    Pure and linear in the title."""
    title, heading, site = _clean(title), _clean(heading), _clean(site_name).lower()
    if not title:
        return heading
    parts = [p for p in (_clean(s) for s in _SEPARATORS.split(title)) if p]
    rest = [p for p in parts if p.lower() != site] if site else parts
    if not rest:  # the title is the site's name alone: the page's heading says more
        return heading or title
    if heading and len(rest) > 1:
        h = heading.lower()
        named = next((p for p in rest if h in p.lower()), None)
        if named is not None:
            return named
    return " | ".join(rest) if len(rest) < len(parts) else title

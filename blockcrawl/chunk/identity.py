"""The context line of each chunk: what a page is, in a few words (page_identity: its <title>
without the site's name, or its <h1> where the title is only the site's brand), then the headings
a chunk's own text does not show (chunk_context, path_context)."""
from __future__ import annotations

import re
from collections.abc import Sequence

from ..records import Block

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


CONTEXT_SEP = " > "


def chunk_context(title: str, block: Block, heading: str = "") -> str:
    """What a chunk of block lacks to stand alone: the page title and the headings above the one
    its text's prefix shows (the prefix shows the last heading, or the whole path with
    full_path). The title is left out when the first heading repeats it (the article's h1):
    "Mischa Barton > Filmography" for a chunk reading "Film: Year: 1999 | ...".
    The title is whitespace-normalised; the site name after it ("- Wikipedia") is kept, it costs
    a few tokens and cutting it needs a guess per site.
    heading: the page's own heading (its h1), added after the title when neither the title nor
    the headings say it: a spec page's h1 in a <header> labels none of its sections, and its
    chunks under "Format specification in YAML" said neither the title nor "ZIP"."""
    path = block.heading_path
    prefix = block.text[: len(block.text) - len(block.body)] if block.text.endswith(block.body) else ""
    shown_all = bool(path) and prefix.startswith(CONTEXT_SEP.join(path))
    parts = [] if shown_all else list(path[:-1])
    title = " ".join(title.split())
    lead = 0
    if title and not (path and path[0].strip("¶#§ ").lower() in title.lower()):
        parts.insert(0, title)
        lead = 1
    heading = " ".join(heading.split())
    if heading and heading.lower() not in (CONTEXT_SEP.join(parts) + " " + prefix + " " + title).lower():
        parts.insert(lead, heading)
    return CONTEXT_SEP.join(parts)


def path_context(title: str, path: Sequence[str], heading: str = "") -> str:
    """chunk_context for a chunk whose text shows no heading prefix: the title (unless the first
    heading repeats it), the page's heading if nothing says it, and the whole heading path."""
    parts = list(path)
    title = " ".join(title.split())
    lead = 0
    if title and not (path and path[0].strip("¶#§ ").lower() in title.lower()):
        parts.insert(0, title)
        lead = 1
    heading = " ".join(heading.split())
    if heading and heading.lower() not in (CONTEXT_SEP.join(parts) + " " + title).lower():
        parts.insert(lead, heading)
    return CONTEXT_SEP.join(parts)

"""The readable listing of hits that `blockcrawl search` prints (also for demos and scripts)."""
from __future__ import annotations

import textwrap

from ..plaintext import plain
from .hit import Hit


def marked(text: str, highlights: list[tuple[int, int]], marks: tuple[str, str]) -> str:
    """text with marks[0] / marks[1] around each highlighted [start, end) span; the text between
    the marks without terminal control characters (plaintext.plain), the marks as given."""
    out, at = [], 0
    for a, b in sorted(highlights):
        if a < at:
            continue
        out += [plain(text[at:a]), marks[0], plain(text[a:b]), marks[1]]
        at = b
    out.append(plain(text[at:]))
    return "".join(out)


def where(h: Hit) -> str:
    """"Title > Heading > Subheading" of a hit: its page title (its URL when it has none), then
    its heading path, the first heading left out when the title already says it."""
    title = " ".join(h.title.split())
    path = [p.strip("¶#§ ") for p in h.heading_path]
    if path and title and path[0].strip("¶#§ ").lower() in title.lower():
        path = path[1:]
    return " > ".join([title or "(untitled)", *path])


def format_hits(hits: list[Hit], width: int = 96, marks: tuple[str, str] = ("«", "»")) -> str:
    """Numbered hits: rank, score, the page's title and the hit's heading path (what page and
    section the hit is from: a chunk's own text may start mid-section), then the source URL, then
    the snippet with the query's words between marks (plain «» by default: safe in any terminal
    and any file), wrapped; then the context, when one was asked for. What the page wrote
    (title, headings, URL, text) is printed without terminal control characters (plaintext.plain)."""
    parts = []
    for n, h in enumerate(hits, 1):
        crumbs = plain(where(h)).replace("\n", " ")
        shown = marked(h.snippet, h.highlights, marks) if h.snippet else plain(h.text)
        body = textwrap.indent(textwrap.fill(shown, width), "    ")
        part = f"{h.rank or n:>2}. [{h.score:.4f}] {crumbs}\n    {plain(h.url)}\n{body}\n"
        if h.context is not None:
            ctx = "\n".join(textwrap.fill(p, width) for p in plain(h.context).split("\n\n"))
            part += "    context:\n" + textwrap.indent(ctx, "    | ") + "\n"
        parts.append(part)
    return "\n".join(parts)

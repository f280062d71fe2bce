"""The readable listing of hits that `blockcrawl search` prints (also for demos and scripts)."""
from __future__ import annotations

import textwrap

from .hybrid import Hit


def format_hits(hits: list[Hit], width: int = 96) -> str:
    """Numbered hits: score and heading path, then the source URL, then the chunk text, wrapped."""
    parts = []
    for n, h in enumerate(hits, 1):
        crumbs = " > ".join(h.heading_path) or "(no heading)"
        body = textwrap.indent(textwrap.fill(h.text, width), "    ")
        parts.append(f"{n:>2}. [{h.score:.4f}] {crumbs}\n    {h.url}\n{body}\n")
    return "\n".join(parts)

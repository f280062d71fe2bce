"""Plain text of a page (seed 002): every text node, trimmed, separated by one space."""
from __future__ import annotations

from ..parse import TEXT, Dom, load


def dom_text(dom: Dom, start: int | None = None) -> str:
    """Text of the subtree at start (default: <body>), script/style/head skipped."""
    i = dom.body() if start is None else start
    parts = []
    for j in range(i, dom.end[i] if len(dom) else 0):
        if dom.tag[j] == TEXT and not dom.skipped[j]:
            t = " ".join(dom.text[j].split())
            if t:
                parts.append(t)
    return " ".join(parts)


def extract_text(html: str | bytes, url: str | None = None) -> str:
    """Plain text of an HTML page, nodes separated by a space.

    >>> extract_text("<h1>Header</h1> Some text <div> Just text <p>Paragraph.</p></div>")
    'Header Some text Just text Paragraph.'
    """
    return dom_text(load(html, url))

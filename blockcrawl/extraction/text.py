"""Plain text of a page (seed 002): the text nodes, white space collapsed to one space.

Word boundaries follow rendering: white space in the text, and the edges of every element that is
not inline text markup. `<p>Hello world</p><a>Link</a>` is "Hello world Link" (block-level
elements separate words), `<b>Hel</b>lo` is "Hello" (inline elements do not). The blocks of
blocks.py keep exactly these boundaries, so a chunk never holds a word a reader would not see.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..parse import TEXT, Dom, load

# Text-level (phrasing) elements that render inline without separating words. Everything else,
# unknown and custom elements included, separates: a wrong space costs less than glued words.
INLINE_TAGS = frozenset({
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "blink", "cite", "code", "data", "del", "dfn", "em",
    "font", "i", "ins", "kbd", "label", "mark", "nobr", "q", "rb", "rp", "rt", "rtc", "ruby", "s", "samp",
    "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr", "o:p",
})


def subtree_text(dom: Dom, start: int, keep: Sequence[bool] | None = None) -> str:
    """Text of the subtree at start with the word boundaries above, one space between words.
    keep[i] False drops text node i. One loop over the nodes: a boundary is a space appended
    at a separating element's start, and at its end (a stack of open ones)."""
    tags, texts, ends, skipped = dom.tag, dom.text, dom.end, dom.skipped
    pieces: list[str] = []
    open_: list[int] = []  # separating elements whose end is still ahead
    j, stop = start, ends[start]
    while j < stop:
        while open_ and ends[open_[-1]] <= j:
            open_.pop()
            pieces.append(" ")
        tag = tags[j]
        if tag == TEXT:
            if not skipped[j] and (keep is None or keep[j]):
                pieces.append(texts[j])
            j += 1
        elif skipped[j]:  # script, style...: not text, but not glue either
            pieces.append(" ")
            j = ends[j]
        else:
            if tag not in INLINE_TAGS:
                pieces.append(" ")
                open_.append(j)
            j += 1
    return " ".join("".join(pieces).split())


def dom_text(dom: Dom, start: int | None = None) -> str:
    """Text of the subtree at start (default: <body>), script/style/head skipped."""
    if not len(dom):
        return ""
    return subtree_text(dom, dom.body() if start is None else start)


def extract_text(html: str | bytes, url: str | None = None) -> str:
    """Plain text of an HTML page, words separated by one space.

    >>> extract_text("<h1>Header</h1> Some text <div> Just text <p>Paragraph.</p></div>")
    'Header Some text Just text Paragraph.'
    >>> extract_text("<p>Hello world</p><a>Link</a> <b>Hel</b>lo")
    'Hello world Link Hello'
    """
    return dom_text(load(html, url))

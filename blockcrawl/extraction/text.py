"""Plain text of a page (seed 002): the text nodes, white space collapsed to one space, except
in code and other preformatted text, kept as a browser shows it (code_text).

Word boundaries follow rendering: white space in the text, and the edges of every element that is
not inline text markup. `<p>Hello world</p><a>Link</a>` is "Hello world Link" (block-level
elements separate words), `<b>Hel</b>lo` is "Hello" (inline elements do not). The blocks of
blocks.py keep exactly these boundaries, so a chunk never holds a word a reader would not see.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from ..parse import TEXT, Dom, load

# Text-level (phrasing) elements that render inline without separating words. Everything else,
# unknown and custom elements included, separates: a wrong space costs less than glued words.
INLINE_TAGS = frozenset({
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "blink", "cite", "code", "data", "del", "dfn", "em",
    "font", "i", "ins", "kbd", "label", "mark", "nobr", "q", "rb", "rp", "rt", "rtc", "ruby", "s", "samp",
    "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr", "o:p",
})


# Elements whose white space is kept as written (HTML's `white-space: pre` by default).
PRE_TAGS = frozenset({"pre", "listing", "xmp", "plaintext"})
# Elements that begin and end a line inside preformatted text (innerText's "required line break").
_CODE_LINE_TAGS = frozenset({
    "div", "p", "li", "tr", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "header",
    "footer", "table", "ul", "ol", "dl", "blockquote", "pre", "figure", "details", "summary", "address", "hr",
})
_PRE_STYLE = re.compile(r"white-space\s*:\s*(?:pre(?!-line)|break-spaces)", re.IGNORECASE)


def is_pre(dom: Dom, i: int) -> bool:
    """Element i keeps its white space: <pre> and its kin, or a <code> whose inline style says
    so (`white-space: pre`, `pre-wrap`, `break-spaces`). Other elements styled so (a forum post
    in a pre-wrap <div>) keep their structure: their headings and tables are read as such."""
    t = dom.tag[i]
    if t in PRE_TAGS:
        return True
    if t != "code":
        return False
    a = dom.attrs[i]
    style = a.get("style") if a else None
    return bool(style) and _PRE_STYLE.search(style) is not None  # type: ignore[arg-type]


def code_text(dom: Dom, start: int, keep: Sequence[bool] | None = None) -> str:
    """The text of a preformatted element as a browser's innerText gives it: every character of
    its text nodes as written (line breaks, indentation, tabs), <br> a line break, a block-level
    child on lines of its own; leading blank lines and trailing white space dropped (trim_code).
    keep[i] False drops text node i, except white space: a mask that keeps the tokens of highlighted code
    (`<span>meta</span><span>:</span>\n  <span>id</span>`) but not the white-space nodes between
    them glued them into "meta:id:" (a 185-page docs site: every code block). One loop."""
    tags, texts, ends, skipped = dom.tag, dom.text, dom.end, dom.skipped
    parts: list[str] = []
    closers: list[int] = []  # open line elements, innermost last

    def soft_break() -> None:
        if parts and not parts[-1].endswith("\n"):
            parts.append("\n")

    j, stop = start + 1, ends[start]
    while j < stop:
        while closers and ends[closers[-1]] <= j:
            closers.pop()
            soft_break()
        t = tags[j]
        if t == TEXT:
            s = texts[j]
            if not skipped[j] and (keep is None or keep[j] or s.isspace()):
                parts.append(s)
            j += 1
        elif skipped[j]:
            j = ends[j]
        elif t == "br":
            parts.append("\n")
            j += 1
        else:
            if t in _CODE_LINE_TAGS:
                soft_break()
                closers.append(j)
            j += 1
    return trim_code("".join(parts))


def trim_code(text: str) -> str:
    """Code without its leading blank lines and trailing white space (the first line keeps its
    indentation): what a block, a chunk and a fence hold of a <pre>'s innerText."""
    text = text.rstrip()
    lead = len(text) - len(text.lstrip())
    return text[text.rfind("\n", 0, lead) + 1:]


def subtree_text(dom: Dom, start: int, keep: Sequence[bool] | None = None, keep_pre: bool = False) -> str:
    """Text of the subtree at start with the word boundaries above, one space between words.
    keep[i] False drops text node i (a white-space node still separates words: a mask keeping
    "SQLite", "format", "3" but not the spaces between them read "SQLiteformat3"). One loop over
    the nodes: a boundary is a space appended at a separating element's start, and at its end
    (a stack of open ones). keep_pre: preformatted elements (is_pre) keep their text as written
    (code_text), on lines of their own."""
    tags, texts, ends, skipped = dom.tag, dom.text, dom.end, dom.skipped
    pieces: list[str] = []
    out: list[str] = []  # finished runs: collapsed text and preformatted text, in order
    open_: list[int] = []  # separating elements whose end is still ahead
    j, stop = start, ends[start]
    while j < stop:
        while open_ and ends[open_[-1]] <= j:
            open_.pop()
            pieces.append(" ")
        tag = tags[j]
        if tag == TEXT:
            if not skipped[j] and (keep is None or keep[j] or texts[j].isspace()):
                pieces.append(texts[j])
            j += 1
        elif skipped[j]:  # script, style...: not text, but not glue either
            pieces.append(" ")
            j = ends[j]
        elif keep_pre and is_pre(dom, j):
            code = code_text(dom, j, keep)
            if code.strip():
                run = " ".join("".join(pieces).split())
                if run:
                    out.append(run)
                pieces.clear()
                out.append(code)
            j = ends[j]
        else:
            if tag not in INLINE_TAGS:
                pieces.append(" ")
                open_.append(j)
            j += 1
    run = " ".join("".join(pieces).split())
    if not out:
        return run
    if run:
        out.append(run)
    return "\n".join(out)


def dom_text(dom: Dom, start: int | None = None) -> str:
    """Text of the subtree at start (default: <body>), script/style/head skipped; code and
    other preformatted text as written, on lines of its own."""
    if not len(dom):
        return ""
    return subtree_text(dom, dom.body() if start is None else start, keep_pre=True)


def extract_text(html: str | bytes, url: str | None = None) -> str:
    """Plain text of an HTML page, words separated by one space.

    >>> extract_text("<h1>Header</h1> Some text <div> Just text <p>Paragraph.</p></div>")
    'Header Some text Just text Paragraph.'
    >>> extract_text("<p>Hello world</p><a>Link</a> <b>Hel</b>lo")
    'Hello world Link Hello'
    """
    return dom_text(load(html, url))

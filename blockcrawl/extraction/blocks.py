"""Block scraping (seed 000): a block per section, prefixed by its heading.

One pass over the flat DOM. Block-level containers close the current block and open a new one;
a heading starts a new block and becomes the prefix of the blocks under it, outline style
(an h2 nests under the preceding h1, a new h2 replaces it). A heading no text block used is
emitted alone ("Europe Countries:"). Optionally only nodes a main-content mask keeps are read.
Data tables (extraction/tables.py) become one block each, kind "table" or "infobox", whose rows
stand alone.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from ..hashing import text_hash
from ..parse import TEXT, Dom, load
from ..records import Block
from .tables import data_tables, table_rows
from .text import INLINE_TAGS, PRE_TAGS, code_text, is_pre, subtree_text

BLOCK_TAGS = frozenset({
    "div", "section", "article", "main", "aside", "header", "footer", "nav", "table", "ul", "ol",
    "dl", "form", "figure", "blockquote", "pre", "details", "fieldset", "address", "center", "body",
    "menu", "dialog", "hgroup", "figcaption", "caption",
})
# Sectioning elements end the scope of the headings inside them.
SECTIONING_TAGS = frozenset({"section", "article", "aside", "nav", "header", "footer", "main"})
# Page furniture: headings outside them do not label their text, headings inside stay inside.
BARRIER_TAGS = frozenset({"header", "footer", "nav", "aside"})
# Line breaks inside a block.
LINE_TAGS = frozenset({"p", "br", "li", "tr", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
                       "option", "summary", "legend"})
HEADING_LEVEL = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
PATH_SEP = " > "
TAG_PATH_LIMIT = 24  # steps of a block's tag path kept (deep pages would make it quadratic)
_WS = re.compile(r"[ \t\r\f\v\u00a0\u200b]+")
_NL = "\n"


class _Heading:
    __slots__ = ("level", "node", "owner", "text", "used")

    def __init__(self, level: int, text: str, owner: int, node: int) -> None:
        self.level, self.text, self.used, self.owner, self.node = level, text, False, owner, node


def blocks_from_dom(dom: Dom, keep: Sequence[bool] | None = None, full_path: bool = False,
                    start: int | None = None) -> list[Block]:
    """Blocks of the subtree at start (default <body>); keep[i] False drops text node i."""
    if not len(dom):
        return []
    tables = data_tables(dom)
    root = dom.body() if start is None else start
    tags, texts, ends, skipped = dom.tag, dom.text, dom.end, dom.skipped
    blocks: list[Block] = []
    headings: list[_Heading] = []
    saved: list[tuple[int, list[_Heading]]] = []  # (barrier element, headings outside it)
    containers: list[int] = []  # open block containers, innermost last
    lines: list[str] = []  # finished lines of the current block
    cur: list[str] = []  # text of the current line
    block_node = root
    # Elements whose end separates words (text.py's rule): line elements end the line, the
    # others add a space. A stack, innermost last: the ends come in that order.
    closers: list[int] = []
    parent = dom.parent
    memo: dict[int, tuple[str, int, bool]] = {}  # node -> (last tags of its path, how many, cut?)

    def tag_path(node: int) -> str:
        """dom.path(node, limit=TAG_PATH_LIMIT), each ancestor's path built once, so a node takes
        one step, not TAG_PATH_LIMIT (50k blocks nested 50k deep: 2.4 s walking 24 steps each)."""
        chain = []
        k = node
        while k >= 0 and k not in memo:
            chain.append(k)
            k = parent[k]
        path, n, cut = memo[k] if k >= 0 else ("", 0, False)
        for c in reversed(chain):
            if n == TAG_PATH_LIMIT:
                path, n, cut = path[path.find("/") + 1:], n - 1, True
            path, n = (path + "/" + tags[c] if n else tags[c]), n + 1
            memo[c] = (path, n, cut)
        return "..." + "/" + path if cut else path

    def emit(body: str, kind: str, node: int, rows: tuple[str, ...] = (), caption: str = "",
             header: str = "") -> None:
        path = tuple(h.text for h in headings)
        label = (PATH_SEP.join(path) if full_path else path[-1]) if path else ""
        if kind == "heading":
            text = label + ":"
        else:
            if path:
                headings[-1].used = True
            if caption:  # a table's caption follows its heading: "Film > Filmography of X"
                label = label + PATH_SEP + caption if label else caption
            text = label + ": " + body if label else body
        blocks.append(Block(text=text, body=body, heading_path=path, tag_path=tag_path(node),
                            position=len(blocks), url=dom.url, hash=text_hash(text), kind=kind,
                            rows=rows, caption=caption, header=header))

    def end_line() -> None:
        # 9 in 10 lines end with nothing but white space (the indentation between tags): they
        # are dropped by isspace (a C loop) before the collapse; a line with no run to
        # collapse is only stripped (_WS.sub was ~3% of extract() on the dev pages)
        if cur:
            line = "".join(cur)
            cur.clear()
            if line.isspace():
                return
            line = line.strip() if "  " not in line and line.isprintable() else _WS.sub(" ", line).strip()
            if line:
                lines.append(line)

    def flush() -> None:
        end_line()
        if lines:
            body = _NL.join(lines)
            lines.clear()
            emit(body, "text", block_node)

    def lone_heading() -> None:
        if headings and not headings[-1].used:
            headings[-1].used = True
            emit("", "heading", headings[-1].node)

    j, stop = root, ends[root]
    while j < stop:
        while closers and ends[closers[-1]] <= j:
            if tags[closers.pop()] in LINE_TAGS:
                end_line()
            else:
                cur.append(" ")
        # Close the containers that ended before j.
        while containers and ends[containers[-1]] <= j:
            c = containers.pop()
            flush()
            block_node = containers[-1] if containers else root
            if tags[c] in SECTIONING_TAGS:
                while headings and headings[-1].owner == c:
                    lone_heading()
                    headings.pop()
            if saved and saved[-1][0] == c:
                while headings:
                    lone_heading()
                    headings.pop()
                headings = saved.pop()[1]
        tag = tags[j]
        if tag == TEXT:
            t = texts[j]
            # a white-space node the mask dropped still separates words ("SQLite format 3")
            if not skipped[j] and (keep is None or keep[j] or t.isspace()):
                cur.append(t.replace("\n", " "))
            j += 1
            continue
        if skipped[j]:
            cur.append(" ")
            j = ends[j]
            continue
        kind = tables.get(j)
        if kind is not None:
            flush()
            caption, body, rows, header = table_rows(dom, j, keep, kind == "infobox")
            if rows:
                emit(_NL.join(rows if kind == "infobox" else body), kind, j, tuple(rows), caption, header)
            j = ends[j]
            continue
        level = HEADING_LEVEL.get(tag)
        if level is not None:
            htext = subtree_text(dom, j, keep)
            if not htext:
                end_line()
            else:
                flush()
                lone_heading()
                while headings and headings[-1].level >= level:
                    headings.pop()
                owner = next((c for c in reversed(containers) if tags[c] in SECTIONING_TAGS), -1)
                headings.append(_Heading(level, htext, owner, j))
            j = ends[j]
            continue
        if (tag in PRE_TAGS or tag == "code") and is_pre(dom, j):
            # code is code: its own block, as written (code_text: innerText's line breaks and
            # indentation, the white space a mask dropped put back)
            flush()
            code = code_text(dom, j, keep)
            if code.strip():
                block_node = j
                lines.append(code)
                flush()
                block_node = containers[-1] if containers else root
            j = ends[j]
            continue
        if tag in BLOCK_TAGS:
            flush()
            containers.append(j)
            block_node = j
            if tag in BARRIER_TAGS:
                saved.append((j, headings))
                headings = []
        elif tag in LINE_TAGS:
            end_line()
            closers.append(j)
        elif tag not in INLINE_TAGS:  # table cells, images, form controls, unknown elements
            cur.append(" ")
            closers.append(j)
        j += 1
    flush()
    while headings:
        lone_heading()
        headings.pop()
    return blocks


def extract_blocks(html: str | bytes, url: str | None = None, full_path: bool = False) -> list[Block]:
    """Heading-aware text blocks of a whole page (no main-content filtering)."""
    return blocks_from_dom(load(html, url), full_path=full_path)


def outline(blocks: Iterable[Block]) -> Iterator[tuple[int, str]]:
    """The blocks as an outline: (level, heading) for each heading where it first applies
    (level 0 = outermost), then (-1, body) for each text block; headings shared with the
    previous block are not repeated."""
    shown: tuple[str, ...] = ()
    for b in blocks:
        path = b.heading_path
        k = 0
        while k < min(len(shown), len(path)) and shown[k] == path[k]:
            k += 1
        for level in range(k, len(path)):
            yield level, path[level]
        shown = path
        if b.kind != "heading" and b.body:
            yield -1, b.body

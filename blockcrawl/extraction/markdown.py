"""Markdown of a page's (main) content: headings, paragraphs, links, lists, pipe tables, code and
emphasis kept, the form crawl4ai's and Firecrawl's users feed to language models.

One forward loop over the flat Dom arrays, like blocks.py: no recursion, and every node is
visited once. Elements whose end closes some markup (a link's "](url)", a list item's
indentation) sit on one stack, innermost last, popped when the loop passes their end.
Restricted to a keep mask (the selector's, as blocks_from_dom reads it): an element is written
only if its subtree holds kept text, which a prefix count of kept text nodes answers in O(1).

Why each choice:
- Inline markup (links, ** and *) is written only when its element closes inside the same
  paragraph: a placeholder is kept at its start and filled then, so `<a><div>..</div></a>`
  (a block inside a link) leaves plain text, never a "[" without its "](...)". Only the
  outermost link and emphasis of each kind are marked, so each piece of text is re-read by at
  most three open elements: linear whatever the nesting.
- Container prefixes ("> ", list indentation) stop at MAX_NEST levels: a page nesting 50,000
  blockquotes would otherwise write lines 100,000 characters long (quadratic output).
- A table is a pipe table when its cells hold only inline content; a table holding lists,
  headings, code or another table is page layout, and its cells become paragraphs.
- Text is escaped (\\ ` * _ [ ] and a leading # > - + 1.) so that page text never turns into
  markup; link and image URLs are made absolute against <base href> or the page URL.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urljoin

from ..parse import TEXT, Dom
from .blocks import BLOCK_TAGS, HEADING_LEVEL
from .text import INLINE_TAGS, PRE_TAGS, code_text, is_pre

MAX_NEST = 16  # list / quote levels that indent; deeper ones are written at this depth
MAX_COLSPAN = 64  # a colspan of 10,000 would write 10,000 empty cells
# Blocks besides BLOCK_TAGS: a paragraph break before and after.
PARA_TAGS = frozenset({"p", "dt", "dd", "summary", "legend", "option", "tr", "td", "th", "thead", "tbody",
                       "tfoot", "figcaption", "caption", "noscript"}) | BLOCK_TAGS
# Inside a table, any of these makes it a layout table (its cells become paragraphs).
LAYOUT_TAGS = frozenset({"table", "ul", "ol", "pre", "blockquote", "dl", "form", "h1", "h2", "h3", "h4", "h5",
                         "h6", "article", "section", "main", "nav", "header", "footer", "aside"})
CODE_TAGS = frozenset({"code", "kbd", "samp", "tt"})
EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*", "del": "~~", "s": "~~", "strike": "~~"}
_WS = re.compile(r"[ \t\n\r\f\v\u00a0\u200b]+")
_ESC = re.compile(r"([\\`*_\[\]]|<(?=[A-Za-z/!?]))")
_ESC_CELL = re.compile(r"([\\`*_\[\]|]|<(?=[A-Za-z/!?]))")
_ORDERED = re.compile(r"(\d{1,9})([.)])(?=\s|$)")
_TICKS = re.compile(r"`+")
_PAGE = re.compile(r"p\. \d+$")  # the page element of a PDF block's heading path (extraction.pdf)
_URL_CHARS = str.maketrans({" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E"})
_LINK_SCHEMES = ("http:", "https:", "mailto:", "ftp:", "tel:")


def escape(text: str, cell: bool = False) -> str:
    """Page text with the characters that would start Markdown markup backslash-escaped
    (| too inside a table cell)."""
    return (_ESC_CELL if cell else _ESC).sub(r"\\\1", text)


def _escape_start(line: str) -> str:
    """A line whose start would read as a heading, quote, list item or rule, escaped."""
    c = line[0]
    if c in "#>":
        return "\\" + line
    if c in "+-=" and (len(line) == 1 or line[1] == " " or line.strip(c) == ""):
        return "\\" + line
    m = _ORDERED.match(line) if c.isdigit() else None
    return line[:m.end(1)] + "\\" + line[m.end(1):] if m else line


def _code_span(text: str) -> str:
    """`text` with a fence longer than any backtick run inside it (CommonMark code spans)."""
    fence = "`" * (max((len(r) for r in _TICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return fence + pad + text + pad + fence


def base_of(dom: Dom, url: str | None) -> str | None:
    """The URL links resolve against: the first <base href>, else the page URL."""
    i = dom.find("base")
    href = dom.get_attr(i, "href") if i >= 0 else None
    if href and href.strip():
        b = urljoin(url or "", href.strip())
        if b and not b.startswith(("data:", "javascript:")):
            return b
    return url


def _absolute(base: str | None, href: str) -> str | None:
    """href made absolute against base, or None for links that lead nowhere a reader can go."""
    href = href.strip()
    if not href or href.lower().startswith(("javascript:", "data:", "vbscript:")):
        return None
    url = urljoin(base, href) if base and not base.startswith("stdin") else href
    return url.translate(_URL_CHARS)


def to_markdown(dom: Dom, keep: Sequence[bool] | None = None, *, images: bool = False,
                start: int | None = None) -> str:
    """Markdown of the subtree at start (default <body>); keep[i] False drops text node i.
    images: write <img> as ![alt](src) where its parent or grandparent holds kept text."""
    if not len(dom):
        return ""
    tags, texts, ends, skipped, parent, attrs = dom.tag, dom.text, dom.end, dom.skipped, dom.parent, dom.attrs
    root = dom.body() if start is None else start
    stop = ends[root]
    base = base_of(dom, dom.url)

    # before[i]: visible kept text nodes among root..i-1, so has_text(e) is one comparison.
    # layout: tables holding block structure (LAYOUT_TAGS), found with a stack of open tables.
    n = stop - root
    before = [0] * (n + 1)
    layout: set[int] = set()
    tables: list[int] = []
    count = 0
    for i in range(root, stop):
        before[i - root] = count
        t = tags[i]
        if t == TEXT:
            if not skipped[i] and (keep is None or keep[i]) and not texts[i].isspace() and texts[i]:
                count += 1
            continue
        while tables and ends[tables[-1]] <= i:
            tables.pop()
        if t in LAYOUT_TAGS and tables:
            layout.add(tables[-1])
        if t == "table":
            tables.append(i)
    before[n] = count

    def has_text(e: int) -> bool:
        return before[min(ends[e], stop) - root] > before[e - root]

    out: list[str] = []
    pfx: list[str] = []  # container prefixes: "> " for quotes, spaces for list item bodies
    marker: list[tuple[int, str]] = []  # the pending list marker (its pfx slot, "- " / "3. "), at most one
    lists: list[list[int]] = []  # open lists: [ordered?, next number]
    para: list[str] = []  # pieces of the current paragraph
    sink = para  # where inline text goes: the paragraph, a table cell, or nowhere
    void: list[str] = []
    seq = 0  # bumped whenever the sink's text is written out or the sink changes
    blank = False  # a blank line is due before the next line
    closers: list[tuple[int, int, int, int]] = []  # (element, action, data, data), innermost last
    link_open = False
    emph_open: dict[str, bool] = {}
    heading = 0  # level of the open heading, 0 if none
    table: list[list[str]] | None = None  # rows of the open pipe table
    row: list[str] | None = None
    caption: list[str] = []

    last_blank = True  # the last line written is blank (or nothing is written yet)

    def write(line: str) -> None:
        nonlocal blank, last_blank
        if blank and not last_blank:
            out.append("".join(pfx).rstrip())
        blank = last_blank = False
        if marker:
            d, mk = marker.pop()
            out.append("".join(pfx[:d]) + mk + "".join(pfx[d + 1:]) + line)
        else:
            out.append("".join(pfx) + line)

    def settle() -> None:
        """Write the blank line that is due now, before a container prefix changes."""
        nonlocal blank, last_blank
        if blank and not last_blank:
            out.append("".join(pfx).rstrip())
            last_blank = True
        blank = False

    def end_line() -> None:
        nonlocal seq
        seq += 1
        if para:
            line = _WS.sub(" ", "".join(para)).strip()
            para.clear()
            if line:
                if heading and not lists and table is None:
                    write("#" * heading + " " + line)
                else:
                    write(_escape_start(line))

    def block() -> None:
        nonlocal blank
        end_line()
        if not lists:
            blank = True

    def wrap(k: int, opener: str, closer: str) -> None:
        """Mark sink[k+1:] with opener/closer (sink[k] is the placeholder), white space outside."""
        content = "".join(sink[k + 1:])
        core = content.strip()
        if not core:
            sink[k:] = [content]
            return
        lead = content[:len(content) - len(content.lstrip())]
        trail = content[len(content.rstrip()):]
        sink[k:] = [lead, opener, core, closer, trail]

    def emit_table() -> None:
        nonlocal table, row, blank
        rows = table or []
        if row is not None and any(row):
            rows.append(row)
        table, row = None, None
        cap = _WS.sub(" ", "".join(caption)).strip()
        caption.clear()
        if cap:
            write(_escape_start(cap))
            blank = not lists
        width = max((len(r) for r in rows), default=0)
        if width <= 1:  # one column: not a table to read across
            for r in rows:
                if r and r[0]:
                    write(_escape_start(r[0]))
                    blank = not lists
            return
        for k, r in enumerate(rows):
            cells = r + [""] * (width - len(r))
            write("| " + " | ".join(cells) + " |")
            if k == 0:
                write("|" + " --- |" * width)
        if not lists:
            blank = True

    # actions on an element's end
    A_SPACE, A_BLOCK, A_HEADING, A_LINK, A_EMPH, A_LIST, A_ITEM, A_QUOTE, A_TABLE, A_ROW, A_CELL, A_CAPTION \
        = range(12)

    def close(e: int, action: int, data: int, at: int) -> None:
        nonlocal link_open, heading, sink, seq, row, blank
        if action == A_SPACE:
            sink.append(" ")
        elif action == A_BLOCK:
            block()
        elif action == A_HEADING:
            end_line()
            heading = 0
            blank = not lists
        elif action == A_LINK:
            link_open = False
            k = data
            if at == seq and k < len(sink):
                href = attrs[e].get("href") if attrs[e] else None  # type: ignore[union-attr]
                url = _absolute(base, href) if href else None
                if url:
                    wrap(k, "[", "](" + url + ")")
        elif action == A_EMPH:
            mark = EMPHASIS[tags[e]]
            emph_open[mark] = False
            k = data
            if at == seq and k < len(sink):
                wrap(k, mark, mark)
        elif action == A_LIST:
            end_line()
            lists.pop()
            if not lists:
                blank = True
        elif action == A_ITEM:
            end_line()
            marker.clear()
            if data:
                pfx.pop()
        elif action == A_QUOTE:
            end_line()
            if data:
                pfx.pop()
            blank = not lists
        elif action == A_TABLE:
            sink = para
            seq += 1
            emit_table()
        elif action == A_ROW:
            if row is not None and any(c for c in row) and table is not None:
                table.append(row)
            row = None
        elif action == A_CELL:
            text = _WS.sub(" ", "".join(sink)).strip()
            sink, seq = void, seq + 1
            void.clear()
            if row is None:
                row = []
            row.append(text)
            row.extend([""] * (data - 1))
        elif action == A_CAPTION:
            caption.extend(sink)
            sink, seq = void, seq + 1
            void.clear()

    j = root
    while j < stop:
        while closers and ends[closers[-1][0]] <= j:
            close(*closers.pop())
        tag = tags[j]
        if tag == TEXT:
            # a white-space node the mask dropped still separates words
            if not skipped[j] and (keep is None or keep[j] or texts[j].isspace()):
                sink.append(escape(texts[j], table is not None))
            j += 1
            continue
        if skipped[j]:
            sink.append(" ")
            j = ends[j]
            continue
        if tag == "br":
            if table is not None or heading:
                sink.append(" ")
            else:
                end_line()
            j += 1
            continue
        if tag == "img":
            if images and parent[j] >= root and (has_text(parent[j]) or (parent[j] > root and has_text(parent[parent[j]]))):
                a = attrs[j] or {}
                src = _absolute(base, a.get("src") or "")
                if src:
                    sink.append(" ![" + escape(_WS.sub(" ", a.get("alt") or "").strip()) + "](" + src + ") ")
            j += 1
            continue
        if tag == "hr":
            if table is None and parent[j] >= root and has_text(parent[j]):
                end_line()
                blank = True
                write("---")
                blank = True
            j += 1
            continue
        if not has_text(j) and not (images and ends[j] > j + 1):
            if tag not in INLINE_TAGS:
                sink.append(" ")
            j = ends[j]
            continue
        in_table = table is not None
        level = HEADING_LEVEL.get(tag)
        if level is not None and not in_table and not heading:
            block()
            blank = not lists
            heading = level
            closers.append((j, A_HEADING, 0, 0))
        elif tag == "a":
            if not link_open and attrs[j] and attrs[j].get("href"):  # type: ignore[union-attr]
                link_open = True
                closers.append((j, A_LINK, len(sink), seq))
                sink.append("")
        elif tag in EMPHASIS:
            mark = EMPHASIS[tag]
            if not emph_open.get(mark):
                emph_open[mark] = True
                closers.append((j, A_EMPH, len(sink), seq))
                sink.append("")
        elif tag in CODE_TAGS and not is_pre(dom, j):
            code = _WS.sub(" ", code_text(dom, j, keep)).strip()
            if code:
                sink.append(_code_span(code.replace("|", "\\|") if in_table else code))
            j = ends[j]
            continue
        elif (tag in PRE_TAGS or tag == "code") and is_pre(dom, j) and not in_table:
            block()
            code = code_text(dom, j, keep)  # as innerText gives it: white space kept
            lang = ""
            for k in (j, j + 1):
                if k < ends[j] and tags[k] in ("pre", "code"):
                    cls = (attrs[k] or {}).get("class") or ""
                    for c in cls.split():
                        if c.startswith(("language-", "lang-")):
                            lang = c.split("-", 1)[1]
                            break
            fence = "`" * max(3, max((len(r) for r in _TICKS.findall(code)), default=0) + 1)
            blank = not lists or blank
            write(fence + lang)
            for line in code.split("\n"):
                write(line)
            write(fence)
            blank = not lists
            j = ends[j]
            continue
        elif tag in ("ul", "ol", "menu") and not in_table:
            block()
            start_no = 1
            if tag == "ol":
                s = ((attrs[j] or {}).get("start") or "").strip()
                start_no = int(s) if s.isdigit() and len(s) < 10 else 1
            lists.append([tag == "ol", start_no])
            closers.append((j, A_LIST, 0, 0))
        elif tag == "li" and not in_table:
            end_line()
            if lists and lists[-1][0]:
                mk = f"{lists[-1][1]}. "
                lists[-1][1] += 1
            else:
                mk = "- "
            pushed = len(pfx) < MAX_NEST
            marker.clear()
            if pushed:
                pfx.append(" " * len(mk))
                marker.append((len(pfx) - 1, mk))
            else:
                marker.append((len(pfx), mk))
            closers.append((j, A_ITEM, int(pushed), 0))
        elif tag == "blockquote" and not in_table:
            block()
            settle()
            pushed = len(pfx) < MAX_NEST
            if pushed:
                pfx.append("> ")
            closers.append((j, A_QUOTE, int(pushed), 0))
        elif tag == "table" and not in_table and j not in layout:
            block()
            table, row = [], None
            sink, seq = void, seq + 1
            closers.append((j, A_TABLE, 0, 0))
        elif in_table and tag == "tr":
            if row is not None and any(row):
                table.append(row)  # type: ignore[union-attr]
            row = []
            closers.append((j, A_ROW, 0, 0))
        elif in_table and tag in ("td", "th"):
            span = ((attrs[j] or {}).get("colspan") or "").strip()
            sink, seq = [], seq + 1
            closers.append((j, A_CELL, min(int(span), MAX_COLSPAN) if span.isdigit() and int(span) > 0 else 1, 0))
        elif in_table and tag == "caption":
            sink, seq = [], seq + 1
            closers.append((j, A_CAPTION, 0, 0))
        elif in_table:
            if tag not in INLINE_TAGS:
                sink.append(" ")
                closers.append((j, A_SPACE, 0, 0))
        elif tag in PARA_TAGS or (level is not None):
            if heading:  # a block inside a heading: the heading stays one line
                sink.append(" ")
                closers.append((j, A_SPACE, 0, 0))
            else:
                block()
                closers.append((j, A_BLOCK, 0, 0))
        elif tag not in INLINE_TAGS:
            sink.append(" ")
            closers.append((j, A_SPACE, 0, 0))
        j += 1
    while closers:
        close(*closers.pop())
    end_line()
    while out and not out[-1].strip(" >"):
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def blocks_markdown(blocks: Sequence[tuple[Sequence[str], str, str]]) -> str:
    """Markdown from stored blocks (heading path, kind, text) when the page itself is gone: each
    heading once where it first applies (#, ##, ...), then each block's text as a paragraph.
    Links, lists and tables are not in blocks: this is the headings-and-text fallback."""
    out: list[str] = []
    shown: Sequence[str] = ()
    for path, kind, text in blocks:
        k = 0
        while k < min(len(shown), len(path)) and shown[k] == path[k]:
            k += 1
        for level in range(k, len(path)):
            h = _WS.sub(" ", path[level]).strip()
            if level == len(path) - 1 and _PAGE.match(h):  # a PDF's page number: a mark, no heading
                out.append(f"<!-- {h} -->")
            else:
                out.append("#" * min(level + 1, 6) + " " + h)
        shown = path
        if path:  # a stored block's text is its body prefixed by its heading (or heading path)
            for prefix in (path[-1] + ": ", " > ".join(path[-2:]) + ": ", " > ".join(path) + ": "):
                if text.startswith(prefix):
                    text = text[len(prefix):]
                    break
        if kind != "heading" and text:
            out.append("\n".join(_escape_start(escape(line)) for line in text.split("\n") if line.strip()))
    return "\n\n".join(out) + "\n" if out else ""

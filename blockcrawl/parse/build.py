"""HTML text -> Dom: parse_html bounds the page (cap_attributes), parses it with selectolax's lexbor
(measured faster than lxml here, see bench/parser_choice.py, and unlike libxml2 it keeps every
nesting level) or, for a page nested deeper than lexbor builds in linear time, with the linear
builder (parse/linear.py), and shows a <noscript> that holds the page (show_noscript).
"""
from __future__ import annotations

import bisect
import re
from itertools import compress
from operator import not_, or_
from typing import TYPE_CHECKING

from .dom import SKIP_TAGS, TEXT, Builder, Dom
from .linear import ATTR_RE, DEEP_LIMIT, max_depth_exceeds, parse_linear

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode


# Attribute bounds, applied before the parser sees the page. Lexbor's time grows with the square
# of the attributes on ONE element (0.74 s at 5k, 14 s at 40k on a 349 KB page), so an element's
# attributes past MAX_ELEMENT_ATTRS are dropped. On the 3,477 development pages the most on one
# element is 136 (99.9th percentile of a page's largest: 87) and the most on one page 39,076
# (a sqlite.org docs page), so neither bound touches a real page. Spread over many elements the
# parse stays linear (240k attributes on 80k elements: 0.3 s); MAX_PAGE_ATTRS only bounds memory:
# a page with more '=' than that (the attributes' upper bound) is given up as too complex.
MAX_ELEMENT_ATTRS = 2000
MAX_PAGE_ATTRS = 1_000_000
# The scan below also counts "attributes" of tags written inside attribute values (an SVG in a
# data: URI: miro.com's pages hold 22 such runs of 1,000-1,700) and so may trim such a value;
# the page's text is the same. Lexbor's cost is ~ the sum of squares of the attributes per
# element: a page whose long tags sum over HEAVY_PAGE full elements' worth is given up.
HEAVY_PAGE = 50 * MAX_ELEMENT_ATTRS ** 2
# A start tag with at least this many characters after its '<' before the next < or > is the only
# kind that can hold MAX_ELEMENT_ATTRS attributes (2 characters each at the least). A '>' inside a
# quoted value later in the tag is looked past. A tag whose FIRST run is short (a quoted '>' or
# '<' within its first 4,000 characters, then thousands of attributes) escapes this scan: a crawl
# bounds such a page by its analysis time limit (crawl/analysis/process.py).
# Written as "no '>' in the next run, then no '<' in it": sre counts a run of one excluded
# character in a tight loop, a two-character class one call per character (4x the time; the scan
# was ~4% of extract() on aeb). A short tag fails at its '>' before any '<' is looked for.
_LONG_TAG_RE = re.compile(f"<[A-Za-z](?=[^>]{{{2 * MAX_ELEMENT_ATTRS - 1}}})[^<]{{{2 * MAX_ELEMENT_ATTRS - 1}}}")
# Elements whose content is raw text: a "<x" inside a script is no tag (eBay's inline scripts
# hold 160 KB runs of that shape), so nothing inside them is touched.
_RAW_RE = re.compile(r"<(/?)(script|style|textarea|xmp|noembed|noframes|iframe|title)\b", re.IGNORECASE)


def _raw_ranges(html: str) -> list[tuple[int, int]]:
    """(start, end) of every raw-text element's content, in order (one regex pass)."""
    out: list[tuple[int, int]] = []
    open_tag, open_at = "", -1
    for m in _RAW_RE.finditer(html):
        tag = m.group(2).lower()
        if not open_tag and not m.group(1):
            open_tag, open_at = tag, m.end()
        elif open_tag and m.group(1) and tag == open_tag:
            out.append((open_at, m.start()))
            open_tag = ""
    if open_tag:
        out.append((open_at, len(html)))
    return out


def cap_attributes(html: str) -> str | None:
    """html with no element holding more than MAX_ELEMENT_ATTRS attributes (the later ones are
    dropped, as a browser keeps the first of repeated ones), or None for a page over
    MAX_PAGE_ATTRS. Linear, and cheap on real pages (~1.5 ms for a 230 KB page against ~11 ms
    for lexbor's parse; no development page changed): one regex pass finds the long start tags (data: URIs, JSON props), a
    count of separators dismisses those, and only a tag that may hold that many attributes is
    read attribute by attribute."""
    n = len(html)
    if n > MAX_PAGE_ATTRS and html.count("=") > MAX_PAGE_ATTRS:
        return None
    out: list[str] = []
    last = pos = 0
    raw: list[tuple[int, int]] | None = None
    heavy = 0
    while True:
        m = _LONG_TAG_RE.search(html, pos)
        if m is None:
            break
        start = m.start()
        end = _tag_end(html, start, m.end())
        pos = max(end, m.end())
        if html.count("=", start, end) + html.count(" ", start, end) < MAX_ELEMENT_ATTRS - 1:
            continue  # too few separators for that many attributes
        if raw is None:
            raw = _raw_ranges(html)
        k = bisect.bisect_right(raw, (start, len(html))) - 1
        if k >= 0 and raw[k][0] <= start < raw[k][1]:
            pos = max(pos, raw[k][1])  # inside a script: no tag here
            continue
        count, cut = 0, -1
        for am in ATTR_RE.finditer(html, start + 1, end):
            count += 1  # (the tag's name is the first match)
            if count == MAX_ELEMENT_ATTRS + 1:
                cut = am.end()
            elif count > MAX_ELEMENT_ATTRS + 1:
                out.append(html[last:cut])
                last = end
                break
        heavy += min(count, MAX_ELEMENT_ATTRS) ** 2
        if heavy > HEAVY_PAGE:
            return None
    if not out:
        return html
    out.append(html[last:])
    return "".join(out)


def _tag_end(html: str, start: int, pos: int) -> int:
    """The index of the '>' (or '<', or the end) that ends the start tag at `start`, looking past
    any '>' inside a quoted value. Linear: each quote character is found once."""
    n = len(html)
    quote = ""
    i = start
    nxt = {'"': html.find('"', start), "'": html.find("'", start)}  # next of each at or after i
    while True:
        gt, lt = html.find(">", pos), html.find("<", pos)
        stop = n if gt < 0 else gt
        if 0 <= lt < stop:
            return lt
        while True:  # the quotes before stop: are we inside one there?
            for q in nxt:
                if 0 <= nxt[q] < i:
                    nxt[q] = html.find(q, i)
            if quote:
                j = nxt[quote]
                if j < 0 or j >= stop:
                    break
                quote, i = "", j + 1
                continue
            cands = [j for j in nxt.values() if 0 <= j < stop]
            if not cands:
                break
            j = min(cands)
            quote, i = html[j], j + 1
        if not quote or stop >= n:
            return stop
        i = pos = stop + 1  # the '>' was quoted: the tag goes on


# A self-closed <iframe .../> inside <noscript> (a tag manager's snippet): a browser runs scripts
# and reads <noscript> as raw text, but this parser reads its content as markup, where "/>" does
# not close an iframe, so the iframe's raw text would run to the end of the page: the rest of the
# page one skipped text node (render.com's home page; 2 msv and 2 wcxb-dev pages have the snippet).
# The iframe is closed there.
_NOSCRIPT_IFRAME = re.compile(r"(<noscript>\s*<iframe\b[^<>]*?)/>(\s*</noscript>)", re.IGNORECASE)


def parse_html(html: str, url: str | None = None) -> Dom:
    """Parse HTML text into a Dom. Never raises on malformed input. A page over the attribute
    bounds (cap_attributes) gives an empty Dom whose `binary` says so."""
    if "\x00" in html:
        html = html.replace("\x00", "")
    capped = cap_attributes(html)
    if capped is None:
        return Dom(url=url, binary=f"too complex: over {MAX_PAGE_ATTRS} attributes")
    html = capped
    if "/></noscript>" in html:
        html = _NOSCRIPT_IFRAME.sub(r"\1></iframe>\2", html)
    if max_depth_exceeds(html, DEEP_LIMIT):
        return parse_linear(html, url)
    return _parse_lexbor(html, url)



def _parse_lexbor(html: str, url: str | None) -> Dom:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    root = tree.root
    b = Builder(url)
    if root is None:
        return b.finish()
    # Iterative pre-order walk; None on the stack marks "close this element". A node's tag is
    # read once per lexbor tag id (a page has ~50; the name read per node was ~15% of the walk).
    tags: dict[int, str] = {}  # lexbor tag id -> the Dom's tag ("" for comments, doctype)
    stack: list[LexborNode | None] = [root]
    while stack:
        node = stack.pop()
        if node is None:
            b.close()
            continue
        tag = tags.get(node.tag_id)
        if tag is None:
            tag = tags[node.tag_id] = _lexbor_tag(node.tag)
        if tag == TEXT:
            b.data(node.text_content or "")
            continue
        if not tag:
            continue
        b.start(tag, node.attributes or None)
        stack.append(None)
        child = node.last_child
        while child is not None:
            stack.append(child)
            child = child.prev
    return show_noscript(b.finish())


def _lexbor_tag(name: str | None) -> str:
    """The Dom's tag of a lexbor node named name: TEXT, or "" for a node left out (comments,
    doctype), else the lower-cased element name."""
    if name == "-text":
        return TEXT
    if name is None or name[0] in "-_!":
        return ""
    return name.lower()


NOSCRIPT_SHARE = 0.1  # body text outside <noscript> below this share of the text inside: show it
NOSCRIPT_MIN = 200  # ... if <noscript> holds at least this many characters


def show_noscript(d: Dom) -> Dom:
    """A page whose body shows (almost) nothing but whose <noscript> holds the page (a Discourse
    forum, a docs site built for crawlers: 20 of 1,464 wcxb-dev pages, each extracted empty) is
    read as a browser without JavaScript reads it: the <noscript> content is unskipped (in place;
    script/style inside it stay skipped). Pages with their text outside <noscript> are unchanged.
    Two linear passes, none on a page without <noscript> (a C-level scan: ~0.6 ms a page saved).
    A noscript text at least NOSCRIPT_MIN long is needed, so a page holding only short ones
    ("enable JavaScript") is left after the count."""
    tags, texts, parent, skipped = d.tag, d.text, d.parent, d.skipped
    if "noscript" not in tags:
        return d
    n = len(tags)
    ends = d.end
    # inside a <noscript> that is not itself inside another skipped element: the subtrees of the
    # noscripts under an unskipped parent, minus those of the noscripts inside them, by slices
    # (a noscript in a cleared subtree is in it already: O(n) in all); the text counts by C loops
    inside = [False] * n
    noscripts = list(compress(range(n), map("noscript".__eq__, tags)))
    out = []
    for i in noscripts:
        p = parent[i]
        if p >= 0 and not skipped[p]:
            inside[i:ends[i]] = [True] * (ends[i] - i)
        else:
            out.append(i)
    covered = 0
    for i in out:
        if i >= covered and inside[i]:
            covered = ends[i]
            inside[i:covered] = [False] * (covered - i)
    hidden = sum(map(len, map(str.strip, compress(texts, inside))))  # (an element's text is "")
    if hidden < NOSCRIPT_MIN:
        return d
    shown = sum(map(len, map(str.strip, compress(texts, map(not_, map(or_, skipped, inside))))))
    if shown >= NOSCRIPT_SHARE * hidden:
        return d
    for i in range(n):
        if inside[i]:
            p = parent[i]
            t = tags[i]
            skipped[i] = False if t == "noscript" else ((t in SKIP_TAGS and t != TEXT) or skipped[p])
    return d

"""The parsed page as flat arrays in document (pre-)order: the one tree form every later stage reads.

Node i's subtree is range(i, end[i]), its parent parent[i]; so walks are loops over indices, never
recursion, and a page nested 100,000 deep costs nothing special downstream.

Parsing uses selectolax's lexbor (measured faster than lxml here, see bench/parser_choice.py, and
unlike libxml2 it keeps every nesting level). Lexbor's tree builder is quadratic in the depth of
nested block elements (the "p in button scope" check walks the open-element stack), so a page
that nests thousands of levels deep is built by a linear fallback on the standard library's
tokenizer instead.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from html import unescape as _unescape
from itertools import compress
from operator import not_, or_
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode

TEXT = "#text"
# Elements whose text is not page text.
# (<object> is not here: its children are the fallback content browsers show without the plugin.)
SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title", "svg", "math",
                       "iframe", "canvas", "select", "textarea"})
VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                       "param", "source", "track", "wbr"})
DEEP_LIMIT = 2000  # nesting depth above which the linear fallback builder is used
# characters of a page's <title> kept (the stored and printed title; search results show it whole):
# real titles run to ~70, the longest seen in the benchmarks' pages to a few hundred; a page could
# send 2,000,000
MAX_TITLE = 1000
# A tag: end mark, name, and the '/' (or '/'s) that end a self-closed one. Possessive runs: each
# character is read once (a lazy `[^<>]*?(/?)>` tried the close at every character of the tag's
# body: 3x the time, ~9% of extract() on the development pages).
_TAG_RE = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*+)[^<>/]*+(?:/+[^<>/]++)*+(/*)>")
# An element's attributes. lexbor gives None as the value of an attribute written without one
# (`<input disabled>`), so readers test values for truth, never assume a str.
Attrs = dict[str, str | None]


@dataclass(slots=True)
class Dom:
    tag: list[str] = field(default_factory=list)  # lower-case tag name, or "#text"
    parent: list[int] = field(default_factory=list)  # -1 for the root
    depth: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)  # one past the last node of the subtree
    text: list[str] = field(default_factory=list)  # raw text of text nodes, "" for elements
    attrs: list[Attrs | None] = field(default_factory=list)
    skipped: list[bool] = field(default_factory=list)  # inside script/style/head/...
    url: str | None = None
    binary: str | None = None  # why the body was not parsed (parse.sniff_binary), else None

    def __len__(self) -> int:
        return len(self.tag)

    def children(self, i: int) -> list[int]:
        out, j, stop = [], i + 1, self.end[i]
        while j < stop:
            out.append(j)
            j = self.end[j]
        return out

    def find(self, tag: str, start: int = 0) -> int:
        """Index of the first element named tag at or after start, or -1."""
        try:
            return self.tag.index(tag, start)
        except ValueError:
            return -1

    def body(self) -> int:
        b = self.find("body")
        return max(b, 0)

    def path(self, i: int, with_attrs: bool = False, limit: int | None = None) -> str:
        """The tag path from the root, e.g. "html/body/div/p"; with limit, only the last
        `limit` steps after a "..." (bounded cost on pages nested thousands deep)."""
        parts: list[str] = []
        while i >= 0:
            if limit is not None and len(parts) == limit:
                parts.append("...")
                break
            t = self.tag[i]
            a = self.attrs[i] if with_attrs else None
            if a:
                cls = a.get("class") or ""
                if cls or a.get("id"):
                    t = f"{t}.{cls.strip()}" + (f"#{a['id']}" if a.get("id") else "")
            parts.append(t)
            i = self.parent[i]
        return "/".join(reversed(parts))

    def get_attr(self, i: int, name: str) -> str | None:
        a = self.attrs[i]
        return a.get(name) if a else None

    def title(self) -> str:
        """The <title>'s text, white space collapsed, cut to MAX_TITLE characters."""
        t = self.find("title")
        if t < 0:
            return ""
        return " ".join("".join(self.text[j] for j in range(t, self.end[t])
                                if self.tag[j] == TEXT).split())[:MAX_TITLE].rstrip()


class _Builder:
    """Appends nodes in pre-order and closes subtrees; shared by both parsers. `skipped` is set
    at finish: the subtrees of SKIP_TAGS elements, by slices (a C loop; set node by node it was
    ~10% of the builder's time)."""

    def __init__(self, url: str | None) -> None:
        self.dom = Dom(url=url)
        self.open: list[int] = []  # stack of open element indices

    def start(self, tag: str, attrs: Attrs | None) -> int:
        d = self.dom
        open_ = self.open
        i = len(d.tag)
        d.tag.append(tag)
        d.parent.append(open_[-1] if open_ else -1)
        d.depth.append(len(open_))
        d.end.append(i + 1)
        d.text.append("")
        d.attrs.append(attrs)
        open_.append(i)
        return i

    def close(self) -> None:
        d = self.dom
        d.end[self.open.pop()] = len(d.tag)

    def data(self, text: str) -> None:
        d = self.dom
        open_ = self.open
        p = open_[-1] if open_ else -1
        if p >= 0 and d.tag[-1] == TEXT and d.parent[-1] == p:
            d.text[-1] += text  # adjacent character data is one text node
            return
        d.tag.append(TEXT)
        d.parent.append(p)
        d.depth.append(len(open_))
        d.end.append(len(d.tag))
        d.text.append(text)
        d.attrs.append(None)

    def finish(self) -> Dom:
        while self.open:
            self.close()
        d = self.dom
        tags, ends = d.tag, d.end
        skipped = [False] * len(tags)
        covered = 0  # a skipped element inside another is in its slice already: O(n) in all
        for i in compress(range(len(tags)), map(SKIP_TAGS.__contains__, tags)):
            if i >= covered:
                covered = ends[i]
                skipped[i:covered] = [True] * (covered - i)
        d.skipped = skipped
        return d


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
        for am in _ATTR_RE.finditer(html, start + 1, end):
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
    if _max_depth_exceeds(html, DEEP_LIMIT):
        return _parse_linear(html, url)
    return _parse_lexbor(html, url)


def _max_depth_exceeds(html: str, limit: int) -> bool:
    """True if the page nests more than limit elements deep, counting every tag in any case.

    Lexbor is quadratic in depth for far more than div/section/p (32k nested <ul><li> took 8.8 s,
    <Div> 1.9 s), so every start tag counts. The depth is that of the open-element stack the
    linear builder keeps (same implicit closes, same bounded end-tag search), so thousands of
    unclosed <p> or <li> siblings are not mistaken for nesting. One regex pass, linear."""
    # nesting limit deep takes at least limit start tags, each a "<" not followed by "/": two C
    # counts settle 2,852 of the 3,177 development pages without the walk (the walk was ~5% of
    # extract(); 734 of the 1,059 pages with 2,000 "<" or more hold fewer start tags)
    lt = html.count("<")
    starts = lt - html.count("</") if lt >= limit else 0
    if starts < limit:
        return False
    # The same bound during the walk: after `seen` start tags, at most starts - seen more can
    # be pushed, so once the stack plus those cannot pass limit the answer is no (on the 325
    # development pages that need the walk it stops after ~a fifth of the page's tags).
    slack = starts - limit
    seen = 0
    stack: list[str] = []
    for m in _TAG_RE.finditer(html):  # (findall's tuples, all alive at once, woke the collector)
        end, tag, closed = m.groups()
        tag = tag.lower()
        if end:
            if stack and stack[-1] == tag:  # most end tags close the innermost element
                stack.pop()
                continue
            for k in range(len(stack) - 2, max(-1, len(stack) - 65), -1):
                if stack[k] == tag:
                    del stack[k:]
                    break
            continue
        seen += 1
        if not (closed or tag in VOID_TAGS):
            if stack and stack[-1] in _CLOSES and tag in _CLOSES[stack[-1]]:
                stack.pop()
            stack.append(tag)
            if len(stack) > limit:
                return True
        if seen - len(stack) >= slack:
            return False
    return False


def _parse_lexbor(html: str, url: str | None) -> Dom:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    root = tree.root
    b = _Builder(url)
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


# Elements closed implicitly when a sibling of the listed kinds opens (a small part of HTML5's rules
# that matters for text: paragraphs and list items).
_CLOSES = {
    "p": frozenset({"p", "div", "ul", "ol", "table", "h1", "h2", "h3", "h4", "h5", "h6", "section",
                    "article", "pre", "blockquote", "form", "header", "footer", "nav", "main"}),
    "li": frozenset({"li"}), "dt": frozenset({"dt", "dd"}), "dd": frozenset({"dt", "dd"}),
    "tr": frozenset({"tr"}), "td": frozenset({"td", "th", "tr"}), "th": frozenset({"td", "th", "tr"}),
    "option": frozenset({"option"}),
}


# The linear builder's tokenizer: one regex finds the next markup, str.find its end. Every step
# moves forward past what it read, so the work is linear in the page whatever it holds (the
# standard library's HTMLParser took ~17 us a tag, 3.3 s for 50k nested <ul><li>). A tag ends at
# the first ">" (a quoted ">" inside an attribute ends it early: a small loss, on deep pages only).
_MARKUP_RE = re.compile(r"<(?:(!--)|([!?])|(/?)([a-zA-Z][^\t\n\f\r />]*))")
_ATTR_RE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
# Elements whose content is text up to their end tag (script, style...; title/textarea: RCDATA).
_RAW_TEXT = frozenset({"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "title",
                       "textarea"})
_RCDATA = frozenset({"title", "textarea"})


class _LinearBuilder(_Builder):
    def __init__(self, url: str | None) -> None:
        super().__init__(url)
        self.start("html", None)

    def starttag(self, tag: str, attrs: Attrs | None, selfclosing: bool) -> None:
        if tag in ("html", "body", "head") and any(self.dom.tag[i] == tag for i in self.open[:3]):
            return
        top = self.dom.tag[self.open[-1]] if len(self.open) > 1 else ""
        if top in _CLOSES and tag in _CLOSES[top]:
            self.close()
        self.start(tag, attrs)
        if tag in VOID_TAGS or selfclosing:
            self.close()

    def endtag(self, tag: str) -> None:
        # Close up to the nearest open element of that name; search a bounded way down so that
        # stray end tags stay linear.
        tags, open_ = self.dom.tag, self.open
        for k in range(len(open_) - 1, max(0, len(open_) - 64), -1):
            if tags[open_[k]] == tag:
                while len(open_) > k:
                    self.close()
                return

    def text(self, data: str) -> None:
        if data:
            self.data(_unescape(data) if "&" in data else data)


def _attrs(body: str) -> Attrs | None:
    out: Attrs = {}  # every value a str here ("" for a bare attribute), typed as lexbor's for the Dom
    for m in _ATTR_RE.finditer(body):
        name = m.group(1).lower()
        if name not in out:  # the first of repeated attributes wins
            v = m.group(2) if m.group(2) is not None else m.group(3) if m.group(3) is not None else m.group(4) or ""
            out[name] = _unescape(v) if "&" in v else v
    return out or None


def _parse_linear(html: str, url: str | None) -> Dom:
    b = _LinearBuilder(url)
    n, pos = len(html), 0
    raw_ends: dict[str, re.Pattern[str]] = {}
    while pos < n:
        m = _MARKUP_RE.search(html, pos)
        if m is None:
            b.text(html[pos:])
            break
        if m.start() > pos:
            b.text(html[pos:m.start()])
        if m.group(1):  # <!-- comment -->
            end = html.find("-->", m.end())
            pos = n if end < 0 else end + 3
            continue
        end = html.find(">", m.end())
        stop = n if end < 0 else end
        pos = n if end < 0 else end + 1
        if m.group(2):  # <!doctype>, <![CDATA[, <?xml
            continue
        tag = m.group(4).lower()
        if m.group(3):
            b.endtag(tag)
            continue
        body = html[m.end():stop]
        selfclosing = body.endswith("/") and tag not in VOID_TAGS
        b.starttag(tag, _attrs(body) if body.strip(" /\t\n\r\f") else None, selfclosing)
        if selfclosing:
            continue
        if tag == "plaintext":
            b.data(html[pos:])
            break
        if tag in _RAW_TEXT:
            pat = raw_ends.get(tag)
            if pat is None:
                pat = raw_ends[tag] = re.compile(r"</" + tag + r"(?=[\t\n\f\r />]|\Z)", re.IGNORECASE)
            e = pat.search(html, pos)
            content_end = n if e is None else e.start()
            content = html[pos:content_end]
            if content:
                b.text(content) if tag in _RCDATA else b.data(content)
            if e is None:
                break
            close = html.find(">", content_end)
            pos = n if close < 0 else close + 1
            b.endtag(tag)
    return b.finish()

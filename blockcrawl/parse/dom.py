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

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser as _StdTokenizer

TEXT = "#text"
# Elements whose text is not page text.
# (<object> is not here: its children are the fallback content browsers show without the plugin.)
SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title", "svg", "math",
                       "iframe", "canvas", "select", "textarea"})
VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                       "param", "source", "track", "wbr"})
DEEP_LIMIT = 2000  # nesting depth above which the linear fallback builder is used
_TAG_RE = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>")


@dataclass(slots=True)
class Dom:
    tag: list[str] = field(default_factory=list)  # lower-case tag name, or "#text"
    parent: list[int] = field(default_factory=list)  # -1 for the root
    depth: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)  # one past the last node of the subtree
    text: list[str] = field(default_factory=list)  # raw text of text nodes, "" for elements
    attrs: list[dict[str, str] | None] = field(default_factory=list)
    skipped: list[bool] = field(default_factory=list)  # inside script/style/head/...
    url: str | None = None

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
        return b if b >= 0 else 0

    def path(self, i: int, with_attrs: bool = False, limit: int | None = None) -> str:
        """The tag path from the root, e.g. "html/body/div/p"; with limit, only the last
        `limit` steps after a "..." (bounded cost on pages nested thousands deep)."""
        parts = []
        while i >= 0:
            if limit is not None and len(parts) == limit:
                parts.append("...")
                break
            t = self.tag[i]
            if with_attrs and self.attrs[i]:
                a = self.attrs[i]
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
        t = self.find("title")
        if t < 0:
            return ""
        return " ".join("".join(self.text[j] for j in range(t, self.end[t])
                                if self.tag[j] == TEXT).split())


class _Builder:
    """Appends nodes in pre-order and closes subtrees; shared by both parsers."""

    def __init__(self, url: str | None) -> None:
        self.dom = Dom(url=url)
        self.open: list[int] = []  # stack of open element indices

    def start(self, tag: str, attrs: dict[str, str] | None) -> int:
        d = self.dom
        i = len(d.tag)
        p = self.open[-1] if self.open else -1
        d.tag.append(tag)
        d.parent.append(p)
        d.depth.append(len(self.open))
        d.end.append(i + 1)
        d.text.append("")
        d.attrs.append(attrs)
        d.skipped.append(tag in SKIP_TAGS or (p >= 0 and d.skipped[p]))
        self.open.append(i)
        return i

    def close(self) -> None:
        i = self.open.pop()
        self.dom.end[i] = len(self.dom.tag)

    def data(self, text: str) -> None:
        d = self.dom
        p = self.open[-1] if self.open else -1
        if p >= 0 and d.tag[-1] == TEXT and d.parent[-1] == p:
            d.text[-1] += text  # adjacent character data is one text node
            return
        d.tag.append(TEXT)
        d.parent.append(p)
        d.depth.append(len(self.open))
        d.end.append(len(d.tag))
        d.text.append(text)
        d.attrs.append(None)
        d.skipped.append(p >= 0 and d.skipped[p])

    def finish(self) -> Dom:
        while self.open:
            self.close()
        return self.dom


def parse_html(html: str, url: str | None = None) -> Dom:
    """Parse HTML text into a Dom. Never raises on malformed input."""
    if "\x00" in html:
        html = html.replace("\x00", "")
    if _max_depth_exceeds(html, DEEP_LIMIT):
        return _parse_linear(html, url)
    return _parse_lexbor(html, url)


def _max_depth_exceeds(html: str, limit: int) -> bool:
    # Cheap test first: lexbor is only slow for deeply nested block elements (div and kin), and
    # nesting `limit` deep takes at least `limit` start tags.
    if html.count("<div") + html.count("<DIV") + html.count("<section") + html.count("<p") < limit:
        return False
    depth = 0
    for m in _TAG_RE.finditer(html):
        tag = m.group(2).lower()
        if tag in VOID_TAGS or m.group(3):
            continue
        if m.group(1):
            depth -= 1
        else:
            depth += 1
            if depth > limit:
                return True
    return False


def _parse_lexbor(html: str, url: str | None) -> Dom:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    root = tree.root
    b = _Builder(url)
    if root is None:
        return b.finish()
    # Iterative pre-order walk; an int on the stack marks "close this element".
    stack: list = [root]
    while stack:
        node = stack.pop()
        if node.__class__ is int:
            b.close()
            continue
        tag = node.tag
        if tag == "-text":
            b.data(node.text_content or "")
            continue
        if tag is None or tag[0] in "-_!":  # comments, doctype
            continue
        b.start(tag.lower(), node.attributes or None)
        stack.append(0)
        child = node.last_child
        while child is not None:
            stack.append(child)
            child = child.prev
    return b.finish()


# Elements closed implicitly when a sibling of the listed kinds opens (a small part of HTML5's rules
# that matters for text: paragraphs and list items).
_CLOSES = {
    "p": frozenset({"p", "div", "ul", "ol", "table", "h1", "h2", "h3", "h4", "h5", "h6", "section",
                    "article", "pre", "blockquote", "form", "header", "footer", "nav", "main"}),
    "li": frozenset({"li"}), "dt": frozenset({"dt", "dd"}), "dd": frozenset({"dt", "dd"}),
    "tr": frozenset({"tr"}), "td": frozenset({"td", "th", "tr"}), "th": frozenset({"td", "th", "tr"}),
    "option": frozenset({"option"}),
}


class _LinearParser(_StdTokenizer):
    def __init__(self, url: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.b = _Builder(url)
        self.b.start("html", None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        b = self.b
        if tag in ("html", "body", "head") and any(b.dom.tag[i] == tag for i in b.open[:3]):
            return
        top = b.dom.tag[b.open[-1]] if len(b.open) > 1 else ""
        if top in _CLOSES and tag in _CLOSES[top]:
            b.close()
        b.start(tag, {k: v or "" for k, v in attrs} or None)
        if tag in VOID_TAGS:
            b.close()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID_TAGS and self.b.dom.tag[self.b.open[-1]] == tag:
            self.b.close()

    def handle_endtag(self, tag: str) -> None:
        b, tags = self.b, self.b.dom.tag
        # Close up to the nearest open element of that name; search a bounded way down so that
        # stray end tags stay linear.
        for k in range(len(b.open) - 1, max(0, len(b.open) - 64), -1):
            if tags[b.open[k]] == tag:
                while len(b.open) > k:
                    b.close()
                return

    def handle_data(self, data: str) -> None:
        self.b.data(data)


def _parse_linear(html: str, url: str | None) -> Dom:
    p = _LinearParser(url)
    try:
        p.feed(html)
        p.close()
    except Exception:  # the stdlib tokenizer is lenient; keep whatever was built
        pass
    return p.b.finish()

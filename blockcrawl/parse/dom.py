"""The parsed page as flat arrays in document (pre-)order: the one tree form every later stage reads.

Node i's subtree is range(i, end[i]), its parent parent[i]; so walks are loops over indices, never
recursion, and a page nested 100,000 deep costs nothing special downstream. Building a Dom from
HTML text is parse/build.py (lexbor, the attribute bounds) and parse/linear.py (the fallback for
deeply nested pages); both append nodes through Builder.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress

TEXT = "#text"
# Elements whose text is not page text.
# (<object> is not here: its children are the fallback content browsers show without the plugin.)
SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title", "svg", "math",
                       "iframe", "canvas", "select", "textarea"})
VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                       "param", "source", "track", "wbr"})
# characters of a page's <title> kept (the stored and printed title; search results show it whole):
# real titles run to ~70, the longest seen in the benchmarks' pages to a few hundred; a page could
# send 2,000,000
MAX_TITLE = 1000
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


class Builder:
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

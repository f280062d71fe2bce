"""The fallback tree builder for deeply nested pages: lexbor's tree builder is quadratic in the
depth of nested block elements (the "p in button scope" check walks the open-element stack), so a
page that nests more than DEEP_LIMIT elements deep (max_depth_exceeds) is built here instead, by
one forward pass of regular expressions: linear in the page whatever it holds.
"""
from __future__ import annotations

import re
from html import unescape as _unescape

from .dom import VOID_TAGS, Attrs, Builder, Dom

DEEP_LIMIT = 2000  # nesting depth above which the linear fallback builder is used
# A tag: end mark, name, and the '/' (or '/'s) that end a self-closed one. Possessive runs: each
# character is read once (a lazy `[^<>]*?(/?)>` tried the close at every character of the tag's
# body: 3x the time, ~9% of extract() on the development pages).
_TAG_RE = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*+)[^<>/]*+(?:/+[^<>/]++)*+(/*)>")


def max_depth_exceeds(html: str, limit: int) -> bool:
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
ATTR_RE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
# Elements whose content is text up to their end tag (script, style...; title/textarea: RCDATA).
_RAW_TEXT = frozenset({"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "title",
                       "textarea"})
_RCDATA = frozenset({"title", "textarea"})


class _LinearBuilder(Builder):
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
    for m in ATTR_RE.finditer(body):
        name = m.group(1).lower()
        if name not in out:  # the first of repeated attributes wins
            v = m.group(2) if m.group(2) is not None else m.group(3) if m.group(3) is not None else m.group(4) or ""
            out[name] = _unescape(v) if "&" in v else v
    return out or None


def parse_linear(html: str, url: str | None) -> Dom:
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

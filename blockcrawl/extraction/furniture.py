"""The page's furniture: which nodes are navigation, sidebars, ads, forms, hidden elements and
notices, and the text outside them. Shared by the article rule (extraction.article), the page-type
rules (extraction.auto) and the page-text fallback (extraction.listing).

Furniture is read from the element's name (nav/aside/footer/button...), its class/id
(patterns.UNLIKELY, unless a content word beside it saves it; patterns.STRONG names are furniture
whatever sits beside them), hidden elements (unless folded prose: an accordion panel, a tab, a
FAQ answer, or a streamed React segment), forms, and notices about the reader's browser or
JavaScript. An element holding most of the page's text (a wrapper) is no furniture unless it is
named as a teaser list. One top-down pass over the flat Dom, memoised per page (f.memo).
"""
from __future__ import annotations

import re
from functools import lru_cache
from itertools import compress
from operator import not_

from ..parse import TEXT, Dom
from ..parse.dom import Attrs
from .features import Features
from .params import DEFAULTS, ExtractionParams
from .patterns import (
    CREDIT,
    FOLD,
    FURNITURE_TAGS,
    MAYBE,
    NEGATIVE,
    NOTICE_AT,
    OWNER_TAGS,
    POSITIVE,
    REMOVE,
    SEGMENT,
    UNLIKELY,
)


def names(dom: Dom, i: int) -> str:
    a = dom.attrs[i]
    if not a:
        return ""
    c, d = a.get("class"), a.get("id")
    if c and d:
        return c + " " + d
    return c or d or ""


@lru_cache(maxsize=64)
def _cased(pattern: str, flags: int) -> re.Pattern[str] | None:
    """A case-insensitive pattern written in lower case (no escape but \\b), compiled without
    re.I: on lower-cased ASCII text it finds what the pattern finds on the text as written, and
    sre runs it ~3x faster (no case folding at every character; _unlikely's misses were ~5% of
    extract() on mid-sized dev pages). None for any other pattern: it is read as written."""
    if not flags & re.I or pattern != pattern.lower() or "\\" in pattern.replace("\\b", ""):
        return None
    return re.compile(pattern, flags & ~re.I)


def _finds(rx: re.Pattern[str], names: str) -> bool:
    """rx.search(names) is not None, through _cased when names is ASCII (nearly all are)."""
    cased = _cased(rx.pattern, rx.flags) if names.isascii() else None
    return (rx.search(names) if cased is None else cased.search(names.lower())) is not None


# Class/id strings repeat across a page and across a site's pages: classify each string once.
@lru_cache(maxsize=8192)
def _unlikely(names: str) -> bool:
    return _finds(UNLIKELY, names) and not _finds(MAYBE, names)


@lru_cache(maxsize=8192)
def _strong(names: str, pattern: str | None) -> bool:
    return pattern is not None and _finds(re.compile(pattern, re.I), names)


@lru_cache(maxsize=8192)
def name_kind(names: str, strong: str | None = None) -> int:
    """0: no furniture name or a content name, 1: furniture (share, byline...), 2: caption/credit."""
    if _strong(names, strong):
        return 1
    if _finds(MAYBE, names):
        return 0
    if _finds(REMOVE, names):
        return 1
    return 2 if _finds(CREDIT, names) else 0


@lru_cache(maxsize=8192)
def name_weight(names: str) -> int:
    if not names:
        return 0
    w = 0
    if _finds(NEGATIVE, names):
        w -= 25
    if _finds(POSITIVE, names):
        w += 25
    return w


def hidden(a: Attrs | None, streamed: bool = True) -> bool:
    if not a:
        return False
    if "hidden" in a or a.get("aria-hidden") == "true":
        return not (streamed and _streamed(a))
    st = a.get("style")
    if not st:
        return False
    return ("display:none" in st.replace(" ", "").lower()
            or "visibility:hidden" in st.replace(" ", "").lower())


def _streamed(a: Attrs) -> bool:
    i = a.get("id")
    return i is not None and SEGMENT.fullmatch(i) is not None


def whole(dom: Dom, f: Features, region: bool, builder: re.Pattern[str] | None = None,
          params: ExtractionParams = DEFAULTS) -> list[bool]:
    """The text outside page furniture, inside the <main> region when region is set and the page
    has one holding text (builder: as in furniture)."""
    n = len(dom)
    dead, _ = furniture(dom, f, True, params, builder=builder)
    tags, tl = dom.tag, f.text_len
    lo, hi = 0, n
    if region:
        attrs = dom.attrs
        hi = 0  # no <main> region holding text: nothing (the caller keeps the article rule's mask)
        for i in range(n):
            a = attrs[i]
            if tags[i] == "main" or (a is not None and a.get("role") == "main"):
                if tl[i] >= params.region_text:
                    lo, hi = i, dom.end[i]
                break
    keep = [False] * n
    for j in range(lo, hi):
        keep[j] = tags[j] == TEXT and tl[j] > 0 and not dead[j]
    return keep


def furniture(dom: Dom, f: Features, strict: bool, params: ExtractionParams = DEFAULTS,
              tables: dict[int, str] | None = None,
              builder: re.Pattern[str] | None = None) -> tuple[list[bool], list[int]]:
    """(dead, owner): nodes inside page furniture, and the text block owner of every node.
    A data table's own class/id is no furniture name (MediaWiki's "TablePager" is no pager).
    builder: the parts of a class/id that name no furniture on this page's type (params.service_builder:
    a page builder's modules and a hero banner), taken out of the names before they are read.
    Computed once per page and pass (f.memo): the article rule, a type's rule and the page-text
    fallback ask for the same mask (only the data tables' indices and the builder change it). The
    lists are shared: callers read them, never write."""
    p = params
    key = ("furniture", strict, tuple(tables) if tables else (), builder.pattern if builder is not None else None,
           p.big_share, p.teasers, p.hidden_text, p.hidden_ld, p.streamed, p.notice, p.strong)
    got = f.memo.get(key)
    if got is None:
        got = f.memo[key] = _furniture_pass(dom, f, strict, params, tables, builder)
    return got


def _furniture_pass(dom: Dom, f: Features, strict: bool, params: ExtractionParams, tables: dict[int, str] | None,
                    builder: re.Pattern[str] | None) -> tuple[list[bool], list[int]]:
    n = len(dom)
    tags, parent, attrs, skipped, texts = dom.tag, dom.parent, dom.attrs, dom.skipped, dom.text
    tl = f.text_len
    dead = [False] * n
    big = params.big_share * tl[dom.body()]
    teasers, strong = params.teasers, params.strong
    owner = [0] * n
    # one C-level look for the notices' words in the page's text: on most pages no text node
    # needs the per-node test
    notice = params.notice and _notice("\x00".join(compress(texts, map(not_, skipped))))
    for i in range(n):
        p = parent[i]
        t = tags[i]
        if p >= 0:
            if dead[p]:
                dead[i] = True
            owner[i] = i if t in OWNER_TAGS else owner[p]
        else:
            owner[i] = i
        if t == TEXT:
            if notice and not dead[i] and not skipped[i] and tl[i] <= 600 and _notice(texts[i]):
                dead[i] = True
            continue
        if dead[i] or skipped[i]:
            continue
        if t in FURNITURE_TAGS:
            dead[i] = True
            continue
        if tl[i] > big and not (teasers and strict and _strong(names(dom, i), teasers)):
            continue  # a wrapper of most of the page (an ASP.NET <form>) is no furniture
        if t == "form":
            dead[i] = True
            continue
        a = attrs[i]
        if a is None or t in ("body", "html", "a", "article", "main"):
            continue
        if hidden(a, params.streamed):
            if not (tl[i] >= params.hidden_text and f.link_len[i] <= params.hidden_ld * tl[i]
                    and _folded(dom, i)):
                dead[i] = True
            continue
        if strict and not (tables and i in tables):
            ns = names(dom, i)
            if ns and builder is not None:
                ns = _unbuilt(ns, builder)
            if ns and (_unlikely(ns) or _strong(ns, strong)):
                dead[i] = True
    return dead, owner


@lru_cache(maxsize=8192)
def _unbuilt(names: str, builder: re.Pattern[str]) -> str:
    return builder.sub(" ", names)


def _notice(text: str) -> bool:
    """A browser or JavaScript notice (a substring test first: this runs on every text node)."""
    if "rowser" not in text and "avaScript" not in text and "avascript" not in text \
            and "JAVASCRIPT" not in text and "BROWSER" not in text:
        return False
    return NOTICE_AT.search(text) is not None


def _folded(dom: Dom, i: int) -> bool:
    """A hidden element is folded content (an accordion's closed panel, a tab, a FAQ answer),
    not a hidden menu or a pop-up: role=tabpanel, or a folding name on it or its parent.
    Hidden prose elsewhere stays dead: aeb's display:none teaser copies of other articles, and a
    pop-up's subscription pitch, cost aeb .003 F1 when every hidden prose block was revived."""
    a = dom.attrs[i]
    if a and a.get("role") == "tabpanel":
        return True
    ns = names(dom, i)
    p = dom.parent[i]
    if p >= 0:
        ns += " " + names(dom, p)
    return FOLD.search(ns) is not None

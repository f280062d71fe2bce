"""`auto`: the default main-content selector, a keep mask for blocks_from_dom.

Readability-style scoring on the flat Dom, made O(n) (index loops, no recursion):
1. per-node aggregates in one bottom-up pass: text, link text, commas per subtree;
2. page furniture is masked out: nav/aside/footer/button elements, forms, hidden elements, and
   elements whose class/id name a menu, sidebar, comment list, share bar, ad, cookie banner...
   (a wrapper holding most of the page's text never counts as furniture, unless it is named as
   a teaser list - related, most popular; a content word beside a furniture name saves it,
   unless that name is a strong one - nocontent, most-popular, outbrain; a hidden element that
   is folded prose - an accordion panel, a tab, a FAQ answer - is content); a notice about the
   reader's browser or JavaScript is no text;
3. each text block (the text a block-level element owns) votes for its container and ancestors
   with 1 + commas + length/100; a candidate's score is its votes, adjusted by tag and class/id
   ("article", "content" up; "comment", "sidebar" down), times 1 - link density, where a link
   block counts whole and a link inside prose counts little;
4. the best candidate climbs to an ancestor while that adds prose and little else (an article
   split over sibling columns), not a teaser list; one holding under half the page's prose
   widens further through ancestors that are not link-heavy (a product or landing page of many
   sections); siblings scoring close to it join;
5. inside, link-dense containers, named furniture, photo captions and credits, ad labels and
   the title heading (it repeats <title>) are dropped, and non-prose lines at the article's edges
   are trimmed; headings, lists, tables, code and quotes that carry text stay. Data tables
   (blocks.data_tables) are article text whatever their link density or place: inside the article
   or beside it they are kept whole and stop the edge trimming (a Wikipedia results table is
   short cells, mostly links and no prose: the rules above dropped 72% of 750 table-cell answers).
If nothing scores, the page's JSON-LD articleBody (schema.org) picks the text nodes it contains;
failing that, the text outside page furniture is kept.
"""
from __future__ import annotations

import re
from functools import lru_cache
from itertools import compress
from operator import not_

from ..parse import TEXT, Dom
from ..parse.dom import Attrs
from .blocks import data_tables
from .features import Features, compute

# Elements that own the text inside them (a text block).
OWNER_TAGS = frozenset({
    "p", "div", "td", "th", "li", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "section",
    "article", "main", "dd", "dt", "figcaption", "caption", "body", "table", "ul", "ol", "dl", "form",
    "header", "footer", "nav", "aside", "center", "address", "details", "summary", "figure", "tr",
    "legend", "fieldset", "html",
})
# Page furniture by element name.
FURNITURE_TAGS = frozenset({"nav", "aside", "footer", "button", "dialog", "menu", "select",
                            "input", "label", "option"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

_UNLIKELY = re.compile(
    r"-ad-|\bads?\b|advert|banner|breadcrumb|combx|comment|communit|cookie|consent|gdpr|disqus|"
    r"(?<![a-z])foot(?![a-z])|"
    r"footer|masthead|menu|navbar|\bnav\b|navigation|related|recommend|remark|replies|rss|shoutbox|"
    r"sidebar|skyscraper|social|sponsor|share|sharing|pagination|pager|popup|modal|newsletter|"
    r"subscribe|signup|promo|outbrain|taboola|widget|toolbar|login|byline|author-bio|tags?-?list|"
    r"trending|most-?popular|breaking|skip-?link|print-?only|more-?(news|stories|posts|articles)|"
    r"also-?like|you-?might|read-?next|up-?next|latest-?(news|posts|stories)", re.I)
_MAYBE = re.compile(r"and|article|body|column|content|main|shadow|story|entry|post|embed", re.I)
_POSITIVE = re.compile(r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story|"
                       r"prose|rich-?text", re.I)
_NEGATIVE = re.compile(
    r"-ad-|hidden|\bhid\b|banner|combx|comment|com-|contact|foot|footer|footnote|gdpr|masthead|"
    r"media|meta|outbrain|promo|related|scroll|share|shoutbox|sidebar|skyscraper|sponsor|shopping|"
    r"tags|tool|widget|nav|menu|social|caption|credit", re.I)
_TAG_BASE = {"div": 5, "article": 8, "main": 5, "section": 2, "pre": 3, "td": 3, "blockquote": 3,
             "address": -3, "ol": -3, "ul": -3, "dl": -3, "dd": -3, "dt": -3, "li": -3, "form": -3,
             "h1": -5, "h2": -5, "h3": -5, "h4": -5, "h5": -5, "h6": -5, "th": -5}

# Parameters, fitted on the development sets (aeb, cleaneval-dev, cleanportaleval) together.
MIN_VOTE_TEXT = 25  # a text block shorter than this does not vote (nor count as prose)
LINK_BLOCK = 0.5  # a text block with more link text than this share is a link block
INLINE_LINK = 0.3  # weight of links inside prose in link density
LEVELS = (1.0, 0.5, 1 / 6)  # share of a block's vote for its container, the next ancestor, ...
# Text straight in these (a div of <br> lines, <body> itself) votes for the element itself.
SELF_VOTE = frozenset({"body", "html", "div", "td", "section", "article", "main"})
BIG_SHARE = 0.4  # an element holding this share of the page's text is a wrapper, not furniture
JUNK_RATIO = 0.2  # an ancestor joins the article if it adds at most this much junk per prose char
CLIMB_LINK = 0.3  # ... and at most this much link text per prose char (teaser lists bring links)
JUNK_STOP = 1.0  # stop climbing once the junk added exceeds the prose
# An ancestor that at least triples the prose (a forum thread's posts, a list of entries) may bring
# more junk (user names, dates) per prose char.
GROW = 2.0
JUNK_RATIO_BIG = 0.5
SIBLING_SHARE = 0.2  # siblings scoring this share of the best candidate join the article
JUNK_LD = (0.2, 0.33, 0.5)  # link density that condemns a container: bad name, plain, any name
REMOVE_SHARE = 0.5  # named furniture inside the article is kept if it holds this share of it
CREDIT_MAX = 200  # elements named caption/credit are dropped up to this many characters
COVER = 0.5  # an article holding less of the page's prose widens to ancestors ...
COVER_LD = 0.15  # ... of at most this share of link text
MIN_TEXT = 250  # a strict result shorter than this is a miss: a looser pass runs
# Folded content (a closed accordion, a tab not shown, a FAQ answer) is hidden until a click; it
# is the page's text when it is prose: this much text with at most this share of link text.
HIDDEN_TEXT = 200
HIDDEN_LD = 0.2

def _names(dom: Dom, i: int) -> str:
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
    return _finds(_UNLIKELY, names) and not _finds(_MAYBE, names)


# Names that are furniture whatever content word sits beside them: a "most-popular-article" list
# with "article-content" excerpts (msv: 3 pages of The Atlantic kept ~10k chars of them each), a
# "nocontent" box (the search appliances' mark for text not to index). _MAYBE's content words
# do not save these. Wider lists cost other sets: with related|recommend|read-next|... cleaneval
# loses .001 (its gold keeps "Related Links" lists), with share|social|comment .013.
STRONG: str | None = r"\bnocontent\b|most-?popular|trending|outbrain|taboola"


# Teaser lists are furniture even when they hold most of the page's text (a related-stories
# column of long excerpts beside a short article): no wrapper exemption for these names.
TEASERS: str | None = (r"related|recommend|most-?popular|trending|also-?like|you-?might|read-?next|"
                       r"up-?next|more-?(news|stories|posts|articles)")


@lru_cache(maxsize=8192)
def _strong(names: str, pattern: str | None) -> bool:
    return pattern is not None and _finds(re.compile(pattern, re.I), names)


@lru_cache(maxsize=8192)
def _name_kind(names: str, strong: str | None = None) -> int:
    """0: no furniture name or a content name, 1: furniture (share, byline...), 2: caption/credit."""
    if _strong(names, strong):
        return 1
    if _finds(_MAYBE, names):
        return 0
    if _finds(_REMOVE, names):
        return 1
    return 2 if _finds(_CREDIT, names) else 0


@lru_cache(maxsize=8192)
def _weight(names: str) -> int:
    if not names:
        return 0
    w = 0
    if _finds(_NEGATIVE, names):
        w -= 25
    if _finds(_POSITIVE, names):
        w += 25
    return w


def _hidden(a: Attrs | None) -> bool:
    if not a:
        return False
    if "hidden" in a or a.get("aria-hidden") == "true":
        return not (STREAMED and _streamed(a))
    st = a.get("style")
    if not st:
        return False
    return ("display:none" in st.replace(" ", "").lower()
            or "visibility:hidden" in st.replace(" ", "").lower())


# React's streamed server rendering sends each Suspense boundary's content as <div hidden
# id="S:n"> at the end of the body, and an inline script ($RC) moves it into place: what the
# reader sees, hidden only until that script runs. 31 of wcxb-dev's 1,464 pages have such
# segments (render.com's home page: its whole text), none of the other five sets.
STREAMED = True
_SEGMENT = re.compile(r"[SP]:[0-9a-f]+")


def _streamed(a: Attrs) -> bool:
    i = a.get("id")
    return i is not None and _SEGMENT.fullmatch(i) is not None


def select(dom: Dom, keep_title: bool = False) -> list[bool] | None:
    """Keep mask of the page's main content (all False if the page has no text).
    keep_title keeps a heading that repeats <title> (dropped by default, as annotators do; the
    block pipeline wants it as the heading its sections hang under)."""
    n = len(dom)
    if n == 0:
        return []
    f = compute(dom)
    keep = _select(dom, f, strict=True, keep_title=keep_title)
    if keep is None:
        keep = _select(dom, f, strict=False, keep_title=keep_title)
    if keep is None:
        keep = _json_ld(dom)
    if keep is None:
        # Nothing reads like an article: keep whatever text is not page furniture.
        keep = _whole(dom, f, region=False)
    if TYPE_RULES:
        from .nfas import page_type

        kind = page_type(dom, keep)
        rule = TYPE_RULES.get(kind)
        if rule is not None:
            typed = _typed(dom, f, rule, keep_title)
            if typed is not None and any(typed):
                keep = typed
        from . import listing

        keep = listing.page_fallback(dom, f, keep, kind)
        if kind in listing.CONTROL_KINDS:
            keep = listing.drop_controls(dom, f, keep)
        from . import pagerules

        if kind in pagerules.SERVICE_KINDS:
            keep = pagerules.service(dom, keep)
        if kind in pagerules.FURNITURE_KINDS:
            # a page typed listing that declares one product is a product page: its ratings go too
            rules = "product" if kind == "listing" and pagerules.one_product(dom) else kind
            keep = pagerules.drop_furniture(dom, keep, *pagerules.FURNITURE_KINDS[rules])
    return keep


# The page type (nfas.page_type: WCXB's seven, classified from the article mask's text and the
# page's URL, structure and declared types) picks the rule its main content is selected by:
# documentation and listing -> region, service -> region or wide, forum and product -> mild, each
# then refined by extraction.pagerules; the article rule, fitted on articles, keeps too little of
# the other types (docs/algorithms.md, "Page types"; decisions 0001, 0012). Then
# listing.page_fallback: a rule keeping under its type's share of the page's text outside
# furniture gives way to that text (a listing without <main>, a collection, which starts from the
# article rule; decision 0013). A collection's mask then drops
# its filter panel, badges and per-item controls (listing.drop_controls; decision 0014).
# region: the text outside page furniture inside <main> (or role=main) when it holds text, else
#   the page's: a docs page's whole body, a listing's items and teasers;
# page: the text outside page furniture anywhere on the page: a collection's entries;
# wide: the article rule widened to ancestors holding up to 80% of the page's prose and half
#   their text in links, with no link-dense container dropped inside: a service page's sections;
# mild: as wide, but link-dense containers inside are dropped at higher densities (a forum's
#   posts with their authors, a product's description, specifications and price).
# sections: region when the page has a <main> holding text, else wide (a page builder's sections
#   sit outside any one prose block);
# docs: region minus prev/next, edit, "on this page", "last modified" boxes;
# thread, product: mild, then extraction.pagerules' removals (signatures; reviews, questions,
#   footnotes) and text said twice.
# None (or {}) turns the type rules off: every page is selected as an article.
TYPE_RULES: dict[str, str] | None = {
    "documentation": "docs", "listing": "region", "service": "sections", "forum": "thread",
    "product": "product"}
_WIDE = {"wide": (0.8, 0.5, (1.01, 1.01, 1.01)), "mild": (0.8, 0.5, (0.5, 0.6, 0.8))}
REGION_TEXT = 200  # a <main> element holding less text than this is no region


def _typed(dom: Dom, f: Features, rule: str, keep_title: bool,
           builder: re.Pattern[str] | None = None) -> list[bool] | None:
    if rule in ("thread", "product", "docs"):
        from . import pagerules

        keep = _typed(dom, f, "region" if rule == "docs" else "mild", keep_title)
        if keep is None and rule != "docs":  # too little for mild: the article rule's looser pass
            keep = _select(dom, f, strict=False, keep_title=keep_title)
        if keep is None:
            return None
        post = {"thread": pagerules.thread, "product": pagerules.product, "docs": pagerules.docs}[rule]
        return post(dom, keep, *_furniture(dom, f, strict=True))
    if rule == "sections":
        keep = _whole(dom, f, region=True, builder=SERVICE_BUILDER)
        return keep if any(keep) else _typed(dom, f, "wide", keep_title, builder=SERVICE_BUILDER)
    if rule in _WIDE:
        cover, cover_ld, junk_ld = _WIDE[rule]
        return _select(dom, f, strict=True, keep_title=keep_title, cover=cover, cover_ld=cover_ld,
                       junk_ld=junk_ld, builder=builder)
    return _whole(dom, f, region=rule == "region")


def _whole(dom: Dom, f: Features, region: bool, builder: re.Pattern[str] | None = None) -> list[bool]:
    """The text outside page furniture, inside the <main> region when region is set and the page
    has one holding text (builder: as in _furniture)."""
    n = len(dom)
    dead, _ = _furniture(dom, f, strict=True, builder=builder)
    tags, tl = dom.tag, f.text_len
    lo, hi = 0, n
    if region:
        attrs = dom.attrs
        hi = 0  # no <main> region holding text: nothing (the caller keeps the article rule's mask)
        for i in range(n):
            a = attrs[i]
            if tags[i] == "main" or (a is not None and a.get("role") == "main"):
                if tl[i] >= REGION_TEXT:
                    lo, hi = i, dom.end[i]
                break
    keep = [False] * n
    for j in range(lo, hi):
        keep[j] = tags[j] == TEXT and tl[j] > 0 and not dead[j]
    return keep


def _furniture(dom: Dom, f: Features, strict: bool, tables: dict[int, str] | None = None,
               builder: re.Pattern[str] | None = None) -> tuple[list[bool], list[int]]:
    """(dead, owner): nodes inside page furniture, and the text block owner of every node.
    A data table's own class/id is no furniture name (MediaWiki's "TablePager" is no pager).
    builder: the parts of a class/id that name no furniture on this page's type (SERVICE_BUILDER:
    a page builder's modules and a hero banner), taken out of the names before they are read.
    Computed once per page and pass (f.memo): the article rule, a type's rule and the page-text
    fallback ask for the same mask (only the data tables' indices and the builder change it). The
    lists are shared: callers read them, never write."""
    key = ("furniture", strict, tuple(tables) if tables else (), builder.pattern if builder is not None else None)
    got = f.memo.get(key)
    if got is None:
        got = f.memo[key] = _furniture_pass(dom, f, strict, tables, builder)
    return got


def _furniture_pass(dom: Dom, f: Features, strict: bool, tables: dict[int, str] | None,
                    builder: re.Pattern[str] | None) -> tuple[list[bool], list[int]]:
    n = len(dom)
    tags, parent, attrs, skipped, texts = dom.tag, dom.parent, dom.attrs, dom.skipped, dom.text
    tl = f.text_len
    dead = [False] * n
    big = BIG_SHARE * tl[dom.body()]
    owner = [0] * n
    # one C-level look for the notices' words in the page's text: on most pages no text node
    # needs the per-node test
    notice = NOTICE and _notice("\x00".join(compress(texts, map(not_, skipped))))
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
        if tl[i] > big and not (TEASERS and strict and _strong(_names(dom, i), TEASERS)):
            continue  # a wrapper of most of the page (an ASP.NET <form>) is no furniture
        if t == "form":
            dead[i] = True
            continue
        a = attrs[i]
        if a is None or t in ("body", "html", "a", "article", "main"):
            continue
        if _hidden(a):
            if not (tl[i] >= HIDDEN_TEXT and f.link_len[i] <= HIDDEN_LD * tl[i]
                    and _folded(dom, i)):
                dead[i] = True
            continue
        if strict and not (tables and i in tables):
            names = _names(dom, i)
            if names and builder is not None:
                names = _unbuilt(names, builder)
            if names and (_unlikely(names) or _strong(names, STRONG)):
                dead[i] = True
    return dead, owner


# A service page is built of a page builder's modules, and its first section is a "hero banner":
# names that _UNLIKELY reads as furniture (widget, banner) but that hold the page's text. Elementor
# ("elementor-widget-wrap", "elementor-widget"), HubSpot ("hs_cos_wrapper_widget", "widget-span
# widget-type-custom_widget"), Flatsome's "banner" sections, "hero-banner". On wcxb-dev's 162
# service pages (every page given the service rule), read as furniture these two words alone
# lose 22.3k of the gold's 1.09M characters (widget 13.7k, banner 8.6k; 27 pages). The word is
# blanked out of the name, so "cookie-banner", "promo-banner", "nav-menu widget" stay furniture by their other words.
SERVICE_BUILDER: re.Pattern[str] | None = re.compile(
    r"banner|widget(?![-_]?areas?)", re.I)


@lru_cache(maxsize=8192)
def _unbuilt(names: str, builder: re.Pattern[str]) -> str:
    return builder.sub(" ", names)


# A notice about the reader's browser ("This page is best viewed in an up-to-date web browser",
# "Please enable JavaScript") is no part of any page's text: 175 text nodes on the six
# development sets match, none of them in a gold text. The phrases want the reader addressed
# ("your browser", "please enable"): an article about browsers ("removing support for older
# browsers") is text.
NOTICE = True
_NOTICE = re.compile(
    r"best viewed (in|with|using)|(upgrade|update) your (web )?browser|"
    r"your (web )?browser (does not|doesn't|is not|isn't|may not) (support|have|accept)|"
    r"(please |you (must|need to|should) )(enable|turn on|activate|allow) (your )?"
    r"(javascript|js|style ?sheets|css)|(javascript|js) (is|seems to be|appears to be) (disabled|turned off)|"
    r"you are using an? (outdated|unsupported|old|older) (web )?browser", re.I)
# The same, tried only where a phrase can start (each begins with one of these letters): sre
# enters the pattern at every character otherwise, 4x the time on a page's whole text
# (tests/test_autotune.py checks the letters against the phrases).
NOTICE_START = "bjpuy"
_NOTICE_AT = re.compile(f"(?=[{NOTICE_START}])(?:{_NOTICE.pattern})", re.I)


def _notice(text: str) -> bool:
    """A browser or JavaScript notice (a substring test first: this runs on every text node)."""
    if "rowser" not in text and "avaScript" not in text and "avascript" not in text \
            and "JAVASCRIPT" not in text and "BROWSER" not in text:
        return False
    return _NOTICE_AT.search(text) is not None


# What folds content away until a click, in the class/id of the hidden element or its parent.
_FOLD = re.compile(r"accordion|collaps|tab-?panel|tabs?\b|faq|toggle|expand|panel|spoiler|"
                   r"read-?more|more-?text|answer|details", re.I)


def _folded(dom: Dom, i: int) -> bool:
    """A hidden element is folded content (an accordion's closed panel, a tab, a FAQ answer),
    not a hidden menu or a pop-up: role=tabpanel, or a folding name on it or its parent.
    Hidden prose elsewhere stays dead: aeb's display:none teaser copies of other articles, and a
    pop-up's subscription pitch, cost aeb .003 F1 when every hidden prose block was revived."""
    a = dom.attrs[i]
    if a and a.get("role") == "tabpanel":
        return True
    names = _names(dom, i)
    p = dom.parent[i]
    if p >= 0:
        names += " " + _names(dom, p)
    return _FOLD.search(names) is not None


def _select(dom: Dom, f: Features, strict: bool, keep_title: bool = False,
            trace: dict[str, object] | None = None, cover: float | None = None,
            cover_ld: float | None = None, junk_ld: tuple[float, float, float] | None = None,
            builder: re.Pattern[str] | None = None) -> list[bool] | None:
    """trace: a dict to fill with the chosen candidate, article top and roots (bench/auto_diag.py).
    cover, cover_ld, junk_ld: COVER, COVER_LD and JUNK_LD for this call (a page type's rule)."""
    cover = COVER if cover is None else cover
    cover_ld = COVER_LD if cover_ld is None else cover_ld
    junk_ld = JUNK_LD if junk_ld is None else junk_ld
    n = len(dom)
    tags, parent, ends, skipped = dom.tag, dom.parent, dom.end, dom.skipped
    tl, ll, cm = f.text_len, f.link_len, f.commas

    # 1. furniture mask (top-down) and the text block owner of every node
    tables = data_tables(dom)
    dead, owner = _furniture(dom, f, strict, tables, builder)

    # 2. text per owner (a text block), then live text and "boilerplate link" text per subtree:
    # a block that is mostly link text counts whole, links inside prose count a little.
    own_tl: dict[int, int] = {}
    own_ll: dict[int, int] = {}
    own_cm: dict[int, int] = {}
    for j in compress(range(n), tl):  # (a C loop past the nodes without text)
        if tags[j] == TEXT and not dead[j]:
            b = owner[j]
            own_tl[b] = own_tl.get(b, 0) + tl[j]
            own_ll[b] = own_ll.get(b, 0) + ll[j]
            own_cm[b] = own_cm.get(b, 0) + cm[j]
    live = [0] * n
    blink = [0.0] * n
    lraw = [0] * n  # live link text
    prose = [0] * n  # text of prose blocks (those that vote)
    for b, length in own_tl.items():
        live[b] = length
        if length >= MIN_VOTE_TEXT and tags[b] not in HEADINGS and own_ll[b] <= LINK_BLOCK * length:
            prose[b] = length
        k = own_ll[b]
        blink[b] = length if k > LINK_BLOCK * length else k * INLINE_LINK
        lraw[b] = k
    for i in range(n - 1, 0, -1):
        if live[i]:
            p = parent[i]
            live[p] += live[i]
            blink[p] += blink[i]
            lraw[p] += lraw[i]
            prose[p] += prose[i]

    # 3. votes for ancestors
    votes: dict[int, float] = {}
    for b, length in own_tl.items():
        if length < MIN_VOTE_TEXT or tags[b] in HEADINGS:
            continue
        if own_ll[b] > LINK_BLOCK * length:
            continue
        s = 1 + own_cm[b] + min(length // 100, 3)
        # A paragraph votes for its container; text straight in a container (a div of <br> lines,
        # <body> itself) also votes for that container.
        c = b if tags[b] in SELF_VOTE else parent[b]
        level = 0
        while c >= 0 and level < len(LEVELS):
            votes[c] = votes.get(c, 0.0) + s * LEVELS[level]
            c = parent[c]
            level += 1
    if not votes:
        return None
    score: dict[int, float] = {}
    weight: dict[int, int] = {}
    best, best_score = -1, float("-inf")
    for c, v in votes.items():
        w = _weight(_names(dom, c))
        weight[c] = w
        bonus: float = _TAG_BASE.get(tags[c], 0) + w
        bonus = max(-v, min(v, bonus))  # names adjust a score, they cannot make one
        t = live[c]
        sc = (v + bonus) * (1 - (blink[c] / t if t else 0))
        score[c] = sc
        if sc > best_score:
            best, best_score = c, sc
    if best < 0:
        return None
    top = best
    # Move up while an ancestor adds prose (an article split over sibling containers) and little
    # else; climb past levels that add nothing, stop once the added junk outweighs the prose.
    base_prose, base_junk = prose[top], live[top] - prose[top]
    a = parent[top]
    while a >= 0 and tags[a] != "html":
        dp = prose[a] - base_prose
        dj = (live[a] - prose[a]) - base_junk
        if dj > JUNK_STOP * (base_prose + dp):
            break
        # teaser lists (headline link + excerpt) look like prose but bring their links along
        ratio = JUNK_RATIO_BIG if dp >= GROW * base_prose else JUNK_RATIO
        if dp > 0 and dj <= ratio * dp and lraw[a] - lraw[top] <= CLIMB_LINK * dp:
            top, base_prose, base_junk = a, prose[a], live[a] - prose[a]
        a = parent[a]
    # A page of many prose sections (a product or landing page, a docs page of panels) can leave the
    # best candidate holding a small part of its prose: widen to the ancestors while the article
    # holds under COVER of the page's prose and the ancestor is not link-heavy (a teaser grid,
    # a menu column) nor more junk than prose.
    body = dom.body()
    a = parent[top]
    while prose[top] < cover * prose[body] and a >= 0 and tags[a] != "html":
        if lraw[a] > cover_ld * live[a] or live[a] - prose[a] > prose[a]:
            break
        top = a
        a = parent[a]
    # 4. the article: top candidate plus siblings scoring close to it (or sharing its class), data
    # tables, and sibling paragraphs, lists, quotes and headings that are not links
    roots = [top]
    p = parent[top]
    if p >= 0:
        threshold = max(10.0, best_score * SIBLING_SHARE)
        top_names = _names(dom, top) if weight.get(top) else ""
        for s in dom.children(p):
            if s == top or tags[s] == TEXT or dead[s]:
                continue
            sib_score = score.get(s)
            bonus = best_score * SIBLING_SHARE if top_names and _names(dom, s) == top_names else 0.0
            if (sib_score is not None and sib_score + bonus >= threshold) or s in tables:
                roots.append(s)
            elif tags[s] in _SIBLING_TAGS:
                t = tl[s]
                ld = ll[s] / t if t else 1.0
                if (t > 80 and ld < 0.25) or (0 < t <= 80 and ld == 0):
                    roots.append(s)
    roots.sort()
    if trace is not None:
        trace.update(best=best, top=top, roots=roots, dead=dead, owner=owner, prose=prose, live=live,
                     blink=blink, weight=weight, tables=tables)

    # 5. keep the text of the roots, minus furniture, link-heavy widgets, named furniture (share
    # bars, bylines, tag lists), the page title repeated as a heading, ad labels and photo credits
    keep = [False] * n
    kept_len = 0
    title = "" if keep_title else " ".join(dom.title().split()).lower()
    texts = dom.text
    table_end = -1
    for r in roots:
        j, stop = r, ends[r]
        limit = REMOVE_SHARE * tl[r]
        while j < stop:
            tag = tags[j]
            if dead[j] or skipped[j]:
                j = ends[j]
                continue
            if tag == TEXT:
                k = tl[j]
                if k and not ((k <= 45 and AD_LABEL.match(texts[j]))
                              or (k <= 80 and CREDIT_LINE.search(texts[j]))):
                    keep[j] = True
                    kept_len += k
                elif not k and j < table_end:  # "<i>Alfie</i> <small>(soundtrack)</small>": the
                    keep[j] = True  # space between two cell words is part of the cell
                j += 1
                continue
            if j in tables:
                table_end = ends[j]  # a data table is kept whole: no cell is junk
            if tag in DROP_TAGS or (j != r and j >= table_end and (_junk(dom, j, live, blink, cm, weight, junk_ld)
                                                                   or _removable(dom, j, tl, limit))):
                j = ends[j]
                continue
            if title and tag in ("h1", "h2") and tl[j] >= 10 and ends[j] - j <= 64:
                h = " ".join(" ".join(texts[k].split()) for k in range(j, ends[j])
                             if tags[k] == TEXT and texts[k].strip()).lower()
                if h and h in title:
                    j = ends[j]
                    continue
            j += 1
    # data tables anywhere: a page's tables are its content wherever the prose vote put the
    # article (on a Wikipedia page of short paragraphs it can pick the reference list) and
    # whatever link-dense box holds them, unless they sit in page furniture
    for tb in tables:  # data tables do not nest: O(n) in all
        if dead[tb]:
            continue
        for k in range(tb, ends[tb]):
            if tags[k] == TEXT and not dead[k] and not skipped[k] and not keep[k]:
                keep[k] = True
                kept_len += tl[k]
    kept_len -= _trim_edges(dom, keep, owner, prose, tables)
    if kept_len < MIN_TEXT and strict:
        return None
    if kept_len == 0:
        return None
    return keep


_SIBLING_TAGS = frozenset({"p", "pre", "blockquote", "ul", "ol", "table", "h1", "h2", "h3", "h4",
                           "h5", "h6"})
# Inside the article: share bars, bylines, dates, tag lists, galleries are not its text; nor are
# photo captions and credits (<figcaption>, short elements named caption/credit).
DROP_TAGS = frozenset({"figcaption"})
_REMOVE = re.compile(r"share|sharing|social|related|recommend|read-?more|gallery|slideshow|carousel|"
                     r"lightbox|\btags?\b|byline|author|"
                     r"dateline|timestamp|\bdate\b|published|newsletter|promo|advert|\bads?\b", re.I)
_CREDIT = re.compile(r"caption|credit|copyright", re.I)
AD_LABEL = re.compile(r"\s*(advertisement|advert|ad|sponsored|anzeige|publicité|publicidad|pubblicità|"
                      r"story continues below( advertisement)?|continue reading( below| the main story)?)"
                      r"\s*[:.]?\s*$", re.I)
# Photo credit lines ("Image copyright Reuters", "Photo: AP", "(Getty Images)").
CREDIT_LINE = re.compile(r"^\s*(image|photo|photograph|picture|foto|credit)s?\s*(copyright|credit|:|by\b|\(|©)|"
                         r"getty\s*images|^\s*©|\bAP Photo\b", re.I)


def _removable(dom: Dom, i: int, tl: list[int], limit: float) -> bool:
    """Named furniture inside the article, unless it holds much of the article (a wrapper)."""
    names = _names(dom, i)
    if not names or tl[i] > limit:
        return False
    kind = _name_kind(names, STRONG)
    return kind == 1 or (kind == 2 and tl[i] <= CREDIT_MAX)


def _trim_edges(dom: Dom, keep: list[bool], owner: list[int], prose: list[int],
                tables: dict[int, str] | None = None) -> int:
    """Unkeep the short non-prose lines (dates, "Share", "Advert", "3 comments") before the first
    prose block or heading of the article, and those after its last prose block, headings
    included ("Related content", "Comments" with nothing under them); returns the characters
    dropped. A data table counts as prose: the trimming stops at it."""
    tags, texts, ends = dom.tag, dom.text, dom.end
    in_table = [False] * len(keep)
    for t in tables or ():
        in_table[t:ends[t]] = [True] * (ends[t] - t)  # data tables do not nest: O(n) in all
    kept = [j for j in range(len(keep)) if keep[j]]
    dropped = 0
    for order, keep_heads in ((kept, True), (kept[::-1], False)):
        for j in order:
            b = owner[j]
            if prose[b] or (keep_heads and tags[b] in HEADINGS) or in_table[j]:
                break
            keep[j] = False
            dropped += len(texts[j].strip())
    return dropped


_CLEAN_TAGS = frozenset({"div", "section", "ul", "ol", "table", "dl", "header", "span", "p", "figure",
                         "center", "tbody", "tr", "td", "li"})


def _junk(dom: Dom, i: int, live: list[int], blink: list[float], cm: list[int],
          weight: dict[int, int], junk_ld: tuple[float, float, float] = JUNK_LD) -> bool:
    """Readability's conditional cleaning: a container that is mostly links and little prose
    (link density counts link blocks whole and links inside prose a little)."""
    t = dom.tag[i]
    if t not in _CLEAN_TAGS:
        return False
    text = live[i]
    if text == 0:
        return False
    if cm[i] >= 10:
        return False
    w = weight.get(i)
    if w is None:
        w = _weight(_names(dom, i))
    ld = blink[i] / text
    if w < 0 and ld > junk_ld[0]:
        return True
    if w < 25 and ld > junk_ld[1]:
        return True
    return ld > junk_ld[2]


def article_body(dom: Dom) -> str | None:
    """The longest schema.org articleBody in the page's JSON-LD scripts, whitespace-normalised
    (jsonld: the parsing shared with the page metadata, bounded in size)."""
    from .jsonld import article_bodies, ld_values

    bodies = article_bodies(ld_values(dom))
    if not bodies:
        return None
    body = " ".join(max(bodies, key=len).split())
    return body if len(body) >= 80 else None


def _json_ld(dom: Dom) -> list[bool] | None:
    """Keep the text nodes whose text occurs in the page's JSON-LD articleBody."""
    body = article_body(dom)
    if body is None:
        return None
    tags, texts = dom.tag, dom.text
    keep = [False] * len(dom)
    found = False
    for j in range(len(dom)):
        if tags[j] == TEXT and not dom.skipped[j]:
            t = " ".join(texts[j].split())
            if len(t) >= 20 and t in body:
                keep[j] = found = True
    return keep if found else None


def select_blocks(dom: Dom) -> list[bool] | None:
    """`auto` for the block pipeline (crawl, --mode main): the title heading stays as context."""
    return select(dom, keep_title=True)

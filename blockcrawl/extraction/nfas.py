"""NFaS page kinds (seed 004), grown to WCXB's seven page types: article (one piece of writing:
news story, blog post, encyclopedia entry), documentation, service (a business's pages about what
it offers), forum (a thread of posts), collection (a curated set of entries: a gallery, a
category of products), listing (index, tag, search pages: many teasers linking elsewhere) and
product (one thing for sale). "other" is left for a page with no text (nothing parsed).

Features as the seed names them: URL (a date in the path, a long numeric id, a word slug, depth,
listing words such as /tag/ or /category/, forum, docs and shop words), structure (links and link
density of the page, prose text nodes, <article>/<li>/<time>/form counts, the share of the page's
text inside <p> and inside table cells, elements classed price or cart) and content (length of
the main text, its paragraphs and sentences, digits and currency signs, calls to action, forum
words), plus what the page declares (og:type, JSON-LD @type, a published date, an author): no
site names. The model is multinomial logistic regression over standardised features, fitted by
bench/nfas.py on labelled development pages (bench/nfas_labels.tsv: WCXB's page_type for
wcxb-dev, article for the article sets) and stored in data/nfas.json; scoring is a few dot
products in pure Python (no numpy import in the crawl workers). The type is the likeliest class;
held out by site folds it is right for 0.83 of wcxb-dev's pages (0.82 without the shape
features: the largest group of same-shape siblings, the <main> share, prices and dates;
docs/algorithms.md, "The seven-type classifier").

auto (extraction/auto.py) classifies each page from its article mask (page_type) and selects
the main content by the type's rule; page_info reuses that decision for the same Dom.
"""
from __future__ import annotations

import json
import math
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate, compress
from operator import not_
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..parse import TEXT, Dom
from ..records import PageMeta
from .jsonld import walk
from .metadata import Scan, is_article_type, ld_types, meta_from_scan, scan

MODEL_PATH = Path(__file__).parent / "data" / "nfas.json"
TEXT_SAMPLE = 50_000  # characters of the main text read for character counts

_DATE_PATH = re.compile(r"/(?:19|20)\d\d[/-](?:0?[1-9]|1[0-2])(?:[/-]|$)|/(?:19|20)\d\d(?:0[1-9]|1[0-2])[0-3]\d(?:/|$)"
                        r"|[/_-](?:19|20)\d\d-[01]\d-[0-3]\d")
_LONG_ID = re.compile(r"\d{5,}")
_LIST_WORDS = frozenset({
    "tag", "tags", "category", "categories", "topic", "topics", "section", "sections", "archive", "archives",
    "search", "page", "author", "authors", "list", "lists", "collection", "collections", "shop", "products",
    "index", "forum", "forums", "label", "labels", "browse", "catalog", "directory", "latest", "all", "c",
    "blog", "news", "stories", "articles", "posts", "videos", "results"})
_FORUM_URL = re.compile(r"forum|thread|viewtopic|showthread|/t/|/comments/|discuss|community|bbs\.|/questions/|/topic", re.I)
_DOCS_URL = re.compile(r"docs?[./]|documentation|/api/|/reference|manual|/guides?/|developer|/learn/|tutorial|/wiki/", re.I)
_SHOP_URL = re.compile(r"/services?/|solutions?|/products?/|pricing|/shop|store|/cart|coupon|/c/|/p/|/dp/|/item|"
                       r"/buy|/plans|/features|/courses?/|/programs?/", re.I)
_TEXT_DATE = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2},? \d{4}\b|"
                        r"\b\d{1,2} (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{4}\b|"
                        r"\b\d{4}-\d\d-\d\d\b|\b\d\d?[./]\d\d?[./]\d{4}\b", re.I)
_BYLINE = re.compile(r"\b(?:[Bb]y|[Vv]on|[Pp]ar|[Pp]or|[Dd]i)\s+[A-Z][\w.'-]+\s+[A-Z]")
# read in the lower-cased text, each alternative from a word start: case-insensitive unanchored
# alternations cost 0.9 ms a page median on cetd, these 0.1 ms
_CTA = re.compile(r"\b(?:add to (?:cart|bag|basket)|buy now|contact us|get started|free trial|request a (?:quote|demo)|"
                  r"sign up|book (?:now|a)|schedule a|in stock|shipping|pricing|our services|call us)")
_FORUM_TEXT = re.compile(r"\b(?:repl(?:y|ies|ied)\b|posted\b|joined\b|posts:|quote\b|upvote|permalink\b|wrote:)")
LEAD_CHARS = 600  # where a dateline or byline is looked for in the main text
# Where either can match, in one pass over the text (two findall passes were ~5% of extract()
# on cleaneval-dev's long articles; this one and the matches at its few hits take 0.8 of that)
_CTA_OR_FORUM = re.compile(f"(?={_CTA.pattern}|{_FORUM_TEXT.pattern})")
_PAGE_QUERY = re.compile(r"(?:^|&)(?:page|p|pg|s|q|query|search|sort|filter|offset|start)=", re.I)

SHAPE_FEATURES = (
    "g_items", "g_share", "g_links", "g_imgs", "g_heads", "g_link_share", "g_text_item", "g_with_link",
    "g_with_img", "g_with_head", "g_tag_li", "g_tag_article", "g_tag_tr", "g_tag_div", "g_max", "g_groups",
    "main_share", "has_main", "prices", "price_density", "dates", "date_density",
)
FEATURES = (
    # URL
    "url_date", "url_id", "url_slug", "url_depth", "url_listword", "url_root", "url_html", "url_query",
    "url_forum", "url_docs", "url_shop",
    # structure
    "links", "link_density", "page_text", "prose_nodes", "links_per_kchar", "p", "li", "headings",
    "img", "forms", "inputs", "tables", "times", "articles", "code", "nav",
    "p_share", "cell_share", "price_marks", "cart_marks",
    # content (main text)
    "main_text", "main_share", "paragraphs", "short_paragraphs", "long_paragraphs", "sentences",
    "words_per_sentence", "digits", "currency", "questions", "lead_date", "lead_byline", "cta", "forum_words",
    # declared
    "og_article", "og_other", "ld_article", "ld_listing", "ld_product", "ld_qa", "has_published",
    "has_author",
    # shape (shape_features): the page's largest repeated group of same-shape siblings, <main>,
    # prices and dates in the page's text
    *SHAPE_FEATURES,
)


# elements that can be the items of a repeated group (a listing's <li> or <article> teasers, a
# shop grid's <div> cards, a table's rows, a forum's posts)
ITEM_TAGS = frozenset({"li", "article", "div", "tr", "section", "dd", "figure", "dt", "a", "span", "p", "h2",
                       "h3", "h4", "td", "table", "ul", "form", "img"})
GROUP_MIN = 3  # siblings of one shape that make a group
PAGE_SAMPLE = 60_000  # characters of the page's text read for prices and dates
_HEADS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# _TEXT_DATE on lower-cased text, each match starting at a month's initial or a digit: the
# lookahead skips other positions (0.41 ms a wcxb-dev page median vs 1.13 ms with re.I)
_PAGE_DATE = re.compile(r"(?=[adfjmnos]|\d)(?:" + _TEXT_DATE.pattern + ")")
# A price: a currency sign before a digit, or a digit, [.,], two digits and a currency after. The
# first character is read by a class (sre then skips to the next candidate in C; a lookahead
# there made it enter the pattern at every character: 1.6x the time), the rest behind it.
_PRICE = re.compile(r"[$€£¥\d](?:(?<=[$€£¥])\s?\d|(?<=\d)[.,]\d\d\s?(?:€|eur\b|usd\b|gbp\b|kr\b))")


def _log(n: float) -> float:
    return math.log1p(max(n, 0.0))


def url_features(url: str) -> list[float]:
    if not url:
        return [0.0] * 11
    try:
        parts = urlsplit(url)
    except ValueError:
        return [0.0] * 11
    path = parts.path or "/"
    segs = [s for s in path.split("/") if s]
    last = segs[-1] if segs else ""
    stem = last.rsplit(".", 1)[0]
    words = [w for w in re.split(r"[-_+]", stem) if w.isalpha()]
    return [
        1.0 if _DATE_PATH.search(path) else 0.0,
        1.0 if _LONG_ID.search(path) else 0.0,
        1.0 if len(words) >= 3 else 0.0,
        min(len(segs), 8) / 8,
        1.0 if any(s.lower() in _LIST_WORDS for s in segs) else 0.0,
        1.0 if not segs else 0.0,
        1.0 if last.lower().endswith((".html", ".htm", ".shtml")) else 0.0,
        1.0 if _PAGE_QUERY.search(parts.query) else 0.0,
    ] + [1.0 if rx.search(where) else 0.0 for rx, where in (
        (_FORUM_URL, f"{parts.netloc}{path}?{parts.query}"), (_DOCS_URL, f"{parts.netloc}{path}"),
        (_SHOP_URL, path))]


def shape_features(dom: Dom) -> list[float]:
    """SHAPE_FEATURES of a page, in two linear passes over the flat Dom. Same-shape siblings are
    the elements of one tag and class under one parent (ITEM_TAGS, at least GROUP_MIN of them);
    the group holding the most text is the page's repeated structure: its item count, its share
    of the page's text, links, images and headings per item, the share of items with each, its
    link text share, text per item, the item tag. Subtree sums come from prefix sums read at
    the element and its end (no recursion). Also the share of the text inside the first <main>
    (or role=main) and prices and dates in the page's text (first PAGE_SAMPLE characters).
    These shape features raise the type's accuracy held out, on wcxb-dev and on cetd
    (docs/algorithms.md, "The seven-type classifier"; decision 0002)."""
    tags, texts, parent, ends, skipped, attrs = dom.tag, dom.text, dom.parent, dom.end, dom.skipped, dom.attrs
    n = len(tags)
    # text characters before each node (index n: the page's total), by C loops (map,
    # accumulate); a subtree's text is ct[end] - ct[i]. The rest is counted in the largest
    # group's subtrees only (disjoint: at most n nodes), by list.count/index on slices. Per-node
    # Python loops and many small containers (which wake the garbage collector over the whole
    # Dom) double the classifier's cost.
    lens = list(map(len, texts))  # elements have no text; skipped nodes (few) are zeroed
    for i in compress(range(n), skipped):
        lens[i] = 0
    ct = list(accumulate(lens, initial=0))
    t = ct[n]
    main_i = tags.index("main") if "main" in tags else n
    main_i = next((i for i in compress(range(main_i), attrs) if attrs[i].get("role") == "main"), main_i)  # type: ignore[union-attr]
    if main_i == n:
        main_i = -1
    pieces = list(filter(None, compress(texts, map(not_, skipped))))
    cut = bisect_left(list(accumulate(map(len, pieces))), PAGE_SAMPLE)  # pieces read while fewer chars
    pieces = pieces[:cut + 1]
    counts: dict[tuple[int, str, str], int] = {}  # group key (parent, tag, class) -> items, text characters
    chars: dict[tuple[int, str, str], int] = {}
    first: dict[tuple[int, str, str], int] = {}
    # an item whose parent holds fewer than GROUP_MIN items is in no group: found by C loops and
    # left out (the groups, their order and sums are the same; the loop below was ~3% of
    # extract(); 57% of the items of a sample of dev pages are alone or in pairs)
    items = list(compress(range(n), map(ITEM_TAGS.__contains__, tags)))
    parents = list(map(parent.__getitem__, items))
    per_parent = Counter(parents)
    for i in compress(items, map(GROUP_MIN.__le__, map(per_parent.__getitem__, parents))):
        p = parent[i]
        if skipped[i] or p < 0:
            continue
        at = attrs[i]
        key = (p, tags[i], (at.get("class") or "") if at else "")
        c = counts.get(key, 0)
        if not c:
            first[key] = i
        counts[key] = c + 1
        chars[key] = chars.get(key, 0) + ct[ends[i]] - ct[i]
    best_key: tuple[int, str, str] | None = None
    best_text = maxcount = n_groups = 0
    for key, c in counts.items():
        if c < GROUP_MIN:
            continue
        n_groups += 1
        maxcount = max(maxcount, c)
        if chars[key] > best_text:
            best_text, best_key = chars[key], key
    total = t or 1
    x = [0.0] * 14
    if best_key is not None:
        i0 = first[best_key]
        tag0 = tags[i0]
        cls0 = (attrs[i0] or {}).get("class") or ""
        best = []
        j, stop = i0, ends[parent[i0]]
        while j < stop:  # i0's later siblings of its tag and class
            if tags[j] == tag0 and not skipped[j] and ((attrs[j] or {}).get("class") or "") == cls0:
                best.append(j)
            j = ends[j]
        c = len(best)
        links = imgs = heads = link_chars = with_link = with_img = with_head = 0
        for i in best:
            sub = tags[i:ends[i]]
            k = sub.count("a")
            m = sub.count("img")
            h = sum(map(sub.count, _HEADS))
            links += k
            imgs += m
            heads += h
            with_link += k > 0
            with_img += m > 0
            with_head += h > 0
            j = i
            while k:  # the outer links' text
                try:
                    j = tags.index("a", j, ends[i])
                except ValueError:
                    break
                link_chars += ct[ends[j]] - ct[j]
                j = ends[j]
        x = [
            _log(c), best_text / total, links / c, imgs / c, heads / c, link_chars / best_text, _log(best_text / c),
            with_link / c, with_img / c, with_head / c, 1.0 if tag0 == "li" else 0.0,
            1.0 if tag0 == "article" else 0.0, 1.0 if tag0 == "tr" else 0.0,
            1.0 if tag0 in ("div", "section") else 0.0,
        ]
    page = " ".join(pieces).lower()
    kchars = len(page) / 1000 + 1
    prices = len(_PRICE.findall(page))
    dates = len(_PAGE_DATE.findall(page))
    return x + [
        _log(maxcount), _log(n_groups), (ct[ends[main_i]] - ct[main_i]) / total if main_i >= 0 else 0.0,
        1.0 if main_i >= 0 else 0.0, _log(prices), prices / kchars, _log(dates), dates / kchars,
    ]


def _cta_forum(low: str) -> tuple[int, int]:
    """(len(_CTA.findall(low)), len(_FORUM_TEXT.findall(low))): findall's leftmost matches that
    do not overlap, each pattern tried only where _CTA_OR_FORUM found one of them starting."""
    ctas = forums = cta_end = forum_end = 0
    for hit in _CTA_OR_FORUM.finditer(low):
        i = hit.start()
        if i >= cta_end:
            m = _CTA.match(low, i)
            if m is not None:
                ctas, cta_end = ctas + 1, m.end()
        if i >= forum_end:
            m = _FORUM_TEXT.match(low, i)
            if m is not None:
                forums, forum_end = forums + 1, m.end()
    return ctas, forums


def features(dom: Dom, text: str, s: Scan, meta: PageMeta) -> list[float]:
    """The feature vector of a page (FEATURES order): dom's scan, the main text, its metadata."""
    c = s.counts
    tc = s.text_chars
    x = url_features(dom.url or meta.canonical)
    x += [
        _log(s.links), s.link_chars / tc if tc else 0.0, _log(tc), _log(s.long_texts),
        s.links / (tc / 1000 + 1), _log(c.get("p", 0)), _log(c.get("li", 0)),
        _log(c.get("h2", 0) + c.get("h3", 0)), _log(c.get("img", 0)), _log(c.get("form", 0)),
        _log(c.get("input", 0) + c.get("button", 0) + c.get("select", 0)), _log(c.get("table", 0)),
        _log(c.get("time", 0)), _log(s.top_articles), _log(c.get("pre", 0) + c.get("code", 0)),
        _log(c.get("nav", 0)),
        s.p_chars / tc if tc else 0.0, s.cell_chars / tc if tc else 0.0, _log(s.price_marks), _log(s.cart_marks),
    ]
    sample = text[:TEXT_SAMPLE]
    low = sample.lower()
    n = len(sample)
    paras = [p for p in sample.split("\n\n") if p.strip()]
    short = sum(1 for p in paras if len(p) < 80)
    long_ = sum(1 for p in paras if len(p) >= 200)
    sentences = sample.count(". ") + sample.count("? ") + sample.count("! ") + sample.count(".\n") + len(paras)
    words = sample.count(" ") + 1 if sample else 0
    digits = sum(sample.count(d) for d in "0123456789")
    currency = sum(sample.count(ch) for ch in "$€£¥")
    x += [
        _log(len(text)), min(len(text) / tc, 2.0) if tc else 0.0, _log(len(paras)),
        short / len(paras) if paras else 0.0, _log(long_), _log(sentences),
        min(words / sentences, 100) / 100 if sentences else 0.0, digits / n if n else 0.0, _log(currency),
        min(sample.count("?") / sentences, 1.0) if sentences else 0.0,
        1.0 if _TEXT_DATE.search(sample[:LEAD_CHARS]) else 0.0, 1.0 if _BYLINE.search(sample[:LEAD_CHARS]) else 0.0,
        *map(_log, _cta_forum(low)),
    ]
    og = s.metas.get("og:type", "").lower()
    types: set[str] = set()
    if s.ld_raw:
        for d in walk(s.ld()):
            types.update(ld_types(d))
    x += [
        1.0 if "article" in og else 0.0, 1.0 if og and "article" not in og else 0.0,
        1.0 if any(is_article_type(t) for t in types) else 0.0,
        1.0 if types & {"collectionpage", "itemlist", "searchresultspage"} else 0.0,
        1.0 if types & {"product", "offer", "aggregateoffer", "productgroup"} else 0.0,
        1.0 if types & {"qapage", "faqpage", "discussionforumposting", "question"} else 0.0,
        1.0 if meta.published else 0.0, 1.0 if meta.author else 0.0,
    ]
    return x + shape_features(dom)


@lru_cache(maxsize=1)
def model() -> dict[str, Any]:
    """The fitted model (data/nfas.json): classes, features, mean, scale, weights, bias."""
    m: dict[str, Any] = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    if tuple(m["features"]) != FEATURES:
        raise ValueError(f"{MODEL_PATH} was fitted on other features: refit with bench/nfas.py")
    return m


def predict(x: list[float]) -> dict[str, float]:
    """Class probabilities of a feature vector (softmax of the linear scores)."""
    m = model()
    z = [(xi - mu) / sd for xi, mu, sd in zip(x, m["mean"], m["scale"])]
    scores = [b + sum(w * zi for w, zi in zip(ws, z)) for ws, b in zip(m["weights"], m["bias"])]
    top = max(scores)
    exps = [math.exp(v - top) for v in scores]
    total = sum(exps)
    return {c: e / total for c, e in zip(m["classes"], exps)}


def classify_scan(dom: Dom, text: str, s: Scan, meta: PageMeta) -> tuple[str, float]:
    """(type, P(article)): the likeliest of the model's classes."""
    p = predict(features(dom, text, s, meta))
    return max(p, key=lambda c: p[c]), p.get("article", 0.0)


def mask_text(dom: Dom, keep: Sequence[bool]) -> str:
    """The kept text of a page as the classifier reads it: the text nodes of each block-level
    element joined by spaces, blocks separated by blank lines (paragraph counts). Cheaper than
    the blocks of extraction.api and fitted on the same (bench/nfas.py)."""
    tags, texts, parent = dom.tag, dom.text, dom.parent
    n = len(dom)
    owner = [0] * n  # the block-level element a node's text belongs to, top-down: O(n) at any depth
    parts: list[str] = []
    cur: list[str] = []
    last = -1
    for j in range(n):
        p = parent[j]
        owner[j] = j if tags[j] in _BLOCKS or p < 0 else owner[p]
        if not keep[j] or tags[j] != TEXT:
            continue
        t = texts[j].strip()
        if not t:
            continue
        b = owner[j]
        if b != last and cur:
            parts.append(" ".join(cur))
            cur = []
        last = b
        cur.append(t)
    if cur:
        parts.append(" ".join(cur))
    return "\n\n".join(parts)


_BLOCKS = frozenset({"p", "div", "li", "td", "th", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5",
                     "h6", "section", "article", "main", "dd", "dt", "figcaption", "caption", "body",
                     "table", "ul", "ol", "dl", "header", "footer", "nav", "aside", "tr", "form",
                     "address", "details", "summary", "figure"})
# The last page typed (page_type), for page_info on the same Dom: the crawl and extract() type a
# page while selecting its main content, then describe it; the scan (~2 ms) is done once.
_LAST: list[tuple[Dom, str, float, Scan, PageMeta]] = []


def page_type(dom: Dom, keep: Sequence[bool]) -> str:
    """The type of a page whose article mask (auto's article rule) is keep; remembered with the
    page's scan for page_info (last_type)."""
    s = scan(dom)
    meta = meta_from_scan(dom, s)
    kind, pa = classify_scan(dom, mask_text(dom, keep), s, meta)
    _LAST[:] = [(dom, kind, pa, s, meta)]
    return kind


def last_type(dom: Dom) -> tuple[str, float, Scan, PageMeta] | None:
    """(type, P(article), scan, metadata) of dom if page_type typed it last, else None."""
    if _LAST and _LAST[0][0] is dom:
        _, kind, pa, s, meta = _LAST[0]
        return kind, pa, s, meta
    return None


def classify(dom: Dom, text: str) -> tuple[str, float]:
    """(type, P(article)) of a page: one of records.PAGE_TYPES; text is its main content
    (Document.text). An empty page is "other" with score 0."""
    if not len(dom):
        return "other", 0.0
    s = scan(dom)
    return classify_scan(dom, text, s, meta_from_scan(dom, s))

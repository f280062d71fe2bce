"""The page's own text when a page type's rule finds too little of it: listings, collections and
other pages that are no article.

The article rule (and the rules grown from it) looks for one block of prose. On a listing (an
index of teasers, a job board, a search page) or a collection (a product grid) there is none: the
rule keeps a teaser, an intro line or a cookie notice, a few percent of what the page says (on
WCXB's listings it loses 60% of their words). The text outside page furniture (`furniture.whole`,
nav/aside/footer/form and furniture-named elements dropped) keeps the items.

The test is one share: when the type's mask holds less than params.page_share[type] of the characters
of the page's text outside furniture, that text replaces the mask. Two flat passes over the Dom
(the furniture mask and the sums), O(n); no recursion.

The shares are per type (docs/algorithms.md, "The page-text fallback"; measured in
docs/decisions/0013-page-text-fallback-shares.md). A collection starts from the article rule and
falls back when it keeps under 60%. The article share is small because news pages carry teaser
grids bigger than their story; the listing share stops at 0.5 because above it blog pages typed
listing keep their sidebars.

A collection's mask then loses its filter panel, badges and per-item shop controls
(drop_controls: "Add to cart", "Quick view", "Sold out"; decision 0014), one more pass.
"""
from __future__ import annotations

import re
from functools import lru_cache
from itertools import accumulate, compress

from ..parse import TEXT, Dom
from .features import Features
from .furniture import whole
from .params import DEFAULTS, ExtractionParams

# params.page_share: page type -> the share of the page's text (outside furniture) its rule must
# keep; under it the page's text is kept instead. A type not named keeps its rule's mask (forum:
# posts are found).
# params.table_guard: a listing whose rule kept a data table keeps its mask: a Wikipedia "List of
# ..." page is typed listing, its rule keeps the results table, and the page's text would add the
# see-also lists and navigation, which costs search on such tables. Collections keep the fallback
# (the guard costs them). Measured in decision 0013.


def page_fallback(dom: Dom, f: Features, keep: list[bool], kind: str,
                  params: ExtractionParams = DEFAULTS) -> list[bool]:
    """keep, or the page's text outside furniture when keep holds less than params.page_share[kind]
    of it (a rule that found a teaser on a page of teasers)."""
    share = params.page_share.get(kind)
    if share is None or not len(dom):
        return keep
    tl = f.text_len
    kept = sum(compress(tl, keep))  # (a C loop: this runs on every page)
    if kept >= share * tl[dom.body()]:
        return keep  # the page's text outside furniture is no more than all of its text
    if kind in params.table_guard and _keeps_data_table(dom, keep):
        return keep
    page = whole(dom, f, region=False, params=params)
    total = sum(compress(tl, page))
    return page if kept < share * total else keep


def _keeps_data_table(dom: Dom, keep: list[bool]) -> bool:
    """Whether keep holds text of a data table (tables.data_tables, not an infobox)."""
    from .tables import data_tables
    end = dom.end
    return any(kind == "table" and any(keep[t:end[t]]) for t, kind in data_tables(dom).items())


# A collection's per-item controls. A collection (a shop's category page, a product grid) is kept
# as the page's text outside furniture (page_fallback, 67 of wcxb-dev's 97 pages typed collection)
# or as the article rule's mask; either way each card brings its shop controls ("Add to cart",
# "Quick view", "Sold out", "Best seller", "Be the first to review this product") and the page its
# filter panel, none of which WCXB's annotators keep: dropping them trades a little recall (a badge
# or a "Sold out" the gold kept) for more precision (docs/algorithms.md, "Per-item controls on
# collections"; decision 0014). Cutting short elements repeated in most cards instead loses: the
# gold keeps repeated labels ("Weight:", "Free international shipping") as often as not. Listings
# and product pages are left out until checked on the sets where such pages are typed so.
# (params.control_kinds; the names and phrases: extraction.patterns CONTROL_NAMES, CONTROL_TEXT;
# params.control_share, params.control_len)

@lru_cache(maxsize=16)
def _pattern(text: str, full: bool) -> re.Pattern[str]:
    return re.compile(r"\s*(?:" + text + r")\s*[.!]?\s*" if full else text, re.I)


@lru_cache(maxsize=8192)
def _control_name(names: str, pattern: str) -> bool:
    return _pattern(pattern, False).search(names) is not None


def drop_controls(dom: Dom, f: Features, keep: list[bool], params: ExtractionParams = DEFAULTS) -> list[bool]:
    """keep without the collection's filter panel, badges and per-item controls (a new mask).
    One pass over the flat Dom: an element holding no kept text is skipped whole, a data table
    (tables.data_tables: its cells "New", "Sold out" are its data) too."""
    from .tables import data_tables

    n = len(dom)
    tags, texts, ends, parent, attrs, tl = dom.tag, dom.text, dom.end, dom.parent, dom.attrs, f.text_len
    out = list(keep)
    kept = [0]  # prefix sums of kept characters: an element's kept text in O(1)
    kept.extend(accumulate([t if k and g == TEXT else 0 for t, k, g in zip(tl, keep, tags)]))
    limit = params.control_share * kept[n]
    control = _pattern(params.control_text, True) if params.control_text else None
    names, most = params.control_names, params.control_len
    tables = data_tables(dom)
    j = 0
    while j < n:
        t = tl[j]
        if tags[j] == TEXT:
            if control is not None and out[j] and 0 < t <= most and control.fullmatch(texts[j]):
                out[j] = False
            j += 1
            continue
        e = ends[j]
        k = kept[e] - kept[j]
        if not k or j in tables:
            j = e
            continue
        a = attrs[j]
        if names and a and k < limit:
            c, d = a.get("class"), a.get("id")
            if (c or d) and _control_name(f"{c or ''} {d or ''}", names):
                out[j:e] = [False] * (e - j)
                j = e
                continue
        if control is not None and t <= most and (parent[j] < 0 or tl[parent[j]] > most):
            # the largest element this short: its text joined once (each node is in one such)
            words = " ".join(texts[q] for q in range(j, e) if tags[q] == TEXT and out[q]).split()
            if words and control.fullmatch(" ".join(words)):
                out[j:e] = [False] * (e - j)
                j = e
                continue
        j += 1
    return out

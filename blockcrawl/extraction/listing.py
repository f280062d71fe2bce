"""The page's own text when a page type's rule finds too little of it: listings, collections and
other pages that are no article.

The article rule (and the rules grown from it) looks for one block of prose. On a listing (an
index of teasers, a job board, a search page) or a collection (a product grid) there is none: the
rule keeps a teaser, an intro line or a cookie notice, a few percent of what the page says (on
WCXB's listings it loses 60% of their words). The text outside page furniture (`auto._whole`,
nav/aside/footer/form and furniture-named elements dropped) keeps the items.

The test is one share: when the type's mask holds less than PAGE_SHARE[type] of the characters
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

# Page type -> the share of the page's text (outside furniture) its rule must keep; under it the
# page's text is kept instead. A type not named keeps its rule's mask (forum: posts are found).
PAGE_SHARE: dict[str, float] = {"article": 0.03, "listing": 0.5, "collection": 0.6,
                                "documentation": 0.2, "service": 0.25, "product": 0.2}


# A listing whose rule kept a data table keeps its mask: a Wikipedia "List of ..." page is typed
# listing, its rule keeps the results table, and the page's text would add the see-also lists and
# navigation, which costs search on such tables. Collections keep the fallback (the guard costs
# them). Measured in decision 0013.
TABLE_GUARD = frozenset({"listing"})


def page_fallback(dom: Dom, f: Features, keep: list[bool], kind: str) -> list[bool]:
    """keep, or the page's text outside furniture when keep holds less than PAGE_SHARE[kind]
    of it (a rule that found a teaser on a page of teasers)."""
    share = PAGE_SHARE.get(kind)
    if share is None or not len(dom):
        return keep
    tl = f.text_len
    kept = sum(compress(tl, keep))  # (a C loop: this runs on every page)
    if kept >= share * tl[dom.body()]:
        return keep  # the page's text outside furniture is no more than all of its text
    if kind in TABLE_GUARD and _keeps_data_table(dom, keep):
        return keep
    from .auto import _whole

    page = _whole(dom, f, region=False)
    whole = sum(compress(tl, page))
    return page if kept < share * whole else keep


def _keeps_data_table(dom: Dom, keep: list[bool]) -> bool:
    """Whether keep holds text of a data table (blocks.data_tables, not an infobox)."""
    from .blocks import data_tables
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
CONTROL_KINDS = frozenset({"collection"})
# Elements named like this are the filter panel (facets, refinements) and the per-card badges;
# dropped unless one holds CONTROL_SHARE of the kept text (a "filterable-grid" wrapper of the items).
# Further names (rating, review, stars: the gold keeps "4.5 out of 5 stars"; swatch, drawer) cost
# (decision 0014).
CONTROL_NAMES: str | None = r"filter|facet|refine|badge"
CONTROL_SHARE = 0.3
# A control is short: an element of at most this many characters whose whole text is a control
# phrase (CONTROL_TEXT), or a text node that is one (decision 0014). The phrases are the shops'
# generic words (no brand, no site's label), so they carry to sites not seen. Counters
# ("12 reviews", "3 colors") are left out: neutral here.
CONTROL_LEN = 40
CONTROL_TEXT: str | None = (
    # the cart, wishlist and comparison buttons, size pickers
    r"add to (cart|bag|basket|wish ?list|compare|favou?rites?)|add|compare|\+? ?wish ?list|"
    r"quick ?(view|shop|add)|view options|choose options|select (your )?size|buy now|pre-?order( now)?|"
    r"notify me|"
    # stock and badges
    r"(in|out of|low) stock|sold out|available|sale|new|new arrivals?|best ?seller|top rated|"
    r"trending|featured|limited edition|exclusive|online only|"
    # links to the item or more of them
    r"shop (now|all)|learn more|read more|view (more|all|details|product)|see (more|all|details)|"
    r"more options|explore( now)?|details|"
    # review prompts, shipping and savings offers, skip links
    r"be the first to review( this product)?|no reviews( yet)?|write a review|free shipping|"
    r"calculate shipping|(\d+ )?ways to save|(get )?reward points|skip to [\w ]+")


@lru_cache(maxsize=16)
def _pattern(text: str, full: bool) -> re.Pattern[str]:
    return re.compile(r"\s*(?:" + text + r")\s*[.!]?\s*" if full else text, re.I)


@lru_cache(maxsize=8192)
def _control_name(names: str, pattern: str) -> bool:
    return _pattern(pattern, False).search(names) is not None


def drop_controls(dom: Dom, f: Features, keep: list[bool]) -> list[bool]:
    """keep without the collection's filter panel, badges and per-item controls (a new mask).
    One pass over the flat Dom: an element holding no kept text is skipped whole, a data table
    (blocks.data_tables: its cells "New", "Sold out" are its data) too."""
    from .blocks import data_tables

    n = len(dom)
    tags, texts, ends, parent, attrs, tl = dom.tag, dom.text, dom.end, dom.parent, dom.attrs, f.text_len
    out = list(keep)
    kept = [0]  # prefix sums of kept characters: an element's kept text in O(1)
    kept.extend(accumulate([t if k and g == TEXT else 0 for t, k, g in zip(tl, keep, tags)]))
    limit = CONTROL_SHARE * kept[n]
    control = _pattern(CONTROL_TEXT, True) if CONTROL_TEXT else None
    tables = data_tables(dom)
    j = 0
    while j < n:
        t = tl[j]
        if tags[j] == TEXT:
            if control is not None and out[j] and 0 < t <= CONTROL_LEN and control.fullmatch(texts[j]):
                out[j] = False
            j += 1
            continue
        e = ends[j]
        k = kept[e] - kept[j]
        if not k or j in tables:
            j = e
            continue
        a = attrs[j]
        if CONTROL_NAMES and a and k < limit:
            c, d = a.get("class"), a.get("id")
            if (c or d) and _control_name(f"{c or ''} {d or ''}", CONTROL_NAMES):
                out[j:e] = [False] * (e - j)
                j = e
                continue
        if control is not None and t <= CONTROL_LEN and (parent[j] < 0 or tl[parent[j]] > CONTROL_LEN):
            # the largest element this short: its text joined once (each node is in one such)
            words = " ".join(texts[q] for q in range(j, e) if tags[q] == TEXT and out[q]).split()
            if words and control.fullmatch(" ".join(words)):
                out[j:e] = [False] * (e - j)
                j = e
                continue
        j += 1
    return out

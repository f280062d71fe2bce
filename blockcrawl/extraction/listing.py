"""The page's own text when a page type's rule finds too little of it: listings, collections and
other pages that are no article.

The article rule (and the rules grown from it) looks for one block of prose. On a listing (an
index of teasers, a job board, a search page) or a collection (a product grid) there is none: the
rule keeps a teaser, an intro line or a cookie notice, a few percent of what the page says, and
WCXB's listings lost 60% of their words that way. The text outside page furniture (`auto._whole`,
nav/aside/footer/form and furniture-named elements dropped) keeps the items.

The test is one share: when the type's mask holds less than PAGE_SHARE[type] of the characters
of the page's text outside furniture, that text replaces the mask. Two flat passes over the Dom
(the furniture mask and the sums), O(n); no recursion.

Chosen on wcxb-dev by type (docs/algorithms.md, "The page-text fallback"; word F1, the type's
rule -> with the fallback, shipped type model): listing .637 -> .719, collection .688 -> .715
(its rule was the whole page always: now the article rule unless it keeps under 60%), service
.834 -> .838, documentation .940 -> .948, product .666 -> .673, article and forum unchanged, all
.864 -> .873. Held out (shares chosen on four site folds, applied to the fifth): listing .699,
collection .706. The article share is small because news pages on the article sets carry teaser
grids bigger than their story: at 0.05 no page of aeb, cleaneval-dev, cleanportaleval, cetd or
msv changes, at 0.1 two msv stories lose their text, at 0.2 aeb loses .002 F1. Listing stops at
0.5: above it cleanportaleval's blog pages typed listing keep their sidebars (-.003 F1 at 0.6, -.005 at 0.8).

A collection's mask then loses its filter panel, badges and per-item shop controls
(drop_controls: "Add to cart", "Quick view", "Sold out"; collection .716 -> .734), one more pass.
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
# listing (47 of wtq-dev's 300 pages with the 75-feature type model), its rule keeps the results
# table, and the page's text added the see-also lists and navigation: wtq-dev R@5 vector .656 ->
# .640, hybrid .680 -> .665. With the guard no wcxb-dev page changes (listing .732) and the other
# sets are as before. Collections keep the fallback (.716 -> .712 with the guard).
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
# filter panel, none of which WCXB's annotators keep (its 84 collections typed so: P .67 / R .84
# -> P .71 / R .83). Dropping them, wcxb-dev collection word F1 .716 -> .734 (names alone .724,
# phrases alone .725); 51 of the 97 pages gain, 12 lose (recall: a badge or a "Sold out" the gold
# kept). Tuned and checked on site halves (docs/algorithms.md, "Per-item controls on
# collections"); no page of the five other sets is typed collection and changed. Cutting short
# elements repeated in most cards instead (the text said >= 3 times, <= 4 words) loses: the gold
# keeps repeated labels ("Weight:", "Free international shipping") as often as not (-.001 to -.007).
# Listings and product pages typed so would gain .002 each on wcxb-dev; not taken: not yet checked
# on the other sets, where pages are typed listing (cleanportaleval's blogs) and product.
CONTROL_KINDS = frozenset({"collection"})
# Elements named like this are the filter panel (facets, refinements) and the per-card badges;
# dropped unless one holds CONTROL_SHARE of the kept text (a "filterable-grid" wrapper of the items).
# Any share from 0.3 to 0.8 gives the same (0.1: -.001). More names cost: rating|review|stars -.005
# (the gold keeps "4.5 out of 5 stars"), swatch -.004, drawer|modal|popup -.002, header -.000;
# cart +.001 and count +.000 are left out.
CONTROL_NAMES: str | None = r"filter|facet|refine|badge"
CONTROL_SHARE = 0.3
# A control is short: an element of at most this many characters whose whole text is a control
# phrase (CONTROL_TEXT), or a text node that is one. 20 / 30 / 40 / 60 / 80: .732 / .733 / .734 /
# .734 / .734. The phrases are the shops' generic words (no brand, no site's label); drafted from
# the whole dev set, each site half keeps .4-.5 of its gain with only the phrases seen on the
# other half's sites. Counters ("12 reviews", "3 colors") are left out: neutral here.
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

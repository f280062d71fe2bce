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
"""
from __future__ import annotations

from itertools import compress

from ..parse import Dom
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

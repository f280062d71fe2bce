"""`auto`: the default main-content selector, a keep mask for blocks_from_dom.

The article rule (extraction.article: Readability-style scoring on the flat Dom, O(n)) finds the
page's main prose block, with page furniture (extraction.furniture) masked out: first strictly,
then a looser pass; failing both, the page's JSON-LD articleBody picks the text nodes it
contains; failing that, the text outside page furniture is kept. Then the page type
(nfas.page_type) picks the rule its main content is selected by (below), the page-text fallback
(extraction.listing) and the per-type removals (extraction.pagerules).

Every number and switch comes from one frozen ExtractionParams (extraction.params), passed down:
`select(dom, params=replace(DEFAULTS, type_rules=None))` selects every page as an article.
"""
from __future__ import annotations

import re

from ..parse import Dom
from . import listing, pagerules
from .article import article, json_ld
from .features import Features, compute
from .furniture import furniture, whole
from .params import DEFAULTS, ExtractionParams


def select(dom: Dom, keep_title: bool = False, params: ExtractionParams = DEFAULTS) -> list[bool] | None:
    """Keep mask of the page's main content (all False if the page has no text).
    keep_title keeps a heading that repeats <title> (dropped by default, as annotators do; the
    block pipeline wants it as the heading its sections hang under)."""
    n = len(dom)
    if n == 0:
        return []
    f = compute(dom)
    keep = article(dom, f, True, keep_title, params)
    if keep is None:
        keep = article(dom, f, False, keep_title, params)
    if keep is None:
        keep = json_ld(dom)
    if keep is None:
        # Nothing reads like an article: keep whatever text is not page furniture.
        keep = whole(dom, f, region=False, params=params)
    type_rules = params.type_rules
    if type_rules:
        from .nfas import page_type

        kind = page_type(dom, keep)
        rule = type_rules.get(kind)
        if rule is not None:
            typed = typed_rule(dom, f, rule, keep_title, params)
            if typed is not None and any(typed):
                keep = typed
        keep = listing.page_fallback(dom, f, keep, kind, params)
        if kind in params.control_kinds:
            keep = listing.drop_controls(dom, f, keep, params)
        if kind in params.service_kinds:
            keep = pagerules.service(dom, keep, params)
        kinds = params.furniture_kinds
        if kind in kinds:
            # a page typed listing that declares one product is a product page: its ratings go too
            rules = "product" if kind == "listing" and pagerules.one_product(dom) else kind
            names, heading = kinds[rules]
            keep = pagerules.drop_furniture(dom, keep, names, heading, params.drop_share,
                                            params.furniture_heading_chars)
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
# params.type_rules maps a type to its rule; None (or {}) turns the type rules off: every page is
# selected as an article. params.wide_rules holds wide's and mild's numbers.

def typed_rule(dom: Dom, f: Features, rule: str, keep_title: bool = False,
               params: ExtractionParams = DEFAULTS,
               builder: re.Pattern[str] | None = None) -> list[bool] | None:
    """The mask of one page-type rule (above), None when the rule finds too little."""
    if rule in ("thread", "product", "docs"):
        keep = typed_rule(dom, f, "region" if rule == "docs" else "mild", keep_title, params)
        if keep is None and rule != "docs":  # too little for mild: the article rule's looser pass
            keep = article(dom, f, False, keep_title, params)
        if keep is None:
            return None
        post = {"thread": pagerules.thread, "product": pagerules.product, "docs": pagerules.docs}[rule]
        return post(dom, keep, *furniture(dom, f, True, params), params)
    if rule == "sections":
        builder_ = params.service_builder
        keep = whole(dom, f, region=True, builder=builder_, params=params)
        return keep if any(keep) else typed_rule(dom, f, "wide", keep_title, params, builder=builder_)
    if rule in params.wide_rules:
        cover, cover_ld, junk_ld = params.wide_rules[rule]
        return article(dom, f, True, keep_title, params, cover=cover, cover_ld=cover_ld,
                       junk_ld=junk_ld, builder=builder)
    return whole(dom, f, region=rule == "region", params=params)


def select_blocks(dom: Dom, params: ExtractionParams = DEFAULTS) -> list[bool] | None:
    """`auto` for the block pipeline (crawl, --mode main): the title heading stays as context."""
    return select(dom, keep_title=True, params=params)

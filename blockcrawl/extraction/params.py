"""The main-content rules' parameters as one frozen object: `ExtractionParams`, and `DEFAULTS`.

The selectors take it as an argument (`auto.select(dom, params=DEFAULTS)`) and hand it down to
every rule they call (extraction.furniture, article, typerules, listing, pagerules); no rule reads
a tunable number from module state. A tuning run or a benchmark variant is a new object:

    from dataclasses import replace
    from blockcrawl.extraction.params import DEFAULTS
    plain = replace(DEFAULTS, type_rules=None)        # every page selected as an article
    select(dom, params=replace(DEFAULTS, min_text=300))

The pattern tables (tag sets, class/id word lists) are data in extraction.patterns; the fields
here that hold a pattern are those a run switches off (None) or swaps. The values were fitted on
the development sets; the measurements behind them are in docs/decisions/.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NoReturn, TypeVar

from . import patterns as pt

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(dict[K, V]):
    """A read-only dict: a tuning run replaces a table, it cannot change the defaults' one.
    Hashable and picklable (a PipelineConfig carrying the parameters goes pickled to the crawl's
    parse workers)."""

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("extraction parameters are read-only: use dataclasses.replace(DEFAULTS, ...)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[type, tuple[dict[K, V]]]:
        return (type(self), (dict(self),))


def _frozen(d: Mapping[str, V]) -> Mapping[str, V]:
    return FrozenMap(d)


@dataclass(frozen=True, slots=True)
class ExtractionParams:
    """Every tunable number, switch and table of `auto` and the rules it runs; frozen, so a run
    that wants other values makes a copy (dataclasses.replace). Grouped by the rule that reads
    them: the article rule (extraction.article) and the furniture mask (extraction.furniture)
    first, then the page-type rules, the page-text fallback and the per-type removals."""
    min_vote_text: int = 25  # a text block shorter than this does not vote (nor count as prose)
    link_block: float = 0.5  # a text block with more link text than this share is a link block
    inline_link: float = 0.3  # weight of links inside prose in link density
    levels: tuple[float, ...] = (1.0, 0.5, 1 / 6)  # a block's vote for its container, the next ancestor, ...
    big_share: float = 0.4  # an element holding this share of the page's text is a wrapper, not furniture
    junk_ratio: float = 0.2  # an ancestor joins the article if it adds at most this much junk per prose char
    climb_link: float = 0.3  # ... and at most this much link text per prose char (teaser lists bring links)
    junk_stop: float = 1.0  # stop climbing once the junk added exceeds the prose
    # An ancestor that at least grows the prose by `grow` (a forum thread's posts, a list of
    # entries) may bring more junk (user names, dates) per prose char.
    grow: float = 2.0
    junk_ratio_big: float = 0.5
    sibling_share: float = 0.2  # siblings scoring this share of the best candidate join the article
    # link density that condemns a container: bad name, plain, any name
    junk_ld: tuple[float, float, float] = (0.2, 0.33, 0.5)
    remove_share: float = 0.5  # named furniture inside the article is kept if it holds this share of it
    credit_max: int = 200  # elements named caption/credit are dropped up to this many characters
    cover: float = 0.5  # an article holding less of the page's prose widens to ancestors ...
    cover_ld: float = 0.15  # ... of at most this share of link text
    min_text: int = 250  # a strict result shorter than this is a miss: a looser pass runs
    # Folded content (a closed accordion, a tab not shown, a FAQ answer) is hidden until a click;
    # it is the page's text when it is prose: this much text with at most this share of link text.
    hidden_text: int = 200
    hidden_ld: float = 0.2
    strong: str | None = pt.STRONG  # furniture names no content word saves (None: off)
    teasers: str | None = pt.TEASERS  # teaser-list names with no wrapper exemption (None: off)
    streamed: bool = True  # React's streamed segments (<div hidden id="S:n">) are text
    notice: bool = True  # browser and JavaScript notices are no text

    # The page-type rules (extraction.typerules): page type -> rule; None (or {}) turns them off
    # and every page is selected as an article.
    type_rules: Mapping[str, str] | None = field(default_factory=lambda: _frozen({
        "documentation": "docs", "listing": "region", "service": "sections", "forum": "thread",
        "product": "product"}))
    # rule -> (cover, cover_ld, junk_ld) for the article rule widened
    wide_rules: Mapping[str, tuple[float, float, tuple[float, float, float]]] = field(
        default_factory=lambda: _frozen({"wide": (0.8, 0.5, (1.01, 1.01, 1.01)),
                                         "mild": (0.8, 0.5, (0.5, 0.6, 0.8))}))
    region_text: int = 200  # a <main> element holding less text than this is no region
    # class/id parts that name no furniture on a service page (a page builder's modules; None: off)
    service_builder: re.Pattern[str] | None = pt.SERVICE_BUILDER

    # The page-text fallback and a collection's controls (extraction.listing):
    # page type -> the share of the page's text (outside furniture) its rule must keep
    page_share: Mapping[str, float] = field(default_factory=lambda: _frozen({
        "article": 0.03, "listing": 0.5, "collection": 0.6, "documentation": 0.2, "service": 0.25,
        "product": 0.2}))
    table_guard: frozenset[str] = frozenset({"listing"})  # types whose kept data table stops the fallback
    control_kinds: frozenset[str] = frozenset({"collection"})  # types that lose their shop controls
    control_names: str | None = pt.CONTROL_NAMES  # filter panels and badges by class/id (None: off)
    control_share: float = 0.3  # ... unless one holds this share of the kept text
    control_len: int = 40  # a control is at most this many characters
    control_text: str | None = pt.CONTROL_TEXT  # the controls' phrases (None: off)

    # The page's record block (extraction.records, extraction.pairs):
    label_min: int = 2  # characters: "W: 3-1", "L: 0-2" are a match's result, not a label
    label_max: int = 40  # characters of a label ("Publication date", "ISBN-13", "File extension")
    label_words: int = 4
    value_max: int = 160  # characters of a value: longer is prose (a glossary's definition), not a fact
    pairs_max: int = 30  # pairs in a record (a 60-row infobox is cut here)
    box_levels: int = 2  # levels above a pair's box where a second pair makes both a record's
    heading_max: int = 150  # characters of a heading taken for the page's name
    record_furniture_share: float = 0.5  # a box named as furniture is skipped unless it holds this share

    # The per-type removals (extraction.pagerules):
    dedup_min: int = 10  # a text node said again is dropped from this many characters
    drop_share: float = 0.8  # a named element holding this share of the kept text stays
    furniture_heading_chars: int = 80  # a longer heading is read for no furniture name
    price_window: int = 300  # nodes after the page's <h1> searched for its price
    head_up: int = 2  # levels from the first kept text block up to its post
    cta_words: int | None = 6  # a call to action has at most this many words (None: they stay)
    cta_chars: int = 60  # a longer link is no call to action
    repeat_chars: int | None = 80  # a block said again is dropped from this many characters (None: off)
    service_kinds: frozenset[str] = frozenset({"service"})  # types losing calls to action and repeats
    # types whose mask loses other products' boxes and sections: type -> (names, headings)
    furniture_kinds: Mapping[str, tuple[re.Pattern[str], re.Pattern[str]]] = field(
        default_factory=lambda: _frozen({
            "product": (pt.FURNITURE_NAMES, pt.FURNITURE_HEADING),
            "listing": (pt.OTHER_PRODUCTS_NAMES, pt.OTHER_HEADING)}))


    def __post_init__(self) -> None:
        # a table given as a plain dict (replace(DEFAULTS, type_rules={...})) is frozen too
        for name in ("type_rules", "wide_rules", "page_share", "furniture_kinds"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, FrozenMap):
                object.__setattr__(self, name, FrozenMap(v))


DEFAULTS = ExtractionParams()

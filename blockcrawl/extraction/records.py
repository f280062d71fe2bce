"""A page's facts as one record block: "Title — Author: ... | Publisher: ... | ISBN-13: ...".

Product pages, book pages and spec pages keep their facts in label/value boxes: a details list
(`<li><b>Publisher:</b> Zebra</li>`), a definition list (<dl>), a two-column table (th/td or
td/td), a sidebar of "Licence: MIT" lines. On two real book shops (300 product pages) the main
content selector dropped those boxes and site dedup dropped the rows that survived ("Publisher:
Zebra" is the same on every book of that publisher), so the publisher of a book survived in a
chunk of its own page for 6% of the questions. A row alone also says nothing about which book it
describes. So the pairs are read from the page's DOM, whatever the selector kept, and written
behind the page's heading as one block: it names the book, it is unique to the page, and the
site dedup drops it only as an exact copy (chunk.dedup).

One forward pass over the flat Dom (no recursion): navigation, footers, forms and banner headers
are skipped as subtrees, and so is what the page shows of other products (boxes named as
recommendations, related items, carousels, ratings or review lists, patterns.RECORD_FURNITURE_NAMES, and
sections headed "Customers also bought", "You may also like"...: their "Club Price: $14.55" is no
fact of this page); a <dl> or a table is read once as a whole; an element with <br> children is
read as lines (`<b>Publisher:</b> Zebra<br><b>ISBN-13:</b> 978...<br>` in a table cell); any
other small element (at most SMALL_NODES nodes, so reading its text is bounded) is read as one
"Label: value" line, or as a label element and a value element side by side (`<li><span>Brand
</span> Acme</li>`, `<div><div>Weight</div><div>1.2 kg</div></div>`, a label beside a list of
values). A pair is kept when its box holds another pair (the same box or up to params.box_levels
above it) or its label is a known fact label, so a lone "Note: ..." in prose is no record. Then the
page's own schema.org item (the first JSON-LD object or microdata itemscope typed a product or
a book) adds the properties (SCHEMA_LABELS) the boxes did not say.

This module walks the page and builds the record; the readers of one element's pairs (lines,
label beside value, <br> runs, <dl>, tables) are in extraction.pairs.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress

from ..hashing import text_hash
from ..parse import Dom
from ..records import Block
from .jsonld import SCHEMA_TYPES
from .pairs import (
    CELL_NODES,
    HEADING_LEVELS,
    LINE_TAGS,
    PAIR_TAGS,
    SMALL_NODES,
    clean,
    dl_pairs,
    line_pair,
    pair,
    run_pairs,
    small,
    table_pairs,
    two_pair,
)
from .params import DEFAULTS, ExtractionParams
from .text import subtree_text

RECORD_SEP = " | "
TITLE_SEP = " — "
# The record's tunable numbers (pairs_max, box_levels, heading_max, record_furniture_share, and the
# label and value bounds of extraction.pairs) are fields of extraction.params.ExtractionParams.
KIND = "record"
TAG_PATH = "record"  # the record's place for the site dedup: one per page

# schema.org properties of a Product / Book (JSON-LD or microdata) and the label each is written under
SCHEMA_LABELS = {
    "author": "Author", "publisher": "Publisher", "isbn": "ISBN", "brand": "Brand", "manufacturer": "Manufacturer",
    "sku": "SKU", "mpn": "MPN", "gtin": "GTIN", "gtin8": "GTIN-8", "gtin12": "UPC", "gtin13": "EAN",
    "gtin14": "GTIN-14", "model": "Model", "productID": "Product ID", "color": "Colour", "material": "Material",
    "numberOfPages": "Pages", "bookFormat": "Format", "bookEdition": "Edition", "datePublished": "Publication date",
    "releaseDate": "Release date", "inLanguage": "Language", "illustrator": "Illustrator",
    "translator": "Translator", "weight": "Weight", "size": "Size", "category": "Category",
}
_ITEMTYPE = re.compile(r"schema\.org/(?:Product|ProductGroup|ProductModel|IndividualProduct|Book|Vehicle|Car|"
                       r"SoftwareApplication|VideoGame|MusicAlbum|Movie)\b")

# Labels that are facts on their own, without a second pair beside them.
FACT_LABELS = frozenset({
    "author", "authors", "by", "writer", "written by", "editor", "illustrator", "translator", "narrator",
    "publisher", "published", "published by", "publication date", "date published", "pub date",
    "release date", "released", "date", "isbn", "isbn-10", "isbn-13", "isbn10", "isbn13", "ean", "upc",
    "sku", "asin", "edition", "format", "pages", "print length", "language", "licence", "license",
    "price", "brand", "manufacturer", "model", "version", "extension", "extensions", "file extension",
    "mime type", "media type", "developer", "developed by", "genre", "category", "series", "dimensions",
    "weight", "designer", "designed by", "material", "materials", "colour", "color", "size", "capacity",
    "country of origin", "made in", "condition", "warranty", "item number", "model number", "part number",
    "mpn", "gtin", "item model number", "manufacturer part number", "certification", "artist",
})
_SKIP_TAGS = frozenset({"nav", "footer", "form", "button", "select", "menu"})
_SKIP_NAMES = re.compile(r"(?:^|[\s_-])(?:nav|navbar|menu|footer|cookie|cookies|breadcrumbs?|share|social)(?:$|[\s_-])",
                         re.IGNORECASE)
# Containers whose class/id may name them navigation, a footer, a cookie banner
_NAMED_BOXES = frozenset({"div", "ul", "ol", "section", "aside", "header", "table", "dl", "main", "article"})



@dataclass(frozen=True, slots=True)
class Fact:
    label: str
    value: str
    node: int  # the element the pair was read from
    box: int  # the element holding the pairs of its box (a list, a <dl>, a table)


def _skipped_box(dom: Dom, i: int) -> bool:
    """Navigation, footer, form, or a container named so (class/id/role): no facts of the page.
    Inline elements are not asked for names (most elements of a page: links, spans)."""
    t = dom.tag[i]
    if t in _SKIP_TAGS:
        return True
    if t not in _NAMED_BOXES:
        return False
    a = dom.attrs[i]
    if not a:
        return False
    return _skip_named(f"{a.get('class') or ''} {a.get('id') or ''} {a.get('role') or ''}")


# A page's containers share a few class strings (each read once: the search on every container was
# ~1.6% of extract() on aeb)
@lru_cache(maxsize=4096)
def _skip_named(names: str) -> bool:
    return bool(names.strip()) and (_SKIP_NAMES.search(names) is not None or "navigation" in names.lower())


_NONE, _SKIP, _FURNITURE = 0, 1, 2


def _box_kind(dom: Dom, i: int) -> int:
    """_SKIP for what _skipped_box skips, _FURNITURE for a container named as other products'
    furniture (patterns.RECORD_FURNITURE_NAMES), else _NONE."""
    if _skipped_box(dom, i):
        return _SKIP
    a = dom.attrs[i]
    if dom.tag[i] not in _NAMED_BOXES or not a:
        return _NONE
    cls, id_ = a.get("class") or "", a.get("id") or ""
    return _FURNITURE if _furniture_named(cls) or (id_ and _furniture_named(id_)) else _NONE


# class strings repeat on a page and are cached; a page's ids are mostly its own, searched once each
@lru_cache(maxsize=4096)
def _furniture_named(names: str) -> bool:
    from .patterns import RECORD_FURNITURE_NAMES

    return bool(names) and RECORD_FURNITURE_NAMES.search(names) is not None


_last: tuple[Dom | None, ExtractionParams | None, list[Fact]] = (None, None, [])


def page_facts(dom: Dom, params: ExtractionParams = DEFAULTS) -> list[Fact]:
    """The label/value pairs of the page's fact boxes, in page order, each label once. The last
    page's answer is kept: main_content and the pipeline ask for the same page in a row."""
    global _last
    if _last[0] is dom and _last[1] is params:
        return _last[2]
    facts = _page_facts(dom, None, params) if len(dom) else []
    _last = (dom, params, facts)
    return facts


def _page_facts(dom: Dom, start: int | None = None, params: ExtractionParams = DEFAULTS) -> list[Fact]:
    tags, ends, skipped, parent = dom.tag, dom.end, dom.skipped, dom.parent
    root = dom.body() if start is None else start
    found: list[tuple[str, str, int, int]] = []
    main_end = -1  # end of the <main>/<article> being read: a <header> inside it is the article's
    furniture_max = params.record_furniture_share * (ends[root] - root)
    reco_level = 0  # inside a flat run of nodes under a furniture heading ("You may also like"), its level
    # the elements with a <br> child: the only ones read as lines split by <br> (a C loop finds them)
    br_parents = {parent[k] for k in compress(range(len(tags)), map("br".__eq__, tags))}
    j, stop = root, ends[root]
    while j < stop:
        t = tags[j]
        if t not in _ASKED:  # text, inline markup, images: most nodes, one set lookup each
            j += 1
            continue
        if t in HEADING_LEVELS:
            level = HEADING_LEVELS[t]
            if reco_level and level <= reco_level:
                reco_level = 0
            if not skipped[j] and ends[j] - j <= SMALL_NODES and _furniture_heading(dom, j, params):
                box = parent[j]
                if box > root and ends[box] - box <= furniture_max and tags[box] not in ("main", "article", "body"):
                    j = ends[box]  # the heading's box: a carousel, a strip of other products
                else:
                    reco_level, j = level, ends[j]  # a flat page: up to the next heading as high
                continue
        kind = _box_kind(dom, j) if t in _SKIP_TAGS or t in _NAMED_BOXES else _NONE
        if reco_level or skipped[j] or kind == _SKIP or (t == "header" and j >= main_end) \
                or (kind == _FURNITURE and ends[j] - j <= furniture_max):
            j = ends[j]
            continue
        if t in ("main", "article"):
            main_end = max(main_end, ends[j])
        if t == "dl":
            found += [(lab, v, n, j) for lab, v, n in dl_pairs(dom, j, params)]
            j = ends[j]
            continue
        if t == "table":
            pairs = table_pairs(dom, j, params)
            if pairs is not None:
                found += [(lab, v, n, j) for lab, v, n in pairs]
                j = ends[j]
                continue
        elif t in LINE_TAGS and ends[j] - j <= CELL_NODES:
            # a table cell is a pair only behind a label element ("Star Wars: Episode IV" is a title)
            p = line_pair(dom, j, t == "td", params) if ends[j] - j <= SMALL_NODES else None
            if p is None and t in PAIR_TAGS:
                p = two_pair(dom, j, params)
            if p is not None:
                found.append((p[0], p[1], j, parent[j]))
                j = ends[j]
                continue
        if t in _RUN_TAGS and j in br_parents:
            found += [(lab, v, n, j) for lab, v, n in run_pairs(dom, j, params)]
        j += 1
    # a pair stands when its box holds another pair (the same box, or one of params.box_levels levels up:
    # each line of a box in a <div> of its own, each <dl> of one pair in a column of a row), or
    # when its label is a fact on its own
    per_box: dict[int, int] = {}
    chains: list[list[int]] = []
    for _, _, _, box in found:
        chain = [box]
        while len(chain) <= params.box_levels and chain[-1] >= 0:
            chain.append(parent[chain[-1]])
        chain = [b for b in chain if b >= 0]
        chains.append(chain)
        for b in chain:
            per_box[b] = per_box.get(b, 0) + 1
    out: list[Fact] = []
    labels: set[str] = set()
    for (lab, v, n, box), chain in zip(found, chains):
        if all(per_box[b] < 2 for b in chain) and lab.lower() not in FACT_LABELS:
            continue
        if lab.lower() in labels:
            continue
        labels.add(lab.lower())
        out.append(Fact(lab, v, n, box))
        if len(out) == params.pairs_max:
            return out
    if start is None:  # the page's declared properties its boxes do not already say
        values = " ".join(f.value.lower() for f in out)
        for lab, v in schema_facts(dom, params):
            if lab.lower() in labels or v.lower() in values:
                continue
            labels.add(lab.lower())
            out.append(Fact(lab, v, -1, -1))
            if len(out) == params.pairs_max:
                break
    return out


def _furniture_heading(dom: Dom, i: int, params: ExtractionParams) -> bool:
    from .patterns import FURNITURE_HEADING

    h = subtree_text(dom, i)
    return len(h) <= params.furniture_heading_chars and FURNITURE_HEADING.search(h) is not None


def _schema_value(v: object) -> str:
    """A property's text: a string or number, an object's name, a list's first such value."""
    if isinstance(v, list):
        v = v[0] if v else None
    if isinstance(v, dict):
        v = v.get("name")
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        return ""
    return clean(str(v))


def schema_facts(dom: Dom, params: ExtractionParams = DEFAULTS) -> list[tuple[str, str]]:
    """(label, value) of the page's own item: the first JSON-LD object typed a product or book
    (SCHEMA_TYPES), then the properties of the first microdata itemscope so typed (its own, not
    those of an item nested in it). Values are bounded by pair (params.value_max)."""
    from .jsonld import ld_values, walk

    out: list[tuple[str, str]] = []
    for d in walk(ld_values(dom)):
        t = d.get("@type")
        if any(isinstance(x, str) and SCHEMA_TYPES.match(x) for x in (t if isinstance(t, list) else [t])):
            for prop, label in SCHEMA_LABELS.items():
                p = pair(label, _schema_value(d.get(prop)), params)
                if p:
                    out.append(p)
            break
    ends, attrs = dom.end, dom.attrs
    scope_end = -1
    inner_end = -1  # an item nested in the page's item: its properties are its own
    for i in compress(range(len(dom)), attrs):  # the elements with attributes (a C loop skips the rest)
        a = attrs[i]
        if not a:
            continue
        if scope_end < 0:
            if "itemscope" in a and _ITEMTYPE.search(a.get("itemtype") or ""):
                scope_end = ends[i]
            continue
        if i >= scope_end:
            break
        prop = a.get("itemprop") or ""
        if i >= inner_end and prop in SCHEMA_LABELS:
            v = a.get("content") or (subtree_text(dom, i) if small(dom, i) else "")
            p = pair(SCHEMA_LABELS[prop], v, params)
            if p:
                out.append(p)
        if "itemscope" in a and i >= inner_end:
            inner_end = ends[i]
    return out


_RUN_TAGS = frozenset({"td", "div", "p", "dd", "li", "section"})
_ASKED = _SKIP_TAGS | _NAMED_BOXES | LINE_TAGS | _RUN_TAGS | HEADING_LEVELS.keys() | {"header", "main", "article", "dl", "table"}
HEADING_TRIES = 16  # h1s looked at for the page's heading
ANCESTOR_STEPS = 256  # ancestors of each checked for navigation (a page nested deeper is not walked)


def page_heading(dom: Dom, params: ExtractionParams = DEFAULTS) -> str:
    """The page's own heading: its first <h1> outside navigation and footers ("" if none, or if
    longer than params.heading_max). At most HEADING_TRIES h1s, ANCESTOR_STEPS ancestors each: bounded
    work whatever the page nests or repeats."""
    parent, skipped = dom.parent, dom.skipped
    i = dom.find("h1")
    tries = 0
    while i >= 0 and tries < HEADING_TRIES:
        tries += 1
        if not skipped[i]:
            k, ok, steps = parent[i], True, 0
            while k >= 0 and steps < ANCESTOR_STEPS:
                if _skipped_box(dom, k):
                    ok = False
                    break
                k, steps = parent[k], steps + 1
            if ok:
                h = clean(subtree_text(dom, i))
                if h:
                    return h if len(h) <= params.heading_max else ""
        i = dom.find("h1", i + 1)
    return ""


def page_name(dom: Dom, title: str | None = None, params: ExtractionParams = DEFAULTS) -> str:
    """What the record is about: the page's h1 (a product page's name), else its <title>."""
    return page_heading(dom, params) or clean(dom.title() if title is None else title)


def record_block(dom: Dom, position: int, name: str | None = None, facts: Sequence[Fact] | None = None,
                 params: ExtractionParams = DEFAULTS) -> Block | None:
    """The page's facts as one block, kind "record", or None when the page has none:
    "Name — Label: value | Label: value | ...". name: what it is about (default page_name)."""
    facts = page_facts(dom, params) if facts is None else facts
    if not facts:
        return None
    name = page_name(dom, None, params) if name is None else name
    rows = tuple(f"{f.label}: {f.value}" for f in facts)
    body = RECORD_SEP.join(rows)
    text = name + TITLE_SEP + body if name else body
    return Block(text=text, body=text, heading_path=(), tag_path=TAG_PATH, position=position, url=dom.url,
                 hash=text_hash(text), kind=KIND, rows=rows)


def said_elsewhere(record: Block, blocks: Sequence[Block]) -> bool:
    """True when one of the blocks holds every fact of the record (its rows, "Label: value"),
    label and value on one of its lines: the details box or infobox kept whole by the selector,
    and new on this page. The record would repeat it. Facts spread over several blocks (a box
    whose rows are blocks of their own, each read as "Product details: Publisher: Zebra") still
    get their record: it names the page. At most params.pairs_max scans of each block's lines."""
    facts = [row.lower().partition(": ")[::2] for row in record.rows]
    for b in blocks:
        if b is record or b.kind == KIND:
            continue
        lines = b.text.lower().split("\n")
        if all(any(lab in line and v in line for line in lines) for lab, v in facts):
            return True
    return False

"""Label/value pairs read from a page's markup, one element at a time: a "Label: value" line, a
label element beside a value element, <b>Label:</b> value<br> runs, a definition list, a
two-column table. The record block (extraction.records) walks the page and asks these readers at
each box; each reader is bounded (SMALL_NODES, CELL_NODES, RUN_NODES) so its work does not grow
with what a page nests.
"""
from __future__ import annotations

import re

from ..parse import TEXT, Dom
from .params import DEFAULTS, ExtractionParams
from .text import subtree_text

# A pair's label and value are bounded by params.label_min, label_max, label_words, value_max
# (extraction.params): a longer value is prose (a glossary's definition), not a fact.
SMALL_NODES = 16  # an element read as one "Label: value" line holds at most this many nodes
CELL_NODES = 64  # a table cell, <dt> or <dd> read for a pair holds at most this many nodes
RUN_NODES = 600  # an element read as <b>Label:</b> value<br> lines holds at most this many nodes
# Elements read as one line (table rows: table_pairs; a <span> line sits in one of these)
LINE_TAGS = frozenset({"li", "p", "div", "section", "td"})
_BLOCK_TAGS = frozenset({"div", "p", "li", "ul", "ol", "dl", "table", "tr", "section", "article", "br", "hr",
                         "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "form"})
_LABEL_TAGS = frozenset({"b", "strong", "th", "dt", "label", "em"})
# A plain <span> (or <div>) opening a line is its label when the line is `<li><span>Label</span> value
# </li>` or `<div><div>Label</div><div>Value</div></div>`: the two-part shapes shops write
_PAIR_LABEL_TAGS = frozenset({"span", "div", "dt", "th", "td", "p", "label", "b", "strong", "em"})
PAIR_TAGS = frozenset({"li", "div", "tr", "dl", "p"})
HEADING_LEVELS = {"h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_LABEL_NAMES = re.compile(r"label|key|name|term|title|heading", re.IGNORECASE)
_INVISIBLE = str.maketrans({"\u200e": "", "\u200f": "", "\u200b": "", "\u00a0": " ", "\ufeff": ""})
_COLON = re.compile(r"^([^\W\d_][^:：\n]*?)\s*[:：]\s*(\S.*)$", re.DOTALL)
_NOT_LABELS = frozenset({"http", "https", "mailto", "ftp", "tel", "note", "notes", "warning", "tip", "example",
                         "see also", "q", "a", "question", "answer", "step", "main article", "main articles",
                         "further information", "further reading"})


def clean(s: str) -> str:
    return " ".join(s.translate(_INVISIBLE).split())


def pair(label: str, value: str, params: ExtractionParams = DEFAULTS) -> tuple[str, str] | None:
    label, value = clean(label).rstrip(" :：-–—"), clean(value).lstrip(" :：")
    p = params
    if len(label) < p.label_min or not value or len(label) > p.label_max or len(value) > p.value_max:
        return None
    if len(label.split()) > p.label_words or label.lower() in _NOT_LABELS or not label[0].isalpha():
        return None
    if label.lower() == value.lower():
        return None
    return label, value


def line_pair(dom: Dom, i: int, label_only: bool = False, params: ExtractionParams = DEFAULTS) -> tuple[str, str] | None:
    """A small element read as one pair: "Label: value" in its text, or a label element (bold,
    a label class) first and the value after it. Its nodes are looked at once before any text
    is joined: most small elements hold no block, no colon and no label first (16,918 of them on
    86 cetd pages)."""
    tags, ends, texts = dom.tag, dom.end, dom.text
    colon = False
    for k in range(i + 1, ends[i]):  # a box of lines is not a line: its lines are read one by one
        t = tags[k]
        if t == TEXT:
            colon = colon or ":" in texts[k] or "：" in texts[k]
        elif t in _BLOCK_TAGS:
            return None
    first = i + 1
    while first < ends[i] and tags[first] == TEXT and not texts[first].strip():
        first += 1
    label_first = False
    if first < ends[i] and tags[first] != TEXT:
        a = dom.attrs[first]
        cls = (a.get("class") or "") if a else ""
        label_first = tags[first] in _LABEL_TAGS or bool(cls and _LABEL_NAMES.search(cls)) \
            or (tags[first] == "span" and tags[i] == "li")
    if not (label_first or (colon and not label_only)):
        return None
    text = subtree_text(dom, i)
    if not text or len(text) > params.label_max + params.value_max + 4:
        return None
    if label_first:
        label = subtree_text(dom, first)
        rest = text[len(label):] if text.startswith(label) else ""
        if label and rest.strip():
            return pair(label, rest, params)
    if label_only:
        return None
    m = _COLON.match(text.translate(_INVISIBLE))
    return pair(m.group(1), m.group(2), params) if m else None


def run_pairs(dom: Dom, i: int, params: ExtractionParams = DEFAULTS) -> list[tuple[str, str, int]]:
    """The pairs of an element written as lines split by <br>: `<b>Publisher:</b> Zebra<br><b>ISBN-13:</b>
    978...<br>` (a details box in a table cell, a <div> or a <p>). Only its children are read, each
    once: a line is the inline children between two <br>s or block children; it is a pair when it
    opens with a label element (bold, a label class) or reads "Label: value". [] when the element
    has no <br> child or is bigger than RUN_NODES."""
    tags, ends, texts = dom.tag, dom.end, dom.text
    if ends[i] - i > RUN_NODES:
        return []
    out: list[tuple[str, str, int]] = []
    line: list[int] = []
    brs = 0

    def close() -> None:
        if not line:
            return
        first = next((k for k in line if tags[k] != TEXT or texts[k].strip()), -1)
        if first >= 0:
            parts = [texts[k] if tags[k] == TEXT else subtree_text(dom, k) for k in line]
            text = " ".join(" ".join(parts).split())
            p = None
            if tags[first] != TEXT and (tags[first] in _LABEL_TAGS or _label_class(dom, first)):
                label = " ".join(parts[line.index(first)].split())
                if label and text.startswith(label):
                    p = pair(label, text[len(label):], params)
            if p is None and len(text) <= params.label_max + params.value_max + 4:
                m = _COLON.match(text.translate(_INVISIBLE))
                p = pair(m.group(1), m.group(2), params) if m else None
            if p is not None:
                out.append((p[0], p[1], line[0]))
        line.clear()

    k, stop = i + 1, ends[i]
    while k < stop:
        t = tags[k]
        if t == "br":
            brs += 1
            close()
        elif t in _BLOCK_TAGS:
            close()
        elif t == TEXT or ends[k] - k <= SMALL_NODES:
            line.append(k)
        else:
            close()
        k = ends[k] if t != TEXT else k + 1
    close()
    return out if brs else []


def _label_class(dom: Dom, k: int) -> bool:
    a = dom.attrs[k]
    cls = (a.get("class") or "") if a else ""
    return bool(cls and _LABEL_NAMES.search(cls))


def two_pair(dom: Dom, i: int, params: ExtractionParams = DEFAULTS) -> tuple[str, str] | None:
    """An element of two small children and no text of its own, the first a short label:
    `<div class="row"><div>Weight</div><div>1.2 kg</div></div>`, `<li><span>Brand</span><span>Acme
    </span></li>`; the second may be a list of values (`<span>Genre</span><ul><li>Action</li>...
    </ul>`, read "Action, Adventure"). At most CELL_NODES nodes, each looked at once or twice."""
    tags, ends, texts = dom.tag, dom.end, dom.text
    if ends[i] - i > CELL_NODES:
        return None
    kids: list[int] = []
    k, stop = i + 1, ends[i]
    while k < stop:
        if tags[k] == TEXT:
            if texts[k].strip():
                return None
            k += 1
            continue
        kids.append(k)
        if len(kids) > 2:
            return None
        k = ends[k]
    if len(kids) != 2 or tags[kids[0]] not in _PAIR_LABEL_TAGS or tags[kids[1]] in HEADING_LEVELS:
        return None
    label, second = kids
    if any(tags[q] in _BLOCK_TAGS for q in range(label + 1, ends[label])) \
            or sum(tags[q] == TEXT and bool(texts[q].strip()) for q in range(label, ends[label])) != 1:
        return None  # a label is one piece of text ("Brand", not "Brand Acme" of a row, or a box of rows)
    if tags[second] in ("ul", "ol"):  # a list of values, one item each
        items = dom.children(second)
        if any(tags[q] != "li" and tags[q] != TEXT for q in items) or any(
                tags[q] in _BLOCK_TAGS for li in items if tags[li] == "li" for q in range(li + 1, ends[li])):
            return None
        value = ", ".join(v for li in items if tags[li] == "li" and (v := clean(subtree_text(dom, li))))
    elif any(tags[q] in _BLOCK_TAGS for q in range(second + 1, ends[second])):
        return None
    else:
        value = subtree_text(dom, second)
    return pair(subtree_text(dom, label), value, params)


def small(dom: Dom, i: int) -> bool:
    """A cell, term or definition small enough to be read for a value: the text of bigger ones
    (a layout table's columns, nested 50,000 deep) would be read once per enclosing table."""
    return dom.end[i] - i <= CELL_NODES


def dl_pairs(dom: Dom, dl: int, params: ExtractionParams = DEFAULTS) -> list[tuple[str, str, int]]:
    tags, ends = dom.tag, dom.end
    out: list[tuple[str, str, int]] = []
    label = ""
    values: list[str] = []
    node = dl

    def close() -> None:
        if label and values:
            p = pair(label, ", ".join(values), params)
            if p:
                out.append((p[0], p[1], node))

    j, stop = dl + 1, ends[dl]
    while j < stop:
        t = tags[j]
        if t == "dt":
            close()
            label, values, node = subtree_text(dom, j) if small(dom, j) else "", [], j
            j = ends[j]
        elif t == "dd":
            v = subtree_text(dom, j) if small(dom, j) else ""
            if v:
                values.append(v)
            else:
                label = ""  # a definition too big to be a value: no pair
            j = ends[j]
        elif t == "dl":  # a nested list is its own
            j = ends[j]
        else:
            j += 1
    close()
    return out


def table_pairs(dom: Dom, table: int, params: ExtractionParams = DEFAULTS) -> list[tuple[str, str, int]] | None:
    """The pairs of a two-column table (most rows two cells, a short first cell), or None."""
    tags, ends = dom.tag, dom.end
    rows = 0
    cells: list[int] = []
    out: list[tuple[str, str, int]] = []
    row = -1

    def close() -> None:
        if row >= 0 and len(cells) == 2 and tags[cells[1]] == "td" and small(dom, cells[0]) and small(dom, cells[1]):
            p = pair(subtree_text(dom, cells[0]), subtree_text(dom, cells[1]), params)
            if p:
                out.append((p[0], p[1], row))

    j, stop = table + 1, ends[table]
    while j < stop:
        t = tags[j]
        if t == "table":
            j = ends[j]
            continue
        if t == "tr":
            close()
            rows += 1
            row, cells = j, []
        elif t in ("td", "th") and row >= 0 and j < ends[row]:
            cells.append(j)
            j = ends[j]
            continue
        j += 1
    close()
    if len(out) < 2 or 5 * len(out) < 4 * rows:
        return None
    return out

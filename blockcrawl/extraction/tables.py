"""Data tables: which tables of a page hold data (data_tables: header cells or short cells, >= 2
rows and columns, not a layout table holding tables, not a link farm), and their rows as lines
that stand alone (table_rows): "Year: 2003 | Title: Octane | Role: Natasha 'Nat' Wilson" (the
header row names each cell, spans filled in, a one-cell row labels the rows under it), "Born: 24
January 1986" for an infobox. blocks_from_dom makes each data table one block of kind "table" or
"infobox", so a row keeps its column names and the chunker packs rows whole.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..parse import TEXT, Dom
from .text import subtree_text

CELL_TAGS = frozenset({"td", "th"})
SPAN_MAX = 32  # colspan/rowspan honoured up to this (a page controls them: bounded work per cell)
SPAN_TEXT = 200  # a row-spanning cell is repeated in the rows below it up to this many characters
GROUP_MAX = 120  # a one-cell row up to this long labels the rows under it ("First Division")
TABLE_LINK_SHARE = 0.7  # a table with more link text than this and > 2 links a cell is navigation
# A table without <th> is data if its cells average at most this many characters (a layout
# table's cells hold whole columns of a page: thousands)
PLAIN_CELL_MAX = 200


_last_tables: tuple[Dom | None, dict[int, str]] = (None, {})


def data_tables(dom: Dom) -> dict[int, str]:
    """The data tables of the page: table node -> "table" or "infobox". One pass over the nodes,
    once per page: `auto` (strict and loose pass) and blocks_from_dom ask for the same page in a
    row, so the last answer is kept (50k nested tables: 0.17 s a pass, asked for 3 times). A page
    without <table> costs one list scan.

    A data table has >= 2 rows and a row of >= 2 cells, no role=presentation/none, no table inside
    it (a layout table holds the page's other tables; an infobox may nest some), and is not mostly
    links (a navbox: > 70% link text and > 2 links a cell). With <th> cells, a <thead> or a
    <caption> that is enough; without, it needs >= 3 rows of short cells (<= 200 characters on
    average). An infobox is class "infobox", or a table whose every
    multi-cell row is one <th> then <td>s, with no header row."""
    global _last_tables
    last, found = _last_tables
    if last is dom:
        return found
    found = _data_tables(dom) if "table" in dom.tag else {}
    _last_tables = (dom, found)
    return found


def _data_tables(dom: Dom) -> dict[int, str]:
    tags, texts, ends, attrs, skipped = dom.tag, dom.text, dom.end, dom.attrs, dom.skipped
    rows: dict[int, int] = {}
    width: dict[int, int] = {}
    cells: dict[int, int] = {}
    ths: dict[int, int] = {}
    links: dict[int, int] = {}
    text: dict[int, int] = {}
    link_text: dict[int, int] = {}
    marked: set[int] = set()  # has <thead> or <caption>
    key_value: dict[int, bool] = {}  # table -> every multi-cell row is th + td(s)
    first_row_th: dict[int, bool] = {}
    n = len(dom)
    i = _next_table(tags, 0, n)
    infobox_end = -1
    while i < n:
        inner = _next_table(tags, i + 1, n)
        names = ((attrs[i] or {}).get("class") or "").lower()
        # only a table holding no table (found by a C-speed list search), or an infobox not inside
        # another, is walked; 50k nested layout tables cost 50k searches, not a walk each
        if skipped[i] or not (inner >= ends[i] or ("infobox" in names and i >= infobox_end)):
            i = inner
            continue
        if "infobox" in names:
            infobox_end = ends[i]
        r = w = c_all = c_th = n_links = tl = ll = 0
        kv, first_th = True, True
        row = -1
        row_cells, row_th = 0, False
        link_end = -1
        j, stop = i + 1, ends[i]
        while j < stop:
            t = tags[j]
            if t == TEXT:
                if not skipped[j]:
                    k = len(texts[j].strip())
                    tl += k
                    if j < link_end:
                        ll += k
                j += 1
                continue
            if t == "table" or skipped[j]:  # a nested table is its own (read as part of a cell)
                j = ends[j]
                continue
            if t == "tr":
                r += 1
                row, row_cells = j, 0
            elif t in CELL_TAGS:
                c_all += 1
                if t == "th":
                    c_th += 1
                if row >= 0 and j < ends[row]:
                    if row_cells == 0:
                        row_th = t == "th"
                    elif t == "th" or not row_th:
                        kv = False  # a second <th>, or a row not led by one
                    row_cells += 1
                    w = max(w, row_cells)
                    if r == 1:
                        first_th = first_th and t == "th"
            elif t == "a":
                n_links += 1
                link_end = max(link_end, ends[j])
            elif t in ("thead", "caption"):
                marked.add(i)
            j += 1
        rows[i], width[i], cells[i], ths[i], links[i] = r, w, c_all, c_th, n_links
        text[i], link_text[i], key_value[i], first_row_th[i] = tl, ll, kv, first_th and r >= 1
        i = inner
    out: dict[int, str] = {}
    for i, r in rows.items():
        a = attrs[i] or {}
        names = (a.get("class") or "").lower()
        infobox = "infobox" in names
        if r < 2 or (width[i] < 2 and not infobox) or a.get("role") in ("presentation", "none"):
            continue
        tl, ll = text.get(i, 0), link_text.get(i, 0)
        if tl == 0:
            continue
        if ll > TABLE_LINK_SHARE * tl and links[i] > 2 * cells[i]:
            continue
        if not (ths[i] or i in marked) and (r < 3 or tl > PLAIN_CELL_MAX * cells[i]):
            continue
        kv = key_value[i] and ths[i] > 0 and not first_row_th.get(i, False) and width[i] <= 2
        out[i] = "infobox" if infobox or kv else "table"
    # a data table inside another one is read as part of its cell (tables in document order: one
    # that starts before the end of the last kept one is inside it)
    cover = -1
    for i in sorted(out):
        if i < cover:
            del out[i]
        else:
            cover = dom.end[i]
    return out


def _fill_span(pending: dict[int, tuple[str, int]], col: int, filled: list[str], is_th: list[bool]) -> None:
    """Column col of this row is covered by a rowspan from above: its text (a short one repeated,
    a long one left empty), and one row fewer left to cover."""
    txt, left = pending[col]
    filled.append(txt)
    is_th.append(False)
    if left <= 1:
        del pending[col]
    else:
        pending[col] = (txt, left - 1)

def table_rows(dom: Dom, table: int, keep: Sequence[bool] | None,
               named: bool = False) -> tuple[str, list[str], list[str], str]:
    """(caption, body lines, rows, header) of a data table; one walk over its nodes, each
    cell's text read once (subtree_text), spans bounded by SPAN_MAX.

    Leading rows of <th> cells are the header: each column is named by its header cells, top
    to bottom ("League / Goals"). A later all-<th> row of >= 2 cells is a new header; a one-cell
    row labels the rows under it. A cell spanning rows is repeated in them (if short), so every
    row reads on its own behind the header line, which the chunker repeats at the top of each
    chunk: "2003 | Octane | Natasha 'Nat' Wilson" under "Year | Title | Role | Notes" (cells in
    column order, an empty cell left empty). Rows under a later header name their cells ("Year:
    2003 | ..."), as does every row of a table without a header row, and every row with named
    (an infobox: its body is its rows). Naming every cell in every
    row cost 2-4x the tokens of the row: on 300 Wikipedia pages a table chunk held 3.8 rows."""
    tags, ends, skipped = dom.tag, dom.end, dom.skipped
    caption = ""
    grid: list[list[tuple[str, bool, int, int]]] = []  # rows of (text, th, colspan, rowspan)
    k, stop = table + 1, ends[table]
    while k < stop:
        t = tags[k]
        if t == TEXT:
            k += 1
            continue
        if skipped[k]:
            k = ends[k]
        elif t == "caption":
            caption = caption or subtree_text(dom, k, keep)
            k = ends[k]
        elif t == "tr":
            grid.append([])
            k += 1
        elif t in CELL_TAGS:
            if not grid:
                grid.append([])
            th = t == "th" or (len(grid) == 1 and _bold(dom, k))
            grid[-1].append((subtree_text(dom, k, keep), th, _span(dom, k, "colspan"), _span(dom, k, "rowspan")))
            k = ends[k]
        else:
            k += 1
    names: list[str] = []
    header = ""  # the leading header, cells in column order
    compact = False  # rows are read behind header (not naming their cells)
    body: list[str] = []
    rows: list[str] = []
    group = ""
    pending: dict[int, tuple[str, int]] = {}  # column -> (text, rows still spanned)
    header_open = True  # the leading all-th rows are the header
    for cells_ in grid:
        if not cells_:
            continue
        all_th = all(th for _, th, _, _ in cells_)
        filled: list[str] = []
        is_th: list[bool] = []
        col = 0
        for text, th, cspan, rspan in cells_:
            while col in pending:
                _fill_span(pending, col, filled, is_th)
                col += 1
            for c in range(cspan):
                filled.append(text if c == 0 or all_th else "")
                is_th.append(th)
                if rspan > 1:
                    pending[col] = (text if len(text) <= SPAN_TEXT and c == 0 else "", rspan - 1)
                col += 1
        while col in pending:  # spans that reach past the row's own cells
            _fill_span(pending, col, filled, is_th)
            col += 1
        values = [v for v in filled if v]
        if all_th:  # a header cell spanning columns fills each of them: shown once
            values = list(dict.fromkeys(values))
        if not values:
            continue
        if all_th and len(cells_) >= 2 and (header_open or not _numeric(values)):
            if header_open and names:  # a second header row: names nest ("League / Goals")
                names = [(a + " / " + b if a and b and a != b else a or b)
                         for a, b in zip(names + [""] * (len(filled) - len(names)),
                                         filled + [""] * (len(names) - len(filled)))]
            else:
                names = list(filled)
            if not rows and not named:
                header, compact = " | ".join(names), True
            else:
                compact = False  # a header under data rows: the rows below it name their cells
            header_open = True
            body.append(" | ".join(dict.fromkeys(v for v in names if v)))
            continue
        header_open = False
        if (len(cells_) == 1 and len(values) == 1 and (all_th or len(names) > 1) and grid[0] is not cells_
                and len(values[0]) <= GROUP_MAX):
            group = values[0]  # "First Division", an infobox's "Personal information"
            body.append(group)
            continue
        parts: list[str] = []
        if compact:
            end = len(filled)
            while end and not filled[end - 1]:
                end -= 1
            parts = filled[:end]
        elif names:
            for c, v in enumerate(filled):
                if not v:
                    continue
                name = names[c] if c < len(names) else ""
                parts.append(f"{name}: {v}" if name and name != v else v)
        else:  # no header row: a leading <th> names the rest of the row (an infobox line)
            lead = 0
            while lead < len(filled) and is_th[lead]:
                lead += 1
            if 0 < lead < len(filled):
                key = " ".join(v for v in filled[:lead] if v)
                rest = " | ".join(v for v in filled[lead:] if v)
                parts.append(f"{key}: {rest}" if rest and key else key or rest)
            else:
                parts = values
        line = " | ".join(parts)
        # a group labels a row: "First Division: 1 | Arsenal" keeps the cells under their names
        rows.append((f"{group}: {line}" if compact else f"{group} | {line}") if group else line)
        body.append(" | ".join(values) if names else line)
    return caption, body, rows, header


def _next_table(tags: list[str], start: int, n: int) -> int:
    try:
        return tags.index("table", start)
    except ValueError:
        return n


def _numeric(values: list[str]) -> bool:
    """Half the values hold a digit: a row of <th> after data rows that is a total, not a header."""
    return 2 * sum(any(c.isdigit() for c in v) for v in values) >= len(values)


def _bold(dom: Dom, cell: int) -> bool:
    """True if all the cell's text is inside <b>/<strong>: the header cells of a table written
    without <th> ("<td><b>Route Number</b></td>"); one walk over the cell."""
    tags, texts, ends = dom.tag, dom.text, dom.end
    until = -1
    seen = False
    for k in range(cell + 1, ends[cell]):
        t = tags[k]
        if t in ("b", "strong"):
            until = max(until, ends[k])
        elif t == TEXT and texts[k].strip() and not dom.skipped[k]:
            if k >= until:
                return False
            seen = True
    return seen


def _span(dom: Dom, i: int, name: str) -> int:
    v = dom.get_attr(i, name)
    if not v:
        return 1
    digits = ""
    for ch in v.strip():
        if not ch.isdigit():
            break
        digits += ch
        if len(digits) > 3:
            break
    return max(1, min(SPAN_MAX, int(digits))) if digits else 1

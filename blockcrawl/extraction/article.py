"""The article rule: Readability-style scoring on the flat Dom, made O(n) (index loops, no
recursion), giving a keep mask of the page's main prose block.

1. page furniture is masked out (extraction.furniture);
2. each text block (the text a block-level element owns) votes for its container and ancestors
   with 1 + commas + length/100; a candidate's score is its votes, adjusted by tag and class/id
   ("article", "content" up; "comment", "sidebar" down), times 1 - link density, where a link
   block counts whole and a link inside prose counts little;
3. the best candidate climbs to an ancestor while that adds prose and little else (an article
   split over sibling columns), not a teaser list; one holding under `cover` of the page's prose
   widens further through ancestors that are not link-heavy (a product or landing page of many
   sections); siblings scoring close to it join;
4. inside, link-dense containers, named furniture, photo captions and credits, ad labels and
   the title heading (it repeats <title>) are dropped, and non-prose lines at the article's edges
   are trimmed; headings, lists, tables, code and quotes that carry text stay. Data tables
   (tables.data_tables) are article text whatever their link density or place: inside the article
   or beside it they are kept whole and stop the edge trimming (a Wikipedia results table is
   short cells, mostly links and no prose: the rules above dropped 72% of 750 table-cell answers).
If nothing scores, the page's JSON-LD articleBody (schema.org) picks the text nodes it contains
(json_ld). Every number comes from the ExtractionParams passed in (extraction.params).
"""
from __future__ import annotations

import re
from itertools import compress

from ..parse import TEXT, Dom
from .features import Features
from .furniture import furniture, name_kind, name_weight, names
from .params import DEFAULTS, ExtractionParams
from .patterns import AD_LABEL, CLEAN_TAGS, CREDIT_LINE, DROP_TAGS, HEADINGS, SELF_VOTE, SIBLING_TAGS, TAG_BASE
from .tables import data_tables


def article(dom: Dom, f: Features, strict: bool, keep_title: bool = False,
            params: ExtractionParams = DEFAULTS, trace: dict[str, object] | None = None,
            cover: float | None = None, cover_ld: float | None = None,
            junk_ld: tuple[float, float, float] | None = None,
            builder: re.Pattern[str] | None = None) -> list[bool] | None:
    """The article rule's keep mask, None when it finds too little (under params.min_text when
    strict). keep_title keeps a heading that repeats <title>. trace: a dict to fill with the
    chosen candidate, article top and roots (bench/auto_diag.py). cover, cover_ld, junk_ld:
    params' values replaced for this call (a page type's rule); builder: as in furniture."""
    p_ = params
    cover = p_.cover if cover is None else cover
    cover_ld = p_.cover_ld if cover_ld is None else cover_ld
    junk_ld = p_.junk_ld if junk_ld is None else junk_ld
    min_vote, link_block, levels = p_.min_vote_text, p_.link_block, p_.levels
    n = len(dom)
    tags, parent, ends, skipped = dom.tag, dom.parent, dom.end, dom.skipped
    tl, ll, cm = f.text_len, f.link_len, f.commas

    # 1. furniture mask (top-down) and the text block owner of every node
    tables = data_tables(dom)
    dead, owner = furniture(dom, f, strict, params, tables, builder)

    # 2. text per owner (a text block), then live text and "boilerplate link" text per subtree:
    # a block that is mostly link text counts whole, links inside prose count a little.
    own_tl: dict[int, int] = {}
    own_ll: dict[int, int] = {}
    own_cm: dict[int, int] = {}
    for j in compress(range(n), tl):  # (a C loop past the nodes without text)
        if tags[j] == TEXT and not dead[j]:
            b = owner[j]
            own_tl[b] = own_tl.get(b, 0) + tl[j]
            own_ll[b] = own_ll.get(b, 0) + ll[j]
            own_cm[b] = own_cm.get(b, 0) + cm[j]
    live = [0] * n
    blink = [0.0] * n
    lraw = [0] * n  # live link text
    prose = [0] * n  # text of prose blocks (those that vote)
    for b, length in own_tl.items():
        live[b] = length
        if length >= min_vote and tags[b] not in HEADINGS and own_ll[b] <= link_block * length:
            prose[b] = length
        k = own_ll[b]
        blink[b] = length if k > link_block * length else k * p_.inline_link
        lraw[b] = k
    for i in range(n - 1, 0, -1):
        if live[i]:
            p = parent[i]
            live[p] += live[i]
            blink[p] += blink[i]
            lraw[p] += lraw[i]
            prose[p] += prose[i]

    # 3. votes for ancestors
    votes: dict[int, float] = {}
    for b, length in own_tl.items():
        if length < min_vote or tags[b] in HEADINGS:
            continue
        if own_ll[b] > link_block * length:
            continue
        s = 1 + own_cm[b] + min(length // 100, 3)
        # A paragraph votes for its container; text straight in a container (a div of <br> lines,
        # <body> itself) also votes for that container.
        c = b if tags[b] in SELF_VOTE else parent[b]
        level = 0
        while c >= 0 and level < len(levels):
            votes[c] = votes.get(c, 0.0) + s * levels[level]
            c = parent[c]
            level += 1
    if not votes:
        return None
    score: dict[int, float] = {}
    weight: dict[int, int] = {}
    best, best_score = -1, float("-inf")
    for c, v in votes.items():
        w = name_weight(names(dom, c))
        weight[c] = w
        bonus: float = TAG_BASE.get(tags[c], 0) + w
        bonus = max(-v, min(v, bonus))  # names adjust a score, they cannot make one
        t = live[c]
        sc = (v + bonus) * (1 - (blink[c] / t if t else 0))
        score[c] = sc
        if sc > best_score:
            best, best_score = c, sc
    if best < 0:
        return None
    top = best
    # Move up while an ancestor adds prose (an article split over sibling containers) and little
    # else; climb past levels that add nothing, stop once the added junk outweighs the prose.
    base_prose, base_junk = prose[top], live[top] - prose[top]
    a = parent[top]
    while a >= 0 and tags[a] != "html":
        dp = prose[a] - base_prose
        dj = (live[a] - prose[a]) - base_junk
        if dj > p_.junk_stop * (base_prose + dp):
            break
        # teaser lists (headline link + excerpt) look like prose but bring their links along
        ratio = p_.junk_ratio_big if dp >= p_.grow * base_prose else p_.junk_ratio
        if dp > 0 and dj <= ratio * dp and lraw[a] - lraw[top] <= p_.climb_link * dp:
            top, base_prose, base_junk = a, prose[a], live[a] - prose[a]
        a = parent[a]
    # A page of many prose sections (a product or landing page, a docs page of panels) can leave the
    # best candidate holding a small part of its prose: widen to the ancestors while the article
    # holds under `cover` of the page's prose and the ancestor is not link-heavy (a teaser grid,
    # a menu column) nor more junk than prose.
    body = dom.body()
    a = parent[top]
    while prose[top] < cover * prose[body] and a >= 0 and tags[a] != "html":
        if lraw[a] > cover_ld * live[a] or live[a] - prose[a] > prose[a]:
            break
        top = a
        a = parent[a]
    # 4. the article: top candidate plus siblings scoring close to it (or sharing its class), data
    # tables, and sibling paragraphs, lists, quotes and headings that are not links
    roots = [top]
    p = parent[top]
    if p >= 0:
        threshold = max(10.0, best_score * p_.sibling_share)
        top_names = names(dom, top) if weight.get(top) else ""
        for s in dom.children(p):
            if s == top or tags[s] == TEXT or dead[s]:
                continue
            sib_score = score.get(s)
            bonus = best_score * p_.sibling_share if top_names and names(dom, s) == top_names else 0.0
            if (sib_score is not None and sib_score + bonus >= threshold) or s in tables:
                roots.append(s)
            elif tags[s] in SIBLING_TAGS:
                t = tl[s]
                ld = ll[s] / t if t else 1.0
                if (t > 80 and ld < 0.25) or (0 < t <= 80 and ld == 0):
                    roots.append(s)
    roots.sort()
    if trace is not None:
        trace.update(best=best, top=top, roots=roots, dead=dead, owner=owner, prose=prose, live=live,
                     blink=blink, weight=weight, tables=tables)

    # 5. keep the text of the roots, minus furniture, link-heavy widgets, named furniture (share
    # bars, bylines, tag lists), the page title repeated as a heading, ad labels and photo credits
    keep = [False] * n
    kept_len = 0
    title = "" if keep_title else " ".join(dom.title().split()).lower()
    texts = dom.text
    table_end = -1
    for r in roots:
        j, stop = r, ends[r]
        limit = p_.remove_share * tl[r]
        while j < stop:
            tag = tags[j]
            if dead[j] or skipped[j]:
                j = ends[j]
                continue
            if tag == TEXT:
                k = tl[j]
                if k and not ((k <= 45 and AD_LABEL.match(texts[j]))
                              or (k <= 80 and CREDIT_LINE.search(texts[j]))):
                    keep[j] = True
                    kept_len += k
                elif not k and j < table_end:  # "<i>Alfie</i> <small>(soundtrack)</small>": the
                    keep[j] = True  # space between two cell words is part of the cell
                j += 1
                continue
            if j in tables:
                table_end = ends[j]  # a data table is kept whole: no cell is junk
            if tag in DROP_TAGS or (j != r and j >= table_end and (_junk(dom, j, live, blink, cm, weight, junk_ld)
                                                                   or _removable(dom, j, tl, limit, p_))):
                j = ends[j]
                continue
            if title and tag in ("h1", "h2") and tl[j] >= 10 and ends[j] - j <= 64:
                h = " ".join(" ".join(texts[k].split()) for k in range(j, ends[j])
                             if tags[k] == TEXT and texts[k].strip()).lower()
                if h and h in title:
                    j = ends[j]
                    continue
            j += 1
    # data tables anywhere: a page's tables are its content wherever the prose vote put the
    # article (on a Wikipedia page of short paragraphs it can pick the reference list) and
    # whatever link-dense box holds them, unless they sit in page furniture
    for tb in tables:  # data tables do not nest: O(n) in all
        if dead[tb]:
            continue
        for k in range(tb, ends[tb]):
            if tags[k] == TEXT and not dead[k] and not skipped[k] and not keep[k]:
                keep[k] = True
                kept_len += tl[k]
    kept_len -= _trim_edges(dom, keep, owner, prose, tables)
    if kept_len < p_.min_text and strict:
        return None
    if kept_len == 0:
        return None
    return keep


def _removable(dom: Dom, i: int, tl: list[int], limit: float, params: ExtractionParams) -> bool:
    """Named furniture inside the article, unless it holds much of the article (a wrapper)."""
    ns = names(dom, i)
    if not ns or tl[i] > limit:
        return False
    kind = name_kind(ns, params.strong)
    return kind == 1 or (kind == 2 and tl[i] <= params.credit_max)


def _trim_edges(dom: Dom, keep: list[bool], owner: list[int], prose: list[int],
                tables: dict[int, str] | None = None) -> int:
    """Unkeep the short non-prose lines (dates, "Share", "Advert", "3 comments") before the first
    prose block or heading of the article, and those after its last prose block, headings
    included ("Related content", "Comments" with nothing under them); returns the characters
    dropped. A data table counts as prose: the trimming stops at it."""
    tags, texts, ends = dom.tag, dom.text, dom.end
    in_table = [False] * len(keep)
    for t in tables or ():
        in_table[t:ends[t]] = [True] * (ends[t] - t)  # data tables do not nest: O(n) in all
    kept = [j for j in range(len(keep)) if keep[j]]
    dropped = 0
    for order, keep_heads in ((kept, True), (kept[::-1], False)):
        for j in order:
            b = owner[j]
            if prose[b] or (keep_heads and tags[b] in HEADINGS) or in_table[j]:
                break
            keep[j] = False
            dropped += len(texts[j].strip())
    return dropped


def _junk(dom: Dom, i: int, live: list[int], blink: list[float], cm: list[int],
          weight: dict[int, int], junk_ld: tuple[float, float, float] = DEFAULTS.junk_ld) -> bool:
    """Readability's conditional cleaning: a container that is mostly links and little prose
    (link density counts link blocks whole and links inside prose a little)."""
    t = dom.tag[i]
    if t not in CLEAN_TAGS:
        return False
    text = live[i]
    if text == 0:
        return False
    if cm[i] >= 10:
        return False
    w = weight.get(i)
    if w is None:
        w = name_weight(names(dom, i))
    ld = blink[i] / text
    if w < 0 and ld > junk_ld[0]:
        return True
    if w < 25 and ld > junk_ld[1]:
        return True
    return ld > junk_ld[2]


def article_body(dom: Dom) -> str | None:
    """The longest schema.org articleBody in the page's JSON-LD scripts, whitespace-normalised
    (jsonld: the parsing shared with the page metadata, bounded in size)."""
    from .jsonld import article_bodies, ld_values

    bodies = article_bodies(ld_values(dom))
    if not bodies:
        return None
    body = " ".join(max(bodies, key=len).split())
    return body if len(body) >= 80 else None


def json_ld(dom: Dom) -> list[bool] | None:
    """Keep the text nodes whose text occurs in the page's JSON-LD articleBody."""
    body = article_body(dom)
    if body is None:
        return None
    tags, texts = dom.tag, dom.text
    keep = [False] * len(dom)
    found = False
    for j in range(len(dom)):
        if tags[j] == TEXT and not dom.skipped[j]:
            t = " ".join(texts[j].split())
            if len(t) >= 20 and t in body:
                keep[j] = found = True
    return keep if found else None

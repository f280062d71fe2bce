"""Template removal by clustering a site's pages (seed 003; Huang et al., ISNN 2017).

1. Structural similarity of two DOM trees (from <body>). The tree has weight 1; it is split among
   the depth-1 nodes, and every node's weight is split evenly among its children. Two nodes are
   equal when tag, attribute-name set (+ class value) and number of children match; equal leaves
   score their weight, equal inner nodes the sum of their children's scores, unequal nodes 0.
   "Depth 1" is the first level below <body> that branches: most pages wrap everything in one
   or two single-child divs, and weighting a single child would make every weighting the same.
   - even: depth-1 weights are equal (1/N each);
   - SMDPW: depth-1 weights grow linearly toward the top and bottom of the page (templates live
     there): w_k proportional to 1 + ENDS_BOOST * |k - c| / c, c = (N-1)/2, normalised to sum 1.
   The comparison walks both trees with an explicit stack (pages nest 100,000 deep).
   - dp: the site package's SMDPW (extraction/site/tree.py: child lists aligned by a DP). It
     scores mixed against smdpw across the sets, so "smdpw" is the default
     (docs/decisions/0003-template-similarity-smdpw.md).
2. Canopy clustering with distance 1 - similarity and thresholds T1 > T2: pages within T1 of a
   canopy's centre join it, those within T2 also leave the pool of candidate centres.
3. In a cluster of at least two pages, a text node whose normalised text occurs on at least
   SHARED_SHARE of the cluster's pages (and on 2 or more) is template and removed; the rest is
   content. A page alone in its cluster cannot be told apart from a template that way; it goes to
   a fallback single-page selector (CEPR by default; None keeps everything).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..parse import TEXT, Dom

T1 = 0.9  # canopy: join when distance < T1
T2 = 0.6  # canopy: leave the candidate pool when distance < T2
ENDS_BOOST = 2.0  # SMDPW: an end node weighs (1 + ENDS_BOOST) times a middle one
SHARED_SHARE = 0.2  # fit on cleanportaleval: 0.3 beat 0.5 and 0.8
FALLBACK: str | None = "cepr"
MODE = "smdpw"
STRICT = False  # see similarity()


@dataclass(slots=True)
class Tree:
    """A page's structure from <body>: node signatures and child lists (visible nodes only)."""
    sig: list[str]
    children: list[list[int]]
    dom_index: list[int]  # tree node -> Dom index

    def __len__(self) -> int:
        return len(self.sig)


def _signature(dom: Dom, i: int) -> str:
    t = dom.tag[i]
    if t == TEXT:
        return TEXT
    a = dom.attrs[i]
    if not a:
        return t
    # Attribute names only: values (ids, "postid-35697" classes, hrefs) differ from page to page.
    return f"{t}[{','.join(sorted(a))}]"


def build_tree(dom: Dom) -> Tree:
    """One pass over the body: skipped subtrees and whitespace-only text are left out."""
    tree = Tree([], [], [])
    if not len(dom):
        return tree
    root = dom.body()
    tags, texts, ends, skipped = dom.tag, dom.text, dom.end, dom.skipped
    local: dict[int, int] = {}
    i, stop = root, ends[root]
    while i < stop:
        if skipped[i] or (tags[i] == TEXT and (not texts[i] or texts[i].isspace())):
            i = ends[i] if tags[i] != TEXT else i + 1
            continue
        k = len(tree.sig)
        local[i] = k
        tree.sig.append(_signature(dom, i))
        tree.children.append([])
        tree.dom_index.append(i)
        if i != root:
            p = dom.parent[i]
            tree.children[local[p]].append(k)
        i += 1
    return tree


def depth1_weights(n: int, mode: str = MODE, boost: float = ENDS_BOOST) -> list[float]:
    """Weights of the n depth-1 nodes: equal ("even") or growing toward both ends ("smdpw")."""
    if n <= 0:
        return []
    if mode == "even" or n <= 2:
        return [1.0 / n] * n
    c = (n - 1) / 2
    raw = [1.0 + boost * abs(k - c) / c for k in range(n)]
    s = sum(raw)
    return [w / s for w in raw]


def similarity(a: Tree, b: Tree, mode: str = MODE, boost: float = ENDS_BOOST,
               strict: bool = STRICT) -> float:
    """Structural similarity in [0, 1] of two page trees (1 = same structure).

    strict: nodes with different numbers of children are unequal (the paper's rule). Otherwise
    their children are aligned: the longest common prefix and suffix of the two child signature
    sequences are paired (templates sit at the ends), the middle stays unmatched, and the pairs
    take their weights by position in the longer list (even, or SMDPW at depth 1)."""
    if not len(a) or not len(b):
        return 1.0 if len(a) == len(b) else 0.0
    total = 0.0
    # (node in a, node in b, weight, depth-1 level already assigned?)
    stack: list[tuple[int, int, float, bool]] = [(0, 0, 1.0, False)]
    while stack:
        x, y, w, placed = stack.pop()
        if a.sig[x] != b.sig[y]:
            continue
        ca, cb = a.children[x], b.children[y]
        if len(ca) != len(cb):
            if strict or not ca or not cb:
                continue
            big = max(len(ca), len(cb))
            # Weights over the longer child list: even, or SMDPW if this is the depth-1 level.
            ws = depth1_weights(big, mode, boost) if not placed and big >= 2 else [1.0 / big] * big
            sa, sb = a.sig, b.sig
            m = min(len(ca), len(cb))
            k = 0
            while k < m and sa[ca[k]] == sb[cb[k]]:
                stack.append((ca[k], cb[k], w * ws[k], True))
                k += 1
            e = 1
            while e <= m - k and sa[ca[-e]] == sb[cb[-e]]:
                stack.append((ca[-e], cb[-e], w * ws[big - e], True))
                e += 1
            continue
        n = len(ca)
        if n == 0:
            total += w
            continue
        if not placed and n >= 2:
            ws = depth1_weights(n, mode, boost)
            for k in range(n):
                stack.append((ca[k], cb[k], w * ws[k], True))
        else:
            share = w / n
            for k in range(n):
                stack.append((ca[k], cb[k], share, placed))
    return total


def canopy(items: int, sim: Callable[[int, int], float], t1: float = T1, t2: float = T2) -> list[list[int]]:
    """Canopy clustering with this module's thresholds (site.tree.canopy, shared with site learning)."""
    from .site.tree import canopy as _canopy

    return _canopy(items, sim, t1, t2)


@dataclass(slots=True)
class SiteResult:
    trees: list[Tree]
    canopies: list[list[int]]
    cluster_of: list[int]  # page -> canopy index it was assigned to
    shared: list[set[int]]  # per page: Dom indices of the text nodes found to be template
    masks: list[list[bool] | None]


def _norm(s: str) -> str:
    return " ".join(s.split())


def analyze_site(doms: Sequence[Dom], mode: str = MODE, t1: float = T1, t2: float = T2,
                 share: float = SHARED_SHARE, fallback: str | None = FALLBACK) -> SiteResult:
    trees = [build_tree(d) for d in doms]
    cache: dict[tuple[int, int], float] = {}
    if mode == "dp":  # the site package's SMDPW: DP alignment of child lists (bench/site_offline)
        from .site import tree as dp
        dp_trees = [dp.build_tree(d) for d in doms]

    def sim(i: int, j: int) -> float:
        if i == j:
            return 1.0
        key = (i, j) if i < j else (j, i)
        s = cache.get(key)
        if s is None:
            s = cache[key] = dp.similarity(dp_trees[key[0]], dp_trees[key[1]]) if mode == "dp" \
                else similarity(trees[key[0]], trees[key[1]], mode)
        return s

    canopies = canopy(len(doms), sim, t1, t2)
    # A page may lie in several canopies: it is assigned to the one whose centre is most similar.
    cluster_of = [-1] * len(doms)
    best = [-1.0] * len(doms)
    for ci, members in enumerate(canopies):
        for j in members:
            s = sim(members[0], j)
            if s > best[j]:
                best[j], cluster_of[j] = s, ci
    # Text of each page (set: a phrase repeated on one page counts once).
    page_texts: list[dict[int, str]] = []
    for d in doms:
        root = d.body() if len(d) else 0
        tt: dict[int, str] = {}
        for i in range(root, d.end[root] if len(d) else 0):
            if d.tag[i] == TEXT and not d.skipped[i]:
                t = _norm(d.text[i])
                if t:
                    tt[i] = t
        page_texts.append(tt)
    members_of: dict[int, list[int]] = {}
    for j, ci in enumerate(cluster_of):
        members_of.setdefault(ci, []).append(j)
    shared: list[set[int]] = [set() for _ in doms]
    masks: list[list[bool] | None] = [None] * len(doms)
    fb = None
    for members in members_of.values():
        if len(members) < 2:
            j = members[0]
            if fallback:
                if fb is None:
                    from .registry import get_selector
                    fb = get_selector(fallback)
                masks[j] = fb(doms[j])
            continue
        df: Counter[str] = Counter()
        for j in members:
            df.update(set(page_texts[j].values()))
        need = max(2, math.ceil(share * len(members)))
        for j in members:
            d = doms[j]
            keep = [True] * len(d)
            for i, t in page_texts[j].items():
                if df[t] >= need:
                    keep[i] = False
                    shared[j].add(i)
            masks[j] = keep
    return SiteResult(trees, canopies, cluster_of, shared, masks)


def select_site(doms: Sequence[Dom]) -> list[list[bool] | None]:
    """One keep mask per page of a site: the text no other page of its cluster shares."""
    return analyze_site(doms).masks


def select_site_cepr(doms: Sequence[Dom]) -> list[list[bool] | None]:
    """Template removal, then CEPR on what is left (both must keep a node); a page alone in its
    cluster gets CEPR only."""
    from .cepr import select as cepr_select
    out: list[list[bool] | None] = []
    for d, m in zip(doms, analyze_site(doms, fallback=None).masks):
        c = cepr_select(d)
        out.append(c if m is None or c is None else [x and y for x, y in zip(m, c)])
    return out

"""SMDPW: weighted structural similarity of two pages by dynamic-programming tree alignment
(seed 003, Huang et al. ISNN 2017), and Canopy clustering over it.

A page's tree is its visible nodes from <body> in pre-order, cut at the first K (MAX_NODES) so a
100k-node page costs what a 3k-node one does (a template's distinguishing parts - header, nav,
the article wrapper - come early in document order). Weights: the tree weighs 1; the depth-1
nodes (the first level below <body> that branches) share it with weights that grow toward the
top and bottom of the page (templates live there: w_k ~ 1 + ENDS_BOOST * |k - c| / c); every
other node splits its weight evenly among its children.

Alignment (what makes it SMDPW rather than a positional comparison): two nodes match when their
signatures (tag, attribute names, class value without digits) are equal; the children of two
matched nodes are aligned by a longest-common-subsequence dynamic programme over their signature
sequences, so an inserted banner or one more paragraph shifts nothing. A matched leaf scores the
mean of its weights in both trees; the similarity is the sum, in [0, 1]. The walk is an explicit
stack (no recursion); the common prefix and suffix of two child lists are paired first (equal
lists, the common case within a template, cost one comparison) and the middle goes to the DP, or,
over MAX_CELLS cells, to positional pairing (bounded: a forum page with 2,000 sibling posts).
Every node is in at most one matched pair, so the cost is O(K * sqrt(MAX_CELLS)) at worst;
measured 1-2 ms for two 1,500-node news pages (~1 ms a page within a template since the ends are
paired first).

The matched pairs are also the "shared parts" of two pages: a matched text leaf with the same text
on both is template (align() returns them).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...errors import ConfigError
from ...parse import TEXT, Dom

MAX_NODES = 2000  # K: visible nodes compared per tree
MAX_CELLS = 2500  # largest child-list DP (cells) before prefix/suffix alignment
ENDS_BOOST = 1.0  # SMDPW: an end node at depth 1 weighs (1 + ENDS_BOOST) times a middle one
_NO_DIGITS = str.maketrans("", "", "0123456789")


@dataclass(slots=True)
class Tree:
    """Up to K visible nodes of a page from <body>: signature, parent, and the Dom index.
    `text` holds the normalised text of text leaves ("" for elements)."""
    sig: list[str]
    parent: list[int]
    dom_index: list[int]
    text: list[str]
    kids: list[list[int]] | None = None  # children lists, built on first use
    kid_sigs: list[list[str]] | None = None  # their signatures (a centre's: built once, reused)

    def __len__(self) -> int:
        return len(self.sig)

    def children(self) -> list[list[int]]:
        if self.kids is None:
            out: list[list[int]] = [[] for _ in self.sig]
            for k, p in enumerate(self.parent):
                if p >= 0:
                    out[p].append(k)
            self.kids = out
        return self.kids

    def child_sigs(self) -> list[list[str]]:
        if self.kid_sigs is None:
            sig = self.sig
            self.kid_sigs = [[sig[k] for k in kx] for kx in self.children()]
        return self.kid_sigs

    def to_json(self) -> dict[str, list[int] | list[str]]:
        return {"sig": self.sig, "parent": self.parent}

    @classmethod
    def from_json(cls, obj: dict[str, list[int] | list[str]]) -> Tree:
        sig = [str(s) for s in obj["sig"]]
        parent = [int(p) for p in obj["parent"]]
        if len(sig) != len(parent) or any(not -1 <= p < k for k, p in enumerate(parent)):
            raise ValueError("malformed tree")
        return cls(sig, parent, [-1] * len(sig), [""] * len(sig))


def signature(dom: Dom, i: int) -> str:
    """Tag, class value without digits, and whether it has an id (ids differ page to page)."""
    t = dom.tag[i]
    a = dom.attrs[i]
    if not a:
        return t
    cls = a.get("class") or ""
    if cls:
        t = t + "." + cls.translate(_NO_DIGITS)
    return t + "#" if a.get("id") else t


_SIGS: dict[tuple[str, str, bool], str] = {}  # (tag, class, has id) -> signature: a site repeats a few hundred


def build_tree(dom: Dom, limit: int | None = None, texts: bool = True) -> Tree:
    """One pass over the body, stopping after `limit` (MAX_NODES) kept nodes; skipped subtrees
    and whitespace-only text are left out. texts=False leaves `text` empty strings (selection
    reads the few template leaves' text from the Dom). Signatures come from a cache: a site's
    pages repeat a few hundred (tag, class, id) triples."""
    limit = limit or MAX_NODES
    tree = Tree([], [], [], [])
    if not len(dom):
        return tree
    root = dom.body()
    keep_text = texts
    tags, texts_, ends, skipped, parent, attrs = dom.tag, dom.text, dom.end, dom.skipped, dom.parent, dom.attrs
    sigs = _SIGS
    if len(sigs) > 100_000:
        sigs.clear()
    local: dict[int, int] = {}
    kids: list[list[int]] = []  # children lists, built here (a second pass cost as much as this one)
    tree.kids = kids
    sig, par, index, text = tree.sig, tree.parent, tree.dom_index, tree.text
    i, stop = root, ends[root]
    n = 0
    while i < stop and n < limit:
        t = tags[i]
        if t == TEXT:
            s = texts_[i]
            if skipped[i] or not s or s.isspace():
                i += 1
                continue
        elif skipped[i]:
            i = ends[i]
            continue
        pl = -1
        if i != root:
            pl = local.get(parent[i], -2)
            if pl == -2:  # parent was cut (cannot happen in pre-order) - skip
                i = ends[i]
                continue
            kids[pl].append(n)
        local[i] = n
        kids.append([])
        if t == TEXT:
            sig.append(TEXT)
            text.append(" ".join(s.split()) if keep_text else "")
        else:
            a = attrs[i]
            if a:
                key = (t, a.get("class") or "", bool(a.get("id")))
                g = sigs.get(key)
                if g is None:
                    g = sigs[key] = signature(dom, i)
                sig.append(g)
            else:
                sig.append(t)
            text.append("")
        par.append(pl)
        index.append(i)
        n += 1
        i += 1
    return tree


def depth1_weights(n: int, boost: float = ENDS_BOOST) -> list[float]:
    """SMDPW weights of the n depth-1 nodes: growing linearly toward both ends, sum 1."""
    if n <= 0:
        return []
    if n <= 2 or boost == 0:
        return [1.0 / n] * n
    c = (n - 1) / 2
    raw = [1.0 + boost * abs(k - c) / c for k in range(n)]
    s = sum(raw)
    return [w / s for w in raw]


def _lcs_pairs(sa: list[str], sb: list[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of two signature lists: the common prefix and
    suffix (always part of some LCS), the middle by DP (two tables), or by _ends_pairs when it
    is over MAX_CELLS. Pages of one template mostly have equal child lists: one comparison."""
    if sa == sb:
        return [(k, k) for k in range(len(sa))]
    n, m = len(sa), len(sb)
    lo, hi = _common_ends(sa, sb)
    out = [(k, k) for k in range(lo)]
    ma, mb = sa[lo:n - hi], sb[lo:m - hi]
    r, c = len(ma), len(mb)
    if r * c > MAX_CELLS:
        out += [(lo + i, lo + j) for i, j in _ends_pairs(ma, mb)]
    elif r and c:
        # dp[i][j] = LCS length of ma[i:], mb[j:]
        dp = [[0] * (c + 1) for _ in range(r + 1)]
        for i in range(r - 1, -1, -1):
            row, nxt, x = dp[i], dp[i + 1], ma[i]
            for j in range(c - 1, -1, -1):
                row[j] = nxt[j + 1] + 1 if x == mb[j] else (nxt[j] if nxt[j] >= row[j + 1] else row[j + 1])
        i = j = 0
        while i < r and j < c:
            if ma[i] == mb[j]:
                out.append((lo + i, lo + j))
                i += 1
                j += 1
            elif dp[i + 1][j] >= dp[i][j + 1]:
                i += 1
            else:
                j += 1
    out += [(n - hi + k, m - hi + k) for k in range(hi)]
    return out


def _common_ends(sa: list[str], sb: list[str]) -> tuple[int, int]:
    """(lo, hi): the length of the common prefix, and of the common suffix in what is left."""
    n, m = len(sa), len(sb)
    lo = 0
    while lo < n and lo < m and sa[lo] == sb[lo]:
        lo += 1
    hi = 0
    while hi < n - lo and hi < m - lo and sa[n - 1 - hi] == sb[m - 1 - hi]:
        hi += 1
    return lo, hi


def _ends_pairs(sa: list[str], sb: list[str]) -> list[tuple[int, int]]:
    """Linear alignment for long child lists: common prefix, common suffix, then the middle
    paired by position where signatures agree."""
    n, m = len(sa), len(sb)
    lo, hi = _common_ends(sa, sb)
    out = [(k, k) for k in range(lo)]
    out += [(lo + k, lo + k) for k in range(min(n, m) - lo - hi) if sa[lo + k] == sb[lo + k]]
    out += [(n - 1 - k, m - 1 - k) for k in range(hi - 1, -1, -1)]
    return out


def align(a: Tree, b: Tree, boost: float = ENDS_BOOST) -> tuple[float, list[tuple[int, int]]]:
    """(SMDPW similarity in [0, 1], matched leaf pairs (node in a, node in b)).

    Iterative: a stack of matched pairs with their weights in each tree."""
    if not len(a) or not len(b):
        return (1.0 if len(a) == len(b) else 0.0), []
    # the roots are the same element (<body>) whatever their class: MediaWiki names the page in
    # it ("page-Thomas_Jefferson"), which made every pair of cetd's Wikipedia pages 0.0
    if _tag(a.sig[0]) != _tag(b.sig[0]):
        return 0.0, []
    ca, cb = a.children(), b.children()
    ga, gb = a.child_sigs(), b.child_sigs()
    total = 0.0
    leaves: list[tuple[int, int]] = []
    # (node in a, node in b, weight in a, weight in b, depth-1 level assigned yet?)
    stack: list[tuple[int, int, float, float, bool]] = [(0, 0, 1.0, 1.0, False)]
    while stack:
        x, y, wa, wb, placed = stack.pop()
        kx, ky = ca[x], cb[y]
        if not kx or not ky:
            if not kx and not ky:
                total += (wa + wb) / 2
                leaves.append((x, y))
            continue
        if not placed and (len(kx) >= 2 or len(ky) >= 2):
            wsa, wsb = depth1_weights(len(kx), boost), depth1_weights(len(ky), boost)
            for i, j in _lcs_pairs(ga[x], gb[y]):
                stack.append((kx[i], ky[j], wa * wsa[i], wb * wsb[j], True))
        else:  # below depth 1 a node's weight is split evenly among its children
            fa, fb = wa / len(kx), wb / len(ky)
            stack.extend([(kx[i], ky[j], fa, fb, placed) for i, j in _lcs_pairs(ga[x], gb[y])])
    return min(1.0, total), leaves


def _tag(sig: str) -> str:
    return sig.split(".", 1)[0].rstrip("#")


def similarity(a: Tree, b: Tree, boost: float = ENDS_BOOST) -> float:
    return align(a, b, boost)[0]


def canopy(items: int, sim: Callable[[int, int], float], t1: float, t2: float) -> list[list[int]]:
    """Canopy clustering of items 0..items-1 with distance 1 - sim(i, j); needs T1 > T2.

    The first item still in the pool becomes a centre; every pool item within T1 joins its canopy,
    every item within T2 leaves the pool (canopies may overlap). Each canopy lists its centre
    first. O(items x canopies) similarity calls."""
    if t1 <= t2:
        raise ConfigError("canopy needs T1 > T2")
    pool = list(range(items))
    out: list[list[int]] = []
    while pool:
        c = pool[0]
        members = [c]
        rest = []
        for j in pool[1:]:
            d = 1.0 - sim(c, j)
            if d < t1:
                members.append(j)
            if d >= t2:
                rest.append(j)
        pool = rest
        out.append(members)
    return out

"""Per-node aggregates of a flat Dom, computed in O(n) without recursion.

Top-down passes (pre-order: a parent comes before its children) give inherited facts, e.g. "inside
a link"; one bottom-up pass (reverse pre-order: children before parents) sums subtree totals.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..parse import TEXT, Dom

_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


@dataclass(slots=True)
class Features:
    text_len: list[int]  # characters of visible text in the subtree
    link_len: list[int]  # of which inside <a>
    commas: list[int]  # commas in the subtree's text
    n_text: list[int]  # non-empty text nodes in the subtree
    in_link: list[bool]  # node is (inside) an <a>
    images: list[int]  # <img>/<picture> elements in the subtree
    heads: list[int]  # h1-h6 elements in the subtree


def compute(dom: Dom) -> Features:
    n = len(dom)
    tags, texts, parent, skipped = dom.tag, dom.text, dom.parent, dom.skipped
    in_link = [False] * n
    for i in range(n):
        p = parent[i]
        in_link[i] = tags[i] == "a" or (p >= 0 and in_link[p])
    tl = [0] * n
    ll = [0] * n
    cm = [0] * n
    nt = [0] * n
    im = [0] * n
    hd = [0] * n
    for i in range(n):
        if tags[i] == "img" or tags[i] == "picture":
            im[i] = 1
        elif tags[i] in _HEADINGS:
            hd[i] = 1
        if tags[i] == TEXT and not skipped[i]:
            t = texts[i]
            k = len(t.strip())
            if k:
                tl[i] = k
                nt[i] = 1
                cm[i] = t.count(",") + t.count("\uff0c") + t.count("\u3001")
                if in_link[i]:
                    ll[i] = k
    for i in range(n - 1, 0, -1):
        p = parent[i]
        if p >= 0 and im[i]:
            im[p] += im[i]
        if p >= 0 and hd[i]:
            hd[p] += hd[i]
        if p >= 0 and tl[i]:
            tl[p] += tl[i]
            ll[p] += ll[i]
            cm[p] += cm[i]
            nt[p] += nt[i]
    return Features(tl, ll, cm, nt, in_link, im, hd)

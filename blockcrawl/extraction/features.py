"""Per-node aggregates of a flat Dom, computed in O(n) without recursion.

A top-down pass (pre-order: a parent comes before its children) gives inherited facts ("inside a
link"); one bottom-up pass (reverse pre-order: children before parents) sums subtree totals.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..parse import TEXT, Dom


@dataclass(slots=True)
class Features:
    text_len: list[int]  # characters of visible text in the subtree (each text node stripped)
    link_len: list[int]  # of which inside <a>
    commas: list[int]  # commas in the subtree's text (also the CJK ones)
    # Results derived from these aggregates and the same Dom, computed once per page and shared
    # by the rules that read them (furniture.furniture: the article rule, the page-type rules and
    # listing.page_fallback each walked the whole Dom for the same furniture mask). Read-only.
    memo: dict[Any, Any] = field(default_factory=dict)


def compute(dom: Dom) -> Features:
    n = len(dom)
    tags, texts, parent, skipped = dom.tag, dom.text, dom.parent, dom.skipped
    in_link = [False] * n
    tl = [0] * n
    ll = [0] * n
    cm = [0] * n
    for i in range(n):
        tag = tags[i]
        if tag == TEXT:
            if skipped[i]:
                continue
            t = texts[i]
            k = len(t.strip())
            if k:
                tl[i] = k
                cm[i] = t.count(",") + t.count("\uff0c") + t.count("\u3001")
                p = parent[i]
                if p >= 0 and in_link[p]:
                    ll[i] = k
        else:
            p = parent[i]
            in_link[i] = tag == "a" or (p >= 0 and in_link[p])
    for i in range(n - 1, 0, -1):
        if tl[i]:
            p = parent[i]
            tl[p] += tl[i]
            ll[p] += ll[i]
            cm[p] += cm[i]
    return Features(tl, ll, cm)

"""Site learning: one model per site from its pages (extraction/site/model.py).

tree.py     SMDPW similarity by DP tree alignment, Canopy clustering (seed 003)
patterns.py PP-WNE tag-path pattern keys and the MPM greedy set cover (seed 004)
model.py    SiteModel: learn(doms, auto_masks), model.select(dom, auto_mask), JSON

The algorithm `site` (registry): auto until the model is learned, then the model, falling back to
auto page by page. select_site is its site selector (process_site, bench): learn on the first
LEARN_PAGES pages, select every page.
"""
from __future__ import annotations

from collections.abc import Sequence

from ...parse import Dom
from .model import FORMAT, Cluster, SiteModel, learn
from .tree import Tree, align, build_tree, canopy, similarity

LEARN_PAGES = 20


def learn_and_select(doms: Sequence[Dom], learn_pages: int = LEARN_PAGES
                     ) -> tuple[SiteModel, list[tuple[Sequence[bool] | None, int]]]:
    """The model learned on the first learn_pages pages (auto's masks as positives) and every
    page's (mask, cluster)."""
    from ..auto import select as auto_select

    autos = [auto_select(d) if len(d) else None for d in doms]
    model = learn(doms[:learn_pages], autos[:learn_pages])
    return model, [model.select(d, a) for d, a in zip(doms, autos)]


def select_site(doms: list[Dom]) -> list[Sequence[bool] | None]:
    """Site selector of the algorithm `site`: one keep mask per page."""
    return [m for m, _ in learn_and_select(doms)[1]]


__all__ = ["FORMAT", "LEARN_PAGES", "Cluster", "SiteModel", "Tree", "align", "build_tree", "canopy",
           "learn", "learn_and_select", "select_site", "similarity"]

"""CEPR: content extraction via path ratios (seed 004; Wu et al., CIKM 2013).

Per tag path p (over the body's visible text nodes):
  TPR(p)  = total text length of the text nodes on p / number of them;
  ETPR(p) = TPR(p) * ln(e + std of their text lengths) * ln(e + punctuation marks per node) -
            paragraphs of prose vary in length and carry punctuation, menu items do neither.
  (The paper's exact ETPR formula is not in our sources; this is our reading of "also weighs the
  spread of text lengths and punctuation"; both factors are >= 1, so ETPR >= TPR.)
Each text node takes its path's value; the values are smoothed with a Gaussian over the sequence
of text nodes in which a neighbour's weight is further scaled by the similarity of its tag path
(1 - normalised edit distance of the label sequences): a short link inside a paragraph
(.../p/a/#text next to .../p/#text) borrows its paragraph's score, an advert box on a foreign
path does not. A node is content when its smoothed value >= lambda x std of all smoothed values.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..parse import Dom
from .tagpath import PathSimilarity, TagPaths, mask_from_nodes, tag_paths

SIGMA = 2.0  # Gaussian over text-node positions
LAMBDA = 1.5  # threshold factor on the std of the smoothed values (fit on the dev sets: 1.3-1.6 best)
FEATURE = "etpr"
SIM_NORM = "full"  # PathSimilarity normalisation
SIM_POWER = 1.0  # neighbour weight = gaussian x similarity ** SIM_POWER
_PUNCT = re.compile(r"[.,;:!?\u3002\uff0c\uff1b\uff1a\uff01\uff1f\u060c\u061f]")


@dataclass(slots=True)
class CEPRResult:
    nodes: np.ndarray  # Dom index of each visible text node, in page order
    paths: np.ndarray  # path id per text node
    tag_paths: TagPaths
    tpr: dict[int, float]  # per path id
    etpr: dict[int, float]  # per path id
    raw: np.ndarray  # feature value per text node before smoothing
    smoothed: np.ndarray
    threshold: float
    content: np.ndarray  # bool per text node


def path_features(dom: Dom, nodes: list[int], pids: list[int]) -> tuple[dict[int, float], dict[int, float]]:
    """TPR and ETPR of every path carrying text, from one pass over the text nodes."""
    n: dict[int, int] = {}
    s: dict[int, float] = {}
    s2: dict[int, float] = {}
    punct: dict[int, int] = {}
    texts = dom.text
    for i, p in zip(nodes, pids):
        t = texts[i].strip()
        ln = len(t)
        n[p] = n.get(p, 0) + 1
        s[p] = s.get(p, 0.0) + ln
        s2[p] = s2.get(p, 0.0) + ln * ln
        punct[p] = punct.get(p, 0) + len(_PUNCT.findall(t))
    tpr: dict[int, float] = {}
    etpr: dict[int, float] = {}
    for p, c in n.items():
        mean = s[p] / c
        std = math.sqrt(max(0.0, s2[p] / c - mean * mean))
        tpr[p] = mean
        etpr[p] = mean * math.log(math.e + std) * math.log(math.e + punct[p] / c)
    return tpr, etpr


def smooth(values: np.ndarray, pids: list[int], sim: PathSimilarity, sigma: float = SIGMA,
           power: float = 1.0) -> np.ndarray:
    """Gaussian smoothing over positions with each neighbour's weight times its path similarity."""
    n = len(values)
    if n == 0 or sigma <= 0:
        return values.copy()
    r = max(1, int(math.ceil(3 * sigma)))
    num = values.copy()  # the node itself: weight 1, similarity 1
    den = np.ones(n)
    for d in range(1, min(r, n - 1) + 1):
        g = math.exp(-d * d / (2 * sigma * sigma))
        w = np.fromiter((sim(pids[i], pids[i + d]) for i in range(n - d)), dtype=np.float64, count=n - d)
        np.maximum(w, 0.0, out=w)
        if power != 1.0:
            w **= power
        w *= g
        # pair (i, i+d) feeds both directions
        num[:-d] += w * values[d:]
        den[:-d] += w
        num[d:] += w * values[:-d]
        den[d:] += w
    return num / den


def analyze(dom: Dom, sigma: float | None = None, lam: float | None = None, feature: str | None = None,
            with_attrs: bool = False, sim_norm: str | None = None, sim_power: float | None = None
            ) -> CEPRResult:
    """Run CEPR on a page; parameters left None take the module defaults."""
    sigma = SIGMA if sigma is None else sigma
    lam = LAMBDA if lam is None else lam
    feature = FEATURE if feature is None else feature
    sim_norm = SIM_NORM if sim_norm is None else sim_norm
    sim_power = SIM_POWER if sim_power is None else sim_power
    tp = tag_paths(dom, with_attrs)
    root = dom.body()
    tags, texts, node_path = dom.tag, dom.text, tp.node_path
    nodes: list[int] = []
    for i in range(root, dom.end[root]):
        if tags[i] == "#text" and node_path[i] >= 0 and texts[i] and not texts[i].isspace():
            nodes.append(i)
    pids = [node_path[i] for i in nodes]
    tpr, etpr = path_features(dom, nodes, pids)
    table = etpr if feature == "etpr" else tpr
    raw = np.fromiter((table[p] for p in pids), dtype=np.float64, count=len(pids))
    sm = smooth(raw, pids, PathSimilarity(tp, sim_norm), sigma, sim_power)
    thr = lam * float(sm.std()) if len(sm) else 0.0
    content = sm >= thr if len(sm) else np.zeros(0, dtype=bool)
    return CEPRResult(np.asarray(nodes, dtype=np.int64), np.asarray(pids, dtype=np.int64), tp, tpr, etpr,
                      raw, sm, thr, content)


def select(dom: Dom) -> list[bool] | None:
    if not len(dom):
        return None
    res = analyze(dom)
    return mask_from_nodes(dom, res.nodes[res.content].tolist())

"""CETR: content extraction via tag ratios (Weninger et al., WWW 2010) - the baseline of seed 004.

CETR reads the HTML source line by line. A Dom has no source lines, so the page is laid out the way a
pretty-printer would: every block or line-level element (div, p, li, td, h1...) starts a new line
at its start tag and ends it after its end tag. Per line: text-to-tag ratio = text characters /
tags on the line (1 if none). The ratios are Gaussian-smoothed (sigma 1); a second feature is the
absolute difference between a line's smoothed ratio and the mean of the next 3. The 2-D points are
clustered with k-means, one centroid held at the origin; lines in that cluster are noise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..parse import TEXT, Dom
from .blocks import BLOCK_TAGS, HEADING_LEVEL, LINE_TAGS
from .tables import CELL_TAGS
from .tagpath import mask_from_nodes

BREAK_TAGS = BLOCK_TAGS | LINE_TAGS | CELL_TAGS | frozenset(HEADING_LEVEL) | {"html", "head", "tbody",
                                                                               "thead", "tfoot"}
SIGMA = 1.0
LOOKAHEAD = 3
K = 2  # clusters: content and noise (pinned at the origin); k=3 scored lower on the dev sets


@dataclass(slots=True)
class Lines:
    """The pretty-printed page: per line its tag count, text characters and text nodes."""
    tags: np.ndarray
    chars: np.ndarray
    nodes: list[list[int]]

    def __len__(self) -> int:
        return len(self.nodes)


def page_lines(dom: Dom) -> Lines:
    root = dom.body()
    tags_of, ends, texts, skipped = dom.tag, dom.end, dom.text, dom.skipped
    tag_counts: list[int] = [0]
    chars: list[int] = [0]
    nodes: list[list[int]] = [[]]

    def newline() -> None:
        if tag_counts[-1] or nodes[-1]:
            tag_counts.append(0)
            chars.append(0)
            nodes.append([])

    open_: list[int] = []
    i, stop = root, ends[root]
    while i < stop:
        while open_ and ends[open_[-1]] <= i:  # end tags before node i
            tag_counts[-1] += 1
            if tags_of[open_.pop()] in BREAK_TAGS:
                newline()
        t = tags_of[i]
        if skipped[i]:
            i = ends[i]
            continue
        if t == TEXT:
            s = texts[i]
            n = len(s.strip())
            if n:
                chars[-1] += n
                nodes[-1].append(i)
            i += 1
            continue
        if t in BREAK_TAGS:
            newline()
        tag_counts[-1] += 1
        open_.append(i)
        i += 1
    while open_:
        tag_counts[-1] += 1
        if tags_of[open_.pop()] in BREAK_TAGS:
            newline()
    if not tag_counts[-1] and not nodes[-1] and len(nodes) > 1:
        tag_counts.pop()
        chars.pop()
        nodes.pop()
    return Lines(np.asarray(tag_counts, dtype=np.float64), np.asarray(chars, dtype=np.float64), nodes)


def gaussian_smooth(values: np.ndarray, sigma: float = SIGMA) -> np.ndarray:
    """Gaussian smoothing that renormalises the kernel at the edges of the sequence."""
    if len(values) == 0 or sigma <= 0:
        return values.astype(np.float64)
    r = max(1, int(np.ceil(3 * sigma)))
    x = np.arange(-r, r + 1)
    k = np.exp(-(x * x) / (2 * sigma * sigma))
    num = np.convolve(values, k, mode="same") if len(values) >= len(k) else _conv_small(values, k)
    den = np.convolve(np.ones(len(values)), k, mode="same") if len(values) >= len(k) \
        else _conv_small(np.ones(len(values)), k)
    smooth: np.ndarray = num / den
    return smooth


def _conv_small(values: np.ndarray, k: np.ndarray) -> np.ndarray:
    r = len(k) // 2
    full = np.convolve(values, k, mode="full")
    return full[r:r + len(values)]


def lookahead_delta(values: np.ndarray, ahead: int = LOOKAHEAD) -> np.ndarray:
    """|v_i - mean(v_{i+1} .. v_{i+ahead})| (fewer values near the end; 0 for the last line)."""
    n = len(values)
    out = np.zeros(n)
    if n < 2:
        return out
    c = np.concatenate(([0.0], np.cumsum(values)))
    idx = np.arange(n)
    hi = np.minimum(idx + ahead, n - 1)
    cnt = hi - idx
    has = cnt > 0
    means = (c[hi[has] + 1] - c[idx[has] + 1]) / cnt[has]
    out[has] = np.abs(values[has] - means)
    return out


def kmeans_origin(points: np.ndarray, k: int = K, iters: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """k-means whose cluster 0 keeps its centroid at the origin. Returns (labels, centroids).

    The other centroids start at evenly spaced quantiles of the points' distance from the origin,
    which makes the result deterministic."""
    n = len(points)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((k, points.shape[1] if points.ndim == 2 else 2))
    norms = np.linalg.norm(points, axis=1)
    order = np.argsort(norms)
    cents = np.zeros((k, points.shape[1]))
    for c in range(1, k):
        cents[c] = points[order[min(n - 1, int(round((n - 1) * (c / (k - 1) if k > 1 else 1))))]]
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iters):
        d = ((points[:, None, :] - cents[None, :, :]) ** 2).sum(axis=2)
        new = d.argmin(axis=1)
        if _ and np.array_equal(new, labels):
            break
        labels = new
        for c in range(1, k):
            m = labels == c
            if m.any():
                cents[c] = points[m].mean(axis=0)
    return labels, cents


@dataclass(slots=True)
class CETRResult:
    lines: Lines
    ratio: np.ndarray  # text-to-tag ratio per line
    smoothed: np.ndarray
    delta: np.ndarray  # |smoothed - mean of the next 3|
    labels: np.ndarray  # cluster per line; 0 = noise (the origin cluster)
    content: np.ndarray  # bool per line


def analyze(dom: Dom, sigma: float = SIGMA, k: int = K) -> CETRResult:
    lines = page_lines(dom)
    ratio = lines.chars / np.maximum(lines.tags, 1.0)
    sm = gaussian_smooth(ratio, sigma)
    delta = lookahead_delta(sm)
    pts = np.column_stack([sm, delta]) if len(sm) else np.zeros((0, 2))
    labels, _ = kmeans_origin(pts, k)
    return CETRResult(lines, ratio, sm, delta, labels, labels != 0)


def select(dom: Dom) -> list[bool] | None:
    if not len(dom):
        return None
    res = analyze(dom)
    return mask_from_nodes(dom, (i for li in np.flatnonzero(res.content).tolist()
                                 for i in res.lines.nodes[li]))

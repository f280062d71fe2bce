"""TPS: tag path sequence segmentation and noise removal (seed 001; Velloso & Dorneles).

The body becomes a string of symbols, one per node in pre-order, each symbol standing for a distinct
tag path (numbered in order of first appearance). A split position divides a region into two parts
whose alphabets do not intersect: different sets of tag paths are different parts of the page.
The main content is found by splitting, keeping the larger part, and splitting again until no split
exists. Segmentation instead splits every part (a queue) and reports the parts > 5% of the page.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..parse import TEXT, Dom
from .tagpath import TagPaths, mask_from_nodes, tag_paths

MIN_SEGMENT = 0.05  # segmentation keeps regions longer than this share of the page


@dataclass(slots=True)
class TPS:
    """The tag path sequence of a page: symbols[k] is the path symbol of node nodes[k]."""
    symbols: np.ndarray  # int32, symbol per sequence position, numbered by first appearance
    nodes: np.ndarray  # int64, Dom index per sequence position
    path_ids: list[int] = field(default_factory=list)  # symbol -> path id in tag_paths
    tag_paths: TagPaths | None = None
    text_before: np.ndarray | None = None  # text characters in positions [0, k), length n + 1

    def __len__(self) -> int:
        return len(self.symbols)

    def path(self, symbol: int) -> str:
        """The tag path a symbol stands for, e.g. "html/body/div/p/#text" (built on demand: on
        deeply nested pages all path strings together would be quadratic in the depth)."""
        assert self.tag_paths is not None, "build_tps sets tag_paths"
        return self.tag_paths.path_str(self.path_ids[symbol])


def build_tps(dom: Dom, with_attrs: bool = False, tp: TagPaths | None = None) -> TPS:
    """The sequence over the body's visible nodes (whitespace-only text nodes are left out:
    they are formatting, and their paths would tie unrelated regions together)."""
    if tp is None:
        tp = tag_paths(dom, with_attrs)
    root = dom.body()
    tags, texts, node_path = dom.tag, dom.text, tp.node_path
    sym_of: dict[int, int] = {}
    symbols: list[int] = []
    nodes: list[int] = []
    chars: list[int] = []
    path_ids: list[int] = []
    for i in range(root, dom.end[root]):
        pid = node_path[i]
        if pid < 0 or (tags[i] == TEXT and (not texts[i] or texts[i].isspace())):
            continue
        s = sym_of.get(pid)
        if s is None:
            s = sym_of[pid] = len(path_ids)
            path_ids.append(pid)
        symbols.append(s)
        nodes.append(i)
        chars.append(len(texts[i].strip()) if tags[i] == TEXT else 0)
    before = np.concatenate(([0], np.cumsum(chars, dtype=np.int64)))
    return TPS(np.asarray(symbols, dtype=np.int32), np.asarray(nodes, dtype=np.int64), path_ids, tp, before)


def find_split(seq: np.ndarray) -> int:
    """Length of the left part of the first disjoint-alphabet split of seq, or -1 if none.

    For each distinct symbol count t (ascending) only symbols occurring more than t times take part
    (the search stops once fewer than 2 do). Scanning left to right, a symbol joins "seen" at its
    first occurrence and leaves "remaining" after its last; the first position where seen and
    remaining are disjoint while remaining is not empty ends the left region. Seen minus finished
    symbols is exactly seen ∩ remaining, so a running sum of +1 (first occurrence) and -1 (last
    occurrence) hitting zero is the test - one vectorised pass per threshold.
    """
    n = len(seq)
    if n < 2:
        return -1
    # Relabel to 0..k-1 so bincount stays small inside a region.
    uniq, local = np.unique(seq, return_inverse=True)
    counts = np.bincount(local)
    pos = np.arange(n)
    first = np.full(len(uniq), n, dtype=np.int64)
    np.minimum.at(first, local, pos)
    last = np.full(len(uniq), -1, dtype=np.int64)
    np.maximum.at(last, local, pos)
    is_first = first[local] == pos
    is_last = last[local] == pos
    for t in np.unique(counts):
        alpha = counts > t
        k = int(alpha.sum())
        if k < 2:
            break
        inside = alpha[local]
        delta = (is_first & inside).astype(np.int64) - (is_last & inside)
        open_now = np.cumsum(delta)
        finished = np.cumsum(is_last & inside)
        started = np.cumsum(is_first & inside)
        ok = (open_now == 0) & (started > 0) & (finished < k)
        hit = np.flatnonzero(ok)
        if len(hit):
            return int(hit[0]) + 1
    return -1


@dataclass(slots=True)
class TPSResult:
    tps: TPS
    steps: list[tuple[int, int]]  # regions (start, end) over the sequence, each kept after a split
    main: tuple[int, int]  # the last region kept: the main content

    def main_nodes(self) -> np.ndarray:
        return self.tps.nodes[self.main[0]:self.main[1]]


SIZE = "nodes"


def main_region(tps: TPS, start: int = 0, end: int | None = None, size: str | None = None) -> TPSResult:
    """Split, keep the larger region, repeat until no split: the last region kept.

    size="nodes" measures regions by sequence length (the paper); size="text" by the text
    characters they hold (a variant: a long link list then loses to a shorter article)."""
    end = len(tps) if end is None else end
    by_text = (SIZE if size is None else size) == "text"
    tb = tps.text_before

    def measure(r: tuple[int, int]) -> int:
        if not by_text:
            return r[1] - r[0]
        assert tb is not None, "build_tps sets text_before"
        return int(tb[r[1]] - tb[r[0]])

    steps = [(start, end)]
    while end - start >= 2:
        cut = find_split(tps.symbols[start:end])
        if cut < 0:
            break
        left, right = (start, start + cut), (start + cut, end)
        # The larger region wins (a tie goes to the right one: headers come first).
        start, end = left if measure(left) > measure(right) else right
        steps.append((start, end))
    return TPSResult(tps, steps, (start, end))


def segments(tps: TPS, min_share: float = MIN_SEGMENT) -> list[tuple[int, int]]:
    """Segment the page: find the main region of the sequence, then (queue) the main regions of
    the leftover pieces before and after it, and so on; return the regions longer than
    min_share of the page, in page order."""
    total = len(tps)
    out: list[tuple[int, int]] = []
    queue: deque[tuple[int, int]] = deque([(0, total)])
    while queue:
        start, end = queue.popleft()
        if end <= start:
            continue
        ms, me = main_region(tps, start, end).main
        if me - ms > min_share * total:
            out.append((ms, me))
        if (ms, me) == (start, end):
            continue
        queue.append((start, ms))
        queue.append((me, end))
    out.sort()
    return out


def analyze(dom: Dom, with_attrs: bool = False, size: str | None = None) -> TPSResult:
    return main_region(build_tps(dom, with_attrs), size=size)


def select(dom: Dom) -> list[bool] | None:
    """Keep mask: the text nodes of the main region."""
    if not len(dom):
        return None
    return mask_from_nodes(dom, analyze(dom).main_nodes().tolist())


def select_text(dom: Dom) -> list[bool] | None:
    """TPS variant: at each split the region holding more text characters is kept."""
    if not len(dom):
        return None
    return mask_from_nodes(dom, analyze(dom, size="text").main_nodes().tolist())

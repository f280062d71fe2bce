"""Tag paths of a Dom, computed in one pass: the shared representation of TPS and CEPR.

Each node gets a path id; ids are interned as (parent path id, tag) pairs, so the paths form a
trie and a node's id is found from its parent's in O(1) - no string of the full path is built
(pages nest 100,000 deep, where "/"-joined strings would cost O(depth^2)).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..parse import TEXT, Dom


def node_label(dom: Dom, i: int, with_attrs: bool) -> str:
    """The label of node i inside a tag path: its tag, optionally with class and id."""
    t = dom.tag[i]
    if with_attrs:
        a = dom.attrs[i]
        if a:
            cls = " ".join((a.get("class") or "").split())
            ident = a.get("id") or ""
            if cls or ident:
                t = f"{t}.{cls}#{ident}"
    return t


@dataclass(slots=True)
class TagPaths:
    """Path id per node (-1 for skipped nodes) and the trie of paths."""
    node_path: list[int]  # per node; -1 when the node is skipped (script/style/head...)
    parent: list[int] = field(default_factory=list)  # per path id: the parent path id (-1: root)
    label: list[int] = field(default_factory=list)  # per path id: label symbol
    length: list[int] = field(default_factory=list)  # per path id: number of labels
    labels: list[str] = field(default_factory=list)  # label symbol -> text

    def __len__(self) -> int:
        return len(self.parent)

    def path_str(self, pid: int) -> str:
        parts = []
        while pid >= 0:
            parts.append(self.labels[self.label[pid]])
            pid = self.parent[pid]
        return "/".join(reversed(parts))

    def suffixes(self, a: int, b: int) -> tuple[list[int], list[int]]:
        """The label sequences of paths a and b after their common prefix (the trie's LCA)."""
        sa: list[int] = []
        sb: list[int] = []
        par, lab, ln = self.parent, self.label, self.length
        while ln[a] > ln[b]:
            sa.append(lab[a])
            a = par[a]
        while ln[b] > ln[a]:
            sb.append(lab[b])
            b = par[b]
        while a != b:
            sa.append(lab[a])
            a = par[a]
            sb.append(lab[b])
            b = par[b]
        sa.reverse()
        sb.reverse()
        return sa, sb


def tag_paths(dom: Dom, with_attrs: bool = False) -> TagPaths:
    """Intern the tag path of every non-skipped node, in document order of first appearance."""
    n = len(dom)
    node_path = [-1] * n
    tp = TagPaths(node_path)
    label_ids: dict[str, int] = {}
    path_ids: dict[tuple[int, int], int] = {}
    parent_of, skipped = dom.parent, dom.skipped
    for i in range(n):
        if skipped[i]:
            continue
        lab = node_label(dom, i, with_attrs)
        lid = label_ids.get(lab)
        if lid is None:
            lid = label_ids[lab] = len(tp.labels)
            tp.labels.append(lab)
        p = parent_of[i]
        ppid = node_path[p] if p >= 0 else -1
        key = (ppid, lid)
        pid = path_ids.get(key)
        if pid is None:
            pid = path_ids[key] = len(tp.parent)
            tp.parent.append(ppid)
            tp.label.append(lid)
            tp.length.append(tp.length[ppid] + 1 if ppid >= 0 else 1)
        node_path[i] = pid
    return tp


def levenshtein(a: list[int], b: list[int]) -> int:
    """Edit distance of two symbol sequences (two-row dynamic programme)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


# Suffix pairs longer than this (product of lengths) are not aligned cell by cell: their distance
# is bounded by max(len) and that bound is used (only hit on pathological, thousands-deep pages).
MAX_CELLS = 250_000


class PathSimilarity:
    """1 - normalised edit distance between two tag paths (label sequences), cached per pair.

    The common prefix of two paths never changes their edit distance, so only the suffixes after
    the trie's lowest common ancestor are aligned. norm="full" divides by the longer full path
    (the paper's normalised edit distance); norm="suffix" by the longer suffix after the common
    prefix, which keeps two deep paths that part ways early from looking alike."""

    def __init__(self, tp: TagPaths, norm: str = "full") -> None:
        self.tp = tp
        self.suffix_norm = norm == "suffix"
        self.cache: dict[tuple[int, int], float] = {}

    def __call__(self, a: int, b: int) -> float:
        if a == b:
            return 1.0
        key = (a, b) if a < b else (b, a)
        s = self.cache.get(key)
        if s is None:
            sa, sb = self.tp.suffixes(a, b)
            d = max(len(sa), len(sb)) if len(sa) * len(sb) > MAX_CELLS else levenshtein(sa, sb)
            if self.suffix_norm:
                s = 1.0 - d / max(len(sa), len(sb), 1)
            else:
                s = 1.0 - d / max(self.tp.length[a], self.tp.length[b])
            self.cache[key] = s
        return s


def content_text_nodes(dom: Dom) -> list[int]:
    """Indices of the text nodes that carry visible text (not skipped, not whitespace only)."""
    tags, texts, skipped = dom.tag, dom.text, dom.skipped
    return [i for i in range(len(dom)) if tags[i] == TEXT and not skipped[i] and not texts[i].isspace()
            and texts[i]]


def mask_from_nodes(dom: Dom, nodes: Iterable[int]) -> list[bool]:
    """A keep mask that keeps the given text nodes and every whitespace-only text node (those are
    the spaces between inline elements: dropping them would glue "About Contact" together)."""
    tags, texts = dom.tag, dom.text
    keep = [tags[i] == TEXT and (not texts[i] or texts[i].isspace()) for i in range(len(dom))]
    for i in nodes:
        keep[i] = True
    return keep

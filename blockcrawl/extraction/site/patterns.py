"""PP-WNE tag-path patterns and MPM (seed 004, Wu et al.): what a site's content nodes look like.

A pattern is a string key a text node either has or not; each text node has a handful:
  s<L>:  the last L tag names of its path ("div/p/#text"), L in PLAIN_LENGTHS;
  a<L>:  the same with class and id ("div.article-body#/p/#text"), L in ATTR_LENGTHS;
  d:     an ancestor with class or id that it lies anywhere under ("d:div.article-body#"), for the
         ANCHORS nearest such ancestors within DEPTH levels: the CSS-selector-like pattern that
         generalises to a paragraph wrapped in one more <b> or <blockquote>;
  r:     that ancestor plus the exact tag path below it.
Class values lose their digits (post-35697 -> post-) so a pattern holds across pages. A node's
keys cost O(DEPTH) whatever the nesting (a 100,000-deep page costs DEPTH steps per text node).

MPM: among the patterns that cover positives and (almost) no negatives - at most NEG_SHARE of the
text a pattern matches on the training pages may be negative, since the positives come from an
extractor, not from people - choose few patterns that cover all positives. That is set cover (NP-
complete); the greedy choice (the pattern covering the most not-yet-covered positive text, until
COVER of it is covered) is within ln(n) + 1 of the smallest cover, n the number of positives.
"""
from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from ...parse import TEXT, Dom

PLAIN_LENGTHS = (3, 5)
ATTR_LENGTHS = (2, 3, 5)
ANCHORS = 2
DEPTH = 12
NEG_SHARE = 0.1  # a pattern may match at most this share of negative text (self-training noise)
COVER = 0.99  # stop once this share of the positive text is covered
MIN_GAIN = 0.002  # ... or when the best pattern adds less than this share
MAX_PATTERNS = 40
MIN_PAGES = 2  # a pattern must cover positives on this many training pages (when there are)
_NO_DIGITS = str.maketrans("", "", "0123456789")


MEMO_MAX = 50_000  # ancestor chains remembered per memo (a Labeller's, or one shared by pages)


class Labeller:
    """Per-page cache of element labels (plain tag, and tag with class/id without digits) and of
    each parent's keys; `memo` (ancestor-label chain -> keys) may be shared by the pages of a
    site: their text nodes sit under the same few hundred chains, so a page's keys are mostly
    dictionary look-ups (the same keys at less than half the CPU on cetd's and msv's 484k text nodes,
    one memo a set)."""

    __slots__ = ("dom", "_attr", "keys", "memo", "chains")

    def __init__(self, dom: Dom, memo: dict[tuple[str, ...], list[str]] | None = None) -> None:
        self.dom = dom
        self._attr: dict[int, str] = {}
        self.keys: dict[int, list[str]] = {}  # parent element -> keys of a text node under it
        self.memo: dict[tuple[str, ...], list[str]] = memo if memo is not None else {}
        self.chains: dict[int, tuple[str, ...]] = {}  # element -> its chain of labels

    def attr(self, i: int) -> str:
        s = self._attr.get(i)
        if s is None:
            d = self.dom
            t = d.tag[i]
            a = d.attrs[i]
            s = t
            if a:
                cls = " ".join(sorted((a.get("class") or "").split())).translate(_NO_DIGITS)
                ident = (a.get("id") or "").strip().translate(_NO_DIGITS)
                if cls or ident:
                    s = f"{t}.{cls}#{ident}"
            self._attr[i] = s
        return s


def node_keys(lab: Labeller, i: int) -> list[str]:
    """The pattern keys of text node i (see the module docstring); text nodes under one parent
    share them (cached), and so do parents with the same chain of DEPTH ancestor labels (memo)."""
    d = lab.dom
    parent = d.parent
    cached = lab.keys.get(parent[i])
    if cached is not None:
        return cached
    key = chain(lab, parent[i])
    keys = lab.memo.get(key)
    if keys is None:
        if len(lab.memo) >= MEMO_MAX:
            lab.memo.clear()
        keys = lab.memo[key] = _chain_keys(key)
    lab.keys[parent[i]] = keys
    return keys


def chain(lab: Labeller, p: int) -> tuple[str, ...]:
    """Labels of element p and its ancestors, nearest first, at most DEPTH: built from the
    nearest ancestor's chain already known (each element's chain is built once: O(DEPTH) a node
    at any nesting)."""
    c = lab.chains.get(p)
    if c is not None:
        return c
    parent = lab.dom.parent
    todo: list[int] = []
    q = p
    while q >= 0 and q not in lab.chains:
        todo.append(q)
        q = parent[q]
    base = lab.chains[q] if q >= 0 else ()
    for e in reversed(todo):
        base = ((lab.attr(e),) + base)[:DEPTH]
        lab.chains[e] = base
    return base


def _chain_keys(chain: tuple[str, ...]) -> list[str]:
    """The keys of a text node whose ancestors (nearest first, at most DEPTH) have these labels;
    a label is the tag, or "tag.class#id" (a tag name holds no ".")."""
    plain = [TEXT]
    attr = [TEXT]
    keys: list[str] = []
    anchors = 0
    maxlen = max(max(PLAIN_LENGTHS), max(ATTR_LENGTHS))
    for steps, a in enumerate(chain, 1):
        tag = a.split(".", 1)[0] if "." in a else a
        if len(plain) < maxlen:
            plain.append(tag)
            attr.append(a)
        if anchors < ANCHORS and a != tag and tag not in ("html", "body"):
            keys.append("d:" + a)
            keys.append("r:" + a + ">" + "/".join(reversed(plain[:steps])))
            anchors += 1
    for n in PLAIN_LENGTHS:
        if len(plain) >= n:
            keys.append(f"s{n}:" + "/".join(reversed(plain[:n])))
    for n in ATTR_LENGTHS:
        if len(attr) >= n:
            keys.append(f"a{n}:" + "/".join(reversed(attr[:n])))
    if len(plain) < min(PLAIN_LENGTHS):  # a shallow page: its whole path
        keys.append("s:" + "/".join(reversed(plain)))
    return keys


@dataclass(slots=True)
class Sample:
    """One training text node: its keys, text weight (characters) and label."""
    keys: list[str]
    weight: int
    positive: bool
    page: int


def mpm(samples: Sequence[Sample], pages: int, neg_share: float = NEG_SHARE, cover: float = COVER,
        max_patterns: int = MAX_PATTERNS) -> list[str]:
    """Greedy set cover of the positive samples by distinguishing patterns (lazy greedy: a
    pattern's gain only shrinks, so a stale heap entry is re-scored when it comes up)."""
    pos_w: dict[str, int] = {}
    neg_w: dict[str, int] = {}
    covers: dict[str, list[int]] = {}
    pages_of: dict[str, set[int]] = {}
    total = 0
    for k, s in enumerate(samples):
        if s.positive:
            total += s.weight
            for key in s.keys:
                pos_w[key] = pos_w.get(key, 0) + s.weight
                covers.setdefault(key, []).append(k)
                pages_of.setdefault(key, set()).add(s.page)
        else:
            for key in s.keys:
                neg_w[key] = neg_w.get(key, 0) + s.weight
    if not total:
        return []
    need_pages = min(MIN_PAGES, pages)
    heap: list[tuple[int, int, str]] = []
    for key, pw in pos_w.items():
        nw = neg_w.get(key, 0)
        if nw <= neg_share * (pw + nw) and len(pages_of[key]) >= need_pages:
            heap.append((-pw, nw, key))
    heapq.heapify(heap)
    done = [False] * len(samples)
    chosen: list[str] = []
    covered = 0
    while heap and covered < cover * total and len(chosen) < max_patterns:
        neg_gain, nw, key = heapq.heappop(heap)
        gain = sum(samples[k].weight for k in covers[key] if not done[k])
        if gain != -neg_gain:  # stale: push back with its current gain
            if gain > 0:
                heapq.heappush(heap, (-gain, nw, key))
            continue
        if gain < MIN_GAIN * total:
            break
        chosen.append(key)
        covered += gain
        for k in covers[key]:
            done[k] = True
    return chosen

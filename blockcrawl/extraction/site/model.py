"""The site model: clusters of a site's pages (SMDPW + Canopy), each with its template text (found
by tree alignment) and its content patterns (PP-WNE, chosen by MPM), self-trained on what the
page extractor (`auto`) keeps.

learn(doms, auto_masks) -> SiteModel            at most learn_pages pages (the caller bounds it)
model.select(dom, auto_mask) -> (mask, cluster)  cluster -1: the page fell back to auto's mask

Why it beats auto on a site: auto decides page by page and misses content it cannot score (a
short paragraph under a photo, a second column, a list inside the article); the patterns are
learned on many pages at once, so a paragraph auto dropped on one page is kept by the pattern its
siblings on other pages taught. Auto's mistakes that are one-off (a page where it picked the
comments) are outvoted: a pattern must hold on MIN_PAGES pages and match little negative text.

Safety: a page far from every cluster centre (similarity < 1 - T1), or where the patterns keep
less than FALLBACK_RATIO of auto's text (the template changed, a page of another kind), gets
auto's mask - less its nearest cluster's template text when it has a cluster (text the cluster
shows is template stays out whichever mask is used). A cluster whose pages fall back more than
RELEARN_RATE of the time (after RELEARN_MIN pages) asks for re-learning (needs_relearn).

Bounds: trees of at most tree.MAX_NODES nodes; learning is O(pages x clusters) SMDPW calls (at
most MAX_CLUSTERS clusters) plus one linear pass per page; a page's keys cost O(DEPTH) per text
node. Measured on cetd (bbc, nytimes, arstechnica; 1,000-1,700 nodes a page): learning on 20
pages 0.10-0.16 s, selecting a page 4-5 ms (auto's selection alone: ~1.3 ms; parsing: ~5 ms).
Since (bench/site_offline.py --cpu, each page's best of 3): auto's select + the model's + text
5.5 / 7.2 / 4.5 ms a page against auto's select + text 2.1 / 3.5 / 2.4 ms and parsing 3.7 / 4.5 /
4.7 ms on cleanportaleval / cetd / msv: x1.58 / x1.47 / x1.30 auto's CPU with parsing.
The JSON holds each centre's tree (<= MAX_NODES signatures), <= MAX_PATTERNS patterns and <=
MAX_TEMPLATE template leaves per cluster: 7-13 kB measured.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...parse import TEXT, Dom
from . import patterns as pp
from .tree import ENDS_BOOST, Tree, align, build_tree, canopy

log = logging.getLogger("blockcrawl.site")

FORMAT = 1
T1 = 0.8  # canopy: a page joins a canopy when its distance (1 - SMDPW) to the centre is < T1
T2 = 0.15  # ... and leaves the pool of candidate centres when it is < T2
SURE = 0.9  # a page this similar to a centre is taken without comparing the other centres
MIN_CLUSTER = 2  # a cluster needs this many pages to tell template from content
MAX_CLUSTERS = 8
TEMPLATE_SHARE = 0.5  # aligned text found on this share of a cluster's pages is template
MAX_TEMPLATE = 2000
FALLBACK_RATIO = 0.5  # the patterns must keep this share of auto's text, else auto
COMBINE = "union"  # "model": the patterns' nodes; "union": those and auto's (template removed)
RELEARN_RATE = 0.5
RELEARN_MIN = 10
# Self-training positives: auto's nodes, and with EXPAND > 0 every text node of the deepest
# element holding EXPAND of auto's text (its article container), template nodes excepted
EXPAND = 0.0
EXPAND_MIN = 0  # ... only text nodes of this many characters, not inside a link
REGION_SHARE = 0.8  # combine "region": pattern text is added inside the element holding this share
MAX_TEXT_NODES = 5000  # text nodes per page used for training
Aligner = Callable[[int, int], tuple[float, list[tuple[int, int]]]]


def text_key(text: str) -> str:
    """A stable short hash of normalised text (template texts are stored as these)."""
    return hashlib.blake2b(" ".join(text.split()).lower().encode("utf-8"), digest_size=6).hexdigest()


@dataclass(slots=True)
class Cluster:
    centre: Tree
    patterns: list[str]
    template: dict[int, str]  # centre leaf -> text_key of its text
    pages: int = 0  # pages selected since learning
    fallbacks: int = 0
    # ancestor chain -> pattern keys, shared by the pages selected (patterns.Labeller; not saved)
    memo: dict[tuple[str, ...], list[str]] = field(default_factory=dict, repr=False, compare=False)
    hits: dict[tuple[str, ...], bool] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True)
class SiteModel:
    clusters: list[Cluster] = field(default_factory=list)
    t1: float = T1
    fallback_ratio: float = FALLBACK_RATIO
    combine: str = COMBINE
    boost: float = ENDS_BOOST
    learned_pages: int = 0
    unassigned: int = 0  # pages too far from every centre

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> str:
        return json.dumps({
            "format": FORMAT, "t1": self.t1, "fallback_ratio": self.fallback_ratio,
            "combine": self.combine, "boost": self.boost, "learned_pages": self.learned_pages,
            "clusters": [{"centre": c.centre.to_json(), "patterns": c.patterns,
                          "template": {str(k): v for k, v in sorted(c.template.items())}} for c in self.clusters],
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SiteModel:
        """A model from to_json's text; ValueError if it is not one (or of another format)."""
        try:
            obj = json.loads(text)
            if not isinstance(obj, dict) or obj.get("format") != FORMAT:
                raise ValueError(f"site model format {obj.get('format') if isinstance(obj, dict) else '?'}"
                                 f" is not {FORMAT}")
            clusters = [Cluster(Tree.from_json(c["centre"]), [str(p) for p in c["patterns"]],
                                {int(k): str(v) for k, v in c["template"].items()}) for c in obj["clusters"]]
            return cls(clusters, float(obj["t1"]), float(obj["fallback_ratio"]), str(obj["combine"]),
                       float(obj["boost"]), int(obj["learned_pages"]))
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as e:
            raise ValueError(f"not a site model: {e}") from e

    # ------------------------------------------------------------------ use
    @property
    def pages(self) -> int:
        return sum(c.pages for c in self.clusters) + self.unassigned

    @property
    def fallbacks(self) -> int:
        return sum(c.fallbacks for c in self.clusters) + self.unassigned

    def cluster_of(self, dom: Dom, tree: Tree | None = None, known: Reuse | None = None
                   ) -> tuple[int, list[tuple[int, int]]]:
        """The nearest cluster centre by SMDPW (-1 if none is within T1) and the matched leaves.
        known: alignments learning already made (learn(reuse=...)), by (centre, tree) identity."""
        if not self.clusters:
            return -1, []
        tree = tree if tree is not None else build_tree(dom)
        best, best_s, best_leaves = -1, 1.0 - self.t1, []
        for k, c in enumerate(self.clusters):  # largest cluster first (learn sorts them)
            r = known.aligned.get((id(c.centre), id(tree))) if known is not None else None
            s, leaves = r if r is not None else align(c.centre, tree, self.boost)
            if s > best_s:
                best, best_s, best_leaves = k, s, leaves
                if s >= SURE:  # no other centre can be much nearer: stop comparing
                    break
        return best, best_leaves

    def select(self, dom: Dom, auto_mask: Sequence[bool] | None, known: Reuse | None = None
               ) -> tuple[Sequence[bool] | None, int]:
        """(keep mask, cluster) of a page; cluster -1 when the page falls back: auto_mask, less
        the template text of its nearest cluster when it has one (a page far from every centre
        gets auto_mask itself). known: the trees and alignments learning made of the pages it
        learned on, so that selecting those pages right after does not make them again (the same
        masks; the trees are ~40 % and the alignments ~35 % of a selection's time)."""
        if not len(dom) or not self.clusters:
            self.unassigned += 1
            return auto_mask, -1
        tree = known.trees.get(id(dom)) if known is not None else None
        if tree is None:
            tree = build_tree(dom, texts=False)
        k, leaves = self.cluster_of(dom, tree, known)
        if k < 0:
            self.unassigned += 1
            return auto_mask, -1
        c = self.clusters[k]
        c.pages += 1
        shared = {tree.dom_index[y] for x, y in leaves
                  if x in c.template and c.template[x] == text_key(dom.text[tree.dom_index[y]])}
        mask, matched = apply(dom, c, auto_mask, self.combine, shared)
        if mask is None or matched < self.fallback_ratio * _kept_len(dom, auto_mask):
            c.fallbacks += 1
            return _without(auto_mask, shared), -1
        return mask, k

    def reset_counts(self) -> None:
        self.unassigned = 0
        for c in self.clusters:
            c.pages = c.fallbacks = 0

    def needs_relearn(self) -> bool:
        """True when a cluster (or the share of unassigned pages) falls back too often."""
        if self.pages >= RELEARN_MIN and self.fallbacks > RELEARN_RATE * self.pages:
            return True
        return any(c.pages >= RELEARN_MIN and c.fallbacks > RELEARN_RATE * c.pages for c in self.clusters)


def _without(mask: Sequence[bool] | None, drop: set[int]) -> Sequence[bool] | None:
    """auto's mask less the template nodes of the page's cluster: a page whose patterns fail
    still loses the cluster's template text auto kept (a page where auto kept only a template
    notice such as "best viewed in an up-to-date browser"; auto drops most such notices itself,
    so this changes 0-1 pages a set)."""
    if mask is None or not drop or not any(mask[i] for i in drop if i < len(mask)):
        return mask
    out = list(mask)
    for i in drop:
        if i < len(out):
            out[i] = False
    return out


def _kept_len(dom: Dom, mask: Sequence[bool] | None) -> int:
    if mask is None:
        return 0
    tags, texts, skipped = dom.tag, dom.text, dom.skipped
    return sum(len(texts[i].strip()) for i in range(min(len(mask), len(dom)))
               if mask[i] and tags[i] == TEXT and not skipped[i])


def region(dom: Dom, mask: Sequence[bool] | None, share: float) -> tuple[int, int]:
    """The node range of the deepest element holding `share` of the text mask keeps (auto's
    article container): one bottom-up pass over parent pointers, O(n) at any depth."""
    n = len(dom)
    if mask is None or not n:
        return 0, 0
    tags, texts, parent, depth = dom.tag, dom.text, dom.parent, dom.depth
    acc = [0] * n
    for i in range(min(n, len(mask))):
        if mask[i] and tags[i] == TEXT:
            acc[i] = len(texts[i].strip())
    total = sum(acc)
    if not total:
        return 0, 0
    for i in range(n - 1, 0, -1):
        p = parent[i]
        if p >= 0:
            acc[p] += acc[i]
    best = -1
    for i in range(n):
        if tags[i] != TEXT and acc[i] >= share * total and (best < 0 or depth[i] > depth[best]):
            best = i
    return (best, dom.end[best]) if best >= 0 else (0, 0)


def _in_link(dom: Dom, i: int, up: int = 4) -> bool:
    p = dom.parent[i]
    while p >= 0 and up:
        if dom.tag[p] == "a":
            return True
        p, up = dom.parent[p], up - 1
    return False


def _text_nodes(dom: Dom) -> list[int]:
    tags, texts, skipped = dom.tag, dom.text, dom.skipped
    out = []
    for i in range(len(dom)):
        if tags[i] == TEXT and not skipped[i] and texts[i] and not texts[i].isspace():
            out.append(i)
    return out


def apply(dom: Dom, c: Cluster, auto_mask: Sequence[bool] | None, combine: str = COMBINE,
          shared: set[int] | frozenset[int] = frozenset()) -> tuple[list[bool] | None, int]:
    """The cluster's mask of a page, less the template nodes `shared` - combine "model": the text
    nodes matching a pattern; "union": those and auto's; "region": auto's, and those inside auto's
    article container (the deepest element holding REGION_SHARE of auto's text); "auto": auto's
    alone - and the length of the text the patterns alone keep (what the fallback test compares
    with auto's)."""
    if not c.patterns:
        return None, 0
    pats = set(c.patterns)
    lab = pp.Labeller(dom, c.memo)
    hits = c.hits  # ancestor chain -> matches a pattern (kept across the cluster's pages)
    if len(hits) >= pp.MEMO_MAX:
        hits.clear()
    by_parent: dict[int, bool] = {}
    tags, texts, skipped, parent = dom.tag, dom.text, dom.skipped, dom.parent
    union = auto_mask if combine != "model" and auto_mask is not None else ()
    lo, hi = (region(dom, auto_mask, REGION_SHARE) if combine == "region" else
              (0, 0) if combine == "auto" else (0, len(dom)))
    keep = [False] * len(dom)
    matched = 0
    for i in range(len(dom)):  # one pass: text nodes only (whitespace is kept as is)
        if tags[i] != TEXT:
            continue
        s = texts[i]
        if not s or s.isspace():
            keep[i] = True
            continue
        if skipped[i] or i in shared:
            continue
        p = parent[i]
        h = by_parent.get(p)
        if h is None:
            chain = pp.chain(lab, p)
            h = hits.get(chain)
            if h is None:
                h = hits[chain] = any(k in pats for k in pp.node_keys(lab, i))
            by_parent[p] = h
        if h:
            matched += len(s.strip())
            if lo <= i < hi:
                keep[i] = True
        if i < len(union) and union[i]:
            keep[i] = True
    return keep, matched


@dataclass(slots=True)
class Reuse:
    """What learn() built that select() would build again for the same pages: their trees by
    Dom identity, and the alignments by (centre tree, page tree) identity. Held only while the
    learned pages are selected (it keeps their trees alive)."""

    trees: dict[int, Tree] = field(default_factory=dict)
    aligned: dict[tuple[int, int], tuple[float, list[tuple[int, int]]]] = field(default_factory=dict)


def learn(doms: Sequence[Dom], auto_masks: Sequence[Sequence[bool] | None], *, t1: float = T1, t2: float = T2,
          template_share: float = TEMPLATE_SHARE, neg_share: float = pp.NEG_SHARE,
          fallback_ratio: float = FALLBACK_RATIO, combine: str = COMBINE,
          boost: float = ENDS_BOOST, expand: float = EXPAND, expand_min: int = EXPAND_MIN,
          reuse: Reuse | None = None) -> SiteModel:
    """Cluster the pages, find each cluster's template text and content patterns. Never raises on
    odd input: a site with nothing to learn gets a model without clusters (all pages fall back).
    reuse: filled with the trees and alignments made, for select() on the same pages."""
    model = SiteModel(t1=t1, fallback_ratio=fallback_ratio, combine=combine, boost=boost,
                      learned_pages=len(doms))
    pages = [k for k, d in enumerate(doms) if len(d)]
    trees = {k: build_tree(doms[k]) for k in pages}
    cache: dict[tuple[int, int], tuple[float, list[tuple[int, int]]]] = {}

    def aligned(i: int, j: int) -> tuple[float, list[tuple[int, int]]]:
        r = cache.get((i, j))
        if r is None:
            r = cache[(i, j)] = align(trees[i], trees[j], boost)
        return r

    canopies = canopy(len(pages), lambda i, j: aligned(pages[i], pages[j])[0], t1, t2)
    # each page to the canopy whose centre is most similar to it
    best: dict[int, tuple[float, int]] = {}
    for ci, members in enumerate(canopies):
        c = pages[members[0]]
        for m in members:
            p = pages[m]
            s = 1.0 if p == c else aligned(c, p)[0]
            if p not in best or s > best[p][0]:
                best[p] = (s, ci)
    groups: dict[int, list[int]] = {}
    for p, (_, ci) in best.items():
        groups.setdefault(ci, []).append(p)
    big = sorted(((ci, g) for ci, g in groups.items() if len(g) >= MIN_CLUSTER),
                 key=lambda cg: len(cg[1]), reverse=True)[:MAX_CLUSTERS]
    for ci, members in big:
        members.sort()
        centre = pages[canopies[ci][0]]
        if centre not in members:  # it went to an earlier, equally similar canopy
            centre = members[0]
        cl = _learn_cluster(doms, auto_masks, trees, centre, members, aligned, template_share, neg_share,
                            expand, expand_min)
        if cl is not None:
            model.clusters.append(cl)
    if reuse is not None:
        reuse.trees.update((id(doms[k]), t) for k, t in trees.items())
        reuse.aligned.update(((id(trees[i]), id(trees[j])), r) for (i, j), r in cache.items())
    if not model.clusters:
        log.info("site model: nothing to learn from %d pages (no cluster of %d similar pages with "
                 "content); pages fall back to auto", len(doms), MIN_CLUSTER)
    return model


def _learn_cluster(doms: Sequence[Dom], auto_masks: Sequence[Sequence[bool] | None], trees: dict[int, Tree],
                   centre: int, members: list[int], aligned: Aligner, template_share: float,
                   neg_share: float, expand: float, expand_min: int) -> Cluster | None:
    # Template parts (seed 003: "remove the nodes shared by the pages of a cluster"): text
    # leaves of the centre aligned, on at least template_share of the other members, to a leaf
    # with the same text. By position, not by text: a show's name linked in an article's first
    # line is not the same node as that name in the menu (removing the text everywhere cost
    # 0.03 recall on tv.msnbc.com).
    ct = trees[centre]
    hits: Counter[int] = Counter()
    pairs: dict[int, list[tuple[int, int]]] = {}
    for m in members:
        if m != centre:
            pairs[m] = aligned(centre, m)[1]
            mt = trees[m]
            hits.update(x for x, y in pairs[m] if ct.text[x] and ct.text[x] == mt.text[y])
    need = max(1, math.ceil(template_share * (len(members) - 1)))
    template = {x: text_key(ct.text[x]) for x, n in hits.most_common(MAX_TEMPLATE) if n >= need}
    samples: list[pp.Sample] = []
    memo: dict[tuple[str, ...], list[str]] = {}
    for pi, m in enumerate(members):
        d, mask = doms[m], auto_masks[m]
        if m == centre:
            shared = {ct.dom_index[x] for x in template}
        else:
            mt = trees[m]
            shared = {mt.dom_index[y] for x, y in pairs[m] if x in template and ct.text[x] == mt.text[y]}
        lo, hi = region(d, mask, expand) if expand else (0, 0)
        lab = pp.Labeller(d, memo)
        for i in _text_nodes(d)[:MAX_TEXT_NODES]:
            pos = (bool(mask is not None and i < len(mask) and mask[i])
                   or (lo <= i < hi and len(d.text[i].strip()) >= expand_min and not _in_link(d, i))) \
                and i not in shared
            samples.append(pp.Sample(pp.node_keys(lab, i), len(d.text[i].strip()), pos, pi))
    pats = pp.mpm(samples, len(members), neg_share=neg_share)
    if not pats:
        return None
    return Cluster(ct, pats, template)

"""Site-level template removal in the crawl (algorithm `auto+template`): seed 003's template
detection (extraction/template.py: SMDPW page similarity, Canopy clustering, text shared by a
cluster's pages) learned once on a bounded sample of a site's first pages, then applied to every
later page one at a time.

Learning (`learn`, on at most learn_pages pages, the pipeline's `learn_pages`): template.py's
analyze_site clusters the sample (SMDPW + Canopy: <= learn_pages^2 / 2 tree comparisons, each
linear in the two pages); in each cluster of two or more pages, a block (text_keys: a text node's
nearest non-inline ancestor, keyed by its tag and own text) on at least SHARE of the cluster's
pages, and on two or more, is template. The model is each cluster's set of template keys (JSON
{"format": "template/1", "sample", "pages", "fallbacks", "clusters": [{"id", "pages",
"template": [keys]}]}, stored as the site's model like `site`'s).

Selecting a page (`TemplateModel.select(dom, auto_mask)`, linear in the page): the page joins the
cluster whose template it holds the largest share of, if that share is at least MATCH; its text
nodes whose block key is in that template are removed from auto's mask (COMBINE "and"), or from
the whole page for the page types in WHOLE_TYPES (COMBINE "typed"). A page that joins no cluster
keeps auto's mask (cluster -1): a page alone, a page type the sample did not have.

It scores within 0.001 of auto on every development set (bench/sitetpl.py, leave one set out), so
it is an option, not the default; "typed" costs listing pages (docs/decisions/0011-auto-template-not-default.md).

TemplateLearner is the pipeline's learning stage with the same protocol as extraction/site's
SiteLearner (SitePipeline uses either): auto while the first pages are collected; at
learn_pages pages (or at finish(), the site idle or the crawl over, with >= MIN_PAGES pages) the
model is learned and the collected pages are re-run with it; then the Doms are let go (a crawl of
10,000 small sites must not hold their pages until it ends) and later pages use that model, also
when it was learned at finish() on fewer than learn_pages pages. Numbers: docs/algorithms.md,
"Site template removal".
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence

from ..parse import TEXT, Dom
from .registry import LEARN_PAGES
from .text import INLINE_TAGS

FORMAT = "template/1"
MIN_PAGES = 2  # fewest pages a model is learned on (finish(); a cluster needs two to share text)
SHARE = 0.5  # a block on this share of a cluster's pages (and on 2) is template
MATCH = 0.5  # a page joins the cluster whose template it holds this share of, or more
COMBINE = "and"  # "and": auto's mask less the template; "typed": WHOLE_TYPES take the page less it
WHOLE_TYPES = frozenset({"listing", "collection"})
COMBINES = ("and", "typed", "template")

Mask = Sequence[bool] | None
Learned = list[tuple[Dom, Mask, int]]


# A text node belongs to its nearest ancestor that is not inline (table cells count as inline:
# a row is the unit, "Core Clock" alone is on every product page of a shop, "Core Clock 1,500 MHz"
# is not). Keying the owner's whole text, not the node's: on wcxb-dev's sites of 2+ pages, keying
# single text nodes removed code keywords ("import", "class" in highlighted code), spec labels and
# reference links ("PubMed") repeated across pages, 47,600 characters of gold text.
_INLINE = INLINE_TAGS | {"td", "th"}


def _key(tag: str, text: str) -> str:
    """A block's key: a hash of its tag and its whitespace-normalised own text (16 hex digits)."""
    s = tag + "|" + " ".join(text.split())
    return hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def text_keys(dom: Dom) -> dict[int, str]:
    """Dom index -> key of the block owning each visible, non-blank text node under <body>: the
    hash of that block's own text (its text nodes, not its nested blocks'). Two linear walks."""
    out: dict[int, str] = {}
    if not len(dom):
        return out
    root = dom.body()
    tags, texts, skipped, parent = dom.tag, dom.text, dom.skipped, dom.parent
    owner: dict[int, int] = {root: root}  # element -> its block (parents come before children)
    own: dict[int, list[int]] = {}  # block -> its text nodes, in order
    for i in range(root + 1, dom.end[root]):
        t = tags[i]
        p = parent[i]
        ob = owner.get(p, root)
        if t == TEXT:
            if not skipped[i] and texts[i] and not texts[i].isspace():
                own.setdefault(ob, []).append(i)
        else:
            owner[i] = ob if t in _INLINE else i
    for b, nodes in own.items():
        k = _key(tags[b], " ".join(texts[i] for i in nodes))
        for i in nodes:
            out[i] = k
    return out


class TemplateModel:
    """A site's templates: one set of text keys per cluster of its sample; counts of the pages it
    selected and of those that joined no cluster (fallbacks, as SiteModels reads them)."""

    __slots__ = ("clusters", "fallbacks", "pages", "sample", "sizes")

    def __init__(self, clusters: Sequence[frozenset[str]] = (), sample: int = 0,
                 sizes: Sequence[int] = ()) -> None:
        self.clusters = tuple(clusters)
        self.sizes = tuple(sizes) or (0,) * len(self.clusters)  # sample pages in each cluster
        self.sample = sample  # pages it was learned on
        self.pages = 0
        self.fallbacks = 0

    def select(self, dom: Dom, auto: Mask, combine: str | None = None,
               page_type: str | None = None) -> tuple[Mask, int]:
        """(mask, cluster) of a page: auto's mask less the template of the cluster it joins,
        or (auto, -1) when it joins none. page_type: the page's type, for COMBINE "typed"."""
        combine = combine or COMBINE
        self.pages += 1
        if not len(dom) or not self.clusters:
            self.fallbacks += 1
            return auto, -1
        keys = text_keys(dom)
        present = set(keys.values())
        best, best_share = -1, 0.0
        for c, tpl in enumerate(self.clusters):
            share = len(present & tpl) / len(tpl)
            if share > best_share:
                best, best_share = c, share
        if best < 0 or best_share < MATCH:
            self.fallbacks += 1
            return auto, -1
        return template_mask(dom, auto, keys, self.clusters[best], combine, page_type), best

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "sample": self.sample, "pages": self.pages,
                           "fallbacks": self.fallbacks,
                           "clusters": [{"id": i, "pages": n, "template": sorted(c)}
                                        for i, (c, n) in enumerate(zip(self.clusters, self.sizes))]},
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, s: str) -> TemplateModel:
        """ValueError on anything but this module's format."""
        try:
            d = json.loads(s)
        except ValueError as e:
            raise ValueError(f"not JSON: {e}") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} model")
        cs = d.get("clusters")
        if not isinstance(cs, list) or not all(
                isinstance(c, dict) and isinstance(c.get("template"), list) and c["template"]
                and all(isinstance(k, str) for k in c["template"]) for c in cs):
            raise ValueError("clusters must be objects with a non-empty template (a list of keys)")
        sizes = [c.get("pages") if type(c.get("pages")) is int else 0 for c in cs]
        sample = d.get("sample")
        m = cls([frozenset(c["template"]) for c in cs], sample if type(sample) is int else 0, sizes)
        for name in ("pages", "fallbacks"):
            v = d.get(name)
            if type(v) is int and v >= 0:
                setattr(m, name, v)
        return m


def template_mask(dom: Dom, auto: Mask, keys: dict[int, str], template: frozenset[str], combine: str,
                  page_type: str | None) -> list[bool]:
    """The page's mask with its template text nodes removed: from auto's mask ("and"), from the
    whole page ("template"), or from the whole page for WHOLE_TYPES and auto's otherwise
    ("typed"). A pure function of its arguments."""
    whole = combine == "template" or (combine == "typed" and page_type in WHOLE_TYPES)
    if whole or auto is None:
        keep = [False] * len(dom)
        for i, k in keys.items():
            keep[i] = k not in template
        return keep
    keep = list(auto)
    for i, k in keys.items():
        if keep[i] and k in template:
            keep[i] = False
    return keep


def learn(doms: Sequence[Dom], share: float | None = None) -> TemplateModel:
    """The model of a sample of a site's pages: seed 003's clusters (template.analyze_site:
    SMDPW + Canopy), then in each cluster of two or more pages the blocks whose key is on at least
    `share` (SHARE) of its pages and on two or more."""
    from .template import analyze_site

    share = SHARE if share is None else share
    res = analyze_site(doms, fallback=None)
    keys = [set(text_keys(d).values()) for d in doms]
    members: dict[int, list[int]] = {}
    for j, c in enumerate(res.cluster_of):
        members.setdefault(c, []).append(j)
    clusters, sizes = [], []
    for c in sorted(members):
        js = members[c]
        if len(js) < 2:
            continue
        df: Counter[str] = Counter()
        for j in js:
            df.update(keys[j])
        need = max(2, math.ceil(share * len(js)))
        tpl = frozenset(k for k, n in df.items() if n >= need)
        if tpl:
            clusters.append(tpl)
            sizes.append(len(js))
    return TemplateModel(clusters, len(doms), sizes)


def _auto(dom: Dom) -> tuple[Mask, str | None]:
    """auto's mask and the page type it selected by (nfas remembers it for the page)."""
    from .auto import select
    from .nfas import last_type

    if not len(dom):
        return None, None
    mask = select(dom)
    t = last_type(dom)
    return mask, t[0] if t is not None else None


class TemplateLearner:
    """The pipeline's learning stage for `auto+template` (SiteLearner's protocol)."""

    def __init__(self, learn_pages: int, learn_seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.learn_pages, self.learn_seconds, self.clock = learn_pages, learn_seconds, clock
        self.model: TemplateModel | None = None
        self.version = 0
        self.collecting = True
        self.collected: list[tuple[Dom, Mask]] = []  # <= learn_pages
        self._types: dict[int, str | None] = {}  # id(dom) of a collected page -> its type
        self.started = 0.0

    def load(self, model: object) -> None:
        """Use a saved model (crawl --resume): no collection."""
        assert isinstance(model, TemplateModel)
        self.model, self.collected, self.collecting = model, [], False
        self._types = {}
        self.version += 1

    def _select(self, dom: Dom, auto: Mask, ptype: str | None) -> tuple[Mask, int]:
        if self.model is None:
            return auto, -1
        return self.model.select(dom, auto, page_type=ptype)

    def page(self, dom: Dom) -> tuple[Mask, int, Learned | None]:
        auto, ptype = _auto(dom)
        mask, cluster = self._select(dom, auto, ptype)
        if not self.collecting:
            return mask, cluster, None
        if not self.collected:
            self.started = self.clock()
        self.collected.append((dom, auto))
        self._types[id(dom)] = ptype
        if len(self.collected) < self.learn_pages and self.clock() - self.started < self.learn_seconds:
            return mask, cluster, None
        learned = self._learn()
        if not learned:
            return mask, cluster, learned
        _, m, c = learned[-1]
        return m, c, learned

    def finish(self) -> Learned | None:
        """Learn now on the pages collected (>= MIN_PAGES); None when there is nothing to learn
        (not collecting, or fewer pages: they stay on auto, and collection goes on if more come)."""
        if not self.collecting or len(self.collected) < MIN_PAGES:
            return None
        return self._learn()

    def _learn(self) -> Learned | None:
        pages, types = self.collected, self._types
        self.collected, self._types, self.collecting = [], {}, False
        try:
            model = learn([d for d, _ in pages])
        except Exception as e:  # never lose the crawl to the learner: pages stay on auto
            from .site.model import log
            log.warning("site template: learning on %d pages failed (%r); pages stay on auto", len(pages), e)
            model = TemplateModel((), len(pages))
        self.model = model
        self.version += 1
        if not model.clusters:
            return []
        out: Learned = []
        for d, a in pages:
            out.append((d, *model.select(d, a, page_type=types.get(id(d)))))
        return out

    def learn_site(self, doms: Sequence[Dom]) -> list[tuple[Mask, int]]:
        """process_site: learn on the first learn_pages pages, select every page."""
        autos = [_auto(d) for d in doms]
        sample = list(doms[:self.learn_pages])
        model = learn(sample) if len(sample) >= MIN_PAGES else TemplateModel((), len(sample))
        self.load(model)
        self.collecting = False
        return [model.select(d, a, page_type=t) for d, (a, t) in zip(doms, autos)]


def select_site(doms: Sequence[Dom]) -> list[Mask]:
    """Site selector of `auto+template` (process_site, bench): learn on the first pages (the
    pipeline's default learn_pages), select every page."""
    return [m for m, _ in TemplateLearner(LEARN_PAGES, 0.0).learn_site(doms)]

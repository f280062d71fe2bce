"""Site learning (`site`) against `auto` on the site-grouped development sets.

Pages are grouped by site (cetd, msv: the id's first part; cleanportaleval: the file stem's host
part), each site runs as process_site would (learn on the first --learn-pages pages, select every
page with the model, auto where it falls back), and both are scored with the shared score.py.
--fit does leave-one-set-out: for each set, the parameters that score best on the two others,
scored on it.

    PYTHONPATH=. python bench/site_offline.py                      # default parameters
    PYTHONPATH=. python bench/site_offline.py --fit                # leave one set out
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

from common import BENCH  # noqa: E402 - first: it puts the repository on sys.path

from blockcrawl.extraction import site as site_pkg  # noqa: E402
from blockcrawl.extraction.api import main_content  # noqa: E402
from blockcrawl.extraction.auto import select as auto_select  # noqa: E402
from blockcrawl.extraction.site import model as site_model  # noqa: E402
from blockcrawl.extraction.site import patterns as site_patterns  # noqa: E402
from blockcrawl.parse import Dom, load  # noqa: E402

DATASETS = ("cleanportaleval", "cetd", "msv")
GRID: dict[str, tuple[Any, ...]] = {
    # what a page keeps: auto's nodes and the patterns' ("union"), the patterns' only inside auto's
    # article container ("region"), auto's alone ("auto"), the patterns' alone ("model"); always
    # less the cluster's template text. (The SMDPW end boost, 0 vs 1, changed nothing measurable.)
    "combine": ("union", "region", "auto", "model"),
    "expand": (0.0, 0.8),  # positives: auto's nodes / also the rest of auto's article container
}


def site_of(dataset: str, page_id: str) -> str:
    if dataset == "cleanportaleval":
        return page_id.split("/", 1)[-1].split("_")[0]
    return page_id.split("/", 1)[0]


class Prepared:
    """A set's pages parsed once, with auto's masks and texts and auto's time per page."""

    def __init__(self, bench: Path, dataset: str, limit: int | None) -> None:
        sys.path.insert(0, str(bench))
        import score

        self.score = score
        self.dataset = dataset
        self.gold = score.load_gold(str(bench / "data"), dataset)
        self.sites: dict[str, list[int]] = {}
        self.ids: list[str] = []
        self.doms: list[Dom] = []
        self.autos: list[Any] = []
        self.auto_text: dict[str, str] = {}
        self.autos_t: list[Any] = []  # auto's masks keeping the title heading (param title)
        self.auto_text_t: dict[str, str] = {}
        self.auto_s = 0.0  # parse + select + text, all pages
        self.main_s: dict[int, float] = {}  # per page: auto's text step (site replaces it)
        self.learn_s = 0.0  # run_site's learning CPU, all sites
        for rec in self.gold:
            s = site_of(dataset, rec["id"])
            if limit and len(self.sites.get(s, [])) >= limit:
                continue
            html = score.read_page(str(bench / "data"), dataset, rec)
            t0 = time.process_time()
            dom = load(html, rec.get("url"))
            mask = auto_select(dom) if len(dom) else None
            t1 = time.process_time()
            text = main_content(dom, keep=mask)[1] if len(dom) else ""
            t2 = time.process_time()
            self.auto_s += t2 - t0
            self.main_s[len(self.ids)] = t2 - t1
            self.sites.setdefault(s, []).append(len(self.ids))
            self.ids.append(rec["id"])
            self.doms.append(dom)
            self.autos.append(mask)
            self.auto_text[rec["id"]] = text
        self.gold = [g for g in self.gold if g["id"] in self.auto_text]

    def run_site(self, learn_pages: int, params: dict[str, Any]) -> tuple[dict[str, str], float, dict[str, int]]:
        """Predictions of `site`, its extra CPU seconds (learning + selection + its own text
        step where it replaces auto's) and counts."""
        preds: dict[str, str] = {}
        extra = 0.0
        counts = {"pages": 0, "model": 0, "less template": 0, "clusters": 0}
        self.learn_s = 0.0
        title = bool(params.get("title"))
        if title and not self.autos_t:
            for i, d in enumerate(self.doms):
                m = auto_select(d, keep_title=True) if len(d) else None
                self.autos_t.append(m)
                self.auto_text_t[self.ids[i]] = main_content(d, keep=m)[1] if len(d) else ""
        autos_all = self.autos_t if title else self.autos
        auto_text = self.auto_text_t if title else self.auto_text
        learn_kw = {k: v for k, v in params.items() if k in ("t1", "t2", "template_share", "neg_share",
                                                                 "fallback_ratio", "combine", "boost", "expand", "expand_min")}
        from blockcrawl.extraction.site import tree as site_tree
        site_tree.MAX_NODES = params.get("max_nodes", 2000)
        site_model.REGION_SHARE = params.get("region_share", 0.8)
        for idx in self.sites.values():
            t0 = time.process_time()
            doms = [self.doms[i] for i in idx]
            autos = [autos_all[i] for i in idx]
            m = site_pkg.learn(doms[:learn_pages], autos[:learn_pages], **learn_kw)
            self.learn_s += time.process_time() - t0
            counts["clusters"] += len(m.clusters)
            for i, d, a in zip(idx, doms, autos):
                counts["pages"] += 1
                mask, cluster = m.select(d, a)
                counts["model"] += cluster >= 0
                if mask is a:
                    preds[self.ids[i]] = auto_text[self.ids[i]]
                else:
                    counts["less template"] += cluster < 0
                    preds[self.ids[i]] = main_content(d, keep=mask)[1]
                    extra -= self.main_s[i]
            extra += time.process_time() - t0
        return preds, extra, counts

    def cpu(self, learn_pages: int, reps: int = 3) -> tuple[float, float, float]:
        """ms/page: parsing, auto (select + text), site (auto's select + the model's + text),
        each page's best of `reps` interleaved runs (the machine is shared: single runs vary by
        +-30%); the models are learned first and not counted."""
        bench = Path(self.score.__file__).parent
        pt = time.process_time
        tp = ta = ts = 0.0
        for idx in self.sites.values():
            m = site_pkg.learn([self.doms[i] for i in idx[:learn_pages]], [self.autos[i] for i in idx[:learn_pages]])
            for i in idx:
                d = self.doms[i]
                if not len(d):
                    continue
                html = self.score.read_page(str(bench / "data"), self.dataset, self.ids[i])
                bp = ba = bs = math.inf
                for _ in range(reps):
                    t0 = pt()
                    load(html)
                    t1 = pt()
                    main_content(d, keep=auto_select(d))
                    t2 = pt()
                    mask, _ = m.select(d, auto_select(d))
                    main_content(d, keep=mask)
                    t3 = pt()
                    bp, ba, bs = min(bp, t1 - t0), min(ba, t2 - t1), min(bs, t3 - t2)
                tp, ta, ts = tp + bp, ta + ba, ts + bs
        n = max(1, len(self.ids)) / 1000
        return tp / n, ta / n, ts / n

    def run_template(self, mode: str) -> dict[str, str]:
        """The `template` algorithm (text shared in a cluster dropped, cepr for lone pages) per
        site, its similarity the linear positional one ("smdpw") or the DP alignment ("dp")."""
        from blockcrawl.extraction.template import analyze_site

        preds: dict[str, str] = {}
        for idx in self.sites.values():
            masks = analyze_site([self.doms[i] for i in idx], mode=mode).masks
            for i, m in zip(idx, masks):
                preds[self.ids[i]] = main_content(self.doms[i], keep=m)[1] if len(self.doms[i]) else ""
        return preds

    def f1(self, preds: dict[str, str]) -> dict[str, float]:
        return self.score.score(self.dataset, preds, gold=self.gold)  # type: ignore[no-any-return]


_TOKEN = re.compile(r"\w+")


def _gold_node(text: str, shingles: set[tuple[str, ...]], short: set[tuple[str, ...]]) -> bool:
    """A text node is gold when half its 4-token shingles are the gold's (1-3 tokens: in it)."""
    t = _TOKEN.findall(text)
    if len(t) < 4:
        return bool(t) and tuple(t) in short
    sh = [tuple(t[k:k + 4]) for k in range(len(t) - 3)]
    return sum(x in shingles for x in sh) >= 0.5 * len(sh)


def diagnose(p: Prepared, learn_pages: int) -> None:
    """Text nodes of the pages near a cluster centre, by: auto keeps it (A), gold (G, shingle
    match), template (T: aligned to the centre's template text), inside auto's article container
    (R: the deepest element holding half of auto's text); characters, and F1 of masks built on
    them (auto elsewhere). `comment`/`caption` are class/id words on the 4 nearest ancestors:
    a convention probe, not a rule."""
    from collections import Counter

    from blockcrawl.extraction.site.tree import build_tree
    from blockcrawl.parse import TEXT

    rules: dict[str, Any] = {
        "auto less template": lambda a, g, t, r, c: a and not t,
        "+ per-page text in auto's container": lambda a, g, t, r, c: (a or r) and not t,
        "+ per-page text under comment": lambda a, g, t, r, c: (a or "comment" in c) and not t,
        "+ per-page text under caption": lambda a, g, t, r, c: (a or "caption" in c) and not t,
        "node oracle (gold nodes), clustered pages": lambda a, g, t, r, c: g,
    }
    chars: Counter[str] = Counter()
    preds: dict[str, dict[str, str]] = {k: {} for k in rules}
    gold = {g["id"]: g["text"] for g in p.gold}
    clustered = 0
    for idx in p.sites.values():
        m = site_pkg.learn([p.doms[i] for i in idx[:learn_pages]], [p.autos[i] for i in idx[:learn_pages]])
        for i in idx:
            d, a, pid = p.doms[i], p.autos[i], p.ids[i]
            k = -1
            if len(d) and m.clusters:
                tree = build_tree(d)
                k, leaves = m.cluster_of(d, tree)
            if k < 0:
                for name in rules:
                    preds[name][pid] = p.auto_text[pid]
                continue
            clustered += 1
            c = m.clusters[k]
            shared = {tree.dom_index[y] for x, y in leaves
                      if x in c.template and c.template[x] == site_model.text_key(tree.text[y])}
            gt = _TOKEN.findall(gold[pid])
            sh = {tuple(gt[j:j + 4]) for j in range(len(gt) - 3)}
            short = {tuple(gt[j:j + n]) for n in (1, 2, 3) for j in range(len(gt) - n + 1)}
            lo, hi = site_model.region(d, a, 0.5)
            lab = site_patterns.Labeller(d)
            keeps = {name: [d.tag[j] == TEXT and not d.text[j].strip() for j in range(len(d))] for name in rules}
            for j in site_model._text_nodes(d):
                w = len(d.text[j].strip())
                fa = bool(a is not None and j < len(a) and a[j])
                fg = _gold_node(d.text[j], sh, short)
                ft, fr = j in shared, lo <= j < hi
                q, anc = d.parent[j], []
                while q >= 0 and len(anc) < 4:
                    anc.append(lab.attr(q).lower())
                    q = d.parent[q]
                cls = " ".join(anc)
                chars[("G" if fg else "-") + ("A" if fa else "-") + ("T" if ft else "-") + ("R" if fr else "-")] += w
                for name, rule in rules.items():
                    if rule(fa, fg, ft, fr, cls):
                        keeps[name][j] = True
            for name in rules:
                preds[name][pid] = main_content(d, keep=keeps[name])[1]
    g_all = sum(w for key, w in chars.items() if key[0] == "G") or 1
    n_all = sum(w for key, w in chars.items() if key[0] == "-") or 1

    def share(pred: Any, of: int) -> str:
        return f"{sum(w for key, w in chars.items() if pred(key)) / of:.3f}"

    print(f"\n### {p.dataset}: {clustered}/{len(p.ids)} pages near a cluster centre\n")
    print("| text on those pages | share of their gold chars | share of their non-gold chars |\n|---|---|---|")
    print(f"| auto keeps | {share(lambda k: k[0] == 'G' and k[1] == 'A', g_all)} | "
          f"{share(lambda k: k[0] == '-' and k[1] == 'A', n_all)} |")
    print(f"| auto keeps, template | {share(lambda k: k[0] == 'G' and k[1] == 'A' and k[2] == 'T', g_all)} | "
          f"{share(lambda k: k[0] == '-' and k[1] == 'A' and k[2] == 'T', n_all)} |")
    for label, cond in (("dropped, template", lambda k: k[2] == "T"),
                        ("dropped, per-page, in auto's container", lambda k: k[2] == "-" and k[3] == "R"),
                        ("dropped, per-page, elsewhere", lambda k: k[2] == "-" and k[3] == "-")):
        g = share(lambda k, c=cond: k[0] == "G" and k[1] == "-" and c(k), g_all)
        n = share(lambda k, c=cond: k[0] == "-" and k[1] == "-" and c(k), n_all)
        print(f"| {label} | {g} | {n} |")
    print("\n| mask on those pages (auto elsewhere) | F1 | P | R |\n|---|---|---|---|")
    res = p.f1(p.auto_text)
    print(f"| auto | {res['f1']:.3f} | {res['precision']:.3f} | {res['recall']:.3f} |")
    for name in rules:
        res = p.f1(preds[name])
        print(f"| {name} | {res['f1']:.3f} | {res['precision']:.3f} | {res['recall']:.3f} |", flush=True)


def combos(grid: dict[str, tuple[Any, ...]]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]


def row(ds: str, name: str, res: dict[str, float], extra: str = "") -> str:
    return f"| {ds} | {name} | {res['f1']:.3f} | {res['precision']:.3f} | {res['recall']:.3f} | {extra} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Score the `site` algorithm (site learning) against "
                                 "`auto` on the site-grouped development sets.")
    ap.add_argument("--bench", type=Path, default=BENCH)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--learn-pages", type=int, default=site_pkg.LEARN_PAGES)
    ap.add_argument("--limit", type=int, help="at most this many pages per site (quick runs)")
    ap.add_argument("--fit", action="store_true", help="leave-one-set-out fit over GRID")
    ap.add_argument("--template", nargs="*", default=[], choices=("smdpw", "even", "dp"),
                    help="also score the `template` algorithm with these similarities")
    ap.add_argument("--grid", nargs="+", metavar="NAME=V1,V2",
                    help="parameter values to try instead of GRID (JSON values: combine=\"union\")")
    ap.add_argument("--per-site", type=int, default=0, metavar="N",
                    help="also F1 per site of at least N pages, auto vs site")
    ap.add_argument("--cpu", action="store_true",
                    help="CPU per page, each page's best of 3 interleaved runs: parse, auto (select + "
                    "text) vs site (auto's select + the model's + text), learning excluded")
    ap.add_argument("--diagnose", action="store_true",
                    help="where auto's missed gold is (template / per-page text, inside auto's article "
                    "container or not) and what rules built on that would score")
    args = ap.parse_args(argv)
    if not (args.bench / "score.py").exists():
        print(f"site bench: no score.py under {args.bench}", file=sys.stderr)
        return 2
    prepared = {}
    for ds in args.datasets:
        t0 = time.time()
        prepared[ds] = Prepared(args.bench, ds, args.limit)
        print(f"{ds}: {len(prepared[ds].ids)} pages, {len(prepared[ds].sites)} sites, "
              f"prepared in {time.time() - t0:.0f} s", file=sys.stderr)
    if args.cpu:
        print("| dataset | parse ms/page | auto ms/page | site ms/page | site / auto, with parse | without |\n"
              "|---|---|---|---|---|---|")
        for p in prepared.values():
            parse, auto_ms, site_ms = p.cpu(args.learn_pages)
            print(f"| {p.dataset} | {parse:.1f} | {auto_ms:.1f} | {site_ms:.1f} | "
                  f"x{(parse + site_ms) / (parse + auto_ms):.2f} | x{site_ms / auto_ms:.2f} |", flush=True)
        return 0
    if args.diagnose:
        for p in prepared.values():
            diagnose(p, args.learn_pages)
        return 0
    print("| dataset | extractor | F1 | P | R | notes |\n|---|---|---|---|---|---|")
    grid = combos(GRID) if args.fit else [{}]
    if args.grid:
        grid = combos({k: tuple(json.loads(v) for v in vs.split(",")) for k, _, vs in
                       (g.partition("=") for g in args.grid)})
    results: dict[tuple[str, int], float] = {}
    for ds, p in prepared.items():
        auto = p.f1(p.auto_text)
        print(row(ds, "auto", auto, f"{1000 * p.auto_s / max(1, len(p.ids)):.1f} ms CPU/page"))
        for mode in args.template:
            print(row(ds, f"template ({mode})", p.f1(p.run_template(mode))), flush=True)
        for gi, params in enumerate(grid):
            preds, extra, counts = p.run_site(args.learn_pages, params)
            res = p.f1(preds)
            results[(ds, gi)] = res["f1"] - auto["f1"]
            cpu = (p.auto_s + extra) / max(p.auto_s, 1e-9)
            sel = (p.auto_s + extra - p.learn_s) / max(p.auto_s, 1e-9)
            print(row(ds, f"site {params or 'defaults'}", res,
                      f"{counts['model']}/{counts['pages']} pages by model (+{counts['less template']} auto less "
                      f"template), {counts['clusters']} clusters, "
                      f"CPU x{cpu:.2f} of auto (x{sel:.2f} without learning)"), flush=True)
            if args.per_site:
                for site, idx in sorted(p.sites.items(), key=lambda si: -len(si[1])):
                    if len(idx) >= args.per_site:
                        ids = {p.ids[i] for i in idx}
                        gold = [g for g in p.gold if g["id"] in ids]
                        a, b = (p.score.score(ds, {i: pr[i] for i in ids}, gold=gold) for pr in (p.auto_text, preds))
                        print(row(ds, f"{site} ({len(idx)} pages): auto / site", a,
                                  f"site {b['f1']:.3f} / {b['precision']:.3f} / {b['recall']:.3f}"))
    if args.fit and len(prepared) > 1:
        print("\nleave one set out (fit on the others by mean F1 gain over auto):")
        for ds in prepared:
            others = [o for o in prepared if o != ds]
            gains = [sum(results[(o, gi)] for o in others) / len(others) for gi in range(len(grid))]
            best = max(range(len(grid)), key=gains.__getitem__)
            own = max(range(len(grid)), key=lambda gi: results[(ds, gi)])
            print(f"- {ds}: fit {grid[best]} (gain on others {gains[best]:+.3f}); "
                  f"gain on {ds}: {results[(ds, best)]:+.3f} held out, {results[(ds, own)]:+.3f} in-sample "
                  f"({grid[own]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from blockcrawl.extraction import site as site_pkg  # noqa: E402
from blockcrawl.extraction.api import main_content  # noqa: E402
from blockcrawl.extraction.auto import select as auto_select  # noqa: E402
from blockcrawl.extraction.site import model as site_model  # noqa: E402
from blockcrawl.extraction.site import patterns as site_patterns  # noqa: E402
from blockcrawl.parse import Dom, load  # noqa: E402

DEFAULT_BENCH = Path(os.environ.get("BLOCKCRAWL_BENCH") or ROOT.parent / "shared" / "bench")
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


def combos(grid: dict[str, tuple[Any, ...]]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]


def row(ds: str, name: str, res: dict[str, float], extra: str = "") -> str:
    return f"| {ds} | {name} | {res['f1']:.3f} | {res['precision']:.3f} | {res['recall']:.3f} | {extra} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Score the `site` algorithm (site learning) against "
                                 "`auto` on the site-grouped development sets.")
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--learn-pages", type=int, default=site_pkg.LEARN_PAGES)
    ap.add_argument("--limit", type=int, help="at most this many pages per site (quick runs)")
    ap.add_argument("--fit", action="store_true", help="leave-one-set-out fit over GRID")
    ap.add_argument("--template", nargs="*", default=[], choices=("smdpw", "even", "dp"),
                    help="also score the `template` algorithm with these similarities")
    ap.add_argument("--grid", nargs="+", metavar="NAME=V1,V2",
                    help="parameter values to try instead of GRID (JSON values: combine=\"union\")")
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
    if args.fit and len(prepared) > 1:
        print("\nleave one set out (fit on the others by mean F1 gain over auto):")
        for ds in prepared:
            others = [o for o in prepared if o != ds]
            gains = [sum(results[(o, gi)] for o in others) / len(others) for gi in range(len(grid))]
            best = max(range(len(grid)), key=gains.__getitem__)
            print(f"- {ds}: fit {grid[best]} (gain on others {gains[best]:+.3f}); "
                  f"gain on {ds}: {results[(ds, best)]:+.3f}")
    _ = (site_model, site_patterns)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Site template removal (`auto+template`, extraction/sitetemplate.py) against `auto` on the
site-grouped development sets, offline, as the crawl runs it.

Pages are grouped by site (cetd, msv: the id's first part; cleanportaleval: the file stem's host
part; wcxb-dev: the id's host part; aeb, cleaneval-dev: the URL's host) and taken in id order. A
site of at least --min-pages pages learns its model on its first --learn-pages pages and every
page of it is selected by the model (the crawl revises the sample's pages when it learns; a site
smaller than learn_pages learns when it goes idle or the crawl ends, on all its pages); a smaller
site stays on auto. Scores: the shared score.py (4-gram shingle F1) on every set and WCXB's word
F1 (bench/extraction.word_f1) per page type on wcxb-dev. Reads ../shared/bench (read-only).

--fit: leave one set out over GRID: for each set, the parameters with the best mean gain over auto
on the other sets (shingle F1; wcxb-dev's word F1), reported on it.

    PYTHONPATH=. python bench/sitetpl.py                      # defaults, every set
    PYTHONPATH=. python bench/sitetpl.py --fit                # the grid, leave one set out
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from common import BENCH, ROOT  # noqa: E402 - first: it puts the repository on sys.path

sys.path.insert(0, str(ROOT / "bench"))

from extraction import page_types, word_f1  # noqa: E402

from blockcrawl.extraction import sitetemplate as st  # noqa: E402
from blockcrawl.extraction.api import main_content  # noqa: E402
from blockcrawl.parse import load  # noqa: E402

SETS = ("cleanportaleval", "cetd", "msv", "wcxb-dev", "aeb", "cleaneval-dev")
GRID: dict[str, tuple[Any, ...]] = {
    "combine": ("and", "typed"),
    "match": (0.5, 0.7),
    "share": (0.2, 0.5),
    "min_pages": (2, 3, 5),
}


def site_of(ds: str, rec: dict[str, Any]) -> str:
    if ds == "cleanportaleval":
        return str(rec["id"]).split("/", 1)[-1].split("_")[0]
    if ds in ("aeb", "cleaneval-dev"):
        return (urlsplit(rec.get("url") or "").hostname or str(rec["id"])).lower()
    return str(rec["id"]).split("/", 1)[0]


def combos(grid: dict[str, tuple[Any, ...]]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, v)) for v in itertools.product(*(grid[k] for k in keys))]


def key(p: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in p.items())


def run_set(bench: Path, ds: str, grid: dict[str, tuple[Any, ...]], learn_pages: int) -> dict[str, Any]:
    """{'auto': preds, key(params): preds, ...}, the gold, the site sizes and timing."""
    import score

    gold = score.load_gold(str(bench / "data"), ds)
    groups: dict[str, list[dict[str, Any]]] = {}
    for rec in gold:
        groups.setdefault(site_of(ds, rec), []).append(rec)
    learn_grid = {k: v for k, v in grid.items() if k != "min_pages"}
    variants = combos(learn_grid)
    preds: dict[str, dict[str, str]] = {"auto": {}}
    size: dict[str, int] = {}
    t_learn = t_select = 0.0
    for recs in groups.values():
        recs.sort(key=lambda r: str(r["id"]))
        doms = [load(score.read_page(str(bench / "data"), ds, r), r.get("url")) for r in recs]
        autos = [st._auto(d) for d in doms]
        texts: dict[bytes, str] = {}

        def text(d: Any, mask: Any, texts: dict[bytes, str] = texts) -> str:
            if not len(d):
                return ""
            k = bytes(mask) if mask is not None else b"-"
            k = k + id(d).to_bytes(8, "little")
            if k not in texts:
                texts[k] = main_content(d, keep=mask)[1]
            return texts[k]

        for r, d, (a, _) in zip(recs, doms, autos):
            preds["auto"][r["id"]] = text(d, a)
            size[r["id"]] = len(recs)
        models: dict[float, st.TemplateModel] = {}
        for p in variants:
            name = key(p)
            out = preds.setdefault(name, {})
            if len(recs) < 2:
                for r in recs:
                    out[r["id"]] = preds["auto"][r["id"]]
                continue
            if p["share"] not in models:
                t0 = time.process_time()
                models[p["share"]] = st.learn(doms[:learn_pages], p["share"])
                t_learn += time.process_time() - t0
            m = models[p["share"]]
            st.MATCH = p["match"]
            for r, d, (a, t) in zip(recs, doms, autos):
                t0 = time.process_time()
                mask, _ = m.select(d, a, p["combine"], t)
                t_select += time.process_time() - t0
                out[r["id"]] = text(d, mask)
    types = page_types(bench / "data") if ds == "wcxb-dev" else {}
    return {"gold": gold, "preds": preds, "size": size, "types": types, "learn_s": t_learn,
            "select_s": t_select}


_PAGE: dict[tuple[str, str], tuple[tuple[float, float, float], float]] = {}


def page_score(g: dict[str, Any], text: str) -> tuple[tuple[float, float, float], float]:
    """One page's shingle (tp, fp, fn) and word F1, memoised (variants share most texts)."""
    import score

    k = (str(g["id"]), text)
    if k not in _PAGE:
        _PAGE[k] = (score.shingle_counts(g.get("text") or "", text), word_f1(g.get("text") or "", text))
    return _PAGE[k]


def scores(res: dict[str, Any], preds: dict[str, str], subset: set[str] | None = None) -> dict[str, float]:
    """Shingle F1 (score.py's per-document macro rule), and on wcxb-dev word F1 by page type."""
    import score

    gold = [g for g in res["gold"] if subset is None or g["id"] in subset]
    per = [page_score(g, preds.get(g["id"]) or "") for g in gold]
    out = {"f1": score.aggregate_shingles([t for t, _ in per])["f1"]}
    if res["types"]:
        by: dict[str, list[float]] = {}
        for g, (_, f) in zip(gold, per):
            by.setdefault(res["types"].get(g["id"], "?"), []).append(f)
            by.setdefault("all", []).append(f)
        out.update({f"w.{t}": statistics.mean(v) for t, v in by.items()})
    return out


def with_min(res: dict[str, Any], name: str, min_pages: int) -> dict[str, str]:
    """A variant's predictions with sites smaller than min_pages left on auto."""
    p, a = res["preds"][name], res["preds"]["auto"]
    return {i: (p[i] if res["size"][i] >= min_pages else a[i]) for i in p}


def objective(res: dict[str, Any], preds: dict[str, str]) -> float:
    s = scores(res, preds)
    return s.get("w.all", s["f1"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="auto+template vs auto on the site-grouped sets (offline)")
    ap.add_argument("--bench", type=Path, default=BENCH)
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    ap.add_argument("--learn-pages", type=int, default=20)
    ap.add_argument("--fit", action="store_true", help="the GRID, leave one set out")
    ap.add_argument("--save", type=Path, help="write the predictions (pickle) for --load")
    ap.add_argument("--load", type=Path, help="score saved predictions instead of extracting")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.bench))
    grid = GRID if args.fit else {"combine": (st.COMBINE,), "match": (st.MATCH,),
                                  "share": (st.SHARE,), "min_pages": (st.MIN_PAGES,)}
    results: dict[str, dict[str, Any]] = {}
    if args.load:
        import pickle
        results = {ds: r for ds, r in pickle.loads(args.load.read_bytes()).items() if ds in args.sets}
    for ds in args.sets:
        if ds in results:
            continue
        t0 = time.process_time()
        results[ds] = run_set(args.bench, ds, grid, args.learn_pages)
        r = results[ds]
        multi = sum(1 for v in r["size"].values() if v >= 2)
        print(f"{ds}: {len(r['gold'])} pages, {multi} on sites of 2+, {time.process_time() - t0:.0f} s CPU "
              f"(learn {r['learn_s']:.1f} s, select {r['select_s']:.1f} s)", file=sys.stderr, flush=True)
    if args.save:
        import pickle
        args.save.write_bytes(pickle.dumps(results))
    params = combos(grid)
    # objective of every (set, params) and of auto
    obj: dict[str, dict[str, float]] = {}
    for ds, r in results.items():
        obj[ds] = {"auto": objective(r, r["preds"]["auto"])}
        for p in params:
            name = key({k: v for k, v in p.items() if k != "min_pages"})
            obj[ds][key(p)] = objective(r, with_min(r, name, p["min_pages"]))
    print("| set | params | auto | auto+template | gain |")
    print("|---|---|---|---|---|")
    chosen: dict[str, dict[str, Any]] = {}
    for ds in results:
        if args.fit and len(results) > 1:
            others = [o for o in results if o != ds]
            best = max(params, key=lambda p: statistics.mean(obj[o][key(p)] - obj[o]["auto"] for o in others))
        else:
            best = params[0]
        chosen[ds] = best
        print(f"| {ds} | {key(best)} | {obj[ds]['auto']:.4f} | {obj[ds][key(best)]:.4f} | "
              f"{obj[ds][key(best)] - obj[ds]['auto']:+.4f} |")
    if args.fit:
        print("\nmean gain over auto on every set (in-sample), best 12:")
        ranked = sorted(params, key=lambda p: -statistics.mean(obj[o][key(p)] - obj[o]["auto"] for o in results))
        for p in ranked[:12]:
            print(f"  {key(p):50s} " + " ".join(f"{o} {obj[o][key(p)] - obj[o]['auto']:+.4f}" for o in results))
    # detail: every set's scores for auto and the chosen params, all pages and sites of 2+
    print("\n| set | pages | extractor | shingle F1 | " + " | ".join(
        f"WCXB {t}" for t in ("article", "documentation", "service", "forum", "collection", "listing",
                              "product", "all")) + " |")
    print("|---|---|---|---|" + "---|" * 8)
    for ds, r in results.items():
        p = chosen[ds]
        name = key({k: v for k, v in p.items() if k != "min_pages"})
        multi = {i for i, v in r["size"].items() if v >= 2}
        for label, subset in (("all", None), ("sites of 2+", multi)):
            for ext, preds in (("auto", r["preds"]["auto"]), ("auto+template", with_min(r, name, p["min_pages"]))):
                s = scores(r, preds, subset)
                ws = " | ".join(f"{s[f'w.{t}']:.3f}" if f"w.{t}" in s else "" for t in
                                ("article", "documentation", "service", "forum", "collection", "listing",
                                 "product", "all"))
                n = len(r["gold"]) if subset is None else len(subset)
                print(f"| {ds} | {label} ({n}) | {ext} | {s['f1']:.4f} | {ws} |")
    if "wcxb-dev" in results:
        r = results["wcxb-dev"]
        c = Counter(r["types"].get(i, "?") for i, v in r["size"].items() if v >= 2)
        print(f"\nwcxb-dev pages on sites of 2+ by type: {dict(c)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

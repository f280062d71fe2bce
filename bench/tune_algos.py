"""Parameter sweep for the tag-path algorithms on the development sets (private tuning aid).

Reads ../shared/bench (override with BLOCKCRAWL_BENCH). Prints mean F1 over the dev sets for each
setting: PYTHONPATH=. python bench/tune_algos.py cepr|cetr|tps
"""
from __future__ import annotations

import importlib
import itertools
import sys

from common import BENCH  # noqa: E402 - first: it puts the repository on sys.path

from blockcrawl.extraction import blocks_from_dom, cepr, cetr, tps
from blockcrawl.extraction.tagpath import mask_from_nodes
from blockcrawl.parse import load

sys.path.insert(0, str(BENCH))
score = importlib.import_module("score")
DATA = str(BENCH / "data")
SETS = ["aeb", "cleaneval-dev", "cleanportaleval"]


def load_all():
    out = {}
    for ds in SETS:
        out[ds] = {r["id"]: load(score.read_page(DATA, ds, r)) for r in score.load_gold(DATA, ds)}
    return out


def evaluate(doms, sel):
    f1s = []
    for ds, pages in doms.items():
        preds = {pid: "\n\n".join(b.text for b in blocks_from_dom(d, keep=sel(d))) for pid, d in pages.items()}
        f1s.append(score.score(ds, preds, data_dir=DATA)["f1"])
    return f1s


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in ("cepr", "cetr", "tps", "template"):
        print(__doc__)
        raise SystemExit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    what = sys.argv[1]
    doms = load_all()
    if what == "cepr":
        grid = itertools.product([2.0, 3.0], [1.0, 1.3, 1.6, 2.0], ["etpr"], ["full"], [1.0, 4.0])
        for sigma, lam, feat, norm, power in grid:
            def sel(d, a=(sigma, lam, feat, norm, power)):
                r = cepr.analyze(d, sigma=a[0], lam=a[1], feature=a[2], sim_norm=a[3], sim_power=a[4])
                return mask_from_nodes(d, r.nodes[r.content].tolist())
            f = evaluate(doms, sel)
            print(f"sigma={sigma} lam={lam} {feat} {norm} pow={power}: " + " ".join(f"{x:.3f}" for x in f)
                  + f"  mean={sum(f) / len(f):.3f}", flush=True)
    elif what == "cetr":
        for sigma, k in itertools.product([0.5, 1.0, 2.0], [2, 3, 4]):
            def sel(d, a=(sigma, k)):
                r = cetr.analyze(d, sigma=a[0], k=a[1])
                return mask_from_nodes(d, (i for li in r.content.nonzero()[0].tolist() for i in r.lines.nodes[li]))
            f = evaluate(doms, sel)
            print(f"sigma={sigma} k={k}: " + " ".join(f"{x:.3f}" for x in f) + f"  mean={sum(f) / len(f):.3f}", flush=True)
    elif what == "template":
        from urllib.parse import urlparse

        from blockcrawl.extraction import template
        hosts = {}
        for ds in SETS:
            for r in score.load_gold(DATA, ds):
                hosts[r["id"]] = urlparse(r.get("url") or "").netloc.removeprefix("www.")
        grid = [("smdpw", 0.9, 0.6, 0.5), ("even", 0.9, 0.6, 0.5), ("smdpw", 0.7, 0.4, 0.5),
                ("smdpw", 0.95, 0.8, 0.5), ("smdpw", 0.9, 0.6, 0.3), ("smdpw", 0.9, 0.6, 0.8),
                ("smdpw", 0.5, 0.3, 0.5)]
        for mode, t1, t2, share in grid:
            f1s = []
            for ds, pages in doms.items():
                groups = {}
                for pid in pages:
                    groups.setdefault(hosts[pid], []).append(pid)
                preds = {}
                for ids in groups.values():
                    res = template.analyze_site([pages[i] for i in ids], mode, t1, t2, share, fallback="cepr")
                    for i, m in zip(ids, res.masks):
                        preds[i] = "\n\n".join(b.text for b in blocks_from_dom(pages[i], keep=m))
                f1s.append(score.score(ds, preds, data_dir=DATA)["f1"])
            print(f"{mode} T1={t1} T2={t2} share={share}: " + " ".join(f"{x:.3f}" for x in f1s), flush=True)
    elif what == "tps":
        for css, size in itertools.product([False, True], ["nodes", "text"]):
            def sel(d, a=(css, size)):
                return mask_from_nodes(d, tps.analyze(d, with_attrs=a[0], size=a[1]).main_nodes().tolist())
            f = evaluate(doms, sel)
            print(f"css={css} size={size}: " + " ".join(f"{x:.3f}" for x in f) + f"  mean={sum(f) / len(f):.3f}", flush=True)


if __name__ == "__main__":
    main()

"""Score the tag-path main-content selectors (tps, cepr, cetr, template) on the development sets.

Reads the benchmark data and scorer in ../shared/bench (next to the repository; override with
--bench DIR or the BLOCKCRAWL_BENCH environment variable). Each page is parsed once; a selector's
keep mask goes through blocks_from_dom and the blocks' text is joined with blank lines. The
template algorithm runs per site: pages grouped by the host of their gold url.

    PYTHONPATH=. python bench/algos_dev.py [--algos tps,cepr,cetr,template] [--datasets aeb,...] [--peers]

Times are the selector + block building only (each page is parsed once beforehand), so they are
comparable between the blockcrawl algorithms of one run, not with the peers' (which parse).
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlparse

from common import BENCH  # noqa: E402 - first: it puts the repository on sys.path

from blockcrawl.extraction import blocks_from_dom
from blockcrawl.extraction.registry import ALGORITHMS, get_selector, is_site
from blockcrawl.parse import load

DATASETS = ["aeb", "cleaneval-dev", "cleanportaleval"]


def text_of(dom, keep) -> str:
    return "\n\n".join(b.text for b in blocks_from_dom(dom, keep=keep))


def run(algo: str, doms: dict[str, object], hosts: dict[str, str]) -> tuple[dict[str, str], float]:
    t0 = time.perf_counter()
    out: dict[str, str] = {}
    if is_site(algo):
        select_site = get_selector(algo)
        groups: dict[str, list[str]] = defaultdict(list)
        for pid, host in hosts.items():
            groups[host].append(pid)
        for ids in groups.values():
            masks = select_site([doms[i] for i in ids])
            for i, m in zip(ids, masks):
                out[i] = text_of(doms[i], m)
    else:
        sel = get_selector(algo)
        for pid, dom in doms.items():
            out[pid] = text_of(dom, sel(dom))
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(BENCH),
                    help="shared bench directory with score.py and data/ (default: %(default)s)")
    ap.add_argument("--algos", default="all,tps,cepr,cetr,template")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--limit", type=int, default=0, help="only the first N pages per dataset")
    ap.add_argument("--peers", action="store_true", help="also score trafilatura (bench extra) in the same run")
    args = ap.parse_args(argv)
    bench = Path(args.bench)
    if not (bench / "score.py").exists():
        print(f"error: no score.py in {bench} (use --bench)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(bench))
    score = importlib.import_module("score")
    data = str(bench / "data")
    algos = [a for a in args.algos.split(",") if a]
    for a in algos:
        if a not in ALGORITHMS:
            print(f"error: unknown algorithm {a!r}", file=sys.stderr)
            return 2
    rows = []
    for ds in args.datasets.split(","):
        gold = score.load_gold(data, ds)
        if args.limit:
            gold = gold[:args.limit]
        doms, hosts, raw = {}, {}, {}
        for rec in gold:
            raw[rec["id"]] = score.read_page(data, ds, rec)
            doms[rec["id"]] = load(raw[rec["id"]], rec.get("url"))
            hosts[rec["id"]] = urlparse(rec.get("url") or "").netloc.removeprefix("www.")
        for a in algos:
            preds, secs = run(a, doms, hosts)
            res = score.score(ds, preds, data_dir=data)
            rows.append((ds, a, res["precision"], res["recall"], res["f1"], secs))
            print(f"{ds:16} {a:14} P={res['precision']:.3f} R={res['recall']:.3f} "
                  f"F1={res['f1']:.3f}  {secs:6.1f}s", flush=True)
        if args.peers:
            import trafilatura
            t0 = time.perf_counter()
            preds = {pid: trafilatura.extract(b.decode("utf-8", "replace")) or "" for pid, b in raw.items()}
            secs = time.perf_counter() - t0  # includes trafilatura's own parsing
            res = score.score(ds, preds, data_dir=data)
            print(f"{ds:16} {'trafilatura':14} P={res['precision']:.3f} R={res['recall']:.3f} "
                  f"F1={res['f1']:.3f}  {secs:6.1f}s (incl. parsing)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where `auto` keeps text the gold leaves out (precision) and leaves out gold text (recall), by
cause, and a parameter sweep with leave-one-set-out. A private tuning aid.

Reads the shared benchmark (../shared/bench next to the repository, or --bench DIR /
$BLOCKCRAWL_BENCH): its data/ pages and gold texts and its score.py. Nothing of it is written
to the repository.

    python bench/auto_diag.py diag  [--datasets ...] [--every N] [--site HOST]
    python bench/auto_diag.py sweep --param cover --values off 0.3 0.5 [--datasets ...]
    python bench/auto_diag.py time --base 5a0086a [--datasets ...]

diag: every text node of >= 3 words that auto keeps and whose words are not a run of the gold's
words is "kept, not gold"; it is charged to the first cause that applies (table below); shares
are of the set's kept characters. The mirror for recall: gold text nodes auto did not keep, by
the stage that dropped them, as a share of the set's gold characters. Also: the class/id words
over the non-gold text inside the article, with the gold text under the same words beside them
(what a name rule would cost).

sweep: each page is parsed once per set; for each value a copy of the extraction parameters
with that field replaced (dataclasses.replace(DEFAULTS, ...), extraction.params) is passed to
auto, which runs on the parsed pages and the set is scored with score.py. The value "off" is None. Prints the
F1 grid and the leave-one-set-out choice (fit on the other sets by mean F1, ties to the first
value listed) for each set.

time: auto.py as of git revision --base (the modules it imports from the working tree) against
the working tree's, page by page in turn on
the same parsed pages (select + blocks + text, the part auto changes), median ms/page per set.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from common import BENCH, ROOT  # noqa: E402 - first: it puts the repository on sys.path

from blockcrawl.extraction import auto, furniture  # noqa: E402
from blockcrawl.extraction.api import main_content, raw_body  # noqa: E402
from blockcrawl.extraction.article import article  # noqa: E402
from blockcrawl.extraction.features import compute  # noqa: E402
from blockcrawl.extraction.params import DEFAULTS  # noqa: E402
from blockcrawl.extraction.patterns import FURNITURE_TAGS, HEADINGS  # noqa: E402
from blockcrawl.parse import TEXT, Dom, load  # noqa: E402

SETS = ["aeb", "cleaneval-dev", "cleanportaleval", "cetd", "msv", "wcxb-dev"]
_TOK = re.compile(r"\w+")
_SPLIT = re.compile(r"[^a-z0-9]+")
# Names that mark furniture-like text (wider than auto's own lists: a diagnosis, not a rule).
_FURN = re.compile(r"share|social|related|recommend|caption|credit|byline|author|date|time|meta|"
                   r"tag|newsletter|subscri|\bads?\b|advert|promo|sponsor|comment|footer|header|"
                   r"info|bio|widget|sidebar|nav|menu|breadcrumb|cta|signup|disclaimer|copyright|"
                   r"rating|review|price|cart|login|follow|print|email|toolbar", re.I)
_CELL = frozenset({"li", "td", "th", "dd", "dt"})


def pages(bench: Path, ds: str, every: int = 1, site: str | None = None) -> Iterator[tuple[dict, Dom]]:
    import score

    data = str(bench / "data")
    for rec in score.load_gold(data, ds)[::every]:
        if site and not rec["id"].startswith(site):
            continue
        yield rec, load(raw_body(score.read_page(data, ds, rec)), rec.get("url"))


def run(dom: Dom) -> tuple[list[bool] | None, dict[str, object]]:
    """auto.select with the trace of the pass that decided (empty for the fallbacks)."""
    f = compute(dom)
    trace: dict[str, object] = {}
    keep = article(dom, f, True, trace=trace)
    if keep is None:
        trace = {}
        keep = article(dom, f, False, trace=trace)
    if keep is None:
        trace = {}
        keep = auto.select(dom)
    return keep, trace


def words(s: str) -> str:
    return " ".join(_TOK.findall(s))


def _chain(dom: Dom, j: int, stop: int) -> list[int]:
    out = []
    p = dom.parent[j]
    while p >= 0 and p != stop:
        out.append(p)
        p = dom.parent[p]
    return out


def _under(dom: Dom, j: int, r: int) -> bool:
    return r <= j < dom.end[r]


def diag_page(dom: Dom, gold_text: str, acc: dict[str, Counter], pid: str = "") -> None:
    keep, tr = run(dom)
    gw = " " + words(gold_text) + " "
    tags, texts, skipped = dom.tag, dom.text, dom.skipped
    n = len(dom)
    keep = keep or [False] * n
    kept_chars = sum(len(texts[j].strip()) for j in range(n) if keep[j] and tags[j] == TEXT)
    acc["tot"]["kept"] += kept_chars
    acc["tot"]["gold"] += len(gold_text)
    gold_nodes = []
    for j in range(n):
        if tags[j] != TEXT or skipped[j]:
            continue
        w = words(texts[j])
        if w.count(" ") < 2:
            continue
        g = (" " + w + " ") in gw
        if g:
            gold_nodes.append(j)
        if keep[j] and not g:
            cause = _bad_cause(dom, j, tr)
            acc["bad"][cause] += len(texts[j].strip())
            acc["bad_pages"][(cause, pid)] += len(texts[j].strip())
            if (cause, pid) not in acc["sample"]:
                acc["sample"][(cause, pid)] = " ".join(texts[j].split())[:100]  # type: ignore[assignment]
            if tr:
                for t in _name_words(dom, j, tr["top"]):  # type: ignore[arg-type]
                    acc["bad_names"][t] += len(texts[j].strip())
        elif keep[j] and g and tr:
            acc["good"][_bad_cause(dom, j, tr)] += len(texts[j].strip())
            for t in _name_words(dom, j, tr["top"]):  # type: ignore[arg-type]
                acc["good_names"][t] += len(texts[j].strip())
        elif g and not keep[j]:
            acc["miss"][_miss_cause(dom, j, tr)] += len(texts[j].strip())
    # edges: non-gold kept text before the first / after the last gold node kept
    kg = [j for j in gold_nodes if keep[j]]
    if kg:
        for j in range(n):
            if keep[j] and tags[j] == TEXT and words(texts[j]).count(" ") >= 2 \
                    and (" " + words(texts[j]) + " ") not in gw:
                where = "before" if j < kg[0] else "after" if j > kg[-1] else "middle"
                acc["edge"][where] += len(texts[j].strip())


def _name_words(dom: Dom, j: int, top: int) -> set[str]:
    out: set[str] = set()
    for a in _chain(dom, j, top):  # below the article's top: the article's own names tell nothing
        names = furniture.names(dom, a).lower()
        if names:
            out.update(t for t in _SPLIT.split(names) if t and not t.isdigit())
    return out


def _bad_cause(dom: Dom, j: int, tr: dict[str, object]) -> str:
    if not tr:
        return "no article (JSON-LD or whole-page fallback)"
    top, best = tr["top"], tr["best"]
    assert isinstance(top, int) and isinstance(best, int)
    if not _under(dom, j, top):
        return "outside the article (sibling root, data table)"
    if not _under(dom, j, best):
        return "added by the climb / widening"
    chain = _chain(dom, j, dom.parent[top])
    tags = dom.tag
    if any(tags[a] in HEADINGS for a in chain):
        return "heading"
    if any(_FURN.search(furniture.names(dom, a)) for a in chain if a != top):
        return "inside, furniture-like name"
    if dom.tag[dom.parent[j]] == "a" or any(tags[a] == "a" for a in chain[:3]):
        return "inside, link text"
    if any(tags[a] in _CELL for a in chain):
        return "inside, table/list cell"
    owner, prose = tr["owner"], tr["prose"]
    assert isinstance(owner, list) and isinstance(prose, list)
    if not prose[owner[j]]:
        return "inside, short non-prose line"
    return "inside, prose"


def _miss_cause(dom: Dom, j: int, tr: dict[str, object]) -> str:
    if not tr:
        return "no article (fallback)"
    dead = tr["dead"]
    assert isinstance(dead, list)
    if dead[j]:
        a = j
        while dom.parent[a] >= 0 and dead[dom.parent[a]]:
            a = dom.parent[a]
        attrs = dom.attrs[a]
        if dom.tag[a] in FURNITURE_TAGS or dom.tag[a] == "form":
            return f"dead: tag <{dom.tag[a]}>"
        if furniture.hidden(attrs):
            return "dead: hidden"
        return "dead: furniture name"
    roots = tr["roots"]
    assert isinstance(roots, list)
    r = next((r for r in roots if _under(dom, j, r)), -1)
    if r < 0:
        return "outside the article"
    return "inside, removed (junk/named/caption/title/trim)"


def cmd_diag(args: argparse.Namespace) -> None:
    for ds in args.datasets:
        acc: dict[str, Counter] = {k: Counter() for k in
                                   ("tot", "bad", "good", "miss", "edge", "bad_names", "good_names",
                                           "bad_pages", "sample")}
        for rec, dom in pages(args.bench, ds, args.every, args.site):
            diag_page(dom, rec["text"], acc, rec["id"])
        kept, gold = acc["tot"]["kept"] or 1, acc["tot"]["gold"] or 1
        print(f"## {ds}{' ' + args.site if args.site else ''}: kept {kept} chars, gold {gold} chars")
        print(f"kept, not gold: {sum(acc['bad'].values()) / kept:.3f} of kept")
        for c, v in acc["bad"].most_common():
            print(f"  {v / kept:.3f}  {c}   (gold kept the same way {acc['good'][c] / kept:.3f})")
        print("  by place: " + ", ".join(f"{k} {v / kept:.3f}" for k, v in acc["edge"].most_common()))
        print(f"gold, not kept: {sum(acc['miss'].values()) / gold:.3f} of gold")
        for c, v in acc["miss"].most_common():
            print(f"  {v / gold:.3f}  {c}")
        print("class/id words over non-gold kept text (share of kept; gold kept under the word):")
        for t, v in acc["bad_names"].most_common(args.names):
            print(f"  {t:24s} bad {v / kept:.4f}  good {acc['good_names'][t] / kept:.4f}")
        if args.show:
            print("pages with the most non-gold text by cause:")
            for (c, pid), v in acc["bad_pages"].most_common(args.show):
                print(f"  {v:7d}  {c[:30]:30s} {pid[:50]:50s} {acc['sample'][(c, pid)]!r}")
        print(flush=True)


def _value(s: str) -> object:
    return None if s == "off" else json.loads(s)


def cmd_sweep(args: argparse.Namespace) -> None:
    import score

    values = [_value(v) for v in args.values]
    params = [p.lower() for p in args.param.split("+")]  # A+B: one value per field, as a JSON list
    for p in params:
        if p not in DEFAULTS.__dataclass_fields__:
            raise SystemExit(f"no extraction parameter {p!r} (extraction/params.py)")
    grid: dict[str, list[float]] = {}
    ms: dict[str, list[float]] = {}
    for ds in args.datasets:
        gold = {}
        doms = []
        for rec, dom in pages(args.bench, ds, args.every):
            gold[rec["id"]] = rec
            doms.append((rec["id"], dom))
        recs = list(gold.values())
        row = []
        times = []
        for v in values:
            vs = v if len(params) > 1 else [v]
            tuned = replace(DEFAULTS, **dict(zip(params, vs)))  # type: ignore[arg-type]
            preds = {}
            t0 = time.perf_counter()
            for pid, dom in doms:
                t1 = time.perf_counter()
                preds[pid] = main_content(dom, "auto", params=tuned)[1]
                times.append(time.perf_counter() - t1)
            res = score.score(ds, preds, gold=recs)
            row.append(res["f1"])
            print(f"{ds:16s} {args.param}={v!s:14s} F1 {res['f1']:.4f} P {res['precision']:.4f} "
                  f"R {res['recall']:.4f}  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        grid[ds] = row
        ms[ds] = [1000 * statistics.median(times)]
    print(f"| {args.param} | " + " | ".join(args.datasets) + " |")
    print("|---" * (len(args.datasets) + 1) + "|")
    for k, v in enumerate(values):
        print(f"| {v} | " + " | ".join(f"{grid[ds][k]:.4f}" for ds in args.datasets) + " |")
    held = []
    for ds in args.datasets:
        others = [d for d in args.datasets if d != ds]
        means = [statistics.mean(grid[d][k] for d in others) for k in range(len(values))]
        k = max(range(len(values)), key=lambda i: (means[i], -i))
        held.append(f"{grid[ds][k]:.4f} ({values[k]})")
    print("| held out | " + " | ".join(held) + " |")


def cmd_time(args: argparse.Namespace) -> None:
    import importlib.util
    import subprocess
    import tempfile

    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{args.base}:blockcrawl/extraction/auto.py"],
                         check=True, capture_output=True, text=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(src)
    spec = importlib.util.spec_from_file_location("blockcrawl.extraction._auto_base", fh.name)
    assert spec and spec.loader
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    os.unlink(fh.name)
    print(f"| set | median ms/page, auto at {args.base} | this tree |")
    print("|---|---|---|")
    for ds in args.datasets:
        tb: list[float] = []
        tn: list[float] = []
        for _rec, dom in pages(args.bench, ds, args.every):
            for sel, out in ((base.select, tb), (auto.select, tn), (base.select, tb), (auto.select, tn)):
                t0 = time.perf_counter()
                main_content(dom, selector=sel)
                out.append(time.perf_counter() - t0)
        print(f"| {ds} | {1000 * statistics.median(tb):.2f} | {1000 * statistics.median(tn):.2f} |", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=("diag", "sweep", "time"))
    ap.add_argument("--bench", type=Path, default=BENCH)
    ap.add_argument("--datasets", nargs="+", default=SETS)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--site", help="diag: only pages whose id starts with this")
    ap.add_argument("--names", type=int, default=25, help="diag: class/id words to list")
    ap.add_argument("--show", type=int, default=0, help="diag: list the K worst (cause, page) pairs")
    ap.add_argument("--param", help="sweep: a field of ExtractionParams (A+B for two at once)")
    ap.add_argument("--values", nargs="+", help="sweep: JSON values, 'off' for None")
    ap.add_argument("--base", default="HEAD", help="time: the git revision to time against")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.bench))
    if args.cmd == "diag":
        cmd_diag(args)
    elif args.cmd == "time":
        cmd_time(args)
    else:
        if not args.param or not args.values:
            ap.error("sweep needs --param and --values")
        cmd_sweep(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

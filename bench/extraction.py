"""Main-content extraction benchmark: every registered algorithm beside trafilatura, same process.

Reads the development sets of the shared benchmark (../shared/bench/data relative to the repository,
or --bench DIR / $BLOCKCRAWL_BENCH) and scores with its score.py (4-gram shingle P/R/F1).
Each page is run through every extractor in turn, so machine noise hits all of them alike; the
time is the whole call from raw bytes (decode + parse + select + blocks + text for blockcrawl).

    python bench/extraction.py                     # all sets, all algorithms + trafilatura
    python bench/extraction.py --datasets aeb --algorithms auto --predictions out/
    python bench/extraction.py --datasets cetd --algorithms auto --every 4 --worst 20
    python bench/extraction.py --algorithms auto --article-rule   # + auto without its type rules
    python bench/extraction.py --algorithms auto --like-for-like  # + the same work on both sides

Time like for like (--like-for-like): `extract()` returns the page info too (metadata, page type,
an article's summary: ~2-3 ms of a page), while `trafilatura.extract()` by default returns the text
alone. Two more columns run the same work on both sides: auto-text (`extract(info=False)`: the
text, the page type auto selects by, no metadata or summary) against trafilatura (text), and auto
(with page info) against trafilatura-meta (`bare_extraction(with_metadata=True)`: title, author,
date, site name and the rest). The plain auto / trafilatura ratio stays printed as before.

On wcxb-dev (its provenance.tsv gives each page's page_type) every extractor is also scored with
WCXB's own metric, word F1 (F1 over the lower-cased \\w+ tokens of the text against the gold,
averaged over pages), per page type: the table after the shingle table. The crawl default
(PipelineConfig().algorithm) is named there; when it is one of the algorithms run, its column is
that algorithm's.

--every N scores every Nth page of each set (a quick look while iterating; the numbers to report
come from full runs); --worst K prints each extractor's K lowest-recall pages of each set with
their precision, recall and text lengths; --pages DIR writes every page's P/R/F1 as JSON Lines.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

from common import BENCH  # noqa: E402 - first: it puts the repository on sys.path

from blockcrawl.extraction.api import extract  # noqa: E402
from blockcrawl.extraction.registry import ALGORITHMS  # noqa: E402

DATASETS = ("aeb", "cleaneval-dev", "cleanportaleval", "cetd", "msv", "wcxb-dev")
WCXB = "wcxb-dev"
PAGE_TYPES = ("article", "documentation", "service", "forum", "collection", "listing", "product")
_WORD = re.compile(r"\w+")


def selector_algorithms() -> list[str]:
    """Registered algorithms that work page by page (those exposing only select_site are skipped)."""
    names = []
    for name, algo in ALGORITHMS.items():
        if algo.is_site:
            print(f"skipping {name}: needs a set of pages (select_site)", file=sys.stderr)
            continue
        try:
            algo.page_selector()
        except ImportError as e:
            print(f"skipping {name}: {e}", file=sys.stderr)
            continue
        names.append(name)
    return names


def page_scores(score, gold: dict, text: str) -> dict:
    """One page's shingle precision, recall and F1 (score.py's per-document rules)."""
    tp, fp, fn = score.shingle_counts(gold["text"], text)
    p, r = score._doc_precision(tp, fp, fn), score._doc_recall(tp, fp, fn)
    return {"id": gold["id"], "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0,
            "chars": len(text), "gold_chars": len(gold["text"])}


def word_f1(gold: str, pred: str) -> float:
    """WCXB's word-level F1 of one page: lower-cased \\w+ tokens as multisets."""
    from collections import Counter

    g = Counter(t.lower() for t in _WORD.findall(gold))
    p = Counter(t.lower() for t in _WORD.findall(pred))
    if not g and not p:
        return 1.0
    common = sum((g & p).values())
    if not common:
        return 0.0
    prec, rec = common / sum(p.values()), common / sum(g.values())
    return 2 * prec * rec / (prec + rec)


def page_types(data: Path) -> dict[str, str]:
    """wcxb-dev's page_type of each page id (provenance.tsv, `extra` column)."""
    out: dict[str, str] = {}
    prov = data / WCXB / "provenance.tsv"
    if not prov.exists():
        return out
    for line in prov.read_text(encoding="utf-8").splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 7 and cols[6]:
            out[cols[0]] = json.loads(cols[6]).get("page_type", "")
    return out


def _article_rule(html, url):  # type: ignore[no-untyped-def]
    """auto with its page-type rules off: every page selected as an article (the old auto)."""
    from dataclasses import replace

    from blockcrawl.extraction.params import DEFAULTS

    return extract(html, url, algorithm="auto", params=replace(DEFAULTS, type_rules=None)).text


def run(bench: Path, datasets: list[str], algorithms: list[str], trafilatura: bool,
        predictions: Path | None, every: int = 1, worst: int = 0, pages: Path | None = None,
        article_rule: bool = False, by_type: dict | None = None, like_for_like: bool = False) -> list[dict]:
    """by_type: a dict to fill with {extractor: {page type: [word F1 of each page]}} on wcxb-dev."""
    sys.path.insert(0, str(bench))
    import score  # the shared scorer

    data = bench / "data"
    extractors = {name: (lambda html, url, name=name: extract(html, url, algorithm=name).text)
                  for name in algorithms}
    if article_rule:
        extractors["auto-article"] = _article_rule
    if like_for_like:
        extractors["auto-text"] = lambda html, url: extract(html, url, algorithm="auto", info=False).text
    if trafilatura:
        import trafilatura as traf

        extractors["trafilatura"] = lambda html, url: traf.extract(html, url=url) or ""
        if like_for_like:
            extractors["trafilatura-meta"] = lambda html, url: getattr(
                traf.bare_extraction(html, url=url, with_metadata=True), "text", None) or ""
    rows = []
    for ds in datasets:
        gold = score.load_gold(str(data), ds)[::every]
        preds: dict[str, dict[str, str]] = {name: {} for name in extractors}
        times: dict[str, list[float]] = {name: [] for name in extractors}
        errors: dict[str, int] = {name: 0 for name in extractors}
        for rec in gold:
            html = score.read_page(str(data), ds, rec)
            for name, fn in extractors.items():
                t0 = time.perf_counter()
                try:
                    text = fn(html, rec.get("url"))
                except Exception as e:  # an extractor failing on a page scores it as empty
                    errors[name] += 1
                    if errors[name] == 1:
                        print(f"{name} failed on {ds}/{rec['id']}: {e!r}", file=sys.stderr)
                    text = ""
                times[name].append(time.perf_counter() - t0)
                preds[name][rec["id"]] = text
        if ds == WCXB and by_type is not None:
            types = page_types(data)
            for name in extractors:
                acc = by_type.setdefault(name, {})
                for g in gold:
                    f = word_f1(g["text"], preds[name][g["id"]])
                    acc.setdefault(types.get(g["id"], "?"), []).append(f)
                    acc.setdefault("all", []).append(f)
        for name in extractors:
            res = score.score(ds, preds[name], gold=gold)
            rows.append({"dataset": ds, "extractor": name, "f1": res["f1"], "precision": res["precision"],
                         "recall": res["recall"], "ms": 1000 * statistics.median(times[name]),
                         "docs": len(gold), "errors": errors[name]})
            if worst or pages:
                per = [page_scores(score, g, preds[name][g["id"]]) for g in gold]
                if pages:
                    pages.mkdir(parents=True, exist_ok=True)
                    with open(pages / f"{ds}.{name}.jsonl", "w", encoding="utf-8") as f:
                        for row in per:
                            f.write(json.dumps(row) + "\n")
                if worst:
                    print(f"{ds} {name}: the {worst} pages of lowest recall", file=sys.stderr)
                    for row in sorted(per, key=lambda x: (x["recall"], x["f1"]))[:worst]:
                        print(f"  {row['id']:48s} P {row['precision']:.2f} R {row['recall']:.2f} "
                              f"chars {row['chars']} gold {row['gold_chars']}", file=sys.stderr)
            if predictions:
                predictions.mkdir(parents=True, exist_ok=True)
                with open(predictions / f"{ds}.{name}.jsonl", "w", encoding="utf-8") as f:
                    for i, text in preds[name].items():
                        f.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")
    return rows


def table(rows: list[dict]) -> str:
    out = ["| dataset | extractor | F1 | P | R | median ms/page |", "|---|---|---|---|---|---|"]
    for r in rows:
        failed = f" ({r['errors']} pages failed)" if r["errors"] else ""
        out.append(f"| {r['dataset']} | {r['extractor']}{failed} | {r['f1']:.3f} | {r['precision']:.3f} | "
                   f"{r['recall']:.3f} | {r['ms']:.1f} |")
    return "\n".join(out)


def type_table(by_type: dict, crawl_default: str) -> str:
    """WCXB word F1 per page type (rows) and extractor (columns)."""
    names = list(by_type)
    head = [f"{n} (crawl default)" if n == crawl_default else n for n in names]
    out = ["| page type | pages | " + " | ".join(head) + " |", "|---|---" + "|---" * len(names) + "|"]
    for t in (*PAGE_TYPES, "all"):
        vals = [by_type[n].get(t, []) for n in names]
        if not vals or not vals[0]:
            continue
        out.append(f"| {t} | {len(vals[0])} | " + " | ".join(f"{sum(v) / len(v):.3f}" for v in vals) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Score blockcrawl's main-content algorithms and trafilatura on the shared "
                    "development sets. Reads ../shared/bench (data/ and score.py) next to the "
                    "repository unless --bench or $BLOCKCRAWL_BENCH says otherwise.")
    ap.add_argument("--bench", type=Path, default=BENCH,
                    help="benchmark folder holding score.py and data/ (default: %(default)s)")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), metavar="NAME")
    ap.add_argument("--algorithms", nargs="+", metavar="NAME",
                    help="algorithms to run (default: every registered page-level algorithm)")
    ap.add_argument("--no-trafilatura", action="store_true", help="skip the trafilatura peer")
    ap.add_argument("--predictions", type=Path, metavar="DIR",
                    help="also write DIR/<dataset>.<extractor>.jsonl ({id, text} per page)")
    ap.add_argument("--every", type=int, default=1, metavar="N",
                    help="score every Nth page of each set only (default: all)")
    ap.add_argument("--worst", type=int, default=0, metavar="K",
                    help="print the K pages of lowest recall per set and extractor (stderr)")
    ap.add_argument("--pages", type=Path, metavar="DIR",
                    help="write DIR/<dataset>.<extractor>.jsonl: P, R, F1 and lengths per page")
    ap.add_argument("--like-for-like", action="store_true",
                    help="also time auto-text (no page info) and trafilatura-meta (with metadata): the same work on both sides")
    ap.add_argument("--article-rule", action="store_true",
                    help="also run auto with its page-type rules off (auto-article: the article rule alone)")
    args = ap.parse_args(argv)
    if not (args.bench / "score.py").exists():
        print(f"extraction bench: no score.py under {args.bench} (use --bench DIR)", file=sys.stderr)
        return 2
    algorithms = args.algorithms or selector_algorithms()
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown:
        print(f"extraction bench: unknown algorithm(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.every < 1:
        print("extraction bench: --every takes a number >= 1", file=sys.stderr)
        return 2
    by_type: dict = {}
    rows = run(args.bench, args.datasets, algorithms, not args.no_trafilatura, args.predictions,
               args.every, args.worst, args.pages, args.article_rule, by_type, args.like_for_like)
    print(table(rows))
    if by_type:
        from blockcrawl.pipeline import PipelineConfig

        crawl = PipelineConfig().algorithm
        print()
        print(f"WCXB word F1 on {WCXB} by page type (the crawl's default algorithm is {crawl!r}"
              + ("" if crawl in by_type else ", not run here") + "):")
        print(type_table(by_type, crawl))
    traf = {r["dataset"]: r["ms"] for r in rows if r["extractor"] == "trafilatura"}
    meta = {r["dataset"]: r["ms"] for r in rows if r["extractor"] == "trafilatura-meta"}
    if traf:
        print()
        for r in rows:
            if r["extractor"] not in ("trafilatura", "trafilatura-meta") and r["dataset"] in traf:
                print(f"{r['dataset']:16s} {r['extractor']:10s} time / trafilatura's = "
                      f"{r['ms'] / traf[r['dataset']]:.2f}")
        if meta:
            print("\nlike for like: auto-text / trafilatura (text alone), auto / trafilatura-meta (with metadata)")
            own = {(r["dataset"], r["extractor"]): r["ms"] for r in rows}
            for ds in traf:
                if (ds, "auto-text") in own and (ds, "auto") in own and ds in meta:
                    print(f"{ds:16s} text {own[ds, 'auto-text'] / traf[ds]:.2f}   "
                          f"with metadata {own[ds, 'auto'] / meta[ds]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

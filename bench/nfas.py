"""NFaS page kinds: label, build features, fit and cross-validate the classifier of
blockcrawl/extraction/nfas.py, and write its model (blockcrawl/extraction/data/nfas.json).

    python bench/nfas.py labels     # (re)write bench/nfas_labels.tsv from the development sets
    python bench/nfas.py features   # feature vectors of the labelled pages -> bench/nfas_features.jsonl
    python bench/nfas.py rules      # WCXB word F1 of each wcxb-dev page under each type rule -> bench/nfas_rules.jsonl
    python bench/nfas.py fit        # cross-validate, print P/R of kind == article, write the model
    python bench/nfas.py time --dataset cetd   # CPU ms per page of page_info and its parts

Labels (bench/nfas_labels.tsv: dataset, id, kind, rule) come from what the sets say about their
pages, never from the classifier: aeb, cetd and msv are article-extraction sets (every page an
article with its annotated body); cleanportaleval has tag pages (/tag/ in the URL) and BBC
section fronts (bbc.co.uk/news/<section> without a story number) beside its articles; wcxb-dev
gives a page_type per page (article -> article; listing, collection -> listing; product, service,
forum, documentation -> other). The features file holds only ids, labels and the numbers computed
(no page text), so `fit` runs without the benchmark data.

Cross-validation: each data set is held out in turn and the model fitted on the others; wcxb-dev,
which holds nearly all the non-articles, is held out in 5 folds grouped by site (the other four
fifths stay in training). The numbers printed are over the held-out predictions only. The article
cut of each fold is chosen on its training pages alone, by an inner leave-one-group-out pass
over them (inner_threshold); --train-cut takes the old cut on the fitted model's own pages.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

from common import BENCH, ROOT  # noqa: E402 - first: it puts the repository on sys.path

LABELS = ROOT / "bench" / "nfas_labels.tsv"
FEATURES_FILE = ROOT / "bench" / "nfas_features.jsonl"
RULES_FILE = ROOT / "bench" / "nfas_rules.jsonl"
MODEL = ROOT / "blockcrawl" / "extraction" / "data" / "nfas.json"
DATASETS = ("aeb", "cetd", "msv", "cleanportaleval", "wcxb-dev")
CLASSES = ("article", "documentation", "service", "forum", "collection", "listing", "product")
WCXB_KIND = {t: t for t in CLASSES}  # wcxb-dev's page_type is the label
FOLDS = 5
L2 = 1e-3
C = 0.1  # inverse L2 strength of the 7-type model (sklearn); held out: 0.813 at 0.1, 0.807 at 1
BALANCE = 0.0  # class weighting power (class_weights); 1 (balanced) cost 13 points of article recall


def _gold(bench: Path, ds: str) -> list[dict]:
    sys.path.insert(0, str(bench))
    import score

    return list(score.load_gold(str(bench / "data"), ds))


def make_labels(bench: Path) -> list[tuple[str, str, str, str]]:
    rows: list[tuple[str, str, str, str]] = []
    for ds in ("aeb", "cetd", "msv"):
        for rec in _gold(bench, ds):
            rows.append((ds, rec["id"], "article", f"{ds}: article-extraction set, every page an article"))
    for rec in _gold(bench, "cleanportaleval"):
        url = rec.get("url") or ""
        path = url.split("://", 1)[-1].split("/", 1)[-1] if "://" in url else ""
        if "&" in url or "://" not in url:
            continue  # a broken URL (tv.msnbc.com/&quot;People): no label
        if "/tag/" in url:
            rows.append(("cleanportaleval", rec["id"], "listing", "cleanportaleval: /tag/ page"))
        elif "bbc.co.uk/news/" in url and not any(ch.isdigit() for ch in path):
            rows.append(("cleanportaleval", rec["id"], "listing", "cleanportaleval: BBC section front"))
        else:
            rows.append(("cleanportaleval", rec["id"], "article", "cleanportaleval: story URL"))
    prov = bench / "data" / "wcxb-dev" / "provenance.tsv"
    types: dict[str, str] = {}
    for line in prov.read_text(encoding="utf-8").splitlines()[1:]:
        cols = line.split("\t")
        types[cols[0]] = json.loads(cols[6]).get("page_type", "")
    for rec in _gold(bench, "wcxb-dev"):
        t = types.get(rec["id"], "")
        if t in WCXB_KIND:
            rows.append(("wcxb-dev", rec["id"], WCXB_KIND[t], f"wcxb-dev: page_type {t}"))
    return rows


def write_labels(bench: Path) -> None:
    rows = make_labels(bench)
    with LABELS.open("w", encoding="utf-8") as f:
        f.write("dataset\tid\tkind\trule\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[2]] = counts.get(r[2], 0) + 1
    print(f"{len(rows)} labels -> {LABELS.relative_to(ROOT)}: {counts}")


def read_labels() -> list[tuple[str, str, str]]:
    lines = LABELS.read_text(encoding="utf-8").splitlines()[1:]
    return [(c[0], c[1], c[2]) for c in (line.split("\t") for line in lines)]


def article_mask(dom):  # type: ignore[no-untyped-def]
    """auto's article rule alone (no type rule): what nfas.page_type reads at run time."""
    from dataclasses import replace

    from blockcrawl.extraction import auto
    from blockcrawl.extraction.params import DEFAULTS

    return auto.select(dom, params=replace(DEFAULTS, type_rules=None))


def build_features(bench: Path) -> None:
    from blockcrawl.extraction.metadata import meta_from_scan, scan
    from blockcrawl.extraction.nfas import features, mask_text
    from blockcrawl.parse import load

    sys.path.insert(0, str(bench))
    import score

    labels = read_labels()
    by_ds: dict[str, dict[str, str]] = {}
    for ds, pid, kind in labels:
        by_ds.setdefault(ds, {})[pid] = kind
    t0 = time.time()
    done = 0
    with FEATURES_FILE.open("w", encoding="utf-8") as out:
        for ds, wanted in by_ds.items():
            for rec in score.load_gold(str(bench / "data"), ds):
                if rec["id"] not in wanted:
                    continue
                dom = load(score.read_page(str(bench / "data"), ds, rec), rec.get("url"))
                text = mask_text(dom, article_mask(dom))
                s = scan(dom)
                x = features(dom, text, s, meta_from_scan(dom, s))
                out.write(json.dumps({"dataset": ds, "id": rec["id"], "kind": wanted[rec["id"]],
                                      "x": [round(v, 5) for v in x]}) + "\n")
                done += 1
                if done % 250 == 0:
                    print(f"{done} pages, {time.time() - t0:.0f} s", file=sys.stderr)
    print(f"{done} feature vectors -> {FEATURES_FILE.relative_to(ROOT)} ({time.time() - t0:.0f} s)")


def fit(X, y, weights, iters: int = 3000, lr: float = 0.5):  # type: ignore[no-untyped-def]
    """Multinomial logistic regression, L2, full-batch gradient descent on standardised X.
    Returns (mean, scale, W, b)."""
    import numpy as np

    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale < 1e-9] = 1.0
    Z = (X - mean) / scale
    n, d = Z.shape
    k = len(CLASSES)
    Y = np.zeros((n, k))
    Y[np.arange(n), y] = 1.0
    W = np.zeros((k, d))
    b = np.zeros(k)
    sw = weights / weights.sum()
    for _ in range(iters):
        S = Z @ W.T + b
        S -= S.max(axis=1, keepdims=True)
        P = np.exp(S)
        P /= P.sum(axis=1, keepdims=True)
        G = (P - Y) * sw[:, None]
        W -= lr * (G.T @ Z + L2 * W)
        b -= lr * G.sum(axis=0)
    return mean, scale, W, b


def predict(model, X):  # type: ignore[no-untyped-def]
    import numpy as np

    mean, scale, W, b = model
    S = ((X - mean) / scale) @ W.T + b
    S -= S.max(axis=1, keepdims=True)
    P = np.exp(S)
    return P / P.sum(axis=1, keepdims=True)


def class_weights(y, power: float = BALANCE):  # type: ignore[no-untyped-def]
    """Page weights: power 1 makes each class weigh as much as the others in the loss (articles
    are 3/4 of the pages), 0 weighs pages alike."""
    import numpy as np

    counts = np.bincount(y, minlength=len(CLASSES)).astype(float)
    return ((len(y) / (len(CLASSES) * np.maximum(counts, 1))) ** power)[y]


def threshold(P, y):  # type: ignore[no-untyped-def]
    """The P(article) cut where precision and recall of article meet on (training) pages."""
    import numpy as np

    best, gap = 0.5, 2.0
    for t in np.arange(0.2, 0.81, 0.01):
        p, r, _, _ = _pr(y, decide(P, t))
        if abs(p - r) < gap:
            best, gap = float(t), abs(p - r)
    return best


def inner_threshold(X, y, group):  # type: ignore[no-untyped-def]
    """The P(article) cut where precision and recall meet on out-of-fold predictions of the
    training pages: each of their groups (data set, wcxb-dev site fold) predicted by a model
    fitted on the others. A model's own training pages are scored too confidently (the cut
    where P = R on them was 0.56-0.60 and gave held-out recall 0.93 for precision 0.96); the
    held-out pages are never read."""
    import numpy as np

    P = np.zeros((len(y), len(CLASSES)))
    for g in sorted(set(group)):
        te = group == g
        P[te] = predict(fit(X[~te], y[~te], class_weights(y[~te])), X[te])
    return threshold(P, y)


def decide(P, t: float):  # type: ignore[no-untyped-def]
    """Article when P(article) >= t, else the likelier of listing and other."""
    import numpy as np

    return np.where(P[:, 0] >= t, 0, 1 + P[:, 1:].argmax(axis=1))


def _pr(y_true, y_pred, cls: int = 0) -> tuple[float, float, int, int]:  # type: ignore[no-untyped-def]
    tp = int(((y_pred == cls) & (y_true == cls)).sum())
    fp = int(((y_pred == cls) & (y_true != cls)).sum())
    fn = int(((y_pred != cls) & (y_true == cls)).sum())
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, int((y_true == cls).sum()), int((y_true != cls).sum())


def fit7(X, y):  # type: ignore[no-untyped-def]
    """Multinomial logistic regression on standardised X (sklearn, lbfgs): (mean, scale, W, b).
    The numpy gradient descent above took minutes for seven classes on a busy machine."""
    from sklearn.linear_model import LogisticRegression

    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale < 1e-9] = 1.0
    m = LogisticRegression(C=C, max_iter=3000).fit((X - mean) / scale, y)
    return mean, scale, m.coef_, m.intercept_


def run_fit(write: bool, inner: bool = True) -> None:
    import numpy as np

    from blockcrawl.extraction.nfas import FEATURES

    rows = [json.loads(line) for line in FEATURES_FILE.read_text(encoding="utf-8").splitlines()]
    X = np.array([r["x"] for r in rows], dtype=float)
    y = np.array([CLASSES.index(r["kind"]) for r in rows])
    ds = np.array([r["dataset"] for r in rows])
    # the held-out group of each page: its data set, wcxb-dev split in folds by site (a site's
    # pages are never both in training and held out)
    group = np.array([d if d != "wcxb-dev" else f"wcxb-dev#{zlib.crc32(r['id'].split('/')[0].encode()) % FOLDS}"
                      for d, r in zip(ds, rows)])
    pred = np.zeros(len(y), dtype=int)
    for g in sorted(set(group)):
        test = group == g
        pred[test] = predict(fit7(X[~test], y[~test]), X[test]).argmax(axis=1)
    k = len(CLASSES)
    print(f"{len(y)} labelled pages: " + ", ".join(f"{c} {int((y == i).sum())}" for i, c in enumerate(CLASSES)))
    print("held out (each set held out; wcxb-dev in 5 folds by site): accuracy per set")
    for d in [*DATASETS, "all"]:
        sel = np.ones(len(y), bool) if d == "all" else ds == d
        print(f"  {d:<18}{int(sel.sum()):>6} pages  accuracy {float((pred[sel] == y[sel]).mean()):.3f}")
    p, r, _, _ = _pr(y, pred)
    print(f"kind == article, all sets: precision {p:.3f} recall {r:.3f}")
    acc = float((pred == y).mean())
    w = ds == "wcxb-dev"
    acc_w = float((pred[w] == y[w]).mean())
    conf = np.zeros((k, k), dtype=int)
    for t, q in zip(y[w], pred[w]):
        conf[t, q] += 1
    print("wcxb-dev confusion (rows true, columns predicted): " + " ".join(c[:5] for c in CLASSES))
    for i, c in enumerate(CLASSES):
        print(f"  {c:<14} {conf[i].tolist()}")
    heldout_f1(rows, y, pred)
    if not write:
        return
    mean, scale, W, b = fit7(X, y)
    model = {
        "format": 2, "classes": list(CLASSES), "features": list(FEATURES),
        "mean": [round(float(v), 6) for v in mean], "scale": [round(float(v), 6) for v in scale],
        "weights": [[round(float(v), 6) for v in row] for row in W], "bias": [round(float(v), 6) for v in b],
        "fitted_on": f"{len(y)} pages of bench/nfas_labels.tsv (bench/nfas.py fit, C={C})",
        "held_out": {"accuracy": round(acc, 4), "accuracy_wcxb_dev": round(acc_w, 4),
                     "article_precision": round(p, 4), "article_recall": round(r, 4)},
    }
    MODEL.parent.mkdir(parents=True, exist_ok=True)
    MODEL.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    print(f"model -> {MODEL.relative_to(ROOT)}")


def build_rules(bench: Path) -> None:
    """WCXB word F1 of every wcxb-dev page under each of auto's type rules (the page's type
    forced to one selected by that rule, then extract() as the crawl runs it) ->
    bench/nfas_rules.jsonl ({id, f1: {type: word F1}}, no page text). With it `cv` gives the end
    metric of any classifier held out: a page scores the F1 of the rule of the type its fold's
    model gives it (the same text extract() returns with that type)."""
    from blockcrawl.extraction import nfas
    from blockcrawl.extraction.api import extract
    from blockcrawl.extraction.params import DEFAULTS

    sys.path.insert(0, str(bench))
    sys.path.insert(0, str(ROOT / "bench"))
    import score
    from extraction import word_f1

    rules: dict[object, str] = {None: "article"}  # one type per distinct rule
    for t in CLASSES:
        rules.setdefault((DEFAULTS.type_rules or {}).get(t), t)
    saved = nfas.page_type
    t0 = time.time()
    done = 0
    try:
        with RULES_FILE.open("w", encoding="utf-8") as out:
            for rec in score.load_gold(str(bench / "data"), "wcxb-dev"):
                html = score.read_page(str(bench / "data"), "wcxb-dev", rec)
                by_rule: dict[object, float] = {}
                for rule, t in rules.items():
                    nfas.page_type = lambda dom, keep, t=t: t  # type: ignore[misc]
                    by_rule[rule] = round(word_f1(rec["text"], extract(html, rec.get("url"), algorithm="auto",
                                                                        info=False).text), 5)
                f1 = {c: by_rule[(DEFAULTS.type_rules or {}).get(c)] for c in CLASSES}
                out.write(json.dumps({"id": rec["id"], "f1": f1}) + "\n")
                done += 1
                if done % 200 == 0:
                    print(f"{done} pages, {time.time() - t0:.0f} s", file=sys.stderr)
    finally:
        nfas.page_type = saved
    print(f"{done} pages x {len(rules)} rules -> {RULES_FILE.relative_to(ROOT)} ({time.time() - t0:.0f} s)")


def heldout_f1(rows: list[dict], y, pred) -> None:  # type: ignore[no-untyped-def]
    """WCXB word F1 by true page type with the held-out types (each wcxb-dev page typed by the
    model of its site fold), with the true types and with every page an article, from
    bench/nfas_rules.jsonl (`rules`; skipped when it is missing or its page ids differ)."""
    if not RULES_FILE.exists():
        return
    f1 = {r["id"]: r["f1"] for r in map(json.loads, RULES_FILE.read_text(encoding="utf-8").splitlines())}
    sel = [i for i, r in enumerate(rows) if r["dataset"] == "wcxb-dev"]
    if not sel or any(rows[i]["id"] not in f1 for i in sel):
        print(f"{RULES_FILE.relative_to(ROOT)} does not cover the wcxb-dev pages: rerun `rules`")
        return
    print("WCXB word F1 on wcxb-dev by true type: held-out types / true types / every page article")
    cols: dict[str, list[list[float]]] = {}
    for i in sel:
        by = f1[rows[i]["id"]]
        got = [by[CLASSES[pred[i]]], by[CLASSES[y[i]]], by["article"]]
        for key in (CLASSES[y[i]], "all"):
            cols.setdefault(key, []).append(got)
    for key in (*CLASSES, "all"):
        v = cols.get(key, [])
        if v:
            print(f"  {key:<14}{len(v):>5} pages  " + "  ".join(f"{sum(r[j] for r in v) / len(v):.3f}" for j in range(3)))


def time_pages(bench: Path, ds: str) -> None:
    """CPU time of page_info per page of a set (parse and main content done before the clock)."""
    import statistics

    from blockcrawl.extraction.api import main_content
    from blockcrawl.extraction.metadata import page_meta
    from blockcrawl.extraction.nfas import classify
    from blockcrawl.extraction.pageinfo import page_info
    from blockcrawl.extraction.summary import summarize
    from blockcrawl.parse import load

    sys.path.insert(0, str(bench))
    import score

    parts: dict[str, list[float]] = {"page_info": [], "page_meta": [], "classify": [], "summarize": [],
                                     "parse+main_content": []}
    kinds: dict[str, int] = {}
    for rec in score.load_gold(str(bench / "data"), ds):
        html = score.read_page(str(bench / "data"), ds, rec)
        t0 = time.process_time()
        dom = load(html, rec.get("url"))
        _, text = main_content(dom)
        t1 = time.process_time()
        info = page_info(dom, text)
        t2 = time.process_time()
        page_meta(dom)
        t3 = time.process_time()
        classify(dom, text)
        t4 = time.process_time()
        summarize(text)
        t5 = time.process_time()
        for k, v in zip(parts, (t2 - t1, t3 - t2, t4 - t3, t5 - t4, t1 - t0)):
            parts[k].append(v * 1000)
        kinds[info.kind] = kinds.get(info.kind, 0) + 1
    print(f"{ds}: {len(parts['page_info'])} pages, kinds {kinds}; CPU ms per page:")
    for k, v in parts.items():
        q = statistics.quantiles(v, n=20)
        print(f"  {k:<20} median {statistics.median(v):6.2f}  p95 {q[-1]:6.2f}  max {max(v):7.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("labels", "features", "rules", "fit", "cv", "time"),
                    help="labels, features (need the benchmark data), fit (cross-validate and write "
                         "the model), cv (cross-validate only), time (page_info's CPU cost on --dataset)")
    ap.add_argument("--train-cut", action="store_true",
                    help="cut P(article) where P = R on the model's own training pages (the old way), "
                         "not on their out-of-fold predictions")
    ap.add_argument("--dataset", default="cetd", help="the set `time` reads (default: %(default)s)")
    ap.add_argument("--bench", type=Path, default=BENCH, help="benchmark folder (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.step == "labels":
        write_labels(args.bench)
    elif args.step == "features":
        build_features(args.bench)
    elif args.step == "rules":
        build_rules(args.bench)
    elif args.step == "time":
        time_pages(args.bench, args.dataset)
    else:
        run_fit(write=args.step == "fit", inner=not args.train_cut)
    return 0


if __name__ == "__main__":
    sys.exit(main())

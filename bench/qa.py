"""Benchmark: question answering over whole sites of several kinds, through the crawl's defaults.

One harness for every QA set. A set is a function returning a QASet: the site's pages (relative
path, URL, HTML) and its questions {"id", "query", "pages": [relative paths], "answers": [...]}
(docs-dev's queries.jsonl format). Sets:
- docs-dev: /work/shared/bench/data/docs-dev (628 pages of a Sphinx docs site, 40 questions);
- wtq-dev: the first --wtq-pages pages of /work/shared/bench/data/wtq-dev, wrapped as bench/tables.py
  wraps them (the <title> a crawl of Wikipedia sees; query = title + ": " + question);
- shop: the fixture shop of tests/support/shopsite.py (50 product pages, 5 listings, a home page);
  questions from its catalogue ("Who published T?", "What is the ISBN-13 of T?", ...);
- product-facts: bench/product_qa.py's build(out_dir) -> (site root, queries), when that file exists.

Each set's pages go, in path order, through one SitePipeline(mode="main") - the per-page path of
`blockcrawl crawl` (PipelineConfig(mode="main"), defaults), without the HTTP fetch - and into a
Store indexed by build_index with tables.CachedEmbedder (vectors cached by text across runs).
Ranking: for each question the vector and keyword candidate lists (100 each: search()'s first
tier) are read once and blockcrawl.retrieval.ranking.rank replays search()'s steps over them for
each mode (and for each Ranking of --grid, to choose defaults over all sets at once).

Rows: main (the crawl's chunks; modes vector, keyword, hybrid), and the naive recipes, vector
mode, same model: trafilatura+rcts (trafilatura's text cut by LangChain's
RecursiveCharacterTextSplitter(1000, 200)) and plain (the page text in 200-token chunks).

Metrics per set and row: kept (share of questions whose answer occurs in a chunk of one of its
pages, every page of the set run in path order as one site; bench/product_qa.py's "chunks"
column is the same measure), chunks/page, <32tok (share of chunks under 32 tokens), and per mode strict R@5: a top-5
hit is a chunk of one of the question's pages whose text contains one of its answers
(case-insensitive, white space collapsed).

Run: PYTHONPATH=. python bench/qa.py [--sets docs-dev,wtq-dev,shop] [--rows main,plain,trafilatura+rcts]
     [--wtq-pages 100] [--json out.json] [--grid fusion]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import ranking  # noqa: E402
import tables  # noqa: E402
from common import DATA  # noqa: E402

from blockcrawl.retrieval.ranking import RANKING, Ranking, rank  # noqa: E402

K = 5
SMALL = 32  # tokens: a chunk under this is a fragment unless its whole section is


@dataclass
class QASet:
    name: str
    pages: list[tuple[str, str, str]]  # (relative path, url, html)
    queries: list[dict[str, Any]]  # {"id", "query", "pages": [relative paths], "answers": [...]}


def _site_dir(root: Path, base: str) -> list[tuple[str, str, str]]:
    """Every .html page under root, in path order, at base + relative path."""
    out = []
    for p in sorted(root.rglob("*.html")):
        rel = p.relative_to(root).as_posix()
        out.append((rel, base + rel, p.read_text("utf-8", "replace")))
    return out


def docs_dev(tmp: Path, args: argparse.Namespace) -> QASet:
    data = DATA / "docs-dev"
    root = tmp / "docs-dev"
    if not root.exists():
        with tarfile.open(data / "site.tar.gz") as tf:
            tf.extractall(root, filter="data")
    queries = [json.loads(line) for line in (data / "queries.jsonl").read_text().splitlines() if line.strip()]
    return QASet("docs-dev", _site_dir(root, "http://127.0.0.1:8000/"), queries)


def wtq_dev(tmp: Path, args: argparse.Namespace) -> QASet:
    pages, qs = tables.load(DATA / "wtq-dev", args.wtq_pages)
    queries = [{"id": q["id"], "query": q["title"] + ": " + q["query"], "pages": [q["page"]],
                "answers": [q["answer"]]} for q in qs]
    return QASet("wtq-dev", pages, queries)


def shop(tmp: Path, args: argparse.Namespace) -> QASet:
    from tests.support.shopsite import books, shop_routes

    catalogue = books()
    routes = shop_routes(catalogue)
    pages = [(path, "http://127.0.0.1:8001" + path, r.body if isinstance(r.body, str) else r.body.decode())
             for path, r in sorted(routes.items()) if r.ctype.startswith("text/html")]
    queries = []
    for b in catalogue:
        page = "/" + b.slug
        for kind, q, a in (("publisher", f"Who published {b.title}?", b.publisher),
                           ("isbn", f"What is the ISBN-13 of {b.title}?", b.isbn),
                           ("date", f"When was {b.title} published?", b.published),
                           ("pages", f"How many pages does {b.title} have?", str(b.pages))):
            queries.append({"id": f"shop-{b.slug}-{kind}", "query": q, "pages": [page], "answers": [a]})
    return QASet("shop", pages, queries)


def product_facts(tmp: Path, args: argparse.Namespace) -> QASet | None:
    path = args.product_qa or Path(__file__).resolve().parent / "product_qa.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("product_qa", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    root, queries = mod.build(tmp / "product-facts")
    return QASet("product-facts", _site_dir(Path(root), "http://127.0.0.1:8002/"), list(queries))


SETS: dict[str, Callable[[Path, argparse.Namespace], QASet | None]] = {
    "docs-dev": docs_dev, "wtq-dev": wtq_dev, "shop": shop, "product-facts": product_facts}
ROW_MODES = {"main": ("vector", "keyword", "hybrid"), "plain": ("vector",), "trafilatura+rcts": ("vector",)}


def _rows() -> dict[str, tables.Row]:
    rows = tables.available_rows()
    return {n: rows[n] for n in ROW_MODES if n in rows}


def build(qa: QASet, name: str, row: tables.Row, tmp: Path, embedder: Any,
          index: bool = True) -> tuple[Path, dict[str, Any]]:
    """The row's chunks of every page, stored and indexed (index False: neither); (store path,
    shape metrics)."""
    from blockcrawl.index import build_index
    from blockcrawl.store import Store

    t = time.perf_counter()
    results = row(qa.pages)
    url_of = {pid: url for pid, url, _ in qa.pages}
    chunks = [c for _, cs, _ in results.values() for c in cs]
    ntok = [c.n_tokens for c in chunks]
    bare = [i for i, n in enumerate(ntok) if n == 0]  # the recipes' chunks carry no count
    if bare:
        from blockcrawl.chunk.tokenize import default_tokenizer

        for i, n in zip(bare, default_tokenizer().count([chunks[i].text for i in bare])):
            ntok[i] = n
    texts = {pid: [tables.norm(c.text) for c in cs] for pid, (_, cs, _) in results.items()}
    kept = [any(tables.norm(a) in t for p in q["pages"] for t in texts.get(p, ()) for a in q["answers"])
            for q in qa.queries]
    shape = {"set": qa.name, "row": name, "pages": len(qa.pages), "questions": len(qa.queries),
             "chunks": len(chunks), "chunks/page": round(len(chunks) / max(1, len(qa.pages)), 1),
             "<32tok": round(sum(n < SMALL for n in ntok) / max(1, len(chunks)), 3),
             "kept": round(sum(kept) / max(1, len(kept)), 3), "extract_s": round(time.perf_counter() - t, 1)}
    path = tmp / f"{qa.name}-{name}.db"
    if not index:
        return path, shape
    path.unlink(missing_ok=True)
    with Store(path) as st:
        for pid, (blocks, cs, title) in results.items():
            st.save_page(url_of[pid], blocks, cs, title=title)
    t = time.perf_counter()
    build_index(path, embedder)
    shape["index_s"] = round(time.perf_counter() - t, 1)
    return path, shape


def candidates(path: Path, qa: QASet, embedder: Any) -> tuple[list[Any], dict[int, Any]]:
    """Per question (query, vector list, keyword list), and the rows of every candidate."""
    return ranking.candidate_lists(path, [q["query"] for q in qa.queries], embedder)


def recall(ranking: Ranking, mode: str, qa: QASet, lists: list[Any], info: dict[int, Any]) -> float:
    """Strict recall@K: a top-K hit of one of the question's pages holding one of its answers."""
    url_of = {pid: url for pid, url, _ in qa.pages}
    found = 0
    for q, (text, vec, kw) in zip(qa.queries, lists):
        urls = {url_of[p] for p in q["pages"] if p in url_of}
        answers = [tables.norm(a) for a in q["answers"]]
        hits = rank(ranking, mode, text, vec, kw, info, K)
        found += any(info[c].url in urls and any(a in tables.norm(info[c].text) for a in answers) for c in hits)
    return round(found / max(1, len(qa.queries)), 3)


def grid() -> list[tuple[str, Ranking]]:
    """Fusion settings tried over every set at once (name, ranking); the default first: RRF's k
    and the vector list's weight, crossed with the title boost and the own-word terms on or off."""
    out = [("default", RANKING)]
    for k in (10, 20):
        for wv in (1.0, 1.5, 2.0, 3.0, 4.0):
            for tw in (2.0,):
                for words in (True, False):
                    r = Ranking(rrf_k=k, vector_weight=wv, title_weight=tw) if words else \
                        Ranking(rrf_k=k, vector_weight=wv, title_weight=tw, word_weight=0.0, idf_weight=0.0,
                                block_weight=0.0)
                    out.append((f"k{k} wv{wv} title{tw} words{'on' if words else 'off'}", r))
    return out


def leave_one_out(grid_out: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """For each set: the setting with the best minimum over the other sets, and what it scores on
    the set left out (does a rule chosen elsewhere carry?)."""
    sets = sorted({s for v in grid_out.values() for s in v})
    out = []
    for held in sets:
        others = [s for s in sets if s != held]
        if not others:
            break
        best = max(grid_out, key=lambda g: (min(grid_out[g][s] for s in others), g == "default"))
        out.append({"held out": held, "chosen on the others": best,
                    "min on the others": min(grid_out[best][s] for s in others),
                    "held-out R@5": grid_out[best][held], "default's held-out R@5": grid_out["default"][held]})
    return out


def table(rows: list[dict[str, Any]]) -> str:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(f"{r[c]:.3f}" if isinstance(r.get(c), float) and c != "chunks/page"
                                     else str(r.get(c, "")) for c in cols) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated sets (default: all available)")
    ap.add_argument("--rows", default=",".join(ROW_MODES), help="comma-separated rows")
    ap.add_argument("--wtq-pages", type=int, default=100, help="first N wtq-dev pages by id (of 300)")
    ap.add_argument("--grid", action="store_true", help="also score the fusion grid (main row, hybrid)")
    ap.add_argument("--product-qa", type=Path, default=None,
                    help="the product-facts set's builder (default: bench/product_qa.py beside this file)")
    ap.add_argument("--shape", action="store_true", help="chunk shape and answers kept only (no embedding)")
    ap.add_argument("--json", type=Path, default=None, help="write the results here as JSON")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "blockcrawl-qa",
                    help="unpacked sites and stores (kept: the next run unpacks nothing)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "blockcrawl-bench-emb.sqlite")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    embedder = None if args.shape else tables.CachedEmbedder(args.cache)
    rows = _rows()
    results: list[dict[str, Any]] = []
    grid_out: dict[str, dict[str, float]] = {}
    for set_name in [s for s in args.sets.split(",") if s]:
        qa = SETS[set_name](args.work, args)
        if qa is None:
            print(f"{set_name}: not available, skipped", file=sys.stderr)
            continue
        for name in [r for r in args.rows.split(",") if r in rows]:
            path, res = build(qa, name, rows[name], args.work, embedder, not args.shape)
            if args.shape:
                results.append(res)
                print(json.dumps(res), file=sys.stderr, flush=True)
                continue
            lists, info = candidates(path, qa, embedder)
            for mode in ROW_MODES[name]:
                res[f"{mode} R@{K}"] = recall(RANKING, mode, qa, lists, info)
            if args.grid and name == "main":
                for label, r in grid():
                    grid_out.setdefault(label, {})[set_name] = recall(r, "hybrid", qa, lists, info)
            results.append(res)
            print(json.dumps(res), file=sys.stderr, flush=True)
    print(table(results))
    if grid_out:
        print("\nhybrid R@5 per fusion setting (main row); min over sets\n")
        print(table([{"setting": k, **v, "min": min(v.values())} for k, v in grid_out.items()]))
        print("\nleave one set out (hybrid R@5)\n")
        print(table(leave_one_out(grid_out)))
    if args.json:
        args.json.write_text(json.dumps({"results": results, "grid": grid_out,
                                         "leave_one_out": leave_one_out(grid_out) if grid_out else []}, indent=1))


if __name__ == "__main__":
    main()

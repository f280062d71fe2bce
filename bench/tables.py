"""Benchmark: do answers kept in tables survive the crawl, and does search find them?

Reads /work/shared/bench/data/wtq-dev (override with --data or BLOCKCRAWL_BENCH_DATA): 300 real
Wikipedia pages (2014, action=render, so no <title> and no site chrome) and 750 crowd questions
whose answer is one table cell. Each page is given the <title> a crawl of Wikipedia would see
("<title> - Wikipedia, the free encyclopedia", title from queries.jsonl) and goes through one
SitePipeline per row, page after page as one site (so site dedup runs as in a crawl).

Rows (all chunks embedded by the same model, all-MiniLM-L6-v2, through Store + build_index, and
ranked by blockcrawl.retrieval.search over one store per row holding every page of the run):
- main: the crawl's default (PipelineConfig(mode="main"), `auto`, 200 tokens, overlap 40);
- blocks: every block of the page, chunked the same way;
- plain: the whole page text in fixed 200-token chunks (overlap 40);
- trafilatura+rcts: trafilatura's text + LangChain's RecursiveCharacterTextSplitter(1000, 200);
- htmlheader+rcts: LangChain's HTMLHeaderTextSplitter(h1-h3) + the same splitter
(the last two need the `bench` extra: trafilatura, langchain-text-splitters, beautifulsoup4).

Metrics, per question (query = title + ": " + question, the dataset's usual setting), through
search()'s defaults as the CLI runs it (--per-page N to override; 0 = no limit):
- chunks/page, and survived: questions whose answer (case and white space normalised) occurs in
  some chunk of its page;
- strict recall@1/5/10 and MRR@10: a hit is correct when it is a chunk of the question's page whose
  text contains the answer (the page condition keeps "2" or "Yes" from matching anywhere);
- R@1000tok: the same within the hits, in rank order, whose texts fit in 1,000 model tokens (what a
  RAG caller pays for).
- the acceptance lines: `main`'s R@5 per mode against a floor of 0.65 and against the best other
  chunker's (every row but main and blocks) + 0.15.
Embeddings are cached by text hash across runs (--cache, CachedEmbedder).

Run: PYTHONPATH=. python bench/tables.py [--pages 100] [--modes vector,hybrid] [--rows main,plain]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from blockcrawl import SitePipeline  # noqa: E402
from blockcrawl.hashing import text_hash  # noqa: E402
from blockcrawl.records import Block, Chunk  # noqa: E402

DEFAULT_DATA = Path(os.environ.get("BLOCKCRAWL_BENCH_DATA", "/work/shared/bench/data")) / "wtq-dev"
KS = (1, 5, 10)
BUDGET = 1000  # tokens of hit text a RAG caller pays for: hits kept in rank order while they fit


def norm(s: str) -> str:
    return " ".join(s.lower().split())


def load(data: Path, n_pages: int) -> tuple[list[tuple[str, str, str]], list[dict[str, Any]]]:
    """(page id, url, wrapped html) of the first n_pages pages (sorted by id) and their questions."""
    queries = [json.loads(line) for line in (data / "queries.jsonl").read_text().splitlines() if line.strip()]
    by_page: dict[str, dict[str, Any]] = {}
    for q in queries:
        by_page.setdefault(q["page"], q)
    ids = sorted(by_page)[:n_pages]
    pages = []
    for pid in ids:
        raw = gzip.decompress((data / "pages" / f"{pid}.html.gz").read_bytes()).decode("utf-8", "replace")
        title = by_page[pid]["title"]
        html = (f"<!DOCTYPE html><html><head><title>{title} - Wikipedia, the free encyclopedia</title></head>"
                f"<body>{raw}</body></html>")
        pages.append((pid, f"https://en.wikipedia.org/wiki/{pid}", html))
    keep = set(ids)
    return pages, [q for q in queries if q["page"] in keep]


class CachedEmbedder:
    """all-MiniLM-L6-v2 with a cache of vectors by text hash in an SQLite file (--cache, default
    /tmp/blockcrawl-bench-emb.sqlite), kept across runs: the rows of one run share most chunk texts
    with the last run's, and embedding 10k table chunks costs ~10 minutes on 2 shared cores.
    Same name and dimension as the model, so stores built with it are searched with it."""

    def __init__(self, path: Path) -> None:
        import sqlite3

        from blockcrawl.index.embed import default_embedder

        self.inner = default_embedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.db = sqlite3.connect(str(path), check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS v (h TEXT PRIMARY KEY, b BLOB)")
        self.hits = self.misses = 0

    def embed(self, texts: list[str]) -> Any:
        import hashlib

        import numpy as np

        keys = [hashlib.sha1(f"{self.name}\0{t}".encode()).hexdigest() for t in texts]
        found: dict[str, Any] = {}
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            q = f"SELECT h, b FROM v WHERE h IN ({','.join('?' * len(part))})"
            found.update((h, np.frombuffer(b, dtype=np.float32)) for h, b in self.db.execute(q, part))
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in found}.items())
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        if todo:
            m = self.inner.embed([t for _, t in todo])
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)",
                                    [(k, m[j].astype(np.float32).tobytes()) for j, (k, _) in enumerate(todo)])
            found.update((k, m[j]) for j, (k, _) in enumerate(todo))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out


Row = Callable[[list[tuple[str, str, str]]], dict[str, tuple[list[Block], list[Chunk], str]]]


def pipeline_row(mode: str) -> Row:
    def run(pages: list[tuple[str, str, str]]) -> dict[str, tuple[list[Block], list[Chunk], str]]:
        pipe = SitePipeline(mode=mode)  # one site: blocks seen on an earlier page are dropped
        out = {}
        for pid, url, html in pages:
            r = pipe.process(html, url)
            out[pid] = (r.blocks, r.chunks, r.title)
        return out
    return run


def _chunks_of(texts: list[str], url: str) -> list[Chunk]:
    h = text_hash("\n".join(texts))
    return [Chunk(t, url, (), 0, i, h, 0) for i, t in enumerate(texts)]


def trafilatura_row(pages: list[tuple[str, str, str]]) -> dict[str, tuple[list[Block], list[Chunk], str]]:
    import trafilatura
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    split = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    out = {}
    for pid, url, html in pages:
        text = trafilatura.extract(html) or ""
        out[pid] = ([], _chunks_of(split.split_text(text), url), "")
    return out


def header_row(pages: list[tuple[str, str, str]]) -> dict[str, tuple[list[Block], list[Chunk], str]]:
    from langchain_text_splitters import HTMLHeaderTextSplitter, RecursiveCharacterTextSplitter

    split = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    headers = HTMLHeaderTextSplitter([("h1", "h1"), ("h2", "h2"), ("h3", "h3")])
    out = {}
    for pid, url, html in pages:
        docs = split.split_documents(headers.split_text(html))
        out[pid] = ([], _chunks_of([d.page_content for d in docs], url), "")
    return out


def available_rows() -> dict[str, Row]:
    rows: dict[str, Row] = {"main": pipeline_row("main"), "blocks": pipeline_row("blocks"),
                            "plain": pipeline_row("plain")}
    try:
        import bs4  # noqa: F401  (HTMLHeaderTextSplitter parses with it)
        import langchain_text_splitters  # noqa: F401
        import trafilatura  # noqa: F401
    except ImportError:
        print("trafilatura / langchain-text-splitters / beautifulsoup4 not installed (the `bench` extra): "
              "their rows are skipped", file=sys.stderr)
    else:
        rows["trafilatura+rcts"] = trafilatura_row
        rows["htmlheader+rcts"] = header_row
    return rows


def evaluate(name: str, row: Row, pages: list[tuple[str, str, str]], queries: list[dict[str, Any]],
             modes: list[str], tmp: Path, embedder: Any = None, per_page: int | None = None,
             keep_store: bool = False) -> dict[str, Any]:
    """One row's survival, chunks per page and, per search mode, strict recall (a hit from the
    question's own page holding the answer) at 1/5/10 hits and within a 1,000-token budget, through
    search()'s defaults unless per_page is given."""
    from blockcrawl.chunk.tokenize import default_tokenizer
    from blockcrawl.index import build_index
    from blockcrawl.retrieval import search
    from blockcrawl.store import Store

    t = time.perf_counter()
    results = row(pages)
    t_extract = time.perf_counter() - t
    url_of = {pid: url for pid, url, _ in pages}
    page_texts = {pid: [norm(c.text) for c in chunks] for pid, (_, chunks, _) in results.items()}
    survived = [any(norm(q["answer"]) in c for c in page_texts[q["page"]]) for q in queries]
    n_chunks = sum(len(c) for _, c, _ in results.values())
    out: dict[str, Any] = {"row": name, "pages": len(pages), "questions": len(queries),
                           "chunks": n_chunks, "chunks/page": round(n_chunks / max(1, len(pages)), 1),
                           "survived": sum(survived), "extract_s": round(t_extract, 1)}
    if not modes and not keep_store:
        return out
    path = tmp / f"{name}.db"
    with Store(path) as st:
        for pid, (blocks, chunks, title) in results.items():
            st.save_page(url_of[pid], blocks, chunks, title=title)
    t = time.perf_counter()
    build_index(path, embedder)
    out["index_s"] = round(time.perf_counter() - t, 1)
    if keep_store:
        out["store"] = str(path)
    tok = default_tokenizer()
    kw: dict[str, Any] = {} if per_page is None else {"per_page": per_page}
    with Store(path, readonly=True) as st:
        for mode in modes:
            ranks: list[int | None] = []
            in_budget = 0
            for q in queries:
                hits = search(st, q["title"] + ": " + q["query"], max(KS), mode, embedder, **kw)
                a = norm(q["answer"])
                good = [h.url == url_of[q["page"]] and a in norm(h.text) for h in hits]
                ranks.append(next((i + 1 for i, g in enumerate(good) if g), None))
                used = 0
                for g, n in zip(good, tok.count([h.text for h in hits])):
                    used += n
                    if used > BUDGET:
                        break
                    if g:
                        in_budget += 1
                        break
            for k in KS:
                out[f"{mode} R@{k}"] = round(sum(1 for r in ranks if r is not None and r <= k) / len(ranks), 3)
            out[f"{mode} R@{BUDGET}tok"] = round(in_budget / len(ranks), 3)
            out[f"{mode} MRR@10"] = round(sum(1 / r for r in ranks if r is not None) / len(ranks), 3)
    return out


OURS = ("main", "blocks")  # blockcrawl's own chunkers; every other row is a peer
FLOOR, MARGIN = 0.65, 0.15  # the acceptance bar: R@5 >= 0.65 and >= the best other chunker's + 0.15


def acceptance(table: list[dict[str, Any]], modes: list[str]) -> list[str]:
    """One line per mode: `main`'s R@5 against the floor and against the best peer row's + 0.15."""
    lines = []
    ours = next((r for r in table if r["row"] == "main"), None)
    peers = [r for r in table if r["row"] not in OURS]
    for mode in modes:
        key = f"{mode} R@5"
        if ours is None or key not in ours:
            continue
        got = ours[key]
        line = f"{key}: main {got:.3f} (floor {FLOOR:.2f}: {'ok' if got >= FLOOR else 'MISSED'})"
        if peers:
            best = max(peers, key=lambda r: float(r[key]))
            need = best[key] + MARGIN
            line += (f"; best other chunker {best['row']} {best[key]:.3f} + {MARGIN:.2f} = {need:.3f}: "
                     f"{'ok' if got >= need - 1e-9 else 'MISSED'} ({got - best[key]:+.3f})")
        lines.append(line)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--pages", type=int, default=100, help="first N pages by id (default 100 of 300)")
    ap.add_argument("--modes", default="vector,hybrid", help="search modes; '' for survival only")
    ap.add_argument("--rows", default="", help="comma-separated rows (default: all available)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--per-page", type=int, default=None,
                    help="search's per_page (default: search()'s own default, as the CLI; 0: no limit)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "blockcrawl-bench-emb.sqlite",
                    help="embedding cache by text hash, kept across runs ('' for none)")
    args = ap.parse_args()
    pages, queries = load(args.data, args.pages)
    rows = available_rows()
    names = [r for r in args.rows.split(",") if r] or list(rows)
    modes = [m for m in args.modes.split(",") if m]
    table = []
    embedder = CachedEmbedder(args.cache) if str(args.cache) not in ("", ".") and modes else None
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            res = evaluate(name, rows[name], pages, queries, modes, Path(tmp), embedder, args.per_page)
            table.append(res)
            print(json.dumps(res) if args.json else res, flush=True)
    for line in acceptance(table, modes):
        print(line, file=sys.stderr if args.json else sys.stdout)
    if not args.json:
        cols = list(dict.fromkeys(k for r in table for k in r))
        print("\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
        for r in table:
            print("| " + " | ".join(f"{r.get(c, '')}" if not isinstance(r.get(c), float) else f"{r[c]:.3f}"
                                    for c in cols) + " |")


if __name__ == "__main__":
    main()

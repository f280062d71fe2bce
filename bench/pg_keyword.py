"""Keyword ranking of the PostgreSQL store against SQLite's FTS5 bm25 on the same pages.

Stores the wtq-dev pages (300 Wikipedia pages) in an SQLite file and a PostgreSQL database the
same way, then asks both every question of the set by keyword and compares the top 10: identical
lists, top-10 overlap (|A & B| / 10), Spearman's rho over the union, and the time per query.

    python bench/pg_keyword.py /work/shared/bench/data postgresql://user@127.0.0.1:5432/db [--pages N]

The database must be empty (a fresh `createdb`); the SQLite file is written to a temporary folder.
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def spearman(a: list[int], b: list[int]) -> float:
    """rho over the union of two top lists, a missing item ranked just below the list."""
    items = list(dict.fromkeys(a + b))
    if len(items) < 2:
        return 1.0
    ra = {x: a.index(x) if x in a else len(a) for x in items}
    rb = {x: b.index(x) if x in b else len(b) for x in items}
    xs, ys = [ra[x] for x in items], [rb[x] for x in items]
    try:
        return float(statistics.correlation(xs, ys))  # Pearson of the ranks
    except statistics.StatisticsError:  # a constant list: all missing
        return 1.0 if xs == ys else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data")
    ap.add_argument("dsn")
    ap.add_argument("--pages", type=int, default=300)
    args = ap.parse_args()
    from blockcrawl.pipeline import PipelineConfig, SitePipeline
    from blockcrawl.store import SqliteStore, open_store
    from blockcrawl.store.schema import ensure_index_schema

    base = Path(args.data) / "wtq-dev"
    queries = [json.loads(x) for x in (base / "queries.jsonl").read_text().splitlines() if x.strip()]
    files = sorted((base / "pages").glob("*.html.gz"))[:args.pages]
    path = Path(tempfile.mkdtemp()) / "wtq.db"
    pipe = SitePipeline(PipelineConfig(mode="main"))
    t0 = time.perf_counter()
    with SqliteStore(path) as sq, open_store(args.dsn) as pg:
        for f in files:
            url = f"http://en.wikipedia.org/{f.name[:-8]}"
            r = pipe.process(gzip.decompress(f.read_bytes()), url)
            for st in (sq, pg):
                st.save_page(url, r.blocks, r.chunks, title=r.title, markdown=r.markdown)
        sq.commit()
        pg.commit()
        ensure_index_schema(sq.db)
        sq.commit()
        n_chunks = sq.count_chunks()
    print(f"{len(files)} pages, {n_chunks} chunks stored in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    same = 0
    overlaps, rhos, t_sq, t_pg = [], [], [], []
    with SqliteStore(path, readonly=True) as sq, open_store(args.dsn, readonly=True) as pg:
        for q in queries:
            t = time.perf_counter()
            ra = sq.keyword_ranked(q["query"], 10)
            t_sq.append(time.perf_counter() - t)
            t = time.perf_counter()
            rb = pg.keyword_ranked(q["query"], 10)
            t_pg.append(time.perf_counter() - t)
            a, b = [i for i, _ in ra], [i for i, _ in rb]
            same += a == b
            if a != b:
                print(f"differs: {q['query']!r}\n  sqlite   {ra}\n  postgres {rb}", file=sys.stderr)
            overlaps.append(len(set(a) & set(b)) / max(1, len(a), len(b)))
            rhos.append(spearman(a, b))
    n = len(queries)
    print(json.dumps({
        "pages": len(files), "chunks": n_chunks, "queries": n, "identical_top10": same,
        "mean_top10_overlap": round(statistics.fmean(overlaps), 4), "min_top10_overlap": round(min(overlaps), 4),
        "mean_spearman": round(statistics.fmean(rhos), 4),
        "sqlite_ms_median": round(1000 * statistics.median(t_sq), 2),
        "postgres_ms_median": round(1000 * statistics.median(t_pg), 2),
        "postgres_ms_p90": round(1000 * sorted(t_pg)[int(0.9 * n)], 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

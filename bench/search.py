"""Benchmark of the index and search stages (issue 5). Prints three tables:

1. index build speed: `blockcrawl index` (hash, embed, SQLite writes) vs the model's own
   SentenceTransformer.encode() on the same chunk texts, in the same run (ratio = index / encode);
2. query latency p50/p95 of search() at 10k and 100k chunks, per mode, exact and HNSW. These stores
   are SYNTHETIC: texts are random word sequences drawn from the real chunks' vocabulary and vectors
   are random unit vectors (only latency is measured there; query embedding is real);
3. retrieval quality: recall@5 of heading-aware block chunks vs plain fixed-size chunks (both 200
   tokens, overlap 40) on a query set built from the benchmark pages' sections (method in README).

Reads pages from ../shared/bench/data (relative to the repository; override with --data or
BLOCKCRAWL_BENCH_DATA). Run: python bench/search.py [--pages N] [--sizes 10000,100000]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from blockcrawl import SitePipeline  # noqa: E402
from blockcrawl.index import build_index, default_embedder  # noqa: E402
from blockcrawl.index.ann import available as ann_available, build_ann  # noqa: E402
from blockcrawl.index.schema import ensure_schema, set_meta, vector_key  # noqa: E402
from blockcrawl.search import search  # noqa: E402
from blockcrawl.store import Store  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "data"
DATASETS = ("aeb", "cleaneval-dev", "cleanportaleval")
_WORDS = re.compile(r"\w+", re.UNICODE)
SHINGLE = 8  # a chunk is relevant to a section when they share an 8-word run
MIN_SECTION_WORDS = 30


def load_pages(data: Path, limit: int) -> list[tuple[str, bytes]]:
    pages = []
    for name in DATASETS:
        folder = data / name
        if not (folder / "gold.jsonl").is_file():
            continue
        for line in (folder / "gold.jsonl").read_text().splitlines():
            rec = json.loads(line)
            for suffix in (".html.gz", ".html"):
                f = folder / "pages" / f"{rec['id']}{suffix}"
                if f.is_file():
                    raw = f.read_bytes()
                    pages.append((f"https://{name}.bench/{rec['id']}", gzip.decompress(raw) if suffix == ".html.gz" else raw))
                    break
    random.Random(5).shuffle(pages)
    return pages[:limit]


def fill_store(path: Path, pages: list[tuple[str, bytes]], mode: str) -> list:
    """Store every page's chunks (one pipeline per page: the pages come from different sites)."""
    results = []
    with Store(path) as st:
        for url, html in pages:
            r = SitePipeline(mode=mode).process(html, url)
            st.save_page(url, r.blocks, r.chunks, title=r.title)
            results.append(r)
    return results


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


# ---- 1. index build speed --------------------------------------------------------------------------

def bench_build(pages, tmp: Path, batch: int, rounds: int) -> dict:
    emb = default_embedder()
    emb.embed(["warm up the model"])
    path = tmp / "build.db"
    fill_store(path, pages, "blocks")
    db = sqlite3.connect(path)
    texts = [t for (t,) in db.execute(
        "SELECT c.text FROM chunks c JOIN blocks b ON b.page_id=c.page_id AND b.position=c.block_position "
        "WHERE b.kind != 'heading'")]
    db.close()
    unique = list(dict.fromkeys(texts))  # index embeds each distinct text once; so does this baseline
    emb.batch_size = batch
    # The machine is shared: alternate the two and keep each one's best of `rounds`.
    t_encode, t_index = [], []
    db = sqlite3.connect(path)
    ensure_schema(db)
    db.commit()
    db.close()
    for _ in range(rounds):
        t = time.perf_counter()
        emb.model.encode(unique, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True)
        t_encode.append(time.perf_counter() - t)
        db = sqlite3.connect(path)
        db.execute("DELETE FROM chunk_vectors")  # forget the vectors: the next run embeds all again
        db.execute("DELETE FROM embeddings")
        db.commit()
        db.close()
        st = build_index(path, embedder=emb, batch_size=batch)
        t_index.append(st.seconds)
    return {"chunks": len(unique), "encode_s": min(t_encode), "index_s": min(t_index), "embedded": st.embedded}


# ---- 2. query latency on synthetic stores ----------------------------------------------------------

def synthetic_store(path: Path, n: int, vocab: list[str], dim: int, model: str) -> None:
    rng = np.random.default_rng(n)
    pyr = random.Random(n)
    weights = [1.0 / (i + 1) for i in range(len(vocab))]  # Zipf-like word frequencies
    with Store(path) as st:
        st.db.execute("INSERT INTO pages(url, title) VALUES ('https://synthetic.bench/', 'synthetic')")
        rows = []
        for i in range(n):
            words = pyr.choices(vocab, weights, k=60)
            rows.append((1, i, 0, "https://synthetic.bench/", json.dumps(["Section", str(i // 20)]),
                         " ".join(words), "h", 80))
        st.db.executemany("INSERT INTO chunks(page_id, block_position, chunk_index, url, heading_path, text, "
                          "block_hash, n_tokens) VALUES (?,?,?,?,?,?,?,?)", rows)
        ensure_schema(st.db)  # builds FTS over the chunks
        ids = [r[0] for r in st.db.execute("SELECT id FROM chunks ORDER BY id")]
        texts = [r[0] for r in st.db.execute("SELECT text FROM chunks ORDER BY id")]
        for start in range(0, n, 10000):
            m = rng.standard_normal((min(10000, n - start), dim)).astype(np.float32)
            m /= np.linalg.norm(m, axis=1, keepdims=True)
            keys = [vector_key(model, t) for t in texts[start:start + len(m)]]
            st.db.executemany("INSERT OR REPLACE INTO embeddings(key, vec) VALUES (?,?)",
                              [(k, m[j].tobytes()) for j, k in enumerate(keys)])
            st.db.executemany("INSERT OR REPLACE INTO chunk_vectors(chunk_id, key) VALUES (?,?)",
                              list(zip(ids[start:start + len(m)], keys)))
        set_meta(st.db, model=model, dim=dim, generation=1)


def bench_latency(sizes: list[int], vocab: list[str], queries: list[str], tmp: Path, k: int) -> list[dict]:
    emb = default_embedder()
    out = []
    for n in sizes:
        path = tmp / f"synthetic-{n}.db"
        t = time.perf_counter()
        synthetic_store(path, n, vocab, emb.dim, emb.name)
        print(f"  synthetic store of {n} chunks built in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        variants = [("exact", None)]
        if ann_available():
            variants.append(("hnsw", True))
        for variant, ann in variants:
            if ann:
                from blockcrawl.index.vectors import load_vectors

                db = sqlite3.connect(path)
                ids, m = load_vectors(db)
                db.close()
                t = time.perf_counter()
                build_ann(path, ids, m, 1)
                print(f"  HNSW over {n} built in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            if variant == "exact":  # the model's share of every vector/hybrid query
                lat = []
                for q in queries:
                    t = time.perf_counter()
                    emb.embed([q])
                    lat.append((time.perf_counter() - t) * 1000)
                out.append({"n": n, "variant": "-", "mode": "query embedding alone", "p50": pct(lat, 50),
                            "p95": pct(lat, 95), "load_s": float("nan")})
            t = time.perf_counter()
            search(path, queries[0], k, "vector")  # first query loads the vectors (or the graph)
            load_s = time.perf_counter() - t
            for mode in ("vector", "keyword", "hybrid"):
                if variant == "hnsw" and mode == "keyword":
                    continue
                lat = []
                for q in queries:
                    t = time.perf_counter()
                    search(path, q, k, mode)
                    lat.append((time.perf_counter() - t) * 1000)
                out.append({"n": n, "variant": variant, "mode": mode, "p50": pct(lat, 50), "p95": pct(lat, 95),
                            "load_s": load_s})
        for p in path.parent.glob(path.name + "*"):
            p.unlink()
    return out


# ---- 3. recall@5 of block chunks vs plain chunks ---------------------------------------------------

def shingles(text: str) -> set[tuple[str, ...]]:
    w = [x.lower() for x in _WORDS.findall(text)]
    return {tuple(w[i:i + SHINGLE]) for i in range(max(0, len(w) - SHINGLE + 1))}


def first_sentence(text: str, max_words: int = 20) -> str:
    s = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return " ".join(s.split()[:max_words])


def build_queries(block_results, max_queries: int) -> list[dict]:
    """Sections with a heading and >= 30 words of body: query = heading text, or first sentence."""
    qs = []
    seen = set()
    for r in block_results:
        for b in r.blocks:
            if b.kind == "heading" or not b.heading_path or len(b.body.split()) < MIN_SECTION_WORDS:
                continue
            heading = b.heading_path[-1].strip()
            if len(heading.split()) < 2 or heading.lower() in seen:  # "Comments", "Menu": no real query
                continue
            seen.add(heading.lower())
            qs.append({"url": r.url, "heading": heading, "sentence": first_sentence(b.body),
                       "shingles": shingles(b.body)})
    random.Random(7).shuffle(qs)
    return qs[:max_queries]


def bench_recall(pages, tmp: Path, max_queries: int, k: int) -> tuple[list[dict], int]:
    stores = {}
    block_results = None
    for mode in ("blocks", "plain"):
        path = tmp / f"recall-{mode}.db"
        res = fill_store(path, pages, mode)
        if mode == "blocks":
            block_results = res
        build_index(path, progress=True)
        stores[mode] = path
    queries = build_queries(block_results, max_queries)
    rows = []
    for chunking, path in stores.items():
        for qkind in ("heading", "sentence"):
            for mode in ("vector", "hybrid", "keyword"):
                found, focus = 0, []
                for q in queries:
                    hits = search(path, q[qkind], k, mode)
                    for h in hits:
                        sh = shingles(h.text)
                        if h.url == q["url"] and sh & q["shingles"]:
                            found += 1
                            # share of the first relevant hit's text that is the section's own
                            focus.append(len(sh & q["shingles"]) / len(sh))
                            break
                rows.append({"chunks": chunking, "query": qkind, "mode": mode, "recall": found / max(1, len(queries)),
                             "focus": statistics.mean(focus) if focus else 0.0})
    counts = {}
    for chunking, path in stores.items():
        db = sqlite3.connect(path)
        counts[chunking] = db.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]
        db.close()
    return rows, len(queries), counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("BLOCKCRAWL_BENCH_DATA", DEFAULT_DATA)),
                    help=f"benchmark pages (default {DEFAULT_DATA}, or $BLOCKCRAWL_BENCH_DATA)")
    ap.add_argument("--pages", type=int, default=120, help="pages for the build and recall parts (default 120)")
    ap.add_argument("--sizes", default="10000,100000", help="synthetic store sizes for latency")
    ap.add_argument("--queries", type=int, default=200, help="max queries (recall) (default 200)")
    ap.add_argument("--latency-queries", type=int, default=100, help="queries per latency cell (default 100)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--build-pages", type=int, default=30, help="pages for the build-speed part (default 30)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating encode/index rounds (default 2)")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: build,latency,recall")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    pages = load_pages(args.data, args.pages)
    if not pages:
        print(f"no benchmark pages under {args.data} (see --data)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "build" not in skip:
            bp = pages[:args.build_pages]
            b = bench_build(bp, tmp, args.batch_size, args.rounds)
            print(f"\n### Index build ({len(bp)} pages, best of {args.rounds} alternating runs, {b['chunks']} distinct chunk texts, batch {args.batch_size})\n")
            print("| | seconds | chunks/s | ratio |\n|---|---:|---:|---:|")
            print(f"| model.encode() alone | {b['encode_s']:.1f} | {b['chunks'] / b['encode_s']:.0f} | 1.00 |")
            print(f"| blockcrawl index | {b['index_s']:.1f} | {b['chunks'] / b['index_s']:.0f} | "
                  f"{b['index_s'] / b['encode_s']:.2f} |", flush=True)
        if "latency" not in skip:
            # vocabulary and queries from the real pages: headings as queries
            words = [w.lower() for _, html in pages[:40] for w in _WORDS.findall(html.decode("utf-8", "replace"))
                     if w.isalpha() and 2 < len(w) < 14]
            vocab = [w for w, _ in __import__("collections").Counter(words).most_common(20000)]
            qs = [f"{random.Random(i).choice(vocab)} {random.Random(i + 1).choice(vocab)} news" for i in range(args.latency_queries)]
            lat = bench_latency([int(s) for s in args.sizes.split(",")], vocab, qs, tmp, 10)
            print(f"\n### Query latency, k=10 (synthetic chunks and vectors; query embedding is real; "
                  f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)\n")
            print("| chunks | vectors | mode | p50 ms | p95 ms | first-query load s |\n|---:|---|---|---:|---:|---:|")
            for r in lat:
                print(f"| {r['n']} | {r['variant']} | {r['mode']} | {r['p50']:.1f} | {r['p95']:.1f} | {r['load_s']:.2f} |")
            sys.stdout.flush()
        if "recall" not in skip:
            rows, nq, counts = bench_recall(pages, tmp, args.queries, 5)
            print(f"\n### Recall@5, block chunks ({counts['blocks']} embedded) vs plain chunks ({counts['plain']}); "
                  f"{nq} section queries from {len(pages)} pages\n")
            print("| query | mode | recall@5 blocks | recall@5 plain | focus blocks | focus plain |\n"
                  "|---|---|---:|---:|---:|---:|")
            for qkind in ("heading", "sentence"):
                for mode in ("vector", "hybrid", "keyword"):
                    get = {r["chunks"]: r for r in rows if r["query"] == qkind and r["mode"] == mode}
                    print(f"| {qkind} | {mode} | {get['blocks']['recall']:.3f} | {get['plain']['recall']:.3f} | "
                          f"{get['blocks']['focus']:.2f} | {get['plain']['focus']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

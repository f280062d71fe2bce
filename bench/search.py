"""Benchmark of the index and search stages. Prints three tables:

1. index build speed: `blockcrawl index` (hash, embed, SQLite writes; int8 ONNX Runtime)
   vs torch fp32 SentenceTransformer.encode() on the same chunk texts, in the same run (ratio =
   index / encode; bench/embed_speed.py compares the runtimes alone);
2. query latency p50/p95 of search() at 10k and 100k chunks (--sizes; 1000000 for the ANN scale), per mode,
   exact and HNSW, with the HNSW build time, memory per million chunks and recall@10 against exact
   search. These stores are SYNTHETIC but made of real parts (SYNTH_METHOD below): perturbed mixtures
   of embedded wtq-dev chunks and windows of their text; the queries are wtq-dev's questions;
3. retrieval quality: recall of heading-aware block chunks vs plain fixed-size chunks of the same
   main-content text (and, as a naive baseline, plain chunks of the whole page text), all 200 tokens
   with overlap 40, at k=5 and at an equal context budget of 1,000 tokens, on queries built from the
   benchmark pages' sections (method: RECALL_METHOD below, also in docs/benchmarks.md).

Reads pages from ../shared/bench/data (relative to the repository; override with --data or
BLOCKCRAWL_BENCH_DATA), wtq-dev included (part 2). Run: python bench/search.py [--pages N]
[--sizes 10000,100000] [--skip build,recall]
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
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from common import DATA  # noqa: E402 - first: it puts the repository on sys.path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from blockcrawl import SitePipeline  # noqa: E402
from blockcrawl.index import build_index, default_embedder  # noqa: E402
from blockcrawl.index.ann import available as ann_available  # noqa: E402
from blockcrawl.index.ann import build_ann  # noqa: E402
from blockcrawl.index.schema import ensure_schema, set_meta, vector_key  # noqa: E402
from blockcrawl.retrieval import search  # noqa: E402
from blockcrawl.store import Store  # noqa: E402

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

CHUNKS_PER_PAGE = 20
# filters timed (name, search() keywords): half the chunks (big.bench: the float16 scan restricted to
# their rows), 2% of them (site7.bench: a float32 product over just those rows), and a URL prefix
FILTERS = (("site, 50% of chunks", {"site": "big.bench"}), ("site, 2% of chunks", {"site": "site7.bench"}),
           ("url-prefix, 2% of chunks", {"url_prefix": "https://site7.bench/"}))


def synthetic_url(page: int) -> str:
    """Even pages on big.bench, odd ones spread over 25 hosts site1..site49.bench (2% of chunks each)."""
    return f"https://big.bench/p{page}" if page % 2 == 0 else f"https://site{page % 50}.bench/p{page}"


SYNTH_METHOD = """Synthetic stores, method (realistic vectors and texts, built in minutes).

Base: the chunks `crawl` stores for the first BASE_PAGES wtq-dev pages (real Wikipedia articles
with tables, one SitePipeline as one site), of which BASE_TEXTS drawn with a fixed seed are
embedded by the bundled model as `index` embeds them (context + text; cached by text hash across
runs in bench/tables.py's cache file). Each synthetic chunk is a perturbed mixture of them:
  vector  unit(b_a + w * b_b + NOISE * unit(sum_j g_j * b_r_j)): b_a a random base vector, b_b one of
          its NEIGHBOURS nearest base vectors, w ~ U(0, MIX), g_j ~ N(0, 1) over 8 random base
          vectors b_r_j. The perturbation lies in the span of real embeddings (not isotropic noise
          in 384 dimensions, which no text embedding has), so neighbourhoods look like real ones:
          the nearest of 10^6 to a real question is at cosine ~0.7, as in real stores.
  text    a window of up to WORDS_A words of base chunk a's text and one of up to WORDS_B words of
          b's, its heading path and context those of a: the words and their frequencies are real
          Wikipedia text (Zipf-like by nature), so FTS5 posting lists and bm25 work look real. One
          departure: a word of one base chunk is in ~n/BASE_TEXTS chunks, so rare words are less
          rare than in a real store of that size (longer posting lists: pessimistic for latency).
Queries: the wtq-dev questions ("title: question", real query embeddings) for latency and for
recall@10 of the ANN index against exact search; also hold-out vectors (made like the stored ones,
not stored), which is what a query that paraphrases a stored chunk looks like.
Bulk build: one transaction, executemany, journal off, 8 KiB pages (at 4 KiB, what `index` gets,
each vector row spills into an overflow page: 4.4 GB a million on disk instead of 1.6; search reads
the flat file, not this table), FTS5 filled once after the chunks, the embeddings table keyed in
sorted order, the flat vector file `index` writes; HNSW built with every core (index.ann.build_ann).
"""
BASE_PAGES = 100    # wtq-dev pages whose chunks seed the synthetic stores
BASE_TEXTS = 2000   # of their chunks, embedded (cached across runs by text hash)
NEIGHBOURS = 16     # a synthetic chunk mixes base chunk a with one of a's 16 nearest base chunks ...
MIX = 0.5           # ... at a weight drawn from U(0, MIX)
NOISE = 0.35        # and a perturbation of this norm (a random combination of 8 base vectors)
WORDS_A, WORDS_B = 60, 20  # words of text from a and from the neighbour b
RECALL_QUERIES = 150  # real questions (and as many hold-out vectors) for ANN recall@10 vs exact: the
# exact top 10 is one pass over the matrix per 64 queries (~200 s for 523 at 10^6 at load 15)


@dataclass
class Base:
    texts: list[list[str]]  # words of each base chunk's text
    heading: list[str]  # its heading path (JSON) and context
    context: list[str]
    vectors: np.ndarray  # (BASE_TEXTS, dim) unit rows
    neighbours: np.ndarray  # (BASE_TEXTS, NEIGHBOURS) nearest other base rows
    queries: list[str]
    query_vectors: np.ndarray
    seconds: float
    embedded: int  # texts the model embedded in this run (the rest came from the cache)


def base_corpus(data: Path, n_pages: int = BASE_PAGES, n_texts: int = BASE_TEXTS) -> Base:
    from tables import CachedEmbedder, load  # bench/tables.py: wtq-dev pages, embedding cache

    t = time.perf_counter()
    pages, questions = load(data, n_pages)
    pipe = SitePipeline(mode="main")
    chunks = {}
    for _, url, html in pages:
        for c in pipe.process(html, url).chunks:
            chunks.setdefault(c.embed_text, c)
    rng = np.random.default_rng(24)
    pick = sorted(rng.choice(len(chunks), size=min(n_texts, len(chunks)), replace=False).tolist())
    chosen = [c for i, c in enumerate(chunks.values()) if i in set(pick)]
    emb = CachedEmbedder(Path(tempfile.gettempdir()) / "blockcrawl-bench-emb.sqlite")
    vecs = np.asarray(emb.embed([c.embed_text for c in chosen]), dtype=np.float32)
    queries = [f"{q['title']}: {q['query']}" for q in questions]
    qv = np.asarray(emb.embed(queries), dtype=np.float32)
    sims = vecs @ vecs.T
    np.fill_diagonal(sims, -2.0)
    nbr = np.argsort(-sims, axis=1)[:, :NEIGHBOURS]
    return Base([c.text.split() for c in chosen], [json.dumps(list(c.heading_path)) for c in chosen],
                [c.context for c in chosen], vecs, nbr, queries, qv, time.perf_counter() - t, emb.misses)


def synthetic_vectors(rng: np.random.Generator, base: Base, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, vectors) of m synthetic chunks (SYNTH_METHOD): base row, neighbour row, unit vector."""
    nb = len(base.vectors)
    a = rng.integers(0, nb, m)
    b = base.neighbours[a, rng.integers(0, base.neighbours.shape[1], m)]
    w = rng.uniform(0.0, MIX, m).astype(np.float32)[:, None]
    g = rng.standard_normal((m, 8)).astype(np.float32)
    noise = np.einsum("mk,mkd->md", g, base.vectors[rng.integers(0, nb, (m, 8))])
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    v = base.vectors[a] + w * base.vectors[b] + NOISE * noise
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return a, b, v.astype(np.float32)


def synthetic_store(path: Path, n: int, base: Base, model: str) -> dict:
    """A store of n synthetic chunks (SYNTH_METHOD), 20 a page, with its FTS index, vectors and the
    flat vector file `index` writes. Returns the seconds of each step."""
    from blockcrawl.index import vecfile
    from blockcrawl.store.schema import _FTS_FILL, FTS_SCHEMA, VECTOR_SCHEMA, register_functions

    steps: dict[str, float] = {}
    t = time.perf_counter()
    rng = np.random.default_rng(n)
    dim = base.vectors.shape[1]
    db = sqlite3.connect(path)  # 8 KiB pages: at 4 KiB each 1,556-byte vector row spills into an
    db.execute("PRAGMA page_size=8192")  # overflow page (4.4 GB of embeddings a million, 1.6 at 8 KiB)
    db.execute("VACUUM")
    db.close()
    with Store(path):
        pass  # the store's schema
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-524288", "temp_store=MEMORY"):
        db.execute(f"PRAGMA {pragma}")  # the bench's own: a store `crawl` writes keeps WAL and its syncs
    register_functions(db)
    db.execute("BEGIN")
    n_pages = (n + CHUNKS_PER_PAGE - 1) // CHUNKS_PER_PAGE
    db.executemany("INSERT INTO pages(id, url, title) VALUES (?, ?, 'synthetic')",
                   [(pg + 1, synthetic_url(pg)) for pg in range(n_pages)])
    matrix = np.empty((n, dim), dtype=np.float32)
    keys: list[bytes] = []
    step = 50000
    for start in range(0, n, step):
        m = min(step, n - start)
        a, b, matrix[start:start + m] = synthetic_vectors(rng, base, m)
        offs = rng.integers(0, 1 << 30, (m, 2)).tolist()
        rows = []
        for j, (ai, bi, (oa, ob)) in enumerate(zip(a.tolist(), b.tolist(), offs)):
            i = start + j
            wa, wb = base.texts[ai], base.texts[bi]
            oa %= max(1, len(wa) - WORDS_A + 1)
            ob %= max(1, len(wb) - WORDS_B + 1)
            text = " ".join(wa[oa:oa + WORDS_A] + wb[ob:ob + WORDS_B])
            page = i // CHUNKS_PER_PAGE
            rows.append((i + 1, page + 1, i % CHUNKS_PER_PAGE, 0, synthetic_url(page), base.heading[ai], text,
                         "h", 110, base.context[ai]))
            keys.append(vector_key(model, f"{i}\0{text}"))  # distinct keys: each chunk has its own vector
        db.executemany("INSERT INTO chunks(id, page_id, block_position, chunk_index, url, heading_path, text, "
                       "block_hash, n_tokens, context) VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    steps["chunks"] = time.perf_counter() - t
    t = time.perf_counter()
    db.executescript(VECTOR_SCHEMA + FTS_SCHEMA)  # commits the chunks first
    db.execute("BEGIN")
    db.execute(_FTS_FILL)  # FTS5 built once, over all the chunks
    steps["fts"] = time.perf_counter() - t
    t = time.perf_counter()
    order = np.argsort(np.array(keys, dtype="S20"), kind="stable")  # WITHOUT ROWID B-tree appends
    for start in range(0, n, step):
        part = order[start:start + step].tolist()
        db.executemany("INSERT INTO embeddings(key, vec) VALUES (?,?)", [(keys[i], matrix[i].tobytes()) for i in part])
    db.executemany("INSERT INTO chunk_vectors(chunk_id, key) VALUES (?,?)", [(i + 1, k) for i, k in enumerate(keys)])
    indexed_at = time.time()
    set_meta(db, model=model, dim=dim, generation=1, indexed_at=indexed_at)
    db.execute("COMMIT")
    db.execute("PRAGMA journal_mode=WAL")
    db.close()
    vecfile.write(path, np.arange(1, n + 1, dtype=np.int64), matrix,
                  vecfile.token_of({"generation": "1", "indexed_at": str(indexed_at)}))
    steps["vectors"] = time.perf_counter() - t
    return steps


def bench_cold(path: Path, queries: list[str]) -> dict:
    """Wall time of `python -m blockcrawl search` in a new process (import to printed hits; the
    store's pages are in the OS cache, as after any earlier use), and of `serve` until its
    "ready" line (it warms the model and vectors first)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HF_HUB_OFFLINE": "1"}
    times = []
    for q in queries:
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "blockcrawl", "search", "--store", str(path), q, "-k", "10"],
                           capture_output=True, text=True, env=env, timeout=300)
        times.append(time.perf_counter() - t)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "blockcrawl", "serve", "--store", str(path), "--port", "0",
                             "--quiet"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "http://" in line:
                break
        serve_s = time.perf_counter() - t
    finally:
        proc.terminate()
        proc.wait(30)
    return {"search_p50": statistics.median(times), "search_max": max(times), "serve_s": serve_s}


def exact_truth(matrix: np.ndarray, ids: np.ndarray, qvs: np.ndarray, k: int = 10) -> list[tuple[set[int], float]]:
    """The exact top k chunk ids of each query and the k-th cosine (one BLAS product per 64 queries
    over the mapped matrix)."""
    out: list[tuple[set[int], float]] = []
    for s in range(0, len(qvs), 64):
        sims = matrix @ qvs[s:s + 64].T
        top = np.argpartition(-sims, k, axis=0)[:k].T
        for j, row in enumerate(top):
            out.append((set(ids[row].tolist()), float(sims[row, j].min())))
    return out


TIE = 0.002  # cosine: a hit this close to the exact 10th score is a near-tie, not a miss (reported apart)


def ann_recall(graph, qvs: np.ndarray, truth: list[tuple[set[int], float]], ef: int,
               k: int = 10) -> tuple[float, float, float]:
    """(recall@k of the graph against exact search, share of its hits scoring at least the exact k-th
    cosine - TIE, ms per query) at search-time ef."""
    graph.index.set_ef(max(ef, k))
    t = time.perf_counter()
    labels, dist = graph.index.knn_query(qvs, k=k, num_threads=1)
    ms = (time.perf_counter() - t) * 1000 / len(qvs)
    rec = statistics.mean(len(set(row.tolist()) & tr) / k for row, (tr, _) in zip(labels, truth))
    near = statistics.mean(float(np.mean(1.0 - d >= kth - TIE)) for d, (_, kth) in zip(dist, truth))
    return rec, near, ms


def timed(path: Path, queries: list[str], k: int, mode: str, **kw) -> tuple[float, float]:
    lat = []
    for q in queries:
        t = time.perf_counter()
        search(path, q, k, mode, **kw)
        lat.append((time.perf_counter() - t) * 1000)
    return pct(lat, 50), pct(lat, 95)


def bench_latency(sizes: list[int], base: Base, tmp: Path, k: int, n_queries: int, exact_queries: int,
                  cold_runs: int = 5) -> list[dict]:
    from blockcrawl.index import vecfile
    from blockcrawl.index.ann import EF_CONSTRUCTION, EF_SEARCH_MIN, M, ann_paths, load_ann

    emb = default_embedder()
    order = random.Random(24).sample(range(len(base.queries)), len(base.queries))
    queries = [base.queries[i] for i in order[:n_queries]]
    out: list[dict] = []

    def row(n: int, variant: str, mode: str, p50: float, p95: float = float("nan"), load_s: float = float("nan")):
        out.append({"n": n, "variant": variant, "mode": mode, "p50": p50, "p95": p95, "load_s": load_s})

    for n in sizes:
        path = tmp / f"synthetic-{n}.db"
        t = time.perf_counter()
        steps = synthetic_store(path, n, base, emb.name)
        total = time.perf_counter() - t
        row(n, "-", "synthetic store build, s (" + ", ".join(f"{s} {v:.0f}" for s, v in steps.items()) + ")", total)
        print(f"  synthetic store of {n} chunks built in {total:.1f} s {steps}", file=sys.stderr, flush=True)
        cold = bench_cold(path, queries[:cold_runs])
        row(n, "exact", "CLI `blockcrawl search`, cold process (s; max)", cold["search_p50"], cold["search_max"])
        row(n, "exact", "`blockcrawl serve` start to ready (s)", cold["serve_s"])
        lat = []
        for q in queries:
            t = time.perf_counter()
            emb.embed([q])
            lat.append((time.perf_counter() - t) * 1000)
        row(n, "-", "query embedding alone", pct(lat, 50), pct(lat, 95))
        eq = queries[:exact_queries]
        t = time.perf_counter()
        search(path, eq[0], k, "vector")  # first query maps the vectors
        load_s = time.perf_counter() - t
        for mode in ("vector", "keyword", "hybrid"):
            row(n, "exact", mode, *timed(path, eq, k, mode), load_s)
        for name, kw in FILTERS:  # first filtered query: reads every chunk's page id once
            t = time.perf_counter()
            search(path, eq[0], k, "vector", **kw)
            load_s = time.perf_counter() - t
            for mode in ("vector", "keyword", "hybrid"):
                row(n, "exact", f"{mode}, {name}", *timed(path, eq, k, mode, **kw), load_s)
        if ann_available():
            db = sqlite3.connect(path)
            meta = dict(db.execute("SELECT key, value FROM index_meta").fetchall())
            db.close()
            got = vecfile.load(path, vecfile.token_of(meta), emb.dim)
            assert got is not None
            ids, m = got
            t = time.perf_counter()
            build_ann(path, ids, m, 1)
            build_s = time.perf_counter() - t
            print(f"  HNSW over {n} built in {build_s:.1f} s", file=sys.stderr, flush=True)
            graph = load_ann(path, 1)
            assert graph is not None
            rng = np.random.default_rng(7)
            real = base.query_vectors[order[:RECALL_QUERIES]]
            held = synthetic_vectors(rng, base, RECALL_QUERIES)[2]
            truths = (exact_truth(m, ids, real), exact_truth(m, ids, held))
            mb = ann_paths(path)[0].stat().st_size / 1e6
            row(n, "hnsw", f"build (M {M}, ef_construction {EF_CONSTRUCTION}, {os.cpu_count()} threads), s", build_s)
            row(n, "hnsw", f"memory: graph {mb:.0f} MB in RAM = {mb / n * 1e6 / 1e3:,.2f} GB per million chunks "
                f"(+ {m.nbytes / n * 1e6 / 1e9:.2f} GB per million of memory-mapped vectors, read only by filters)",
                float("nan"))
            for ef in sorted({200, 400, 800, 1600, 3200, EF_SEARCH_MIN}):
                (r_real, t_real, ms_real), (r_held, t_held, _) = (ann_recall(graph, real, truths[0], ef),
                                                                  ann_recall(graph, held, truths[1], ef))
                row(n, "hnsw", f"recall@10 vs exact at ef {ef}{' (search default)' if ef == EF_SEARCH_MIN else ''}: "
                    f"{r_real:.3f} for {len(real)} real questions, {r_held:.3f} for {len(held)} hold-out vectors "
                    f"(hits within {TIE} of the exact 10th cosine: {t_real:.3f}, {t_held:.3f}); "
                    "p50 column: ms per graph query", ms_real)
            del graph
            from blockcrawl.retrieval import vector_cache

            vector_cache._cache.clear()  # the exact rows cached this index generation's vectors, not the graph
            t = time.perf_counter()
            search(path, queries[0], k, "vector")  # first query loads the graph
            load_s = time.perf_counter() - t
            for mode in ("vector", "hybrid"):
                row(n, "hnsw", mode, *timed(path, queries, k, mode), load_s)
        for p in path.parent.glob(path.name + "*"):
            p.unlink()
    return out


# ---- 3. recall of block chunks vs plain chunks -----------------------------------------------------

RECALL_METHOD = """Recall, method.

What is compared: the chunking, on the same text. The first --pages benchmark pages go through
SitePipeline "main" (the default `auto` main-content selector: what `blockcrawl crawl` stores) and
"plain" (whole page text). Three stores, all 200-token chunks with 40 overlap, indexed alike:
  blocks  block chunks of the main-content blocks (the "main" run's chunks: a chunk never crosses a
          block, each carries its heading prefix);
  plain   chunk_plain() of the same blocks' text (blocks_text: each heading once, then the bodies),
          i.e. the same words cut at fixed size across block and section boundaries;
  page    chunk_plain() of the whole page text, menus and footers included: the naive baseline, the
          old table's "plain" column.
(The old table compared "blocks" mode, every block of the page incl. boilerplate, with "page".)

Queries (no LLM, no external data): sections of the main content whose heading has >= 2 words (each
heading text once over all pages) and which hold a block of >= 30 words; --queries of them drawn
with a fixed seed.
  heading   the heading text. Target: the section, every text block of the page with exactly that
            heading path (a section often spans several blocks, each carrying the heading prefix).
            The old target was one block of it, so a hit from another block of the same section
            did not count; the row "heading, one-block target" keeps that target (the section's
            first block of >= 30 words) for comparison.
  sentence  the first sentence (<= 20 words) of the section's first block of >= 30 words. Target:
            that block. The sentence is copied from the stored text, so keyword search finds it by
            construction (and vector search nearly so): a lookup task, easy for every store.
  held-out  the same sentence searched in three more stores built the same way after every
            occurrence of the query sentences was deleted from the pages' text (inverse-cloze style,
            paraphrase-free): the hit must be found by the sentence's context. Target: the rest of
            the block.

A hit counts only if it comes from the query's page. Two criteria, on 8-word runs (shingles):
  touch  a hit shares one 8-word run with the target (the old criterion). Lenient towards long
         chunks: a plain chunk that ends with a few words of the section counts.
  cover  the hits considered hold together >= 50% of the target's 8-word runs, or 50 of them when
         the target has more than 100 (a long section cannot fit in one 200-token chunk). It asks
         that the reader get a substantial part of the section, judged on the target's side only:
         a chunk is not rewarded for being small (a 10-word piece of the section does not cover
         it) nor penalised for carrying neighbouring text (that is what focus measures).
Cut-offs:
  @5      the top 5 hits (different amounts of text: blocks are shorter on average; the tokens
          columns show how much).
  budget  the hits in rank order while their token counts (chunks.n_tokens, model tokens, heading
          prefix included) fit in 1,000 tokens, as a RAG prompt would hold; the first hit that does
          not fit closes the budget. search() is called with k=33 (it reads 100 candidates per list
          for any k <= 33, so its first 5 hits are exactly search(k=5)'s); runs whose hits ran out
          before the budget was full are counted under the table.
focus: share of the first touching top-5 hit's 8-word runs that are the target's (as before).
blocks-only/plain-only: queries covered by the blocks store and not by the plain one, and the
reverse (the paired difference; with ~200 queries, one query is 0.005 of recall).
"""

COVER_SHARE = 0.5  # "cover": the hits hold half the target's 8-word runs ...
COVER_CAP = 100    # ... or, for a target longer than 100 runs (~107 words), 50 of them
BUDGET = 1000      # tokens of context, as a RAG prompt would hold
DEPTH = 33         # hits fetched per query: search() reads 100 candidates per list for any k <= 33, so
                   # the first 5 of these 33 are exactly the top 5 of search(k=5)
STORES = ("blocks", "plain", "page")
STORE_LABELS = {
    "blocks": "block chunks of the main content (what `blockcrawl crawl` stores)",
    "plain": "plain fixed-size chunks of the same main-content text",
    "page": "plain fixed-size chunks of the whole page text (naive baseline, the old table's 'plain')",
}
# table rows: (label, query text key, target key, held-out stores?)
ROWS = (("heading", "heading", "heading", False),
        ("heading, one-block target", "heading", "heading-block", False),
        ("sentence", "sentence", "sentence", False),
        ("held-out", "held-out", "held-out", True))


def shingles(text: str) -> set[tuple[str, ...]]:
    w = [x.lower() for x in _WORDS.findall(text)]
    return {tuple(w[i:i + SHINGLE]) for i in range(max(0, len(w) - SHINGLE + 1))}


def first_sentence(text: str, max_words: int = 20) -> str:
    s = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return " ".join(s.split()[:max_words])


def _words_pattern(sentence: str) -> re.Pattern:
    """Every occurrence of the sentence's words as whole words, whatever white space lies between."""
    return re.compile(r"(?<!\S)" + r"\s+".join(map(re.escape, sentence.split())) + r"(?!\S)")


def build_queries(main_results, max_queries: int) -> list[dict]:
    """Sections of the main content with a heading of >= 2 words (each heading text once over all
    pages: "Comments", "Menu" are no real query) whose first block of >= 30 words exists.
    heading query: the heading text; its target is the section, every text block of the page with
    exactly that heading path (a section often spans several blocks, each carrying the heading).
    sentence query: the first sentence (<= 20 words) of that block; its target is the block.
    held-out query: the same sentence, searched in stores from which it was removed (below); its
    target is the rest of the block."""
    qs = []
    seen = set()
    for r in main_results:
        sections: dict[tuple[str, ...], list] = {}
        for b in r.blocks:
            if b.kind != "heading" and b.heading_path:
                sections.setdefault(tuple(b.heading_path), []).append(b)
        for path, blocks in sections.items():
            heading = path[-1].strip()
            first = next((b for b in blocks if len(b.body.split()) >= MIN_SECTION_WORDS), None)
            if first is None or len(heading.split()) < 2 or heading.lower() in seen:
                continue
            seen.add(heading.lower())
            sentence = first_sentence(first.body)
            rest = _words_pattern(sentence).sub("", first.body) if sentence else first.body
            qs.append({"url": r.url, "heading": heading, "sentence": sentence, "held-out": sentence,
                       "target": {"heading": set().union(*(shingles(b.body) for b in blocks)),
                                  "heading-block": shingles(first.body),
                                  "sentence": shingles(first.body), "held-out": shingles(rest)}})
    random.Random(7).shuffle(qs)
    return qs[:max_queries]


def recall_entries(main_results, page_results, remove: dict[str, list[str]] | None = None) -> dict:
    """(url, title, blocks, chunks) per page for each store. All three from the same pipeline runs:
    blocks = chunk_blocks of the "main" run's blocks (= its chunks), plain = chunk_plain of the same
    blocks' text (blocks_text: each heading once, then the bodies: what the "main" run reports as
    the page text), page = chunk_plain of the "plain" run's whole page text. remove: sentences to
    delete (every occurrence) from each page's text before chunking, in all three alike."""
    from dataclasses import replace

    from blockcrawl.chunk import chunk_blocks, chunk_plain, default_tokenizer
    from blockcrawl.extraction.api import blocks_text

    tok = default_tokenizer()
    out: dict[str, list] = {s: [] for s in STORES}
    for r, p in zip(main_results, page_results):
        blocks, page_text = r.blocks, p.text
        pats = [_words_pattern(s) for s in (remove or {}).get(r.url, []) if s]
        if pats:
            new = []
            for b in blocks:
                body = b.body
                for pat in pats:
                    body = pat.sub("", body)
                body = body.strip()
                if body == b.body:
                    new.append(b)
                elif body:
                    prefix = b.text[: len(b.text) - len(b.body)] if b.text.endswith(b.body) else ""
                    new.append(replace(b, body=body, text=prefix + body))
            blocks = new
            for pat in pats:
                page_text = pat.sub("", page_text)
        out["blocks"].append((r.url, r.title, blocks, chunk_blocks(blocks, tokenizer=tok)))
        out["plain"].append((r.url, r.title, [], chunk_plain(blocks_text(blocks), r.url, tokenizer=tok)))
        out["page"].append((p.url, p.title, [], chunk_plain(page_text, p.url, tokenizer=tok)))
    return out


def write_store(path: Path, entries) -> None:
    with Store(path) as st:
        for url, title, blocks, chunks in entries:
            st.save_page(url, blocks, chunks, title=title)
    build_index(path, progress=True)


def judge(hits, tokens: dict[int, int], q: dict, target: set) -> dict:
    """touch@5: a top-5 hit from the query's page shares an 8-word run with the target (the old
    criterion); cover@5: the top 5 hits from the page together hold a substantial part of the target
    (>= COVER_SHARE of min(|target|, COVER_CAP) of its 8-word runs); touch/cover@budget: the same over
    the hits, in rank order, that fit in BUDGET tokens. focus: share of the first touching top-5
    hit's 8-word runs that are the target's."""
    out = {"touch5": False, "cover5": False, "touchB": False, "coverB": False, "focus": None,
           "hitsB": 0, "tokensB": 0, "tokens5": sum(tokens.get(h.chunk_id, 0) for h in hits[:5])}
    need = COVER_SHARE * min(len(target), COVER_CAP)
    got5: set = set()
    gotB: set = set()
    full = False  # the budget is closed at the first hit that does not fit (no later, smaller hit)
    for rank, h in enumerate(hits):
        n = tokens.get(h.chunk_id, 0)
        full = full or out["tokensB"] + n > BUDGET
        in5, inB = rank < 5, not full
        if not in5 and not inB:
            break
        if inB:
            out["hitsB"] += 1
            out["tokensB"] += n
        if h.url != q["url"]:
            continue
        sh = shingles(h.text)
        shared = sh & target
        if not shared:
            continue
        if in5:
            if not out["touch5"]:
                out["focus"] = len(shared) / len(sh)
            out["touch5"] = True
            got5 |= shared
        if inB:
            out["touchB"] = True
            gotB |= shared
    out["open"] = not full  # the hits ran out before the budget was full
    out["cover5"] = len(got5) >= need and bool(got5)
    out["coverB"] = len(gotB) >= need and bool(gotB)
    return out


def bench_recall(pages, tmp: Path, max_queries: int, heldout: bool = True) -> dict:
    """See RECALL_METHOD. Runs the pages through the "main" and "plain" pipelines (one pipeline per
    page: they come from different sites), builds the queries from the main content, indexes the
    three stores (and, for the held-out queries, three more with the query sentences removed) and
    judges every query's hits in each store and search mode."""
    main_results = [SitePipeline(mode="main").process(html, url) for url, html in pages]
    page_results = [SitePipeline(mode="plain").process(html, url) for url, html in pages]
    queries = build_queries(main_results, max_queries)
    sets = {"": recall_entries(main_results, page_results)}
    if heldout:
        remove: dict[str, list[str]] = {}
        for q in queries:
            remove.setdefault(q["url"], []).append(q["held-out"])
        sets["held-out"] = recall_entries(main_results, page_results, remove)
        # how many held-out sentences are still in a store's text (should be none)
        left = sum(1 for q in queries for url, _, _, ch in sets["held-out"]["page"]
                   if url == q["url"] and any(_words_pattern(q["held-out"]).search(c.text) for c in ch))
    stats, paths = {}, {}
    for variant, entries in sets.items():
        for store in STORES:
            path = tmp / f"recall-{store}{'-' + variant if variant else ''}.db"
            write_store(path, entries[store])
            paths[variant, store] = path
            db = sqlite3.connect(path)
            tokens = dict(db.execute("SELECT id, n_tokens FROM chunks"))
            embedded = db.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]
            db.close()
            stats[variant, store] = {"tokens": tokens, "embedded": embedded, "chunks": len(tokens),
                                     "mean_tokens": statistics.mean(tokens.values()) if tokens else 0.0}
    results = {}  # (row label, mode, store) -> list of judge() dicts, one per query
    hits_cache: dict = {}
    for label, qkey, tkey, held in ROWS:
        variant = "held-out" if held else ""
        if variant not in sets:
            continue
        for mode in ("vector", "hybrid", "keyword"):
            for store in STORES:
                path, tokens = paths[variant, store], stats[variant, store]["tokens"]
                rows = []
                for i, q in enumerate(queries):
                    key = (variant, store, mode, qkey, i)
                    if key not in hits_cache:
                        hits_cache[key] = search(path, q[qkey], DEPTH, mode, per_page=None)
                    rows.append(judge(hits_cache[key], tokens, q, q["target"][tkey]))
                results[label, mode, store] = rows
    return {"results": results, "stats": stats, "queries": len(queries),
            "heldout_left": left if heldout else None}


def print_recall(rec: dict, n_pages: int) -> None:
    res, stats, nq = rec["results"], rec["stats"], rec["queries"]
    kinds = [label for label, *_ in ROWS if (label, "vector", "blocks") in res]

    def share(rows, key):
        return sum(1 for r in rows if r[key]) / max(1, len(rows))

    def mean(rows, key):
        xs = [r[key] for r in rows if r[key] is not None]
        return statistics.mean(xs) if xs else 0.0

    def only(b, p, key):  # discordant queries: blocks only / plain only
        return f"{sum(1 for x, y in zip(b, p) if x[key] and not y[key])}/{sum(1 for x, y in zip(b, p) if y[key] and not x[key])}"

    print(f"\n### Recall of block chunks vs plain chunks; {nq} section queries from {n_pages} pages; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
    print("| store | chunks | embedded | mean tokens/chunk |\n|---|---:|---:|---:|")
    for store in STORES:
        s = stats["", store]
        print(f"| {store}: {STORE_LABELS[store]} | {s['chunks']} | {s['embedded']} | {s['mean_tokens']:.0f} |")
    if rec["heldout_left"] is not None:
        print(f"\n(held-out stores: the {nq} query sentences removed from every store's text; "
              f"{rec['heldout_left']} still found in a page's whole-text chunks)")
    print(f"\n#### Top 5 hits (touch = a hit shares an 8-word run with the target, the old criterion; "
          f"cover = the hits hold >= {COVER_SHARE:.0%} of the target's 8-word runs, "
          f"at most {int(COVER_SHARE * COVER_CAP)} needed)\n")

    def table(touch: str, cover: str, third: str, third_key: str, third_fmt: str, tokens: str) -> None:
        """One row per query kind and mode: touch, cover, cover wins, a third measure and tokens per store."""
        print("| query | mode | touch blocks | touch plain | touch page | cover blocks | cover plain | cover page | "
              f"cover blocks-only/plain-only | {third} blocks | {third} plain | {third} page | "
              "tokens blocks | tokens plain | tokens page |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for qkind in kinds:
            for mode in ("vector", "hybrid", "keyword"):
                g = {s: res[qkind, mode, s] for s in STORES}
                print(f"| {qkind} | {mode} | " + " | ".join(f"{share(g[s], touch):.3f}" for s in STORES) + " | "
                      + " | ".join(f"{share(g[s], cover):.3f}" for s in STORES) + f" | {only(g['blocks'], g['plain'], cover)} | "
                      + " | ".join(format(mean(g[s], third_key), third_fmt) for s in STORES) + " | "
                      + " | ".join(f"{mean(g[s], tokens):.0f}" for s in STORES) + " |")

    table("touch5", "cover5", "focus", "focus", ".2f", "tokens5")
    print(f"\n#### Equal context budget: the hits in rank order while they fit in {BUDGET} tokens "
          f"(at most {DEPTH} hits)\n")
    table("touchB", "coverB", "hits", "hitsB", ".1f", "tokensB")
    runs = {s: [r for (k, m, st), rows in res.items() if st == s for r in rows] for s in STORES}
    print("\nRuns (query x mode) whose hits ran out before the budget was full: "
          + ", ".join(f"{s} {sum(r['open'] for r in runs[s])} of {len(runs[s])}" for s in STORES)
          + " (keyword search returns only chunks holding a query word).")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("BLOCKCRAWL_BENCH_DATA", DATA)),
                    help=f"benchmark pages (default {DATA}, or $BLOCKCRAWL_BENCH_DATA)")
    ap.add_argument("--pages", type=int, default=120, help="pages for the build and recall parts (default 120)")
    ap.add_argument("--sizes", default="10000,100000", help="synthetic store sizes for latency")
    ap.add_argument("--queries", type=int, default=200, help="max queries (recall) (default 200)")
    ap.add_argument("--latency-queries", type=int, default=100, help="queries per latency cell (default 100)")
    ap.add_argument("--exact-queries", type=int, default=20,
                    help="queries per exact-search cell (default 20: ~0.5 s each at 10^6)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--build-pages", type=int, default=30, help="pages for the build-speed part (default 30)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating encode/index rounds (default 2)")
    ap.add_argument("--no-heldout", action="store_true",
                    help="recall: skip the held-out sentence queries (and their three extra stores)")
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
            print(f"\n### Index build ({len(bp)} pages, best of {args.rounds} alternating runs, "
                  f"{b['chunks']} distinct chunk texts, batch {args.batch_size})\n")
            print("| | seconds | chunks/s | ratio |\n|---|---:|---:|---:|")
            print(f"| torch fp32 model.encode() alone | {b['encode_s']:.1f} | {b['chunks'] / b['encode_s']:.0f} | 1.00 |")
            print(f"| blockcrawl index (default: int8 ONNX) | {b['index_s']:.1f} | {b['chunks'] / b['index_s']:.0f} | "
                  f"{b['index_s'] / b['encode_s']:.2f} |", flush=True)
        if "latency" not in skip:
            base = base_corpus(args.data / "wtq-dev")
            print(f"  base: {len(base.texts)} wtq-dev chunks ({base.embedded} embedded, the rest cached), "
                  f"{len(base.queries)} questions, {base.seconds:.1f} s", file=sys.stderr, flush=True)
            lat = bench_latency([int(s) for s in args.sizes.split(",")], base, tmp, 10, args.latency_queries,
                                args.exact_queries)
            print(f"\n### Query latency, k=10 (synthetic stores, see SYNTH_METHOD; real query embeddings of "
                  f"wtq-dev questions; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)\n")
            print("| chunks | vectors | mode | p50 ms | p95 ms (cold rows: s, max) | first-query load s |\n"
                  "|---:|---|---|---:|---:|---:|")
            for r in lat:
                print(f"| {r['n']} | {r['variant']} | {r['mode']} | {r['p50']:.1f} | {r['p95']:.1f} | {r['load_s']:.2f} |")
            sys.stdout.flush()
        if "recall" not in skip:
            print_recall(bench_recall(pages, tmp, args.queries, not args.no_heldout), len(pages))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of the index and search stages (issue 5). Prints three tables:

1. index build speed: `blockcrawl index` (hash, embed, SQLite writes; int8 ONNX Runtime since #24)
   vs torch fp32 SentenceTransformer.encode() on the same chunk texts, in the same run (ratio =
   index / encode; bench/embed_speed.py compares the runtimes alone);
2. query latency p50/p95 of search() at 10k and 100k chunks, per mode, exact and HNSW. These stores
   are SYNTHETIC: texts are random word sequences drawn from the real chunks' vocabulary and vectors
   are random unit vectors (only latency is measured there; query embedding is real);
3. retrieval quality: recall of heading-aware block chunks vs plain fixed-size chunks of the same
   main-content text (and, as a naive baseline, plain chunks of the whole page text), all 200 tokens
   with overlap 40, at k=5 and at an equal context budget of 1,000 tokens, on queries built from the
   benchmark pages' sections (method: RECALL_METHOD below, also in docs/benchmarks.md).

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from blockcrawl import SitePipeline  # noqa: E402
from blockcrawl.index import build_index, default_embedder  # noqa: E402
from blockcrawl.index.ann import available as ann_available  # noqa: E402
from blockcrawl.index.ann import build_ann  # noqa: E402
from blockcrawl.index.schema import ensure_schema, set_meta, vector_key  # noqa: E402
from blockcrawl.retrieval import search  # noqa: E402
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

CHUNKS_PER_PAGE = 20
# filters timed (name, search() keywords): half the chunks (big.bench: the float16 scan restricted to
# their rows), 2% of them (site7.bench: a float32 product over just those rows), and a URL prefix
FILTERS = (("site, 50% of chunks", {"site": "big.bench"}), ("site, 2% of chunks", {"site": "site7.bench"}),
           ("url-prefix, 2% of chunks", {"url_prefix": "https://site7.bench/"}))


def synthetic_url(page: int) -> str:
    """Even pages on big.bench, odd ones spread over 25 hosts site1..site49.bench (2% of chunks each)."""
    return f"https://big.bench/p{page}" if page % 2 == 0 else f"https://site{page % 50}.bench/p{page}"


TOPICS = 2000  # synthetic vectors: unit vectors scattered around this many random topic directions
SPREAD = 0.6  # noise norm relative to the topic direction (cosine to the topic ~0.85, to another ~0)


def synthetic_vectors(rng: np.random.Generator, n: int, dim: int, centers: np.ndarray) -> np.ndarray:
    """n unit vectors around random topic centers: real text embeddings cluster by topic, and HNSW
    recall on structureless Gaussian vectors in 384 dimensions says little about recall on them."""
    m = centers[rng.integers(0, len(centers), n)] + rng.standard_normal((n, dim)).astype(np.float32) * (
        SPREAD / np.sqrt(dim))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m.astype(np.float32)


def synthetic_store(path: Path, n: int, vocab: list[str], dim: int, model: str) -> None:
    """A store of n synthetic chunks (random Zipf-distributed words from the real pages' vocabulary,
    20 a page) with random clustered vectors, its FTS index and the flat vector file `index`
    writes. Built with numpy and bulk SQL (keys sorted before the WITHOUT ROWID insert): 10^6
    chunks in a few minutes, where the row-by-row build did not finish in 15."""
    from blockcrawl.index import vecfile

    rng = np.random.default_rng(n)
    p = np.array([1.0 / (i + 1) for i in range(len(vocab))])
    p /= p.sum()
    voc = np.array(vocab, dtype=object)
    centers = rng.standard_normal((TOPICS, dim)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    with Store(path) as st:
        db = st.db
        db.execute("PRAGMA synchronous=OFF")
        n_pages = (n + CHUNKS_PER_PAGE - 1) // CHUNKS_PER_PAGE
        db.executemany("INSERT INTO pages(id, url, title) VALUES (?, ?, 'synthetic')",
                       [(pg + 1, synthetic_url(pg)) for pg in range(n_pages)])
        step = 50000
        keyed: list[tuple[bytes, int]] = []  # (key, chunk id)
        for start in range(0, n, step):
            m = min(step, n - start)
            words = rng.choice(len(vocab), size=(m, 60), p=p)
            texts = [" ".join(voc[row]) for row in words]
            rows = []
            for j, text in enumerate(texts):
                i = start + j
                page = i // CHUNKS_PER_PAGE
                rows.append((i + 1, page + 1, i % CHUNKS_PER_PAGE, 0, synthetic_url(page),
                             f'["Section", "{page}"]', text, "h", 80))
                keyed.append((vector_key(model, text), i + 1))
            db.executemany("INSERT INTO chunks(id, page_id, block_position, chunk_index, url, heading_path, text, "
                           "block_hash, n_tokens) VALUES (?,?,?,?,?,?,?,?,?)", rows)
        ensure_schema(db)  # builds FTS over the chunks
        matrix = np.empty((n, dim), dtype=np.float32)
        for start in range(0, n, step):
            matrix[start:start + step] = synthetic_vectors(rng, min(step, n - start), dim, centers)
        order = sorted(range(n), key=lambda i: keyed[i][0])  # B-tree appends, not random inserts
        for start in range(0, n, step):
            part = order[start:start + step]
            db.executemany("INSERT OR REPLACE INTO embeddings(key, vec) VALUES (?,?)",
                           [(keyed[i][0], matrix[i].tobytes()) for i in part])
        db.executemany("INSERT OR REPLACE INTO chunk_vectors(chunk_id, key) VALUES (?,?)",
                       [(cid, key) for key, cid in keyed])
        indexed_at = time.time()
        set_meta(db, model=model, dim=dim, generation=1, indexed_at=indexed_at)
        db.commit()
    ids = np.arange(1, n + 1, dtype=np.int64)
    vecfile.write(path, ids, matrix, vecfile.token_of({"generation": "1", "indexed_at": str(indexed_at)}))


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


def bench_latency(sizes: list[int], vocab: list[str], queries: list[str], tmp: Path, k: int,
                  cold_runs: int = 5) -> list[dict]:
    emb = default_embedder()
    out = []
    for n in sizes:
        path = tmp / f"synthetic-{n}.db"
        t = time.perf_counter()
        synthetic_store(path, n, vocab, emb.dim, emb.name)
        print(f"  synthetic store of {n} chunks built in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        cold = bench_cold(path, queries[:cold_runs])
        out.append({"n": n, "variant": "exact", "mode": "CLI `blockcrawl search`, cold process (s)",
                    "p50": cold["search_p50"], "p95": cold["search_max"], "load_s": float("nan")})
        out.append({"n": n, "variant": "exact", "mode": "`blockcrawl serve` start to ready (s)",
                    "p50": cold["serve_s"], "p95": cold["serve_s"], "load_s": float("nan")})
        variants = [("exact", None)]
        if ann_available():
            variants.append(("hnsw", True))
        for variant, ann in variants:
            if ann:
                from blockcrawl.index import vecfile

                db = sqlite3.connect(path)
                meta = dict(db.execute("SELECT key, value FROM index_meta").fetchall())
                db.close()
                got = vecfile.load(path, vecfile.token_of(meta), emb.dim)
                assert got is not None
                ids, m = got
                t = time.perf_counter()
                build_ann(path, ids, m, 1)
                build_s = time.perf_counter() - t
                print(f"  HNSW over {n} built in {build_s:.1f} s", file=sys.stderr)
                from blockcrawl.index.ann import ann_paths, load_ann
                from blockcrawl.index.vectors import exact_top

                graph = load_ann(path, 1)
                assert graph is not None
                def recall(qvs: list[np.ndarray], ids=ids, m=m, graph=graph) -> float:  # vs exact search
                    found = []
                    for qv in qvs:
                        truth = set(ids[exact_top(m, qv, 10)[0]].tolist())
                        found.append(len(truth & set(graph.search(qv, 10)[0].tolist())) / 10)
                    return statistics.mean(found)

                # real query embeddings sit far from every random synthetic vector (all cosines ~0,
                # the top 10 a near-tie of noise), which no graph search resolves; queries drawn
                # like the data (a stored vector's topic plus fresh noise) are what a real store sees
                rq = np.random.default_rng(7)
                like = [synthetic_vectors(rq, 1, m.shape[1], m[rq.integers(0, len(m))][None, :])[0]
                        for _ in range(max(100, len(queries)))]
                r_real, r_like = recall([emb.embed([q])[0] for q in queries]), recall(like)
                mb = ann_paths(path)[0].stat().st_size / 1e6
                out.append({"n": n, "variant": "hnsw", "mode": f"recall@10 vs exact {r_like:.3f} (in-distribution "
                            f"queries; {r_real:.3f} for the real query embeddings); "
                            f"graph {mb:.0f} MB in RAM ({mb * 1e6 / n / 1e3:.2f} KB/chunk) + "
                            f"{m.nbytes / 1e6:.0f} MB mapped vectors; built in {build_s:.0f} s",
                            "p50": float("nan"), "p95": float("nan"), "load_s": float("nan")})
                del graph
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
            if variant != "exact":
                continue
            for name, kw in FILTERS:  # first filtered query: reads every chunk's page id once
                t = time.perf_counter()
                search(path, queries[0], k, "vector", **kw)
                load_s = time.perf_counter() - t
                for mode in ("vector", "keyword", "hybrid"):
                    lat = []
                    for q in queries:
                        t = time.perf_counter()
                        search(path, q, k, mode, **kw)
                        lat.append((time.perf_counter() - t) * 1000)
                    out.append({"n": n, "variant": "exact", "mode": f"{mode}, {name}", "p50": pct(lat, 50),
                                "p95": pct(lat, 95), "load_s": load_s})
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
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("BLOCKCRAWL_BENCH_DATA", DEFAULT_DATA)),
                    help=f"benchmark pages (default {DEFAULT_DATA}, or $BLOCKCRAWL_BENCH_DATA)")
    ap.add_argument("--pages", type=int, default=120, help="pages for the build and recall parts (default 120)")
    ap.add_argument("--sizes", default="10000,100000", help="synthetic store sizes for latency")
    ap.add_argument("--queries", type=int, default=200, help="max queries (recall) (default 200)")
    ap.add_argument("--latency-queries", type=int, default=100, help="queries per latency cell (default 100)")
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
            # vocabulary and queries from the real pages: headings as queries
            words = [w.lower() for _, html in pages[:40] for w in _WORDS.findall(html.decode("utf-8", "replace"))
                     if w.isalpha() and 2 < len(w) < 14]
            vocab = [w for w, _ in __import__("collections").Counter(words).most_common(20000)]
            qs = [f"{random.Random(i).choice(vocab)} {random.Random(i + 1).choice(vocab)} news"
                  for i in range(args.latency_queries)]
            lat = bench_latency([int(s) for s in args.sizes.split(",")], vocab, qs, tmp, 10)
            print(f"\n### Query latency, k=10 (synthetic chunks and vectors; query embedding is real; "
                  f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)\n")
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

"""Benchmark: chunks/s of the embedding runtimes on the same chunk texts.

Texts: the distinct non-heading chunks of the first --pages wtq-dev pages (real Wikipedia pages,
/work/shared/bench/data/wtq-dev, override with --data), chunked by the crawl's default pipeline,
as `index` would embed them. Rows, alternated round by round on this shared machine (the best of
--rounds is kept for each, and the ratio is taken against the first row of the same run):
- torch fp32: sentence-transformers on torch (the older path; torch's own threads);
- onnx fp32, 1 worker: the hand-written ONNX graph, fp32 weights (isolates the runtime);
- onnx int8, 1 worker: int8 MatMul weights (isolates quantisation);
- onnx int8, N workers: the default `index` (N = CPUs available).

Run: PYTHONPATH=. python bench/embed_speed.py [--pages 20] [--rounds 3] [--limit 1500]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from common import WTQ_DEV  # noqa: E402 - first: it puts the repository on sys.path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from blockcrawl import SitePipeline  # noqa: E402
from blockcrawl.index.embed import MiniLMEmbedder  # noqa: E402
from blockcrawl.limits import available_cpus  # noqa: E402
from blockcrawl.records import embedding_text  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tables import load  # noqa: E402


def chunk_texts(data: Path, n_pages: int) -> list[str]:
    pages, _ = load(data, n_pages)
    pipe = SitePipeline(mode="main")
    texts: list[str] = []
    for _pid, url, html in pages:
        r = pipe.process(html, url)
        kinds = {b.position: b.kind for b in r.blocks}
        texts += [embedding_text(c.context, c.text) for c in r.chunks if kinds.get(c.block_position) != "heading"]
    return list(dict.fromkeys(texts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=WTQ_DEV)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--limit", type=int, default=1500, help="at most this many texts (default 1500)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    texts = chunk_texts(args.data, args.pages)[:args.limit]
    cpus = available_cpus()
    rows = {
        "torch fp32": MiniLMEmbedder(args.batch_size, precision="fp32"),
        "onnx int8, 1 worker": MiniLMEmbedder(args.batch_size, precision="int8", workers=1),
        f"onnx int8, {cpus} workers": MiniLMEmbedder(args.batch_size, precision="int8", workers=cpus),
    }
    from blockcrawl.index import onnx_model

    tok = onnx_model.model_dir() / "tokenizer.json"
    from tokenizers import Tokenizer

    mean_tokens = float(np.mean([len(e.ids) for e in Tokenizer.from_file(str(tok)).encode_batch(texts)]))
    print(f"{len(texts)} distinct chunk texts from {args.pages} wtq-dev pages, mean {mean_tokens:.0f} tokens, "
          f"{cpus} CPUs available, load {os.getloadavg()[0]:.1f}")
    for emb in rows.values():
        emb.embed(texts[:8])  # load and warm up
    best: dict[str, float] = {}
    ref = rows["torch fp32"].embed(texts)
    for r in range(args.rounds):
        for name, emb in rows.items():
            t = time.perf_counter()
            vecs = emb.embed(texts)
            dt = time.perf_counter() - t
            best[name] = min(best.get(name, dt), dt)
            if r == 0:
                cos = float(np.min(np.sum(vecs * ref, axis=1)))
                print(f"  {name}: min cosine to torch fp32 {cos:.4f}")
    base = len(texts) / best["torch fp32"]
    print("| runtime | chunks/s | x torch fp32 |\n|---|---|---|")
    for name in rows:
        cps = len(texts) / best[name]
        print(f"| {name} | {cps:.1f} | {cps / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

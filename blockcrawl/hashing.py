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
_MIX = _RNG.integers(1 << 32, 1 << 63, size=8, dtype=np.uint64) | np.uint64(1)  # odd 64-bit multipliers
_BATCH = 8192  # shingles per vectorised step


def _word_hashes(text: str) -> list[int]:
    """crc32 of each word of the normalised text, computed in C (no per-word Python frame)."""
    data = normalize_text(text).encode("utf-8", "surrogatepass")
    return list(map(zlib.crc32, data.split(b" "))) if data else [0]


def _mix(words: np.ndarray, size: int) -> np.ndarray:
    """32-bit hash of each run of `size` consecutive word hashes (position-dependent multipliers:
    "a b c" and "c b a" differ; uint64 arithmetic wraps, as intended)."""
    h = np.zeros(len(words) - size + 1, dtype=np.uint64)
    for j in range(size):
        h ^= words[j:len(words) - size + 1 + j] * _MIX[j]
    return (h >> np.uint64(32)) ^ (h & np.uint64(0xFFFFFFFF))


def shingle_hashes(text: str, size: int = 3) -> np.ndarray:
    """32-bit hashes of the normalised text's word n-grams (one hash of the whole text if it is
    shorter), as a multiset: a repeated n-gram repeats its hash, which leaves minima unchanged."""
    return minhash_input([text], size)[0]


def minhash_input(texts: list[str], size: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(n-gram hashes of all texts concatenated, start of each text's run in it): every word is
    hashed once and all n-grams of all texts are mixed in one array pass."""
    flat: list[int] = []
    bounds = [0]
    for t in texts:
        flat.extend(_word_hashes(t))
        bounds.append(len(flat))
    words = np.array(flat, dtype=np.uint64)
    b = np.array(bounds, dtype=np.int64)
    n_words = np.diff(b)
    mixed = _mix(words, size) if len(words) >= size else np.zeros(0, dtype=np.uint64)
    short = n_words <= size  # the whole text is its one "n-gram"
    wholes = np.zeros(int(short.sum()), dtype=np.uint64)
    for j, i in enumerate(np.flatnonzero(short)):
        wholes[j] = zlib.crc32(normalize_text(texts[i]).encode("utf-8", "surrogatepass"))
    ext = np.concatenate((mixed, wholes))
    counts = np.where(short, 1, n_words - size + 1)
    src = np.where(short, len(mixed) + np.cumsum(short) - 1, b[:-1])  # where each text's run begins in ext
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    idx = np.arange(int(counts.sum())) + np.repeat(src - starts, counts)
    return ext[idx], starts


def minhash_many(texts: list[str], size: int = 3) -> np.ndarray:
    """minhash() of each text, as rows of one (len(texts), 64) array, computed in batches."""
    out = np.full((len(texts), MINHASH_SIZE), _PRIME, dtype=np.uint64)
    if not texts:
        return out
    h, starts = minhash_input(texts, size)
    ends = np.append(starts[1:], len(h))
    # a*h + b < 2**63 for 31-bit a, b and 32-bit h: no overflow in uint64. In batches, so that a
    # 5 MB page needs a few MB, not (n-grams x 64) words at once.
    for lo in range(0, len(h), _BATCH):
        hi = min(lo + _BATCH, len(h))
        first = int(np.searchsorted(ends, lo, side="right"))  # first text ending after lo
        last = int(np.searchsorted(starts, hi, side="left"))  # texts starting before hi
        m = (h[lo:hi, None] * _A + _B) % _PRIME
        local = np.maximum(starts[first:last], lo) - lo
        np.minimum(out[first:last], np.minimum.reduceat(m, local, axis=0), out=out[first:last])
    return out


def minhash(text: str, size: int = 3) -> np.ndarray:
    """64 min-wise hashes of the text's word shingles; the share of equal entries between two
    signatures estimates the Jaccard similarity of their shingle sets."""
    sig: np.ndarray = minhash_many([text], size)[0]
    return sig

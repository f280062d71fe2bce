"""Text fingerprints shared by the stages: exact (normalised hash) and near-duplicate (simhash)."""
from __future__ import annotations

import hashlib

import numpy as np


def normalize_text(text: str) -> str:
    """Case- and space-folded text: the key for exact duplicates."""
    return " ".join(text.lower().split())


def text_hash(text: str) -> str:
    return hashlib.blake2b(normalize_text(text).encode("utf-8"), digest_size=12).hexdigest()


def _h64(s: str) -> int:
    return int.from_bytes(hashlib.blake2b(s.encode("utf-8"), digest_size=8).digest(), "little")


_BIT = np.uint64(1) << np.arange(64, dtype=np.uint64)


def simhash(text: str, shingle: int = 3) -> int:
    """64-bit simhash over word shingles; near-identical texts differ in few bits."""
    words = normalize_text(text).split()
    if len(words) < shingle:
        grams = [" ".join(words)]
    else:
        grams = [" ".join(words[i:i + shingle]) for i in range(len(words) - shingle + 1)]
    hs = np.fromiter((_h64(g) for g in grams), dtype=np.uint64, count=len(grams))
    bits = (hs[:, None] & _BIT) != 0  # (n, 64)
    votes = bits.sum(axis=0) * 2 - len(grams)
    return int(np.bitwise_or.reduce(_BIT[votes > 0], initial=np.uint64(0)))


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()

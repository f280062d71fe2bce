"""Blocks already seen on the site are kept once: exact duplicates by normalised hash, near
duplicates by MinHash with LSH banding (estimated Jaccard of word 3-shingles >= threshold);
the first occurrence wins."""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from ..hashing import MINHASH_SIZE, minhash_many
from ..records import Block

_ROWS = 4  # 16 bands of 4 rows: pairs with Jaccard 0.8 collide in some band with p > 0.999
_BANDS = MINHASH_SIZE // _ROWS


class Deduper:
    def __init__(self, near: bool = True, threshold: float = 0.8, min_words: int = 12) -> None:
        self.near, self.threshold, self.min_words = near, threshold, min_words
        self.hashes: set[str] = set()
        self._sigs: list[np.ndarray] = []
        self._bands: list[dict[bytes, list[int]]] = [{} for _ in range(_BANDS)]
        self.dropped = 0

    def seen(self, text: str, key: str, sig: np.ndarray | None = None) -> bool:
        """Record text (exact key `key`); True if it, or a near copy, was recorded before.
        sig: the text's minhash if already computed (filter() computes a page's at once)."""
        if key in self.hashes:
            self.dropped += 1
            return True
        self.hashes.add(key)
        # Short texts ("Read more", dates) are only ever exact duplicates.
        if not self._near_candidate(text):
            return False
        if sig is None:
            sig = minhash_many([text])[0]
        keys = [sig[b * _ROWS:(b + 1) * _ROWS].tobytes() for b in range(_BANDS)]
        candidates = {i for b, k in enumerate(keys) for i in self._bands[b].get(k, ())}
        for i in candidates:
            if np.count_nonzero(self._sigs[i] == sig) >= self.threshold * MINHASH_SIZE:
                self.dropped += 1
                return True
        idx = len(self._sigs)
        self._sigs.append(sig)
        for b, k in enumerate(keys):
            self._bands[b].setdefault(k, []).append(idx)
        return False

    def _near_candidate(self, text: str) -> bool:
        return self.near and len(text.split()) >= self.min_words

    def seen_many(self, items: list[tuple[str, str]]) -> list[bool]:
        """seen() of each (text, key) in order, with the minhashes computed in one batch."""
        todo = [i for i, (text, key) in enumerate(items) if key not in self.hashes and self._near_candidate(text)]
        sigs = dict(zip(todo, minhash_many([items[i][0] for i in todo]))) if todo else {}
        return [self.seen(text, key, sigs.get(i)) for i, (text, key) in enumerate(items)]

    def filter(self, blocks: Iterable[Block]) -> Iterator[Block]:
        """The blocks not seen before, in order."""
        blocks = list(blocks)
        for b, dup in zip(blocks, self.seen_many([(b.text, b.hash) for b in blocks])):
            if not dup:
                yield b

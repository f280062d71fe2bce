"""Blocks already seen on the site are kept once: exact duplicates by normalised hash, near
duplicates by simhash (Hamming distance <= max_distance), first occurrence wins."""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..hashing import hamming, normalize_text, simhash
from ..records import Block

_BANDS = 4  # 4 x 16-bit bands: any pair within 3 bits shares at least one band exactly


class Deduper:
    def __init__(self, near: bool = True, max_distance: int = 3, min_words: int = 8) -> None:
        if near and max_distance >= _BANDS:
            raise ValueError(f"max_distance must be below {_BANDS} for the banded index")
        self.near, self.max_distance, self.min_words = near, max_distance, min_words
        self.hashes: set[str] = set()
        self._bands: list[dict[int, list[int]]] = [{} for _ in range(_BANDS)]
        self.dropped = 0

    def seen(self, text: str, key: str) -> bool:
        """Record text (exact key `key`); True if it, or a near copy, was recorded before."""
        if key in self.hashes:
            self.dropped += 1
            return True
        if self.near and len(normalize_text(text).split()) >= self.min_words:
            sh = simhash(text)
            for b in range(_BANDS):
                for other in self._bands[b].get((sh >> (16 * b)) & 0xFFFF, ()):
                    if hamming(sh, other) <= self.max_distance:
                        self.hashes.add(key)
                        self.dropped += 1
                        return True
            for b in range(_BANDS):
                self._bands[b].setdefault((sh >> (16 * b)) & 0xFFFF, []).append(sh)
        self.hashes.add(key)
        return False

    def filter(self, blocks: Iterable[Block]) -> Iterator[Block]:
        """The blocks not seen before, in order."""
        for b in blocks:
            if not self.seen(b.text, b.hash):
                yield b

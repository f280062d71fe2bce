"""Blocks already seen on the site are kept once: exact duplicates by normalised hash, near
duplicates by MinHash with LSH banding (estimated Jaccard of word 3-shingles >= threshold);
the first occurrence wins.

A block is a duplicate only of one seen in the same place: the same tag path (Block.tag_path,
the container's path from <html>). What repeats in one place across a site's pages is its
template (navigation, footer, the "Publisher:" row of a details box); the same sentence in
another place is content that page repeats (a book's lead paragraph on its own page, after a
listing showed it as a card under the book's title: on the fixture shop of tests/support/shopsite.py,
dedup that ignores the place drops the lead of all 50 product pages). Record
blocks (extraction.records: a page's facts behind its title) are only dropped as exact copies,
never as near copies of another page's record.

Texts recorded without a place (seen(text, key), prime on resume: the store keeps no place)
stand for every place.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ..hashing import MINHASH_SIZE, minhash_many
from ..records import Block

_ROWS = 4  # 16 bands of 4 rows: pairs with Jaccard 0.8 collide in some band with p > 0.999
_BANDS = MINHASH_SIZE // _ROWS
_SEP = "\x1f"  # between a place and a key: no normalised text hash holds it
EXACT_ONLY_KINDS = frozenset({"record"})


class Deduper:
    def __init__(self, near: bool = True, threshold: float = 0.8, min_words: int = 12) -> None:
        self.near, self.threshold, self.min_words = near, threshold, min_words
        self.hashes: set[str] = set()  # keys seen: "place\x1fkey", or the bare key for any place
        self._sigs: list[np.ndarray] = []
        self._bands: list[dict[bytes, list[int]]] = [{} for _ in range(_BANDS)]
        self.dropped = 0

    def seen(self, text: str, key: str, sig: np.ndarray | None = None, place: str | None = None,
             near: bool = True) -> bool:
        """Record text (exact key `key`) seen at place; True if it, or a near copy, was recorded
        before at that place (or without one). sig: the text's minhash if already computed
        (filter() computes a page's at once). near False: exact copies only."""
        own = key if place is None else place + _SEP + key
        if own in self.hashes or key in self.hashes:
            self.dropped += 1
            return True
        self.hashes.add(own)
        # Short texts ("Read more", dates) are only ever exact duplicates.
        if not (near and self._near_candidate(text)):
            return False
        if sig is None:
            sig = minhash_many([text])[0]
        bands = [sig[b * _ROWS:(b + 1) * _ROWS].tobytes() for b in range(_BANDS)]
        prefix = b"" if place is None else place.encode("utf-8", "surrogatepass") + b"\x1f"
        keys = [prefix + k for k in bands]
        candidates = {i for b, k in enumerate(keys) for i in self._bands[b].get(k, ())}
        if prefix:  # texts recorded without a place match in every place
            candidates.update(i for b, k in enumerate(bands) for i in self._bands[b].get(k, ()))
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

    def seen_many(self, items: Sequence[tuple[str, str]], places: Sequence[str | None] | None = None,
                  near: Sequence[bool] | None = None) -> list[bool]:
        """seen() of each (text, key) in order (at places[i], near copies if near[i]), with the
        minhashes computed in one batch."""
        n = len(items)
        pl: Sequence[str | None] = places if places is not None else [None] * n
        nr: Sequence[bool] = near if near is not None else [True] * n
        todo = [i for i, (text, key) in enumerate(items)
                if nr[i] and key not in self.hashes and self._near_candidate(text)]
        sigs = dict(zip(todo, minhash_many([items[i][0] for i in todo]))) if todo else {}
        return [self.seen(text, key, sigs.get(i), pl[i], nr[i]) for i, (text, key) in enumerate(items)]

    def filter(self, blocks: Iterable[Block]) -> Iterator[Block]:
        """The blocks not seen before in their place, in order."""
        blocks = list(blocks)
        dups = self.seen_many([(b.text, b.hash) for b in blocks], [b.tag_path for b in blocks],
                              [b.kind not in EXACT_ONLY_KINDS for b in blocks])
        for b, dup in zip(blocks, dups):
            if not dup:
                yield b

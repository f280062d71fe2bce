"""Overlapping chunks of at most N tokens that cut between words, preferably between sentences."""
from __future__ import annotations

import re
from collections.abc import Iterable

from ..hashing import text_hash
from ..records import Block, Chunk
from .tokenize import Tokenizer, default_tokenizer

DEFAULT_SIZE = 200  # tokens: all-MiniLM-L6-v2 reads at most 256 word pieces
DEFAULT_OVERLAP = 40
_WORD = re.compile(r"\S+")
_SENT_END = re.compile(r"[.!?。！？…:;]['\"”’)\]]*$")
_MIN_FILL = 0.6  # a sentence cut may shorten a chunk to no less than this share of the budget


def split_text(text: str, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP,
               tokenizer: Tokenizer | None = None, offsets: list[int] | None = None) -> list[tuple[str, int]]:
    """(chunk text, token count) pairs covering text; consecutive chunks share ~overlap tokens.
    offsets: the tokenizer's token start offsets for text, if already computed."""
    if size < 1:
        raise ValueError("chunk size must be at least 1 token")
    if not 0 <= overlap < size:
        raise ValueError("overlap must be >= 0 and smaller than the chunk size")
    tok = tokenizer or default_tokenizer()
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if not spans:
        return []
    words = [text[s:e] for s, e in spans]
    # One tokenizer call for the whole text; each word's count is the number of tokens that
    # start inside it (word pieces never cross white space).
    counts = [0] * len(spans)
    k = 0
    for start in (offsets if offsets is not None else tok.offsets([text])[0]):
        while k < len(spans) - 1 and start >= spans[k][1]:
            k += 1
        counts[k] += 1
    n = len(spans)
    # starts_sentence[k]: word k begins a sentence (or a line).
    starts = [True] + [bool(_SENT_END.search(words[k - 1])) or "\n" in text[spans[k - 1][1]:spans[k][0]]
                       for k in range(1, n)]
    out: list[tuple[str, int]] = []
    i = 0
    while i < n:
        total, k = 0, i
        while k < n and (k == i or total + counts[k] <= size):
            total += counts[k]
            k += 1
        if k < n:  # prefer to end at a sentence boundary if one is near the end
            floor = i + max(1, int((k - i) * _MIN_FILL))
            for m in range(k, floor - 1, -1):
                if starts[m]:
                    if m != k:
                        total -= sum(counts[m:k])
                        k = m
                    break
        out.append((text[spans[i][0]:spans[k - 1][1]], total))
        if k >= n:
            break
        j, back = k, 0
        while j - 1 > i and back + counts[j - 1] <= overlap:
            back += counts[j - 1]
            j -= 1
        i = j
    return out


def chunk_blocks(blocks: Iterable[Block], size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP,
                 tokenizer: Tokenizer | None = None) -> list[Chunk]:
    """Chunks of each block; a chunk never crosses a block boundary, and every chunk of a block
    carries the block's heading prefix so it reads on its own."""
    tok = tokenizer or default_tokenizer()
    blocks = list(blocks)
    # The heading prefix of each block ("Germany: "); a lone heading is all prefix.
    prefixes = [b.text[: len(b.text) - len(b.body)] if b.text.endswith(b.body) else "" for b in blocks]
    # Two batched tokenizer calls for the whole page.
    offsets = tok.offsets([b.body for b in blocks])
    reserves = tok.count(prefixes)
    chunks: list[Chunk] = []
    for b, prefix, offs, reserve in zip(blocks, prefixes, offsets, reserves):
        if not b.body:  # a lone heading
            chunks.append(Chunk(b.text, b.url, b.heading_path, b.position, 0, b.hash, reserve))
            continue
        if reserve + len(offs) <= size:  # most blocks fit whole
            chunks.append(Chunk(b.text, b.url, b.heading_path, b.position, 0, b.hash, reserve + len(offs)))
            continue
        budget = max(size - reserve, max(1, size // 2))
        pieces = split_text(b.body, budget, min(overlap, budget - 1), tok, offsets=offs)
        for idx, (text, n) in enumerate(pieces):
            chunks.append(Chunk(prefix + text, b.url, b.heading_path, b.position, idx, b.hash, n + reserve))
    return chunks


def chunk_plain(text: str, url: str | None = None, size: int = DEFAULT_SIZE,
                overlap: int = DEFAULT_OVERLAP, tokenizer: Tokenizer | None = None) -> list[Chunk]:
    """The baseline: the whole page text cut into fixed-size overlapping chunks."""
    h = text_hash(text)
    return [Chunk(t, url, (), 0, i, h, n) for i, (t, n) in enumerate(split_text(text, size, overlap, tokenizer))]

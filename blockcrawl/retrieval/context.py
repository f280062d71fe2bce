"""What a hit brings along for an answer (SearchOptions.context / context_tokens): its whole block,
its neighbouring chunks, or its neighbours grown outward until a token budget is spent.

Why a token budget: a RAG prompt pays by the token, not by the chunk. A table's chunks are a few
rows each (a one-row chunk is ~30 tokens) while a paragraph's chunk is up to 200, so "2 chunks
either side" is 60 tokens around a row and 800 around a sentence. With context_tokens=N the
hit's neighbours are added nearest first, the hit's own block before the rest of its page (the
rows around a table row, the rest of the paragraph around a cut-off sentence), until the next one
would not fit. Neighbours of one block are joined without their repeated heading prefix and without
the overlap split_text leaves between a block's pieces, so the budget buys text, not repeats.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..chunk.tokenize import Tokenizer
    from ..store.protocols import SearchStore, StoredChunk
    from .hit import Hit

MAX_CONTEXT_TOKENS = 8000  # ~40 chunks of 200 tokens: more than any one answer needs
WINDOW = 256  # chunks either side of a hit read to grow it: bounds the work on a 10k-chunk page
BATCH = 8  # neighbours either side read (chunk rows) or counted (tokens) in one call: ~0.25 ms a call either way
_OVERLAP_PROBE = 8  # characters of a piece's start searched for in the previous piece's end (then verified)


@lru_cache(maxsize=1)
def _tokenizer() -> Tokenizer:
    from ..chunk.tokenize import default_tokenizer

    return default_tokenizer()  # the model's, as chunk sizes count: loaded once (~20 ms)


def _count(tok: Tokenizer, texts: list[str]) -> list[int]:
    """Tokens of each text, as the sum of its words' tokens: the model tokenizer encodes each distinct
    word once per process (chunk/tokenize.py), so a site's repeated vocabulary costs a dict look-up,
    not an encode (growing one hit to 500 tokens takes a quarter of the time of encoding it whole)."""
    from ..chunk.tokenize import word_counts

    return [sum(c) for c in word_counts(tok, texts)]


def _prefix(text: str, heading_path: Sequence[str]) -> str:
    """The heading prefix the extractor put before a block's body ("Germany: ", "Results > League
    matches: "), or "" when the text starts with no heading of its path."""
    if not heading_path:
        return ""
    for label in (" > ".join(heading_path), heading_path[-1]):
        if label and text.startswith(label):
            at = text.find(": ", len(label))
            return text[:at + 2] if at != -1 else ""
    return ""


def _without_overlap(prev: str, body: str) -> str:
    """body less the text it repeats from the end of prev (split_text's overlap between two pieces
    of one block: up to DEFAULT_OVERLAP tokens). Linear: one find of the body's first characters in
    prev's tail, then one comparison."""
    probe = body[:_OVERLAP_PROBE]
    if len(probe) < 8:
        return body
    start = max(0, len(prev) - 4 * len(body) - len(probe))
    at = prev.find(probe, start)
    while at != -1:
        tail = prev[at:]
        if body.startswith(tail):
            return body[len(tail):].lstrip()
        at = prev.find(probe, at + 1)
    return body


def join_neighbours(pieces: Sequence[tuple[int, str]], heading_paths: Sequence[Sequence[str]]) -> str:
    """Chunks in reading order, as (block position, text), joined: a blank line between blocks; within
    a block the later pieces without the block's heading prefix and without the overlap, on a new
    line (table rows) or after a space (a paragraph cut into pieces)."""
    out: list[str] = []
    prev_block, prev_text = None, ""
    for (block, text), path in zip(pieces, heading_paths):
        if out and block == prev_block:
            p = _prefix(text, path)
            body = text[len(p):] if p and prev_text.startswith(p) else text
            body = _without_overlap(prev_text, body)
            if body:
                out.append(("\n" if "\n" in body or "\n" in prev_text else " ") + body)
        else:
            out.append(("\n\n" if out else "") + text)
        prev_block, prev_text = block, text
    return "".join(out)


def add_context(store: SearchStore, hits: Sequence[tuple[Hit, StoredChunk]], context: str | int | None,
                max_tokens: int | None, tokenizer: Tokenizer | None = None) -> None:
    """Set Hit.context for every hit: context "block" (the block; with max_tokens, the block if it fits,
    else the hit grown inside its block), an int n (n chunks either side; with max_tokens, as many of
    those as fit), or None with max_tokens (grown inside the block, then across the page). The hit
    itself is always whole, even when it alone is over the budget (a chunk is at most ~256 tokens)."""
    if context is None and max_tokens is None:
        return
    if context == "block" and max_tokens is None:
        texts = store.block_texts([(r.page_id, r.block_position) for _, r in hits])
        for h, r in hits:
            block = texts.get((r.page_id, r.block_position), h.text)
            # a chunk packed from several small blocks of one section (chunk.pack.pack_runs) is
            # longer than its first block: the chunk is the context then
            h.context = block if len(block) >= len(h.text) else h.text
        return
    tok = tokenizer or _tokenizer()
    by_page: dict[int, list[tuple[int, str]]] = {}
    for h, r in hits:
        chunks = by_page.get(r.page_id)
        if chunks is None:
            chunks = by_page[r.page_id] = store.page_chunks(r.page_id)
        at = next((i for i, (cid, _) in enumerate(chunks) if cid == h.chunk_id), None)
        if at is None:  # the page was re-crawled since the hit was ranked
            h.context = h.text
            continue
        if max_tokens is None:
            assert isinstance(context, int)
            lo, hi = max(0, at - context), at + context + 1
            h.context = "\n\n".join(t for _, t in chunks[lo:hi])
            continue
        if context == "block":
            whole = store.block_texts([(r.page_id, r.block_position)]).get((r.page_id, r.block_position))
            if whole is not None and _count(tok, [whole])[0] <= max_tokens:
                h.context = whole
                continue
        h.context = _grow(store, chunks, at, r, context, max_tokens, tok)


def _grow(store: SearchStore, chunks: list[tuple[int, str]], at: int, hit: StoredChunk, context: str | int | None,
          max_tokens: int, tok: Tokenizer) -> str:
    """The hit's neighbours added nearest first (after, then before, alternating), those of its block
    before any other, while the total stays within max_tokens."""
    reach = context if isinstance(context, int) else min(WINDOW, max_tokens)  # a chunk costs a token at least
    lo, hi = max(0, at - reach), min(len(chunks), at + reach + 1)
    window = chunks[lo:hi]
    blocks: dict[int, int] = {}
    paths: dict[int, tuple[str, ...]] = {}
    counted: dict[int, int] = {}

    def around(i: int, done: dict[int, Any]) -> list[int]:  # a batch of not yet read neighbours of i
        return [j for j in range(max(0, i - BATCH), min(len(window), i + BATCH + 1)) if j not in done]

    def block(i: int) -> int:  # block position of window[i], read BATCH at a time around it
        if i not in blocks:
            todo = around(i, blocks)
            info = store.chunks_by_id([window[j][0] for j in todo])
            for j in todo:
                c = info.get(window[j][0])
                blocks[j], paths[j] = (c.block_position, c.heading_path) if c is not None else (-1, ())
        return blocks[i]

    def cost(i: int) -> int:  # tokens of window[i], counted BATCH at a time around it (one tokenizer call)
        if i not in counted:
            todo = around(i, counted)
            counted.update(zip(todo, _count(tok, [window[j][1] for j in todo])))
        return counted[i]

    me = at - lo
    used = cost(me)
    a, b = me, me  # the kept run is window[a..b]
    phases = [True] if context == "block" else [True, False]  # same block only, then anything
    for same_block in phases:
        while True:
            grew = False
            for side in (1, -1):
                j = b + 1 if side == 1 else a - 1
                if not 0 <= j < len(window) or (same_block and block(j) != hit.block_position):
                    continue
                if used + cost(j) > max_tokens:
                    continue
                used += cost(j)
                if side == 1:
                    b = j
                else:
                    a = j
                grew = True
            if not grew:
                break
    run = range(a, b + 1)
    return join_neighbours([(block(i), window[i][1]) for i in run], [paths[i] for i in run])

"""Overlapping chunks of at most N tokens that cut between words, preferably between sentences."""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, pairwise

import numpy as np

from ..errors import ConfigError
from ..hashing import text_hash
from ..records import Block, Chunk
from .identity import CONTEXT_SEP, chunk_context, page_identity, path_context
from .pack import DROPPED, PACK_SEP, pack_runs
from .tokenize import _SPLIT_DISAGREES, Tokenizer, default_tokenizer, word_counts

DEFAULT_SIZE = 200  # tokens: all-MiniLM-L6-v2 reads at most 256 word pieces
DEFAULT_OVERLAP = 40
# A sentence cut may shorten a chunk to no less than this share of the budget: chunks are meant
# to stand alone, so a shorter chunk that ends a sentence wins over a full one cut inside a
# sentence (docs/decisions/0300-chunks-stand-alone.md)
_MIN_FILL = 0.3


def _char_codes(text: str) -> np.ndarray:
    """The text's code points (one array op, no per-character Python)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _lookup(chars: str, size: int) -> np.ndarray:
    table = np.zeros(size, dtype=bool)
    table[[ord(c) for c in chars]] = True
    return table


# str.isspace() (what the \S+ word regex splits on) for every code point up to U+3000, the last space
_SPACE = np.array([chr(c).isspace() for c in range(0x3001)], dtype=bool)
_ENDS = _lookup(".!?。！？…:;｡︒", 0x10000)      # sentence-final punctuation ...
_CLOSERS = _lookup("'\"”’)]」』）】〕〉》〗〙〛", 0x10000)  # ... possibly followed by closing quotes/brackets
# Sentence ends of scripts written without spaces (CJK): a text is cut after them even inside a
# white-space "word" - a 10k-character Japanese paragraph is one such word.
_CJK_ENDS = _lookup("。！？｡︒", 0x10000)


def _words(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) offsets of the white-space separated words."""
    space = np.zeros(len(codes) + 2, dtype=bool)
    space[0] = space[-1] = True
    low = codes < len(_SPACE)
    space[1:-1][low] = _SPACE[codes[low]]
    edges = np.flatnonzero(space[1:] != space[:-1])  # alternating word starts and ends
    return edges[0::2], edges[1::2]


def _sentence_starts(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Indices of the words that begin a sentence: the first word, a word after one ending in
    sentence punctuation (closing quotes/brackets allowed after it), or a word after a line break."""
    def table(t: np.ndarray, pos: np.ndarray) -> np.ndarray:
        c = codes[pos]
        out = np.zeros(len(pos), dtype=bool)
        low = c < len(t)
        out[low] = t[c[low]]
        return out

    last = ends[:-1] - 1  # last character of each word but the final one
    first = starts[:-1]
    while True:  # step back over closing quotes and brackets
        back = table(_CLOSERS, last) & (last > first)
        if not back.any():
            break
        last = last - back
    ended = table(_ENDS, last)
    newlines = np.flatnonzero(codes == 10)  # a line break between two words: one lies in the gap
    broken = np.searchsorted(newlines, starts[1:]) > np.searchsorted(newlines, ends[:-1])
    return np.concatenate(([0], np.flatnonzero(ended | broken) + 1))


def _cut_words(text: str, codes: np.ndarray, w_start: np.ndarray, w_end: np.ndarray, counts: Sequence[int],
               size: int, tok: Tokenizer, odd: bool = False) -> tuple[list[int], list[int], list[int]]:
    """The split units: white-space words, except that a word holding a CJK sentence end is cut
    after it, and a piece still over size tokens is cut at token starts (the tokenizer's offsets)
    into runs of size // 8 tokens, so no unit exceeds the chunk size in any script (Thai, CJK
    without punctuation, a long URL-like token). Token counts of the
    pieces come from the offsets of the whole word, so they add up to the word's count.
    Returns (starts, ends, counts) of the units; words that need no cut cost one array test."""
    starts, ends = w_start.tolist(), w_end.tolist()
    counts = list(counts)
    cjk = np.zeros(len(codes), dtype=bool)
    low = codes < len(_CJK_ENDS)
    cjk[low] = _CJK_ENDS[codes[low]]
    ends_at = np.flatnonzero(cjk)  # positions of CJK sentence ends
    big = [i for i, c in enumerate(counts) if c > size]
    forced: set[int] = set()
    if odd:  # white space the model deletes: a word's own count can exceed its share of the text's
        real = tok.count([text[a:b] for a, b in zip(starts, ends)])
        forced = {i for i, (c, r) in enumerate(zip(counts, real)) if r > size >= c}
        big += sorted(forced)
    inner: dict[int, list[int]] = {}  # word -> cut offsets (absolute) after its inner sentence ends
    if len(ends_at):
        owner = np.searchsorted(w_start, ends_at, side="right") - 1
        for pos, w in zip(ends_at.tolist(), owner.tolist()):
            cut = pos + 1
            while cut < ends[w] and codes[cut] < len(_CLOSERS) and _CLOSERS[codes[cut]]:
                cut += 1
            if cut < ends[w]:
                inner.setdefault(w, []).append(cut)
    todo = sorted(set(big) | set(inner))
    if not todo:
        return starts, ends, counts
    offsets = tok.offsets([text[starts[w]:ends[w]] for w in todo])
    group = max(1, size // 8)
    out_s: list[int] = []
    out_e: list[int] = []
    out_c: list[int] = []
    prev = 0
    for w, offs in zip(todo, offsets):
        out_s += starts[prev:w]
        out_e += ends[prev:w]
        out_c += counts[prev:w]
        prev = w + 1
        base = starts[w]
        toks = [base + o for o in offs]
        bounds = [base, *sorted(set(inner.get(w, ()))), ends[w]]
        for a, b in pairwise(bounds):
            lo, hi = bisect_left(toks, a), bisect_left(toks, b)
            if a == base:
                lo = 0  # a token starting before the first cut belongs to the first piece
            if b == ends[w]:
                hi = len(toks)
            if hi - lo <= size and w not in forced:
                out_s.append(a)
                out_e.append(b)
                out_c.append(hi - lo)
                continue
            runs = list(range(lo, hi, group))  # token index that starts each run
            edges = [a, *(toks[t] for t in runs[1:]), b]
            tix = [*runs, hi]
            carry = 0
            for j in range(len(runs)):
                c = tix[j + 1] - tix[j] + carry
                if edges[j] >= edges[j + 1]:  # tokens sharing a start offset: no characters of their own
                    carry = c
                    continue
                carry = 0
                out_s.append(edges[j])
                out_e.append(edges[j + 1])
                out_c.append(c)
            if carry:
                out_c[-1] += carry
    out_s += starts[prev:]
    out_e += ends[prev:]
    out_c += counts[prev:]
    return out_s, out_e, out_c


def split_text(text: str, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP,
               tokenizer: Tokenizer | None = None, counts: Sequence[int] | None = None) -> list[tuple[str, int]]:
    """(chunk text, token count) pairs covering text; consecutive chunks share ~overlap tokens.
    counts: tokens of each word of text.split(), if already known (tokenize.word_counts).

    Greedy: a chunk takes words while its tokens fit in size, then ends at the last sentence start
    within the last 70% of it, if any; the next chunk starts up to overlap tokens earlier, at a
    sentence start if one is that close. Array
    work per word, Python work per chunk: a 5 MB page is split in a fraction of a second."""
    if size < 1:
        raise ConfigError("chunk size must be at least 1 token")
    if not 0 <= overlap < size:
        raise ConfigError("overlap must be >= 0 and smaller than the chunk size")
    tok = tokenizer or default_tokenizer()
    codes = _char_codes(text)
    w_start, w_end = _words(codes)
    n = len(w_start)
    if n == 0:
        return []
    if counts is None:
        counts = word_counts(tok, [text])[0]
    if len(counts) != n:
        raise ValueError(f"{len(counts)} word counts for {n} words")
    odd = _SPLIT_DISAGREES.search(text) is not None
    starts, ends, counts = _cut_words(text, codes, w_start, w_end, counts, size, tok, odd)
    glued: set[int] = set()  # units k whose start touches the end of unit k - 1 (a cut word)
    if len(starts) != n:
        w_start, w_end = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
        n = len(starts)
        glued = set((np.flatnonzero(w_start[1:] == w_end[:-1]) + 1).tolist())
    cum = [0, *accumulate(counts)]  # cum[k]: tokens of the units before unit k
    sent = _sentence_starts(codes, w_start, w_end).tolist()
    sent_set = set(sent)

    def end_of(i: int) -> int:
        # the most words from i whose tokens fit (at least one word)
        k = max(i + 1, min(n, bisect_right(cum, cum[i] + size) - 1))
        if k < n:  # prefer to end at a sentence boundary if one is near the end
            floor = i + max(1, int((k - i) * _MIN_FILL))
            s = bisect_right(sent, k) - 1
            if s >= 0 and sent[s] >= floor:
                k = sent[s]
        return k

    def measured(i: int, k: int) -> tuple[int, int]:
        """(end, tokens) of the chunk [i, k): counted as it is where an edge cuts a word."""
        n_tok = cum[k] - cum[i]
        if odd or i in glued or k in glued:
            # A chunk edge inside a word: word pieces are not additive there ("##" pieces of the
            # whole word vs the first pieces of a part), so the chunk is counted as it is, and
            # shortened while it is over size (rare: CJK cut between ideographs adds up exactly).
            # Same for texts holding white space that BERT deletes instead (\x1c-\x1f): the
            # words on either side of it are one word to the model.
            while True:
                n_tok = tok.count([text[starts[i]:ends[k - 1]]])[0]
                if n_tok <= size or k == i + 1:
                    break
                k -= 1
        return k, n_tok

    out: list[tuple[str, int]] = []
    i = 0
    new_from = 0  # the first word the previous chunk did not hold
    while i < n:
        k = end_of(i)
        if k < n and k not in sent_set and i < new_from:
            # the overlap's lead-in pushed a sentence past the end: without it, it may fit whole
            k2 = end_of(new_from)
            if k2 == n or k2 in sent_set:
                i, k = new_from, k2
        k, n_tok = measured(i, k)
        if k <= new_from and i < new_from:
            # The overlap would end where the previous chunk ended (or before): a chunk contained
            # in its neighbour, and then the next, one word shorter each time, when the unit after
            # it does not fit beside the overlap (a long URL or code token after a sentence).
            # No overlap there.
            i = new_from
            k, n_tok = measured(i, end_of(i))
        new_from = k
        out.append((text[starts[i]:ends[k - 1]], n_tok))
        if k >= n:
            break
        # step back over the last words of this chunk that fit in the overlap, from a sentence
        # start if one lies in that stretch (the next chunk then begins with a whole sentence)
        i = max(i + 1, bisect_left(cum, cum[k] - overlap))
        s = bisect_left(sent, i)
        if s < len(sent) and sent[s] < k:
            i = sent[s]
    return out


TABLE_KINDS = frozenset({"table", "infobox"})


def _pack_rows(rows: Sequence[str], row_counts: list[list[int]], budget: int, overlap: int,
               tok: Tokenizer, lead: str = "", lead_n: int = 0) -> list[tuple[str, int]]:
    """Whole rows packed into pieces of at most budget tokens, in order, no overlap (each row reads
    on its own behind lead, the table's header line, which begins every piece: lead_n of its
    tokens count against the budget); a row over what is left is split like text (with overlap),
    each part behind lead. A lead over half the budget is left out (rows then go bare)."""
    if lead and lead_n > budget // 2:
        lead, lead_n = "", 0
    room = budget - lead_n
    head = [lead] if lead else []
    out: list[tuple[str, int]] = []
    cur: list[str] = []
    n = 0
    for row, counts in zip(rows, row_counts):
        c = sum(counts)
        if cur and n + c > room:
            out.append(("\n".join(head + cur), n + lead_n))
            cur, n = [], 0
        if c > room:
            out.extend(("\n".join([*head, t]), m + lead_n)
                       for t, m in split_text(row, room, min(overlap, room - 1), tok, counts=counts))
            continue
        cur.append(row)
        n += c
    if cur:
        out.append(("\n".join(head + cur), n + lead_n))
    return out


def chunk_blocks(blocks: Iterable[Block], size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP,
                 tokenizer: Tokenizer | None = None, title: str = "", heading: str = "",
                 site_name: str = "") -> list[Chunk]:
    """Chunks of each block; a chunk crosses a block boundary only where small blocks of one section
    are packed into one (pack.pack_runs), and every chunk of a block
    carries the block's heading prefix so it reads on its own, and its context (chunk_context:
    title, the page's heading if they do not say it, and outer headings) for the embedding; size
    bounds the two together (n_tokens counts the text alone).
    A table's chunks are runs of its rows packed whole (Block.rows) up to size, each chunk behind
    the table's heading and caption, its header line first (Block.header).
    The title in the context is the page's name (identity.page_identity: the <title> without the
    site's name, site_name from og:site_name where the page gives it, or the segment naming the h1).
    Packed runs: consecutive text blocks of one section, fragments of its subsections with their
    heading, up to size (pack.pack_runs), and a run still a fragment joined to a neighbour under their
    common heading (pack.join_fragments); a lone heading whose subsections follow is no chunk of its own."""
    tok = tokenizer or default_tokenizer()
    blocks = list(blocks)
    title = page_identity(title, heading, site_name)
    # The heading prefix of each block ("Germany: "); a lone heading is all prefix.
    prefixes = [b.text[: len(b.text) - len(b.body)] if b.text.endswith(b.body) else "" for b in blocks]
    contexts = [chunk_context(title, b, heading) for b in blocks]
    nb = len(blocks)
    tables = [b for b in blocks if b.kind in TABLE_KINDS and b.rows]
    table_rows = [r for b in tables for r in b.rows]
    # Tokens per word of every body, prefix, context (with its " >"), table header and row in one call.
    counts = word_counts(tok, [b.body for b in blocks] + prefixes
                         + [c + CONTEXT_SEP.rstrip() if c else "" for c in contexts]
                         + [b.header for b in tables] + table_rows)
    header_n = [sum(c) for c in counts[3 * nb:3 * nb + len(tables)]]
    row_counts = counts[3 * nb + len(tables):]
    n_table = 0
    chunks: list[Chunk] = []
    first_row = 0
    lifted: set[int] = set()
    paths: dict[int, tuple[str, ...]] = {}
    packs = pack_runs(blocks, prefixes, contexts, [sum(c) for c in counts[:3 * nb]], size, lifted, paths)
    for k, (b, prefix) in enumerate(zip(blocks, prefixes)):
        body_counts, context = counts[k], contexts[k]
        reserve, total, ctx = sum(counts[nb + k]), sum(body_counts), sum(counts[2 * nb + k])
        if ctx and reserve + ctx > size // 2:
            context, ctx = "", 0  # a context too long to repeat: the text alone
        own = reserve  # n_tokens counts the text; the budget counts the context too
        reserve += ctx
        if k in packs:  # a run of small blocks of one section: one chunk (packed whole, see pack.pack_runs)
            end = packs[k]
            if end < 0:
                continue  # packed into an earlier block's chunk, or a lone heading its subsections say
            path = paths.get(k, b.heading_path[:-1] if k in lifted else b.heading_path)
            members = [j for j in range(k, end) if packs.get(j) != DROPPED]
            # a block's heading inline where it differs from the run's and from the block's before
            inline = [blocks[j].heading_path != path
                      and (i == 0 or blocks[j].heading_path != blocks[members[i - 1]].heading_path)
                      for i, j in enumerate(members)]
            bodies = [blocks[j].text if sub else blocks[j].body for j, sub in zip(members, inline)]
            n = sum(sum(counts[j]) + (sum(counts[nb + j]) if sub else 0) for j, sub in zip(members, inline))
            own_path = b.heading_path == path
            lead = prefix if own_path else ""  # else the first block's heading is inline too
            if k in paths and path != b.heading_path[:-1] and not own_path:
                context = path_context(title, path, heading)  # joined runs: the context says their path
            chunks.append(Chunk(lead + PACK_SEP.join(bodies), b.url, path, b.position, 0, b.hash,
                                n + (own if own_path else 0), context))
            continue
        if b.kind in TABLE_KINDS and b.rows:
            rc = row_counts[first_row:first_row + len(b.rows)]
            first_row += len(b.rows)
            lead_n = header_n[n_table]
            n_table += 1
            if reserve <= size // 2:  # rows whole, each chunk behind the header line
                pieces = _pack_rows(b.rows, rc, size - reserve, overlap, tok, b.header, lead_n)
                for idx, (text, n) in enumerate(pieces):
                    chunks.append(Chunk(prefix + text, b.url, b.heading_path, b.position, idx, b.hash,
                                        n + own, context))
                continue
        if reserve + total <= size:  # most blocks fit whole (a lone heading is all prefix)
            chunks.append(Chunk(b.text, b.url, b.heading_path, b.position, 0, b.hash, own + total, context))
            continue
        if not b.body or reserve > size // 2:
            # a heading too long to repeat on every chunk (a CJK paragraph in an <h2>): the block's
            # text is cut as it is, so no chunk exceeds size
            pieces = split_text(b.text, size, min(overlap, size - 1), tok)
            for idx, (text, n) in enumerate(pieces):
                chunks.append(Chunk(text, b.url, b.heading_path, b.position, idx, b.hash, n))
            continue
        budget = size - reserve
        pieces = split_text(b.body, budget, min(overlap, budget - 1), tok, counts=body_counts)
        for idx, (text, n) in enumerate(pieces):
            chunks.append(Chunk(prefix + text, b.url, b.heading_path, b.position, idx, b.hash, n + own,
                                context))
    return chunks


def chunk_plain(text: str, url: str | None = None, size: int = DEFAULT_SIZE,
                overlap: int = DEFAULT_OVERLAP, tokenizer: Tokenizer | None = None) -> list[Chunk]:
    """The baseline: the whole page text cut into fixed-size overlapping chunks."""
    h = text_hash(text)
    return [Chunk(t, url, (), 0, i, h, n) for i, (t, n) in enumerate(split_text(text, size, overlap, tokenizer))]

"""Packing rules: which consecutive blocks of a page share one chunk (runs of small blocks of one
section, fragments of subsections and sibling fragments under their parent, a lone heading its
subsections say), and which fragments still alone join a neighbouring run. Pure functions of the
blocks and their token counts; split.chunk_blocks turns the runs into chunks."""
from __future__ import annotations

from collections.abc import Sequence

from ..records import Block

PACKED_KINDS = frozenset({"text"})  # tables, infoboxes and records keep their own chunking
PACK_SEP = "\n"  # between the bodies of packed blocks: a line break, a sentence start to split_text
FRAGMENT = 32  # tokens: a block under this is a fragment, packed with its parent section's text
DROPPED = -2  # pack_runs: a lone heading whose subsections follow (their heading paths and contexts say it)


def pack_runs(blocks: Sequence[Block], prefixes: Sequence[str], contexts: Sequence[str], sums: Sequence[int],
           size: int, lifted: set[int], paths: dict[int, tuple[str, ...]] | None = None) -> dict[int, int]:
    """Runs of consecutive blocks packed into one chunk: first index -> end (exclusive), -1 for each
    later member, DROPPED for a lone heading (kind "heading") followed by a block of its section.
    A run holds text blocks of one section (the same heading path, prefix and context) whose texts
    together, with the prefix and context once, fit in size tokens; it is grown greedily, block
    after block, and a block that does not fit starts the next run. So a section of ten one-line
    entries is one chunk, not ten fragments that each match the title half of a question
    (Docling's HybridChunker merges undersized peers of one heading alike). A block of a
    subsection under FRAGMENT tokens (with its heading) joins the run too, its heading kept in
    its text ("Description: ..."): a two-line section is not a chunk of its own when its parent's
    text before it has room. Sibling sections that are each a fragment (the cards of a carousel,
    feature tiles: sections whose blocks together are a fragment) pack together under their
    parent heading (the page's title where they have none), each block behind its own: their
    run's first index is added to lifted. A lone heading (kind "heading", a section with no text
    of its own) is no chunk unless it is all the page gives, or one of a run of headings that no
    text lies under (a label/value list set in heading tags: its headings are the text): else its
    subsections' heading paths and contexts name it, and alone it holds nothing to read (it gets no
    vector either). Runs of one block are not listed. sums: token counts of the bodies,
    prefixes and contexts (three runs of len(blocks)). A run still a fragment then joins a
    neighbour (join_fragments; paths gets the heading path of such joined runs). Linear in the blocks."""
    nb = len(blocks)
    if paths is None:
        paths = {}
    out: dict[int, int] = {}

    def fixed(k: int) -> int:  # tokens of block k's prefix and context: paid once per chunk
        ctx = sums[2 * nb + k]
        return sums[nb + k] + (ctx if ctx and sums[nb + k] + ctx <= size // 2 else 0)

    def fragment(j: int) -> bool:
        return sums[j] + sums[nb + j] < FRAGMENT

    after = [nb] * (nb + 1)  # after[j]: the first block at or after j that is not a lone heading
    for j in range(nb - 1, -1, -1):
        after[j] = after[j + 1] if blocks[j].kind == "heading" else j

    def said_later(j: int) -> bool:
        # A lone heading goes when what follows says it: the next block is not a heading (an
        # emptied section's heading, or one whose text follows), or the text after the run of
        # headings lies under it (nested headings). A run of headings that no text lies under is
        # a label/value list set in heading tags ("<h4>Image Sensor</h4><h5>1664p HDR</h5>..."):
        # its headings are the page's text and are kept.
        if j + 1 >= nb or blocks[j + 1].kind != "heading":
            return True
        t, path = after[j + 1], blocks[j].heading_path
        return t < nb and blocks[t].heading_path[:len(path)] == path

    def section_end(j: int) -> int:  # the end of the run of text blocks of block j's section
        e = j + 1
        while e < nb and blocks[e].heading_path == blocks[j].heading_path and blocks[e].kind in PACKED_KINDS \
                and blocks[e].body and blocks[e].url == blocks[j].url:
            e += 1
        return e

    k = 0
    while k < nb:
        b = blocks[k]
        if b.kind == "heading" and nb > 1 and said_later(k):
            out[k] = DROPPED
            k += 1
            continue
        if b.kind not in PACKED_KINDS or not b.body or fixed(k) + sums[k] > size:
            k += 1
            continue
        path, depth = b.heading_path, len(b.heading_path)
        used, end = fixed(k) + sums[k], k + 1
        while end < nb:
            c = blocks[end]
            if c.kind not in PACKED_KINDS or not c.body or c.url != b.url:
                break
            if c.heading_path == path and prefixes[end] == prefixes[k] and contexts[end] == contexts[k]:
                add = sums[end]
            elif len(c.heading_path) > depth and c.heading_path[:depth] == path and fragment(end):
                add = sums[end] + sums[nb + end]  # a subsection's fragment, behind its heading
            elif depth and len(c.heading_path) == depth and c.heading_path[:-1] == path[:-1]:
                # sibling sections that are each a fragment (cards of a carousel, feature tiles):
                # one chunk under their parent, each block behind its own heading
                stop = section_end(end)
                add = sum(sums[j] + sums[nb + j] for j in range(end, stop))
                if add >= FRAGMENT:
                    break
                if k not in lifted:  # the run so far is k's own section: a fragment too?
                    own = sum(sums[j] + sums[nb + j] for j in range(k, end))
                    if own >= FRAGMENT:
                        break
                    add += own - (used - fixed(k) + sums[nb + k])  # its blocks now inline, behind their heading
                if used + add > size:
                    break
                lifted.add(k)
                used += add
                end = stop
                continue
            else:
                break
            if used + add > size:
                break
            used += add
            end += 1
        if end - k > 1:
            out[k] = end
            out.update((j, -1) for j in range(k + 1, end))
        else:
            lifted.discard(k)
        k = end
    join_fragments(blocks, sums, size, out, lifted, paths)
    return out


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def join_fragments(blocks: Sequence[Block], sums: Sequence[int], size: int, out: dict[int, int],
                    lifted: set[int], paths: dict[int, tuple[str, ...]]) -> None:
    """A run (or single text block) that is still a fragment after pack_runs' rules joins the adjacent
    text run before it, or else the one after it, when the two share the fragment's parent heading
    and fit in size together: under their deepest common heading, each block whose heading path is
    deeper behind its own heading. A price line, a one-sentence feature tile or a carousel card
    between two longer sections is then read with its neighbour instead of alone (its heading,
    kept inline, still says what it is). Lone headings between runs do not break adjacency.
    Writes the joined runs into out and their heading path into paths (run start -> path)."""
    nb = len(blocks)
    runs: list[list[int]] = []  # [start, end] of each packable text run, in order
    k = 0
    while k < nb:
        b = blocks[k]
        e = out.get(k, 0)
        if e == DROPPED or not (b.kind in PACKED_KINDS and b.body or b.kind == "heading" and b.text):
            k += 1
            continue
        end = e if e > 0 else k + 1
        runs.append([k, end])
        k = end

    def path_of(r: list[int]) -> tuple[str, ...]:
        s = r[0]
        if s in paths:
            return paths[s]
        return blocks[s].heading_path[:-1] if s in lifted else blocks[s].heading_path

    def text_n(r: list[int], path: tuple[str, ...]) -> int:  # tokens of the run's chunk text
        n = sum(sums[j] + (sums[nb + j] if blocks[j].heading_path != path else 0) for j in range(*r))
        return n + (sums[nb + r[0]] if blocks[r[0]].heading_path == path else 0)

    def cost(r: list[int], path: tuple[str, ...]) -> int:  # with the context, bounded from above
        return text_n(r, path) + sums[2 * nb + r[0]] + sums[nb + r[0]]

    def gap_dropped(a: int, b: int) -> bool:
        return all(out.get(j) == DROPPED for j in range(a, b))

    merged: list[list[int]] = []
    for r in runs:
        if merged:
            last = merged[-1]
            pl, pr = path_of(last), path_of(r)
            frag_l, frag_r = text_n(last, pl) < FRAGMENT, text_n(r, pr) < FRAGMENT
            # a kept lone heading joins the run before it, or other headings: a chunk is embedded
            # unless its first block is a heading (store.chunks_to_embed), so no text run is
            # put behind one
            if (frag_l or frag_r) and (blocks[last[0]].kind != "heading" or blocks[r[0]].kind == "heading") \
                    and blocks[last[0]].url == blocks[r[0]].url and gap_dropped(last[1], r[0]):
                path = _common(pl, pr)
                frag = pl if frag_l and not frag_r else pr
                # a fragment under no heading (a source line, a price) joins no headed run after
                # it: the chunk would lose that section's heading path
                ahead = frag_l and not frag_r and not blocks[last[0]].heading_path and bool(pr)
                if not ahead and len(path) >= len(frag) - 1 and cost([last[0], r[1]], path) <= size:
                    for j in range(last[1], r[1]):
                        out[j] = -1 if j >= r[0] or out.get(j) != DROPPED else DROPPED
                    out[last[0]] = r[1]
                    paths.pop(r[0], None)
                    lifted.discard(r[0])
                    paths[last[0]] = path
                    lifted.discard(last[0])
                    last[1] = r[1]
                    continue
        merged.append(r)

"""Chunking and dedup."""
from pathlib import Path

import pytest

from blockcrawl import Deduper, extract_blocks, split_text
from blockcrawl.chunk import WordTokenizer, chunk_blocks

TOK = WordTokenizer()
SENTENCES = " ".join(f"Sentence number {i} talks about topic {i} at some length." for i in range(40))


def test_chunks_respect_size_and_cut_between_words():
    words = set(SENTENCES.split())
    chunks = split_text(SENTENCES, size=30, overlap=6, tokenizer=TOK)
    assert len(chunks) > 5
    for text, n in chunks:
        assert n <= 30 and TOK.count([text])[0] == n
        assert set(text.split()) <= words  # whole words only
        assert text in SENTENCES


def test_chunks_prefer_sentence_boundaries_and_overlap():
    chunks = [t for t, _ in split_text(SENTENCES, size=30, overlap=6, tokenizer=TOK)]
    assert all(t.endswith(".") for t in chunks[:-1])
    for a, b in zip(chunks, chunks[1:]):
        wa, wb = a.split(), b.split()
        assert any(wa[-k:] == wb[:k] for k in range(1, 7)), (a, b)


def test_chunks_cover_the_text():
    chunks = [t for t, _ in split_text(SENTENCES, size=25, overlap=5, tokenizer=TOK)]
    assert chunks[0].startswith("Sentence number 0 ")
    assert chunks[-1].endswith("topic 39 at some length.")


def test_no_overlap_and_invalid_arguments():
    chunks = [t for t, _ in split_text(SENTENCES, size=20, overlap=0, tokenizer=TOK)]
    assert " ".join(chunks).split() == SENTENCES.split()
    with pytest.raises(ValueError):
        split_text("a b c", size=10, overlap=10, tokenizer=TOK)
    with pytest.raises(ValueError):
        split_text("a b c", size=0, overlap=0, tokenizer=TOK)
    assert split_text("   ", size=10, overlap=2, tokenizer=TOK) == []


def test_chunks_never_cross_blocks():
    html = "<body><h2>Alpha</h2><p>" + "alpha " * 50 + "</p><h2>Beta</h2><p>" + "beta " * 50 + "</p></body>"
    chunks = chunk_blocks(extract_blocks(html), size=20, overlap=4, tokenizer=TOK)
    for c in chunks:
        words = set(c.text.split()) - {"Alpha:", "Beta:"}
        assert words in ({"alpha"}, {"beta"})
        assert c.text.startswith(c.heading_path[-1] + ": ")


def test_model_tokenizer_counts_word_pieces():
    from blockcrawl.chunk import default_tokenizer

    tok = default_tokenizer()
    assert tok.name == "all-MiniLM-L6-v2"
    # word pieces: a rare long word is several tokens, unlike the word regex
    assert tok.count(["antidisestablishmentarianism"])[0] > TOK.count(["antidisestablishmentarianism"])[0]


PARAGRAPH = ("The committee met on Tuesday to review the budget for the new library wing. Members agreed "
             "that the reading rooms need better lighting, that the children's section should move to the "
             "ground floor, and that the archive must be kept dry. A final vote is planned for next month, "
             "after the architects present revised drawings and a detailed cost estimate.")


def test_exact_and_near_duplicates_dropped_in_order():
    d = Deduper()
    assert not d.seen(PARAGRAPH, "k1")
    assert d.seen(PARAGRAPH, "k1")  # exact
    near = PARAGRAPH.replace("Tuesday", "Wednesday")  # a near copy: one word changed
    assert d.seen(near, "k2")
    half = " ".join(PARAGRAPH.split()[:30]) + " Something else entirely was discussed afterwards by the members of " \
        "the board, including parking, catering, the annual fair and a new logo for the town."
    assert not d.seen(half, "k3")  # shares only half its text: kept
    assert d.dropped == 2


def test_short_blocks_only_exact():
    d = Deduper()
    assert not d.seen("Read more", "a")
    assert not d.seen("Read less", "b")  # short texts are never near-duplicates


def test_token_counts_of_chunks_are_the_model_counts():
    from blockcrawl.chunk import default_tokenizer

    tok = default_tokenizer()
    html = ("<body><h1>Only a heading</h1><div><h2>Sub</h2><p>" + "Tokenization is counted precisely. " * 60
            + "</p></div></body>")
    chunks = chunk_blocks(extract_blocks(html), size=64, overlap=8, tokenizer=tok)
    # the lone h1 is no chunk of its own: its subsection follows, whose chunks name it in their path
    assert all(c.heading_path == ("Only a heading", "Sub") for c in chunks)
    alone = chunk_blocks(extract_blocks("<body><h1>Only a heading</h1></body>"), size=64, overlap=8, tokenizer=tok)
    assert [(c.text, c.n_tokens) for c in alone] == [("Only a heading:", tok.count(["Only a heading:"])[0])]
    for c in chunks:
        assert c.n_tokens == tok.count([c.text])[0] and c.n_tokens <= 64
    assert len(chunks) > 3


def test_long_texts_are_tokenized_in_windows_with_the_same_offsets():
    from blockcrawl.chunk import default_tokenizer, tokenize

    tok = default_tokenizer()
    text = " ".join(f"Wort{i} naïve café, tokenization-heavy words {i * 7}." for i in range(3000))
    assert len(text) > 3 * tokenize._WINDOW
    whole = [s for s, _ in tok._tok.encode(text, add_special_tokens=False).offsets]
    assert tok.offsets([text, "short one"])[0] == whole


def test_minhash_of_long_texts_is_batched_without_changing_it():
    import numpy as np

    from blockcrawl import hashing

    text = " ".join(f"w{i}" for i in range(3 * hashing._BATCH))
    h = hashing.shingle_hashes(text)
    assert len(h) == 3 * hashing._BATCH - 2 and len(np.unique(h)) == len(h)  # one hash per distinct 3-gram
    direct = ((h[:, None] * hashing._A + hashing._B) % hashing._PRIME).min(axis=0)
    assert np.array_equal(hashing.minhash(text), direct)


def test_minhash_estimates_jaccard_of_word_trigrams():
    import random

    import numpy as np

    from blockcrawl import hashing

    rng = random.Random(3)
    words = [f"w{rng.randrange(10**6)}" for _ in range(400)]
    a = " ".join(words)
    b = " ".join(words[:300] + [f"x{i}" for i in range(100)])  # shares 298 of 398 trigrams each side
    jaccard = 298 / (398 + 398 - 298)
    est = np.count_nonzero(hashing.minhash(a) == hashing.minhash(b)) / hashing.MINHASH_SIZE
    assert abs(est - jaccard) < 0.2
    assert not np.array_equal(hashing.minhash("one two three four"), hashing.minhash("four three two one"))
    assert np.array_equal(hashing.minhash("One  two THREE four"), hashing.minhash("one two three four"))


def test_fast_tokenizer_path_gives_the_normalisers_tokens_and_offsets():
    from blockcrawl.chunk import default_tokenizer

    tok = default_tokenizer()
    texts = ["Plain English text.\nWith lines\tand tabs.", "Zürich, naïve café", "ΟΔΥΣΣΕΥΣ ΣΑΣ", "中文字符 mixed",
             "zero\u200bwidth", "nbsp\xa0space", "İstanbul", "ﬁne ligature", "ctrl\x1cchar", "a [CLS] b [unk] [SEP]",
             "UPPER lower MiXeD"]
    assert tok._is_safe(texts[0]) and tok._is_safe(texts[-1]) and not tok._is_safe(texts[3])
    got = tok._encode(texts)
    for text, enc in zip(texts, got):
        ref = tok._tok.encode(text, add_special_tokens=False)
        assert (enc.ids, enc.offsets) == (ref.ids, ref.offsets), text


def test_word_counts_add_up_to_the_tokenizers_count():
    from blockcrawl.chunk import default_tokenizer
    from blockcrawl.chunk.tokenize import word_counts

    tok = default_tokenizer()
    texts = ["Plain words, with punctuation!", "Zürich naïve café", "中文字符 mixed text", "ctrl\x0bsplit\x1cwords here",
             "x" * 150 + " long-word [UNK]", "   ", "", "A\u2028B\xa0C"]
    for text, counts in zip(texts, word_counts(tok, texts)):
        assert len(counts) == len(text.split()), text
        assert sum(counts) == len(tok._tok.encode(text, add_special_tokens=False).ids), text
    assert word_counts(TOK, ["Hello, world."]) == [[2, 2]]


# ---------------------------------------------------------------------------- scripts without spaces
UNSPACED = {
    "japanese": "日本語の文章です。これはテストの段落で、句読点があります！本当ですか？" * 300,
    "chinese": "这是一个中文句子，没有空格。我们测试分块功能是否正常工作！" * 300,
    "thai": "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำในประโยค" * 300,
    "one letter": "a" * 50_000,
    "url": "https://example.org/" + "/".join(f"seg{i}-part_{i}.html?x={i}&y=z" for i in range(2000)),
    "no punctuation": "日本語文章" * 3000,
}


def _assert_cover(text: str, pieces: list[str]) -> None:
    """Each piece is a slice of text and together, in order, they leave no gap (each is placed at
    its latest place that touches what the ones before covered: the texts repeat)."""
    end = 0
    for p in pieces:
        at = text.rfind(p, 0, end + len(p))
        assert 0 <= at <= end, (at, end)
        end = max(end, at + len(p))
    assert pieces[0] == text[:len(pieces[0])] and end == len(text)


@pytest.mark.parametrize("tokenizer", ["words", "model"])
@pytest.mark.parametrize("name", list(UNSPACED))
def test_text_without_spaces_is_cut_to_the_chunk_size(name, tokenizer):
    # before: a 10k-character Japanese paragraph was one 10,200-token chunk
    from blockcrawl.chunk import get_tokenizer

    tok = get_tokenizer(tokenizer)
    text = UNSPACED[name]
    for size, overlap in ((200, 40), (30, 5)):
        chunks = split_text(text, size=size, overlap=overlap, tokenizer=tok)
        for piece, n in chunks:
            assert n <= size
            assert tok.count([piece])[0] <= size
        _assert_cover(text, [p for p, _ in chunks])
        if tok.count([text])[0] > size:
            assert len(chunks) > 1


def test_cjk_chunks_end_at_sentence_ends():
    from blockcrawl.chunk import default_tokenizer

    text = UNSPACED["japanese"]
    chunks = [t for t, _ in split_text(text, size=64, overlap=8, tokenizer=default_tokenizer())]
    assert len(chunks) > 10
    assert sum(t[-1] in "。！？" for t in chunks[:-1]) >= 0.9 * (len(chunks) - 1)


def test_block_with_a_huge_cjk_heading_stays_within_the_size():
    from blockcrawl.chunk import default_tokenizer

    tok = default_tokenizer()
    html = ("<body><h2>" + UNSPACED["chinese"][:3000] + "</h2><p>" + UNSPACED["japanese"][:5000] + "</p>"
            "<h3>" + "長い見出し" * 200 + "</h3></body>")
    chunks = chunk_blocks(extract_blocks(html), size=100, overlap=20, tokenizer=tok)
    assert len(chunks) > 20
    for c in chunks:
        assert c.n_tokens <= 100 and tok.count([c.text])[0] <= 100


DOCS_PAGE = Path(__file__).resolve().parents[1] / "data" / "docs_gltf.html"


@pytest.mark.parametrize(("size", "overlap"), [(200, 40), (64, 16), (32, 8)])
def test_no_chunk_is_contained_in_its_neighbour_on_a_docs_page_with_long_tokens(size, overlap):
    # A handmade documentation page (URLs, base64, minified code, identifiers of 30+ tokens).
    # Before: a sentence followed by a token that did not fit beside the overlap came out as a
    # shrinking series ("glTF is a format for ..." / "format for ..." / "for ..."): 1 such
    # pair at 200 tokens, 32 at 64 on this page; 19% of a real docs site's chunks.
    from blockcrawl.chunk import default_tokenizer

    tok = default_tokenizer()
    blocks = extract_blocks(DOCS_PAGE.read_text(encoding="utf-8"))
    chunks = chunk_blocks(blocks, size=size, overlap=overlap, tokenizer=tok)
    by_pos = {b.position: b for b in blocks}
    prefix = {p: b.text[: len(b.text) - len(b.body)] for p, b in by_pos.items()}
    bodies = [c.text[len(prefix[c.block_position]):] for c in chunks]
    for a, b, ta, tb in zip(chunks, chunks[1:], bodies, bodies[1:]):
        if a.block_position == b.block_position:
            assert ta not in tb and tb not in ta, (ta[:60], tb[:60])
    for pos, b in by_pos.items():  # the chunks, in order, leave out nothing but white space
        covered = [False] * len(b.body)
        start = 0
        for c, t in zip(chunks, bodies):
            if c.block_position == pos and b.kind == "text":
                at = b.body.find(t, start)
                assert at >= 0
                covered[at:at + len(t)] = [True] * len(t)
                start = at + 1
        if b.kind == "text":
            assert all(ok or ch.isspace() for ok, ch in zip(covered, b.body))
    for c in chunks:
        assert tok.count([c.embed_text])[0] <= size + 2  # " > " between context and text

"""Ranking: per-page limit with a clear top page, title and heading boost."""
from __future__ import annotations

from pathlib import Path

import pytest

from blockcrawl.retrieval import search
from blockcrawl.retrieval.ranking import Ranking, rank
from blockcrawl.store import Store
from blockcrawl.store.protocols import StoredChunk

from ..support.search_pages import indexed


def rows(spec: dict[int, tuple[str, str]]) -> dict[int, StoredChunk]:
    """Chunk id -> (url, title) as in-memory rows (engine logic only: no store)."""
    return {cid: StoredChunk(cid, url, (), f"text {cid}", title) for cid, (url, title) in spec.items()}


def test_per_page_caps_unless_the_top_page_stands_clear():
    # page a holds the 5 best chunks; b and c follow far behind (vector scores)
    info = rows({1: ("a", ""), 2: ("a", ""), 3: ("a", ""), 4: ("a", ""), 5: ("a", ""),
                 6: ("b", ""), 7: ("c", "")})
    clear = [(1, 0.9), (2, 0.85), (3, 0.84), (4, 0.83), (5, 0.82), (6, 0.5), (7, 0.4)]
    capped = Ranking(per_page=3, clear_margin=0.0)
    assert rank(capped, "vector", "q", clear, [], info, 5) == [1, 2, 3, 6, 7]
    free = Ranking(per_page=3, clear_margin=0.2)
    assert rank(free, "vector", "q", clear, [], info, 5) == [1, 2, 3, 4, 5]
    # b's best is close to a's: the limit holds, other pages get their places
    close = [(1, 0.9), (2, 0.85), (3, 0.84), (4, 0.83), (5, 0.82), (6, 0.8), (7, 0.4)]
    assert rank(free, "vector", "q", close, [], info, 5) == [1, 2, 3, 6, 7]
    assert rank(free, "vector", "q", close, [], info, 5, per_page=0) == [1, 2, 3, 4, 5]


def test_title_words_lift_the_page_they_name():
    info = rows({1: ("a", "Gardening tips"), 2: ("b", "Zyxorbian Chronicles"), 3: ("c", "Sailing")})
    vec = [(1, 0.60), (3, 0.58), (2, 0.57)]
    kw = [(1, 3.0), (3, 2.0)]
    plain = Ranking(title_weight=0.0)
    for mode in ("vector", "hybrid"):
        assert rank(plain, mode, "who published zyxorbian chronicles", vec, kw, info, 3)[0] == 1
    boosted = Ranking()  # the default boost
    for mode in ("vector", "hybrid"):
        assert rank(boosted, mode, "who published zyxorbian chronicles", vec, kw, info, 3)[0] == 2
    # stop words do not count: "who" in a title lifts nothing
    info2 = rows({1: ("a", "Gardening tips"), 2: ("b", "Who we are"), 3: ("c", "Sailing")})
    assert rank(boosted, "vector", "who published zyxorbian chronicles", vec, kw, info2, 3)[0] == 1


def book(title: str, body: str, infobox: str = "") -> str:
    box = f"<table class='infobox'>{infobox}</table>" if infobox else ""
    return f"<html><head><title>{title} - Bookwiki</title></head><body><h1>{title}</h1>{box}{body}</body></html>"


PUBLISHING = ("<p>The novel was published in hardback by a large London publisher, published again in paperback "
              "two years later and published in translation in nine countries; its publisher printed "
              "forty thousand copies.</p>")
BOOKS = {
    "http://books.test/zyxorbian": book(
        "Zyxorbian Chronicles",
        "<p>A long saga of a family of lighthouse keepers on a northern island, told over three "
        "generations, with storms, shipwrecks and a missing brother.</p>",
        "<tr><th>Author</th><td>Ilse Marrow</td></tr><tr><th>Publisher</th><td>Kestrel Books</td></tr>"
        "<tr><th>Pages</th><td>412</td></tr>"),
    **{f"http://books.test/novel{i}": book(f"{name}", PUBLISHING.replace("novel", f"{name} novel"))
       for i, name in enumerate(["The Quiet Harbour", "Winter Orchard", "A Map of Salt", "Paper Lanterns",
                                 "The Glass Meridian", "Riverlight"])},
}


@pytest.fixture(scope="module")
def books(tmp_path_factory) -> Path:
    return indexed(tmp_path_factory.mktemp("books") / "books.db", BOOKS, batch_size=8)


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_who_published_title_finds_the_page_titled_so(books, mode):
    # The title's words are rare (one page), the attribute row is short ("Publisher: Kestrel
    # Books"); six other pages say "published" and "publisher" over and over.
    with Store(books, readonly=True) as st:
        hits = search(st, "Who published Zyxorbian Chronicles?", 5, mode)
    assert hits[0].url == "http://books.test/zyxorbian"
    assert any("Kestrel Books" in h.text for h in hits[:3] if h.url == "http://books.test/zyxorbian")


def test_vector_mode_breaks_near_ties_by_the_query_words_in_the_text():
    # the rows of one table embed as near ties: the chunk holding "octane" goes first, a far
    # better match stays first
    info = {cid: StoredChunk(cid, "a", ("Filmography",), text, "Mischa Barton")
            for cid, text in ((1, "1999 | Pups | Rocky"), (2, "2003 | Octane | Natasha"), (3, "2001 | Tart | Grace"))}
    near = [(1, 0.61), (3, 0.605), (2, 0.60)]
    assert rank(Ranking(text_weight=0.0), "vector", "role in octane", near, [], info, 3) == [1, 3, 2]
    assert rank(Ranking(), "vector", "role in octane", near, [], info, 3)[0] == 2
    far = [(1, 0.80), (3, 0.62), (2, 0.60)]
    assert rank(Ranking(), "vector", "role in octane", far, [], info, 3)[0] == 1


def test_hybrid_lifts_the_chunk_holding_the_query_words_beyond_the_title():
    # The page's prose says its title's words over and over and leads both lists; the answer row
    # is in a table chunk further down, the only chunk of the page saying "octane".
    title = "Mischa Barton"
    prose = "Mischa Barton's breakthrough role came early; Barton has worked on stage and screen since."
    table = "Film: Year | Title | Role | Notes\n2001 | Lost and Delirious | Mary\n2003 | Octane | Natasha"
    info = {1: StoredChunk(1, "a", ("Career",), prose, title, 1, 1, 0),
            2: StoredChunk(2, "a", ("Career",), prose + " More.", title, 1, 1, 1),
            3: StoredChunk(3, "a", ("Filmography", "Film"), table, title, 1, 2, 0),
            4: StoredChunk(4, "b", (), "Octane ratings of fuels.", "Octane rating", 2, 0, 0)}
    vec = [(1, 0.70), (2, 0.69), (4, 0.6), (3, 0.58)]
    kw = [(1, 9.0), (2, 8.5), (4, 8.0), (3, 7.0)]
    query = "Mischa Barton: what role did mischa barton play in the movie octane?"
    off = Ranking(word_weight=0.0, idf_weight=0.0, block_weight=0.0)
    assert rank(off, "hybrid", query, vec, kw, info, 4)[0] == 1
    assert rank(Ranking(), "hybrid", query, vec, kw, info, 4)[0] == 3
    # vector mode keeps its own text boost, unchanged
    assert rank(Ranking(), "vector", query, vec, kw, info, 4) == rank(off, "vector", query, vec, kw, info, 4)


def test_words_in_a_chunks_block_lift_it_over_an_equal_chunk_of_another_block():
    # two table chunks of one page tie and hold none of the question's words; a sibling of the
    # first (same block: the table's first rows) holds "championships", so its rows go first
    title = "Madison, Wisconsin"
    info = {1: StoredChunk(1, "a", ("Parks",), "Parks: Name | Acres\nOlbrich | 16\nVilas | 62", title, 1, 5, 0),
            2: StoredChunk(2, "a", ("Teams",), "Teams: Club | League\nMallards | NL\nMustangs | IFL", title, 1, 7, 1),
            3: StoredChunk(3, "a", ("Teams",), "Teams: Club | Championships\nEagles | 9", title, 1, 7, 0)}
    vec = [(3, 0.5), (1, 0.45), (2, 0.45)]
    kw = [(3, 5.0)]
    query = "which team has the most championships?"
    assert rank(Ranking(block_weight=0.0), "hybrid", query, vec, kw, info, 3)[1:] == [1, 2]
    assert rank(Ranking(), "hybrid", query, vec, kw, info, 3)[1:] == [2, 1]


def testwords_held_matches_whole_words_folded_as_fts5():
    from blockcrawl.retrieval.terms import words_held

    terms = frozenset({"zurich", "play", "octane", "2003"})
    texts = ["Played in Zürich", "play-offs", "octanes", "2003|Octane", "", "ZURICH"]
    assert words_held(terms, texts) == [{"zurich"}, {"play"}, set(), {"2003", "octane"}, set(), {"zurich"}]
    assert words_held(frozenset(), texts) == [set()] * len(texts)


def test_the_word_boost_goes_to_the_page_the_question_names():
    # "Who published The Last Observatory?": the book's own record says "Publisher", not
    # "published", so the query's words beyond its title are in none of its chunks; another book's
    # "customers also bought" box and a category card hold "Last Observatory", words beyond THEIR
    # titles. Ungated, the boost lifts both over the named book's page (the fixture shop: 50 of 50
    # books found in the top 5 without the boost, 2 of 50 with it ungated); gated by how much of
    # the question each page's title holds, they gain nothing.
    rec = "The Last Observatory — Author: Ada Byrne | Publisher: Zebra Books | ISBN-13: 978-0-1234-5678-9"
    info = {1: StoredChunk(1, "a", ("The Last Observatory",), rec, "The Last Observatory", 1, 0, 0),
            2: StoredChunk(2, "b", ("Customers also bought",),
                           "Customers also bought: The Last Observatory £19.99\nThe Gilded Harbour £9.00",
                           "The Gilded Winter", 2, 3, 0),
            3: StoredChunk(3, "c", ("The Last Observatory",),
                           "The Last Observatory: In a border village, a village schoolteacher finds a map.",
                           "Travel", 3, 4, 0)}
    vec = [(1, 0.71), (2, 0.70), (3, 0.69)]
    kw = [(2, 6.0), (1, 5.0), (3, 4.0)]
    query = "Who published The Last Observatory?"
    off = Ranking(word_weight=0.0, idf_weight=0.0, block_weight=0.0)
    assert rank(off, "hybrid", query, vec, kw, info, 3)[0] == 1
    assert rank(Ranking(name_gate=0.0), "hybrid", query, vec, kw, info, 3)[0] != 1
    assert rank(Ranking(), "hybrid", query, vec, kw, info, 3)[0] == 1


def test_a_table_chunks_label_line_lifts_it_where_the_question_names_a_column():
    # The page's prose says "championships" and leads both lists; the table whose header names the
    # column "Championships" holds the answer. The label line (a table chunk's first line: its
    # heading, caption and column names) counts only for a chunk whose block is a table: the same
    # text stored without blocks (kind "", as plain chunks are) gains nothing, nor does a table
    # chunk holding the word in a row only.
    title = "Madison, Wisconsin"
    prose = "Sports: Madison teams have won many championships over the years."
    table = "Current teams: Club | League | Championships\nMadison Mustangs | IFL | 4\nEdgewood Eagles | WIAC | 9"
    in_row = "Venues: Venue | Opened\nChampionships Field | 1997"
    query = "Madison, Wisconsin: which team has the most championships?"
    vec = [(1, 0.70), (2, 0.60), (3, 0.55)]
    kw = [(1, 9.0), (2, 8.0), (3, 7.0)]

    def info(kind: str) -> dict[int, StoredChunk]:
        return {1: StoredChunk(1, "a", ("Sports",), prose, title, 1, 3, 0, "text"),
                2: StoredChunk(2, "a", ("Sports", "Current teams"), table, title, 1, 4, 0, kind),
                3: StoredChunk(3, "a", ("Sports", "Venues"), in_row, title, 1, 5, 0, kind)}

    assert rank(Ranking(header_weight=0.0), "hybrid", query, vec, kw, info("table"), 3)[0] == 1
    assert rank(Ranking(), "hybrid", query, vec, kw, info("table"), 3)[:2] == [2, 1]
    assert rank(Ranking(), "hybrid", query, vec, kw, info(""), 3)[0] == 1
    # the label line is the first line only: "Championships" in a row lifts nothing
    swapped = [(1, 0.70), (3, 0.60), (2, 0.55)]
    assert rank(Ranking(), "hybrid", query, swapped, [(1, 9.0), (3, 8.0), (2, 7.0)], info("table"), 3)[:2] == [2, 1]


def test_a_table_chunks_label_line_lifts_it_in_vector_mode_too():
    # Vector mode: the prose's embedding is nearer the question than the table's (rows of numbers
    # embed far from a question); the label line naming the column "Championships" lifts the table
    # (Ranking.vector_header_weight, in units of TITLE_COSINE), only where the block is a table.
    title = "Madison, Wisconsin"
    prose = "Sports: Madison teams have won many championships over the years."
    table = "Current teams: Club | League | Championships\nMadison Mustangs | IFL | 4\nEdgewood Eagles | WIAC | 9"
    query = "Madison, Wisconsin: which team has the most championships?"
    vec = [(1, 0.70), (2, 0.65)]

    def info(kind: str) -> dict[int, StoredChunk]:
        return {1: StoredChunk(1, "a", ("Sports",), prose, title, 1, 3, 0, "text"),
                2: StoredChunk(2, "a", ("Sports", "Current teams"), table, title, 1, 4, 0, kind)}

    assert rank(Ranking(vector_header_weight=0.0), "vector", query, vec, [], info("table"), 2) == [1, 2]
    assert rank(Ranking(), "vector", query, vec, [], info("table"), 2) == [2, 1]
    assert rank(Ranking(), "vector", query, vec, [], info(""), 2) == [1, 2]
    # hybrid's own weight does not act in vector mode, nor vector's in hybrid
    assert rank(Ranking(header_weight=0.0), "vector", query, vec, [], info("table"), 2) == [2, 1]

"""Ranking: per-page limit with a clear top page, title and heading boost (issue 22 items 1 and 5)."""
from __future__ import annotations

from pathlib import Path

import pytest

from blockcrawl.retrieval import search
from blockcrawl.retrieval.hybrid import Ranking, rank
from blockcrawl.store import Store
from blockcrawl.store.protocols import StoredChunk

from .search_pages import indexed


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

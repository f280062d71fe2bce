"""Every chunk says where it is, and records stay whole (extraction/records.py, chunk/dedup.py,
the pipeline): a fixture shop of 50 product pages (tests/support/shopsite.py) crawled with the CLI's
defaults over real HTTP on 127.0.0.1 keeps every book's details, "Who published <title>?" finds
the book's own page through search with the real bundled model, and every chunk's embedded text
names its page."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from blockcrawl import extract
from blockcrawl.chunk import Deduper
from blockcrawl.extraction.records import page_facts, page_heading, record_block
from blockcrawl.parse import load
from blockcrawl.pipeline import SitePipeline
from blockcrawl.records import Block

from ..support.crawlsite import Site
from ..support.docsite import docs_page
from ..support.shopsite import books, shop_routes

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """The shop crawled with the CLI's defaults and indexed: (store path, books, routes)."""
    catalogue = books(50)
    routes = shop_routes(catalogue)
    site = Site(routes).start()
    db = tmp_path_factory.mktemp("shop") / "shop.db"
    try:
        r = _cli("crawl", site.origin + "/", "--store", str(db), "--no-progress")
        assert r.returncode == 0, r.stderr
    finally:
        site.stop()
    r = _cli("index", "--store", str(db))
    assert r.returncode == 0, r.stderr
    return db, catalogue, routes


def _chunks_by_page(db: Path) -> dict[str, list[tuple[str, str, str]]]:
    """url path -> [(text, context, page title)] of its chunks."""
    con = sqlite3.connect(db)
    out: dict[str, list[tuple[str, str, str]]] = {}
    for url, text, context, title in con.execute(
            "SELECT c.url, c.text, c.context, p.title FROM chunks c JOIN pages p ON p.id = c.page_id"):
        out.setdefault("/" + url.split("/", 3)[-1], []).append((text, context, title))
    con.close()
    return out


@pytest.mark.slow
def test_every_book_keeps_its_details_and_its_lead(shop):
    db, catalogue, _ = shop
    pages = _chunks_by_page(db)
    for b in catalogue:
        text = "\n".join(t for t, _, _ in pages.get(f"/{b.slug}", []))
        for fact in (f"Author: {b.author}", f"Publisher: {b.publisher}", f"ISBN-13: {b.isbn}",
                     f"Publication date: {b.published}"):
            assert fact in text, (b.slug, fact)
        # the lead paragraph, also a card on its category's listing (crawled first): kept here too
        assert b.blurb[0] in text, b.slug


@pytest.mark.slow
def test_who_published_finds_the_books_own_page(shop):
    from blockcrawl import search

    db, catalogue, _ = shop
    found = 0
    for b in catalogue:
        hits = search(db, f"Who published {b.title}?", k=5)
        found += any(h.url.rstrip("/").endswith("/" + b.slug) for h in hits)
    assert found >= 0.95 * len(catalogue), f"{found} of {len(catalogue)}"


@pytest.mark.slow
def test_every_chunk_names_its_page(shop):
    """Its title, or the page's h1 where the title holds it (the h1 is the title the page writes:
    "The Gilded Quarry" of "The Gilded Quarry by Hamish Byrne | Lantern Lane Books")."""
    db, _, routes = shop
    h1 = {path: page_heading(load(r.body)) for path, r in routes.items() if path != "/robots.txt"}
    n = 0
    for path, chunks in _chunks_by_page(db).items():
        for text, context, title in chunks:
            embedded = (context + " > " + text if context else text).lower()
            head = h1.get(path, "")
            names = [title] + ([head] if head and head.lower() in title.lower() else [])
            assert any(x and " ".join(x.split()).lower() in embedded for x in names), (path, embedded[:200])
            n += 1
    assert n > 100


# ------------------------------------------------------------------ records, page by page

def _facts(html: str) -> list[tuple[str, str]]:
    return [(f.label, f.value) for f in page_facts(load(html))]


def test_fact_boxes_of_every_usual_shape():
    lis = ("<ul class='details'><li><b>Author:</b> Ada Marlowe</li><li><strong>Publisher</strong> Zebra Books</li>"
           "<li><span class='a-text-bold'>ISBN-13 \u200f : \u200e</span> <span>978-0-00-000000-2</span></li></ul>")
    dl = "<dl><dt>Licence</dt><dd>MIT</dd><dt>File extension</dt><dd>.zip</dd><dd>.zipx</dd></dl>"
    table = ("<table><tr><th>Publisher</th><td>Old Mill House</td></tr><tr><th>Pages</th><td>312</td></tr>"
             "<tr><td>Language</td><td>English</td></tr></table>")
    divs = ("<div class='specs'><div class='row'><span class='label'>Brand</span><span>Acme</span></div>"
            "<div class='row'><span class='label'>Weight</span><span>1.2 kg</span></div></div>")
    assert _facts(lis) == [("Author", "Ada Marlowe"), ("Publisher", "Zebra Books"), ("ISBN-13", "978-0-00-000000-2")]
    assert _facts(dl) == [("Licence", "MIT"), ("File extension", ".zip, .zipx")]
    assert _facts(table) == [("Publisher", "Old Mill House"), ("Pages", "312"), ("Language", "English")]
    assert _facts(divs) == [("Brand", "Acme"), ("Weight", "1.2 kg")]


def test_what_is_not_a_record():
    footer = "<footer><ul><li><b>Email:</b> a@b.test</li><li><b>Phone:</b> 0123</li></ul></footer>"
    nav = "<nav><ul><li>Home: start</li><li>Shop: all</li></ul></nav>"
    prose = "<p>Note: the function returns None when the file is empty, as described above.</p>"
    glossary = "<dl><dt>Block</dt><dd>" + "A run of text that belongs to one section of one page. " * 5 + "</dd></dl>"
    data = ("<table><tr><th>Year</th><th>Title</th><th>Role</th></tr><tr><td>2003</td><td>Octane</td><td>Nat</td></tr>"
            "<tr><td>2004</td><td>Other</td><td>Kim</td></tr></table>")
    url = "<p>Website: https://example.test/about</p>"  # a known-label-less single line
    for html in (footer, nav, prose, glossary, data, url):
        assert _facts(html) == [], html


def test_record_block_names_the_page_and_is_not_in_the_text():
    b = books(3)[0]
    html = shop_routes(books(3))[f"/{b.slug}"].body
    assert isinstance(html, str)
    dom = load(html)
    assert page_heading(dom) == b.title
    rec = record_block(dom, 0)
    assert rec is not None and rec.kind == "record"
    assert rec.text.startswith(f"{b.title} — Author: {b.author} | Publisher: {b.publisher} | ISBN-13: {b.isbn}")
    doc = extract(html, "http://shop.test/" + b.slug)
    # the facts survive: in the record block (not part of the text, which is what the selector
    # kept) or, where the selector kept the details box itself (a page typed product), in the text
    if doc.blocks[-1].kind == "record":
        assert b.isbn not in doc.text and b.isbn in doc.blocks[-1].text
    else:
        assert all(f in doc.text for f in (b.author, b.publisher, b.isbn))


def test_record_left_out_when_the_kept_blocks_say_every_fact():
    html = ("<html><head><title>Widget</title></head><body><article><h1>Widget</h1>"
            "<p>" + "A widget for every purpose under the sun and the moon. " * 6 + "</p>"
            "<ul><li><b>Brand:</b> Acme</li><li><b>Weight:</b> 1.2 kg</li></ul></article></body></html>")
    doc = extract(html, algorithm="all")
    assert [b.kind for b in doc.blocks] == ["text", "text"]


def test_site_dedup_never_drops_a_pages_record():
    """Two books of one publisher whose details rows are blocks of their own: "Publisher: Zebra
    Books" repeats in the same place and is dropped on the second page; each page's record stays
    whole, behind its title."""
    def page(title: str, author: str, isbn: str) -> str:
        rows = "".join(f"<div class='row'><b>{k}:</b> {v}</div>" for k, v in
                       (("Author", author), ("Publisher", "Zebra Books"), ("ISBN-13", isbn)))
        return (f"<html><head><title>{title} | Shop</title></head><body><nav><a href='/'>Home</a></nav>"
                f"<h1>{title}</h1><p>{title} is a novel about a harbour town and the people who stay there.</p>"
                f"<div class='details'><h2>Product details</h2>{rows}</div></body></html>")

    p = SitePipeline(mode="blocks", tokenizer="words")
    first = p.process(page("The Quiet Tide", "Ada Marlowe", "978-0-00-000001-9"), "http://shop.test/a")
    second = p.process(page("The Iron Mill", "Owen Byrne", "978-0-00-000002-6"), "http://shop.test/b")
    assert any(b.text == "Product details: Publisher: Zebra Books" for b in first.blocks)
    assert not any(b.text == "Product details: Publisher: Zebra Books" for b in second.blocks)  # template
    for res, title in ((first, "The Quiet Tide"), (second, "The Iron Mill")):
        recs = [b.text for b in res.blocks if b.kind == "record"]
        assert len(recs) == 1 and recs[0].startswith(f"{title} — Author: ") and "Publisher: Zebra Books" in recs[0]


# ------------------------------------------------------------------ dedup by place, context

def _block(text: str, place: str, kind: str = "text") -> Block:
    from blockcrawl.hashing import text_hash
    return Block(text=text, body=text, heading_path=(), tag_path=place, position=0, url=None, hash=text_hash(text),
                 kind=kind)


def test_dedup_drops_what_repeats_in_its_place_only():
    para = ("The committee met on Tuesday to review the budget for the new library wing. Members agreed "
            "that the reading rooms need better lighting, that the children's section should move to the "
            "ground floor, and that the archive must be kept dry. A final vote is planned for next month.")
    d = Deduper()
    assert len(list(d.filter([_block("Home | Shop | About", "html/body/nav")]))) == 1
    assert len(list(d.filter([_block("Home | Shop | About", "html/body/nav")]))) == 0  # template
    assert len(list(d.filter([_block(para, "html/body/div/div")]))) == 1
    assert len(list(d.filter([_block(para, "html/body/main/div")]))) == 1  # quoted elsewhere: kept
    assert len(list(d.filter([_block(para.replace("Tuesday", "Monday"), "html/body/div/div")]))) == 0  # near copy
    rec = "The Book — Author: A | Publisher: Zebra Books | ISBN-13: 978-0-00-000000-2 | Pages: 300 and more words"
    assert len(list(d.filter([_block(rec, "record", "record")]))) == 1
    assert len(list(d.filter([_block(rec.replace("300", "301"), "record", "record")]))) == 1  # never a near copy
    primed = Deduper()
    primed.seen("Home | Shop | About", _block("Home | Shop | About", "x").hash)  # resume: no place stored
    assert len(list(primed.filter([_block("Home | Shop | About", "html/body/nav")]))) == 0


def test_heading_in_a_banner_header_is_in_every_chunks_context():
    """A spec page whose h1 sits in a <header>: its sections' chunks ("Format specification in
    Kaitai Struct YAML: meta: ...") carry the format's name in their context."""
    html = docs_page(0).replace("<title>zip: ZIP archive format specification - Format Gallery</title>",
                                "<title>Format Gallery</title>")
    res = SitePipeline(mode="main", tokenizer="words").process(html, "http://docs.test/zip.html")
    yaml = [c for c in res.chunks if "Kaitai" in c.text]
    assert yaml and all("ZIP archive" in c.embed_text and "Format Gallery" in c.embed_text for c in res.chunks)


def test_record_blocks_reach_the_jsonl_export(shop):
    db, catalogue, _ = shop
    r = _cli("export", "--store", str(db), "--what", "blocks")
    assert r.returncode == 0, r.stderr
    blocks = [json.loads(line) for line in r.stdout.splitlines()]
    # every book's facts are in a block of its own page: its record block, or the details box
    # itself where the selector kept it (a page typed product)
    for b in catalogue:
        mine = [x for x in blocks if str(x["url"]).rstrip("/").endswith("/" + b.slug)]
        assert any(b.isbn in x["text"] and b.publisher in x["text"] for x in mine), b.slug

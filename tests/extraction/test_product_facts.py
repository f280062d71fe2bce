"""A product's own facts are kept in every layout shops write them in, and what a product page
shows of other products is not its content (extraction/records.py, extraction/pagerules.py):
the shop fixture's second template (details as `<b>Label:</b> value<br>` runs in a table cell, a
"Customers also bought" carousel of other books with their club prices and rating counts, rating
widgets) through the crawl's pipeline defaults, and one small page per layout."""
from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from blockcrawl import extract
from blockcrawl.extraction.records import page_facts
from blockcrawl.parse import load
from blockcrawl.pipeline import SitePipeline

from ..support.crawlsite import Site
from ..support.shopsite import books, shop_routes

ROOT = Path(__file__).resolve().parents[2]


def _crawl(layout: str, n: int = 20) -> tuple[list, dict]:
    """The shop's pages through one site pipeline with the crawl's defaults, in crawl order (home,
    categories, then the books): (catalogue, path -> chunk texts)."""
    catalogue = books(n)
    routes = shop_routes(catalogue, layout)
    pipe = SitePipeline(mode="main", tokenizer="words")
    order = ["/"] + [p for p in routes if p.startswith("/category/")] + [f"/{b.slug}" for b in catalogue]
    return catalogue, {p: [c.text for c in pipe.process(routes[p].body, "http://127.0.0.1:8000" + p).chunks]
                       for p in order}


def test_second_template_keeps_every_fact_and_drops_other_products():
    catalogue, pages = _crawl("table")
    for b in catalogue:
        chunks = pages[f"/{b.slug}"]
        text = "\n".join(chunks)
        for fact in (b.author, f"Publisher: {b.publisher}", f"ISBN-13: {b.isbn}", f"Publication date: {b.published}"):
            assert fact in text, (b.slug, fact)
        # nothing of the carousel (its club prices and rating counts), the strip of other books, or
        # the rating widget (the page is typed listing, but declares one Book: a product page)
        assert "Products:" not in text and "Overview:" not in text and "Ratings" not in text, (b.slug, text)
        others = [o.title for o in catalogue if o.title != b.title and o.title not in b.title]
        assert not [t for t in others if t in text], b.slug
        # the facts name the book: one chunk holds the title and the ISBN together
        assert any(b.title in c and b.isbn in c for c in chunks), b.slug


def test_first_template_unchanged_and_mixed_shop():
    catalogue, pages = _crawl("mixed")
    for b in catalogue:
        text = "\n".join(pages[f"/{b.slug}"])
        for fact in (b.author, b.publisher, b.isbn, b.published):
            assert fact in text, (b.slug, fact)
        assert b.blurb[0] in text, b.slug


def _facts(html: str) -> list[tuple[str, str]]:
    return [(f.label, f.value) for f in page_facts(load(html))]


def test_fact_layouts():
    runs = ("<table><tr><td><img src='c.jpg'></td><td><h2>Product details</h2><b>Publisher:</b> Zebra Books<br>"
            "<b>ISBN-13:</b> 978-0-00-000000-2<br><strong>Pages:</strong>&nbsp;312<br></td></tr></table>")
    assert _facts(runs) == [("Publisher", "Zebra Books"), ("ISBN-13", "978-0-00-000000-2"), ("Pages", "312")]
    spans = "<ul><li><span>Brand</span> Acme</li><li><span>Colour</span> Slate grey</li></ul>"
    assert _facts(spans) == [("Brand", "Acme"), ("Colour", "Slate grey")]
    divs = ("<div class='specs'><div class='row'><div>Weight</div><div>1.2 kg</div></div>"
            "<div class='row'><div>Width</div><div>30 cm</div></div></div>")
    assert _facts(divs) == [("Weight", "1.2 kg"), ("Width", "30 cm")]
    lists = ("<ul><li><span>Genre</span><ul><li><a href='/a'>Action</a></li><li><a href='/b'>Adventure</a></li></ul></li>"
             "<li><span>Players</span><ul><li>Single-player</li></ul></li></ul>")
    assert _facts(lists) == [("Genre", "Action, Adventure"), ("Players", "Single-player")]
    # a <dl> of one pair in each column of a row
    cols = "".join(f"<div class='col'><dl><dt><span>{k}</span></dt><dd><span>{v}</span></dd></dl></div>"
                   for k, v in (("Certification", "Uncertified"), ("Mint Location", "San Francisco")))
    assert _facts(f"<div class='row'>{cols}</div>") == [("Certification", "Uncertified"), ("Mint Location", "San Francisco")]
    cells = ("<table><tr><td colspan='3'><strong>Serving Size:</strong> 12 Pieces (29 g)</td></tr>"
             "<tr><td colspan='3'><strong>Servings Per Container:</strong> About 5</td></tr>"
             "<tr><td>Calories</td><td>140</td><td>7%</td></tr></table>")
    assert _facts(cells) == [("Serving Size", "12 Pieces (29 g)"), ("Servings Per Container", "About 5")]


def test_schema_org_properties():
    ld = ('<script type="application/ld+json">{"@context": "https://schema.org", "@graph": ['
          '{"@type": "WebPage", "name": "x"}, {"@type": "Book", "name": "The Quiet Mill", '
          '"author": {"@type": "Person", "name": "Ada Marlowe"}, "isbn": "9780000000002", '
          '"publisher": {"@type": "Organization", "name": "Zebra Books"}}]}</script>')
    assert _facts(f"<html><head>{ld}</head><body><h1>The Quiet Mill</h1><p>A novel.</p></body></html>") == [
        ("Author", "Ada Marlowe"), ("Publisher", "Zebra Books"), ("ISBN", "9780000000002")]
    micro = ('<div itemscope itemtype="https://schema.org/Product"><h1 itemprop="name">Kettle</h1>'
             '<span itemprop="brand">Acme</span><meta itemprop="sku" content="KT-200">'
             '<div itemprop="isRelatedTo" itemscope itemtype="https://schema.org/Product">'
             '<span itemprop="brand">Other</span><meta itemprop="sku" content="XX-1"></div></div>')
    assert _facts(micro) == [("Brand", "Acme"), ("SKU", "KT-200")]
    # facts the boxes say are not said again from the declared properties
    no_isbn = ld.replace('"isbn": "9780000000002", ', "")
    both = "<ul><li><b>Author:</b> Ada Marlowe</li><li><b>Pages:</b> 312</li></ul>" + no_isbn
    assert _facts(both) == [("Author", "Ada Marlowe"), ("Pages", "312"), ("Publisher", "Zebra Books")]


def test_other_products_give_no_facts():
    named = ("<div class='product-recommendations carousel'><div class='item'><a href='/b'>Other book</a>"
             "<div><span class='label'>Products:</span> Club Price: $14.55</div>"
             "<div><span class='label'>Overview:</span> 8 Ratings</div></div></div>")
    headed = ("<section><h3>Customers who bought this item also bought</h3><ul>"
              "<li><b>Price:</b> $9.99</li><li><b>Format:</b> Hardback</li></ul></section>")
    flat = ("<h2>You may also like</h2><ul><li><b>Price:</b> $9.99</li><li><b>Format:</b> Hardback</li></ul>"
            "<h2>Details</h2><ul><li><b>Format:</b> Paperback</li><li><b>Pages:</b> 312</li></ul>")
    # (a box named as furniture holding half the page's nodes or more is read: a wrapper so named)
    prose = "".join(f"<p>Chapter {i} of a novel of the <em>mill</em> and the <a href='/r'>river</a>.</p>" for i in range(8))
    page = "<div class='main'><h1>The Quiet Mill</h1>" + prose + "{}</div>"
    assert _facts(page.format(named)) == []
    assert _facts(page.format(headed)) == []
    assert _facts(page.format(flat)) == [("Format", "Paperback"), ("Pages", "312")]
    # a list of customer reviews is furniture; a review article's own box of specifications is not
    reviews = ("<div class='reviews'>" + "".join(
        f"<div class='review-item'><div><b>Reviewed by:</b> Buyer {i}</div><div><b>Location:</b> Leeds</div></div>"
        for i in range(3)) + "</div>")
    specs = ("<div class='review-specs'><ul><li><b>Processor:</b> AMD Ryzen 5</li><li><b>Memory:</b> 16GB DDR5</li>"
             "</ul></div>")
    assert _facts(page.format(reviews)) == []
    assert _facts(page.format(specs)) == [("Processor", "AMD Ryzen 5"), ("Memory", "16GB DDR5")]


def test_product_page_text_without_other_products():
    body = "<p>" + "This kettle boils a litre in ninety seconds and switches itself off when done. " * 6 + "</p>"
    also = "".join(f"<li><a href='/k{i}'>Kettle model {i}</a> <span>$1{i}.99</span> <span>{i} Ratings</span></li>"
                   for i in range(6))
    html = (
        '<html><head><title>Acme Kettle</title><script type="application/ld+json">{"@context": "https://schema.org",'
        ' "@type": "Product", "name": "Acme Kettle", "sku": "KT-200", "offers": {"@type": "Offer", "price": "49.00"}}'
        "</script></head><body><nav><a href='/'>Home</a> <a href='/kettles'>Kettles</a></nav><main>"
        f"<h1>Acme Kettle</h1><div class='price'>$49.00</div><div class='description'>{body}</div>"
        f"<div class='also'><h2>Customers also bought</h2><ul>{also}</ul></div>"
        f"<div class='upsell-strip'><ul>{also.replace('/k', '/u')}</ul></div></main>"
        "<footer>Acme Ltd</footer></body></html>")
    doc = extract(html)
    assert "boils a litre" in doc.text
    assert not re.search(r"Kettle model|Ratings", doc.text), doc.text


@pytest.mark.slow
def test_mixed_shop_crawled_with_the_cli_defaults(tmp_path):
    """Both templates served over HTTP on 127.0.0.1 and crawled with `blockcrawl crawl`'s defaults:
    the stored chunks of every book hold its facts and none of the carousel's items."""
    catalogue = books(30)
    site = Site(shop_routes(catalogue, "mixed")).start()
    db = tmp_path / "shop.db"
    try:
        r = subprocess.run([sys.executable, "-m", "blockcrawl", "crawl", site.origin + "/", "--store", str(db),
                            "--no-progress"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
    finally:
        site.stop()
    con = sqlite3.connect(db)
    pages: dict[str, list[str]] = {}
    for url, text in con.execute("SELECT url, text FROM chunks"):
        pages.setdefault("/" + url.split("/", 3)[-1], []).append(text)
    con.close()
    for b in catalogue:
        text = "\n".join(pages.get(f"/{b.slug}", []))
        for fact in (b.author, b.publisher, b.isbn, b.published):
            assert fact in text, (b.slug, fact)
        assert "Products:" not in text and "Overview:" not in text, b.slug

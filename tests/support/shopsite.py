"""A fixture book shop written for these tests: 50 product pages on one template (navigation,
breadcrumbs, a "customers also bought" box, a footer with the shop's contact facts), each with a
blurb and a product-details box (Author, Publisher, ISBN-13, Publication date, Pages; the
publishers shared between books), and category listings whose cards repeat each book's lead
paragraph under its title, as the book's page does (the same block text, in another place).
A second product template (layout "table", or "mixed": the two alternate) is the layout of a shop
whose details box is a run of `<b>Label:</b> value<br>` lines inside a table cell, under rating
widgets, beside a "Customers also bought" carousel of other books (each with its club price and its
rating count) and a "You may also like" strip: the facts are the page's own, the carousel items
and ratings are furniture.
Titles, names and text are generated here (no third-party content)."""
from __future__ import annotations

import random
from dataclasses import dataclass

from .crawlsite import Route

ADJ = ["Silent", "Hollow", "Amber", "Northern", "Broken", "Gilded", "Quiet", "Distant", "Crimson", "Frozen",
       "Hidden", "Last", "Wandering", "Burning", "Salt", "Iron", "Paper", "Velvet", "Lantern", "Copper"]
NOUN = ["Harbour", "Orchard", "Lighthouse", "Meadow", "Cartographer", "Winter", "Garden", "Ferryman", "Tide",
        "Observatory", "Beekeeper", "Archive", "Violin", "Quarry", "Glassmaker", "Canal", "Falconer", "Mill"]
FIRST = ["Ada", "Tomas", "Ingrid", "Rafael", "Mirela", "Owen", "Keiko", "Bruno", "Leila", "Piotr", "Sunita",
         "Hamish", "Noor", "Elena", "Joaquin", "Freya"]
LAST = ["Marlowe", "Okafor", "Lindqvist", "Serrano", "Novak", "Pritchard", "Tanaka", "Ferreira", "Haddad",
        "Kowalski", "Raman", "Drummond", "Aziz", "Petrova", "Castillo", "Byrne"]
PUBLISHERS = ["Zebra Books", "Harrowgate Press", "Blue Finch Publishing", "Old Mill House", "Kestrel & Lowe",
              "Northlight Editions"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
CATEGORIES = ["fiction", "mystery", "history", "travel", "poetry"]
SUBJECTS = ["a lighthouse keeper", "two sisters", "a retired surveyor", "a young apprentice", "an exiled poet",
            "a ship's doctor", "a village schoolteacher", "a travelling musician"]
PLACES = ["a fishing town", "the salt marshes", "a mountain pass", "an island archive", "a river city",
          "the northern coast", "a border village"]


@dataclass(frozen=True)
class Book:
    slug: str
    title: str
    author: str
    publisher: str
    isbn: str
    published: str
    pages: int
    category: str
    blurb: tuple[str, str]
    price: str


def _isbn13(rng: random.Random) -> str:
    digits = [9, 7, 8] + [rng.randrange(10) for _ in range(9)]
    check = (10 - sum(d * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits)) % 10) % 10
    s = "".join(map(str, digits + [check]))
    return f"{s[:3]}-{s[3]}-{s[4:8]}-{s[8:12]}-{s[12]}"


def books(n: int = 50, seed: int = 21) -> list[Book]:
    rng = random.Random(seed)
    titles: list[str] = []
    while len(titles) < n:
        t = f"The {rng.choice(ADJ)} {rng.choice(NOUN)}"
        if t not in titles:
            titles.append(t)
    out = []
    for i, title in enumerate(titles):
        author = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        subj, place = rng.choice(SUBJECTS), rng.choice(PLACES)
        blurb = (f"In {place}, {subj} finds a letter that was never sent, and the life it describes is "
                 f"not the one anyone remembers. {title} follows the summer that changes everything.",
                 f"Written with {rng.choice(['warmth', 'precision', 'humour', 'restraint'])}, this is "
                 f"{author.split()[1]}'s {rng.choice(['first', 'second', 'third', 'fifth'])} novel, about "
                 f"{rng.choice(['memory', 'distance', 'loyalty', 'the sea', 'forgiveness'])} and the stories "
                 "families keep.")
        out.append(Book(
            slug=f"book-{i + 1:02d}", title=title, author=author, publisher=PUBLISHERS[i % len(PUBLISHERS)],
            isbn=_isbn13(rng), published=f"{rng.randrange(1, 29)} {rng.choice(MONTHS)} {rng.randrange(1995, 2025)}",
            pages=rng.randrange(180, 620), category=CATEGORIES[i % len(CATEGORIES)], blurb=blurb,
            price=f"£{rng.randrange(7, 25)}.{rng.choice(['00', '49', '99'])}"))
    return out


def _template(title: str, body: str) -> str:
    nav = "".join(f'<li><a href="/category/{c}">{c.title()}</a></li>' for c in CATEGORIES)
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="/shop.css"></head><body>
<header class="site-header"><a class="logo" href="/">Lantern Lane Books</a>
<form class="search" action="/search"><input name="q" placeholder="Search books"><button>Search</button></form>
<div class="account"><span>Basket (0)</span> <span>Sign in</span></div></header>
<nav class="main-nav"><ul><li><a href="/">Home</a></li>{nav}</ul></nav>
<div class="page">{body}</div>
<footer class="site-footer"><div class="contact"><ul><li><b>Email:</b> hello@lanternlane.test</li>
<li><b>Phone:</b> 01632 960 123</li><li><b>Address:</b> 4 Quay Street, Porthaven</li></ul></div>
<p>Free delivery on orders over £25. Lantern Lane Books is a fictional shop made for testing.</p>
<p>&copy; 2026 Lantern Lane Books</p></footer></body></html>"""


def product_page(b: Book, others: list[Book]) -> str:
    also = "".join(f'<li><a href="/{o.slug}">{o.title}</a><span class="price">{o.price}</span></li>' for o in others)
    body = f"""<div class="breadcrumbs"><a href="/">Home</a> &gt; <a href="/category/{b.category}">{b.category.title()}</a>
&gt; {b.title}</div>
<div class="product"><div class="product-main"><h1 class="product-title">{b.title}</h1>
<p class="byline">by <span class="author">{b.author}</span></p>
<div class="lead"><p>{b.blurb[0]}</p></div>
<div class="buy"><span class="price">{b.price}</span> <button>Add to basket</button></div>
<div class="description"><h2>Description</h2><p>{b.blurb[1]}</p></div></div>
<div class="product-details"><h2>Product details</h2><ul>
<li><b>Author:</b> {b.author}</li><li><b>Publisher:</b> {b.publisher}</li>
<li><b>ISBN-13:</b> {b.isbn}</li><li><b>Publication date:</b> {b.published}</li>
<li><b>Pages:</b> {b.pages}</li><li><b>Format:</b> Paperback</li></ul></div></div>
<div class="also-bought"><h3>Customers also bought</h3><ul>{also}</ul></div>"""
    return _template(f"{b.title} by {b.author} | Lantern Lane Books", body)


def _ratings(b: Book) -> int:
    return 3 + sum(map(ord, b.slug)) % 40


def product_page_table(b: Book, others: list[Book]) -> str:
    """The second template: a layout table, the details as <b>Label:</b> value<br> runs in a cell."""
    def item(o: Book) -> str:
        return (f'<div class="carousel-item"><a href="/{o.slug}"><img src="/covers/{o.slug}.jpg" alt=""></a>'
                f'<div class="item-title"><a href="/{o.slug}">{o.title}</a></div>'
                f'<div class="item-author">{o.author}</div>'
                f'<div class="item-price"><span class="label">Products:</span> Club Price: {o.price}</div>'
                f'<div class="item-rating"><span class="label">Overview:</span> {_ratings(o)} Ratings</div>'
                f'<button>Add to basket</button></div>')
    carousel = "".join(item(o) for o in others)
    strip = "".join(f'<li><a href="/{o.slug}">{o.title}</a> <span class="stars">★★★★☆</span> '
                    f'<span class="price">{o.price}</span></li>' for o in reversed(others))
    body = f"""<div class="breadcrumbs"><a href="/">Home</a> / <a href="/category/{b.category}">{b.category.title()}</a></div>
<table class="product-layout" width="100%"><tr>
<td class="cover" valign="top"><img src="/covers/{b.slug}.jpg" alt="{b.title}"></td>
<td class="info" valign="top"><h1>{b.title}</h1>
<div class="contributors">by <a href="/author/{b.slug}">{b.author}</a> (Author)</div>
<div class="rating-summary"><span class="stars">★★★★☆</span> <a href="#reviews">{_ratings(b)} Ratings</a>
<span>Write a review</span></div>
<div class="price-box"><span class="our-price">{b.price}</span> <span>Club Price: {b.price}</span>
<button>Add to basket</button></div>
<p>{b.blurb[0]}</p><p>{b.blurb[1]}</p></td></tr>
<tr><td></td><td class="details" valign="top"><h2>Product details</h2>
<b>Publisher:</b> {b.publisher}<br><b>ISBN-13:</b> {b.isbn}<br><b>Publication date:</b> {b.published}<br>
<b>Pages:</b> {b.pages}<br><b>Format:</b> Paperback<br></td></tr></table>
<div class="carousel recommendations"><h3>Customers also bought</h3><div class="carousel-track">{carousel}</div>
<button class="prev">&lt;</button><button class="next">&gt;</button></div>
<div class="related"><h3>You may also like</h3><ul>{strip}</ul></div>"""
    ld = (f'<script type="application/ld+json">{{"@context": "https://schema.org", "@type": "Book", '
          f'"name": "{b.title}", "author": {{"@type": "Person", "name": "{b.author}"}}, '
          f'"aggregateRating": {{"@type": "AggregateRating", "ratingValue": "4.1", "ratingCount": "{_ratings(b)}"}}}}'
          '</script>')
    return _template(f"{b.title} by {b.author} | Lantern Lane Books", ld + body)


def listing_page(category: str, items: list[Book]) -> str:
    cards = "".join(f'<div class="card"><h3><a href="/{b.slug}">{b.title}</a></h3><p class="teaser">{b.blurb[0]}</p>'
                    f'<span class="price">{b.price}</span></div>' for b in items)
    return _template(f"{category.title()} books | Lantern Lane Books",
                     f"<h1>{category.title()}</h1><div class=\"cards\">{cards}</div>")


LAYOUTS = ("list", "table", "mixed")


def shop_routes(catalogue: list[Book], layout: str = "list") -> dict[str, Route]:
    """The shop's routes; layout: its product template, "list" (a details list), "table" (the
    second template) or "mixed" (even books the first, odd books the second)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    r = {"/robots.txt": Route("User-agent: *\nAllow: /\n", ctype="text/plain")}
    home = "".join(f'<li><a href="/category/{c}">{c.title()}</a></li>' for c in CATEGORIES)
    r["/"] = Route(_template("Lantern Lane Books", f"<h1>Welcome</h1><p>Books chosen by people who read them.</p>"
                                                   f"<ul class=\"categories\">{home}</ul>"))
    for c in CATEGORIES:
        r[f"/category/{c}"] = Route(listing_page(c, [b for b in catalogue if b.category == c]))
    n = len(catalogue)
    for i, b in enumerate(catalogue):
        others = [catalogue[(i + k) % n] for k in (1, 7, 13, 19)]
        second = layout == "table" or (layout == "mixed" and i % 2 == 1)
        r[f"/{b.slug}"] = Route((product_page_table if second else product_page)(b, others))
    return r

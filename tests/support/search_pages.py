"""Small hand-made pages for the index/search tests (a helper module, not a test file)."""
from __future__ import annotations

from pathlib import Path

from blockcrawl.pipeline import SitePipeline
from blockcrawl.store import Store

from ..chunk.test_sections_dedup_chunks import PAGE1, PAGE2

COOKING = """<html><head><title>Kitchen notes</title></head><body>
<h1>Recipes</h1>
<div><h2>Bread</h2><p>Mix flour, water, salt and yeast, knead the dough for ten minutes, let it rise
for two hours and bake it in a hot oven until the crust is brown and sounds hollow.</p></div>
<div><h2>Crème brûlée</h2><p>Whisk egg yolks with sugar, pour in warm cream and vanilla, bake the custard
in a water bath and caramelise a thin layer of sugar on top with a torch just before serving.</p></div>
</body></html>"""

COMPUTING = """<html><head><title>Programming</title></head><body>
<h1>Languages</h1>
<div><h2>Python</h2><p>Python is a high-level programming language with dynamic typing and garbage
collection; its interpreter reads source code and runs it line by line, and pip installs packages.</p></div>
<div><h2>SQLite</h2><p>SQLite is an embedded relational database engine: the whole database lives in one
file on disk and applications query it with SQL without running a separate server process.</p></div>
</body></html>"""

# Chunk text that looks like markup: the search page must show it as text, never as HTML.
MARKUP = """<html><head><title>Escaping</title></head><body><h1>Web pages</h1>
<div><h2>Escaping markup</h2><p>To show a tag such as &lt;img src=x onerror="document.title='owned'"&gt; on
a web page as plain text, replace the angle brackets by character entities before inserting it.</p></div>
</body></html>"""

PAGES = {
    "http://site.test/europe": PAGE1,
    "http://site.test/asia": PAGE2,
    "http://site.test/cooking": COOKING,
    "http://site.test/computing": COMPUTING,
    "http://site.test/markup": MARKUP,
}


def fill(path: Path, pages: dict[str, str] | None = None) -> None:
    """A store at path holding pages (default PAGES) as the crawl stores them (blocks, chunks)."""
    pipe = SitePipeline()
    with Store(path) as st:
        for url, html in (PAGES if pages is None else pages).items():
            r = pipe.process(html, url)
            st.save_page(url, r.blocks, r.chunks, title=r.title, content_hash=str(hash(r.text)))


def indexed(path: Path, pages: dict[str, str] | None = None, batch_size: int = 4) -> Path:
    """fill(path, pages), then embedded by the bundled model: a store search can answer from."""
    from blockcrawl.index import build_index, default_embedder
    fill(path, pages)
    build_index(path, embedder=default_embedder(), batch_size=batch_size)
    return path

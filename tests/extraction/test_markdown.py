"""Markdown writer (extraction.markdown): every construct, nesting, escaping, masks, deep pages."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from blockcrawl.extraction.api import main_content
from blockcrawl.extraction.markdown import blocks_markdown, escape, to_markdown
from blockcrawl.parse import load
from blockcrawl.store.schema import SCHEMA_VERSION

from ..support.scaling import growth

EVERYTHING = """<html><head><base href="/docs/"></head><body>
<h1>Title *star*</h1>
<p>Some <b>bold</b>, <em>em </em>and <del>gone</del> text with a <a href="page.html">link</a>,
<a href="javascript:void(0)">no link</a> and <code>x = `y`</code>.</p>
<h2>Lists</h2>
<ul><li>one</li><li>two<ul><li>nested <i>a</i></li><li>nested b</li></ul></li><li>three</li></ul>
<ol start="3"><li>first</li><li>second</li></ol>
<table><thead><tr><th>Name</th><th>Value</th></tr></thead>
<tbody><tr><td>a|b</td><td>1</td></tr><tr><td colspan=2>wide</td></tr></tbody></table>
<pre><code class="language-python">def f():
    return "```"
</code></pre>
<blockquote><p>quoted</p><p>- not a list</p></blockquote>
<p>1. not a list either<br>line two</p><hr><p>after the rule <img src="i.png" alt="pic"></p>
</body></html>"""

EXPECTED = """# Title \\*star\\*

Some **bold**, *em* and ~~gone~~ text with a [link](http://ex.com/docs/page.html), no link and `` x = `y` ``.

## Lists

- one
- two
  - nested *a*
  - nested b
- three

3. first
4. second

| Name | Value |
| --- | --- |
| a\\|b | 1 |
| wide |  |

````python
def f():
    return "```"
````

> quoted
>
> \\- not a list

1\\. not a list either
line two

---

after the rule ![pic](http://ex.com/docs/i.png)
"""


def md(html: str, **kw: object) -> str:
    return to_markdown(load(html, "http://ex.com/a/b.html"), **kw)  # type: ignore[arg-type]


def test_every_construct():
    assert md(EVERYTHING, images=True) == EXPECTED
    assert "![pic]" not in md(EVERYTHING)  # images are asked for


def test_nested_lists_and_ordered_numbers():
    out = md("<ol><li>a<ol><li>a1</li><li>a2<ul><li>deep</li></ul></li></ol></li><li>b</li></ol><p>after</p>")
    assert out == "1. a\n   1. a1\n   2. a2\n      - deep\n2. b\n\nafter\n"


def test_table_header_and_layout_table():
    out = md("<table><tr><th>H1</th><th>H2</th></tr><tr><td><b>x</b></td><td><a href='/q'>y</a></td></tr></table>")
    assert out == "| H1 | H2 |\n| --- | --- |\n| **x** | [y](http://ex.com/q) |\n"
    # a table holding a list and headings is layout: its cells become blocks, no pipes
    out = md("<table><tr><td><h2>Menu</h2><ul><li>a</li></ul></td><td><p>Body text</p></td></tr></table>")
    assert "|" not in out and "## Menu" in out and "- a" in out and "Body text" in out


def test_code_with_backticks():
    assert md("<p>run <code>a``b</code></p>") == "run ```a``b```\n"
    out = md("<pre>``` inside\n````</pre>")
    assert out.startswith("`````\n``` inside\n````\n`````")


def test_escaping_and_links_across_blocks():
    assert escape("a*b_c[d]`e\\") == "a\\*b\\_c\\[d\\]\\`e\\\\"
    assert md("<p># not a heading</p><p>+ plus</p>") == "\\# not a heading\n\n\\+ plus\n"
    # a link wrapping a block leaves plain text, never a '[' without its '](url)'
    assert md("<div><a href='/x'><div>block</div> tail</a></div>") == "block\n\ntail\n"
    # relative to the page when there is no <base>; spaces and parentheses percent-encoded
    assert md("<p><a href='x (1).html'>w</a></p>") == "[w](http://ex.com/a/x%20%281%29.html)\n"


def test_keep_mask_restricts_to_main_content():
    page = ("<html><head><title>An Article Heading</title></head><body><nav><a href='/'>Home</a></nav>"
            "<article><h1>An Article Heading</h1><p>" + "Words in the article body. " * 12
            + "<a href='/more'>more</a></p><ul><li>" + "A point in a list. " * 4 + "</li></ul></article>"
            "<footer>Copyright footer</footer></body></html>")
    mds: list[str] = []
    main_content(load(page, "http://ex.com/"), "auto", markdown=mds)
    assert mds[0].startswith("# An Article Heading\n\nWords in the article body.")
    assert "[more](http://ex.com/more)" in mds[0] and "- A point in a list." in mds[0]
    assert "Home" not in mds[0] and "Copyright" not in mds[0]


def test_blocks_fallback():
    rows = [(("Europe",), "heading", "Europe:"), (("Europe", "Germany"), "text", "Germany: Berlin *is* big"),
            (("Europe", "France"), "text", "France: Paris")]
    assert blocks_markdown(rows) == "# Europe\n\n## Germany\n\nBerlin \\*is\\* big\n\n## France\n\nParis\n"


def test_deep_nesting_is_linear():
    """50,000 levels of each container, prefixes capped at MAX_NEST levels: 4x the depth costs
    < 8x the CPU (linear 4x, quadratic 16x; tests/support/scaling.py)."""
    for unit in ("<div>", "<ul><li>", "<blockquote>", "<b><i>", "<a href=x>", "<table><tr><td>"):
        dom = load(unit * 50_000 + "deep text", "http://ex.com/")
        ratio = growth(to_markdown, load(unit * 12_500 + "deep text", "http://ex.com/"), dom)
        assert ratio < 8, (unit, ratio)
        out = to_markdown(dom)
        assert "deep text" in out and len(out) < 200, (unit, out[-100:])


# ---- the crawl stores it (pages.markdown, schema 2); export --what pages --format markdown -----------

def _export(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blockcrawl", "export", "--store", str(db), "--what", "pages",
                           "--format", "markdown"], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=60)


def test_crawl_stores_markdown_and_export_writes_it(tmp_path):
    from blockcrawl.crawl import CrawlConfig, crawl
    from blockcrawl.pipeline import PipelineConfig
    from blockcrawl.store import Store

    from ..support.crawlsite import Route, Site

    html = ("<html><head><title>Prices of the Shop</title></head><body><nav><a href='/'>Home</a></nav><main>"
            "<h1>Prices of the Shop</h1><p>" + "Our prices are listed in the table below for every item. " * 3
            + "See the <a href='/terms.html'>terms</a>.</p><table><tr><th>Item</th><th>Price</th></tr>"
            + "".join(f"<tr><td>A pot of green tea number {k} with honey</td><td>{k} euros and ten cents</td></tr>"
                      for k in range(1, 7)) + "</table></main></body></html>")
    site = Site({"/": Route(html), "/terms.html": Route("<p>" + "Terms of the shop apply to all. " * 5 + "</p>")}).start()
    try:
        db = tmp_path / "c.db"
        with Store(db) as st:
            crawl(st, CrawlConfig(seeds=[site.origin + "/"], progress=False, robots=False),
                  PipelineConfig(mode="main", tokenizer="words"))
        r = _export(db)
    finally:
        site.stop()
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert (f"<!-- {site.origin}/ -->\n# Prices of the Shop\n\n" in r.stdout
            and f"See the [terms]({site.origin}/terms.html)." in r.stdout
            and "| Item | Price |\n| --- | --- |\n| A pot of green tea number 1 with honey | 1 euros and ten cents |\n"
            in r.stdout)
    assert "Home" not in r.stdout  # the main content only
    bad = _export_what(db, "chunks")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--what pages" in bad.stderr


def _export_what(db: Path, what: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blockcrawl", "export", "--store", str(db), "--what", what,
                           "--format", "markdown"], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=60)


def test_version_1_store_migrates_and_exports_from_blocks(tmp_path):
    """A store from before pages.markdown: read as it is (Markdown rebuilt from the blocks, stderr
    says so), then the first writer adds the column."""
    import sqlite3

    from blockcrawl.pipeline import SitePipeline
    from blockcrawl.store import Store

    db = tmp_path / "v1.db"
    res = SitePipeline(tokenizer="words").process(
        "<h1>Europe</h1><h2>Germany</h2><p>Berlin is the capital.</p><h2>France</h2><p>Paris is the capital.</p>",
        "http://a.test/")
    with Store(db) as st:
        st.save_page("http://a.test/", res.blocks, res.chunks, title="Europe")
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE pages DROP COLUMN markdown")
    con.execute("PRAGMA user_version=1")
    con.commit()
    con.close()
    r = _export(db)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("<!-- http://a.test/ -->\n# Europe\n\n## Germany\n\nBerlin is the capital.\n\n"
                        "## France\n\nParis is the capital.\n\n")
    assert "1 of 1 pages had no stored Markdown" in r.stderr and r.stderr.count("\n") == 1
    with Store(db) as st:
        assert st.schema_version == SCHEMA_VERSION  # migrated by the first writer, through every step
        assert [r[0] for r in st.db.execute("SELECT markdown FROM pages")] == [None]
        st.save_page("http://a.test/", res.blocks, res.chunks, title="Europe", markdown="# Fresh\n")
    assert _export(db).stdout == "<!-- http://a.test/ -->\n# Fresh\n\n"

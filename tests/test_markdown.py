"""Markdown writer (extraction.markdown): every construct, nesting, escaping, masks, deep pages."""
from __future__ import annotations

import time

from blockcrawl.extraction.api import main_content
from blockcrawl.extraction.markdown import blocks_markdown, escape, to_markdown
from blockcrawl.parse import load

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
    """50,000 levels of each container: a second or so, prefixes capped at MAX_NEST levels."""
    for unit in ("<div>", "<ul><li>", "<blockquote>", "<b><i>", "<a href=x>", "<table><tr><td>"):
        dom = load(unit * 50_000 + "deep text", "http://ex.com/")
        t0 = time.perf_counter()
        out = to_markdown(dom)
        assert time.perf_counter() - t0 < 5, unit
        assert "deep text" in out and len(out) < 200, (unit, out[-100:])

"""`auto` main-content extraction on small hand-made pages."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import blockcrawl
from blockcrawl import Document, SitePipeline
from blockcrawl.chunk import WordTokenizer
from blockcrawl.extraction import blocks_from_dom
from blockcrawl.extraction.auto import select
from blockcrawl.extraction.registry import ALGORITHMS, get_selector
from blockcrawl.parse import load

PROSE = [
    "The river rose overnight, and by morning the lower town was under water, its streets turned "
    "into canals that boats of every kind worked up and down, carrying families, dogs and furniture.",
    "Engineers had warned for years that the levee, built in a hurry after the last great flood, "
    "would not hold against a crest of this size, yet the money for repairs never came.",
    "By noon the mayor had declared an emergency, opened the school gym as a shelter, and asked "
    "everyone living below the railway line to leave while the roads were still passable.",
    "Volunteers filled sandbags at the fairground until dark, working in shifts, while the radio "
    "station read out the names of streets to be evacuated next, one neighbourhood at a time.",
]

NAV = '<nav class="menu"><ul>' + "".join(
    f'<li><a href="/s{i}">Section {i}</a></li>' for i in range(12)) + "</ul></nav>"
SIDEBAR = ('<div class="sidebar"><h3>Most read</h3><ul>' + "".join(
    f'<li><a href="/story/{i}">Another story headline number {i}</a></li>' for i in range(8))
    + "</ul></div>")
COOKIE = ('<div id="cookie-consent" class="cookie-banner"><p>We use cookies to improve your experience, '
          'by continuing you agree.</p><button>Accept</button></div>')
AD = '<div class="ad-slot advert"><a href="/buy">Buy the new phone now, limited offer</a></div>'
COMMENTS = ('<div id="comments" class="comment-list"><h3>3 comments</h3>' + "".join(
    f'<div class="comment"><a href="/u{i}">user{i}</a> <a href="/c{i}">reply</a> <a href="/l{i}">like</a></div>'
    for i in range(3)) + "</div>")
FOOTER = ('<footer><p>Copyright 2024 The Valley Gazette, all rights reserved.</p><a href="/about">About</a> '
          '<a href="/privacy">Privacy</a></footer>')


def article_page(body_extra: str = "") -> str:
    paras = "".join(f"<p>{p}</p>" for p in PROSE)
    return f"""<html><head><title>Flood - The Valley Gazette</title>
<script>var tracking = "do not show this";</script></head><body>
{COOKIE}<header><a href="/">The Valley Gazette</a></header>{NAV}
<div class="layout"><main><article class="story">
<h1>Flood reaches the lower town</h1>
{paras}
<h2>What comes next</h2>
<p>Forecasters expect the river to fall slowly over the weekend, although more rain is due, and the
town council will meet on Monday to decide how the clean-up is paid for.</p>
<ul><li>Shelter at the school gym, open day and night for anyone who needs it</li>
<li>Drinking water handed out at the fire station from eight in the morning</li></ul>
<table><tr><th>Gauge</th><th>Level</th></tr><tr><td>Upper bridge</td><td>6.2 metres</td></tr></table>
<pre><code>level = read_gauge("upper-bridge")</code></pre>
{body_extra}
</article>{COMMENTS}</main>{SIDEBAR}{AD}</div>{FOOTER}</body></html>"""


def test_auto_is_registered_and_default():
    assert ALGORITHMS["auto"].page == "blockcrawl.extraction.auto:select"
    assert get_selector("auto") is select and ALGORITHMS["auto"].page_selector() is select
    assert blockcrawl.extract("<p>x</p>").algorithm == "auto"


def test_boilerplate_removed_article_kept():
    doc = blockcrawl.extract(article_page(), url="http://gazette.test/flood")
    assert isinstance(doc, Document)
    text = doc.text
    for p in PROSE:
        assert p in text
    # headings, lists, tables and code of the article stay
    for kept in ("Flood reaches the lower town", "What comes next", "Shelter at the school gym",
                 "Upper bridge", "6.2 metres", 'level = read_gauge("upper-bridge")'):
        assert kept in text, kept
    # menus, sidebar, ads, cookie banner, comment links, footer and scripts go
    for gone in ("Section 3", "Most read", "Another story headline", "Buy the new phone", "cookies",
                 "user1", "reply", "Copyright", "Privacy", "do not show", "The Valley Gazette"):
        assert gone not in text, gone
    assert doc.title == "Flood - The Valley Gazette"
    assert doc.url == "http://gazette.test/flood"


def test_blocks_keep_heading_context():
    doc = blockcrawl.extract(article_page())
    later = [b for b in doc.blocks if "Forecasters expect" in b.body]
    assert later and later[0].heading_path[-1] == "What comes next"
    assert later[0].text.startswith("What comes next: Forecasters expect")
    # each heading appears once in the main text, not once per block
    assert doc.text.count("What comes next") == 1


def test_keep_mask_feeds_blocks():
    dom = load(article_page())
    keep = select(dom)
    assert len(keep) == len(dom)
    kept = " ".join(b.body for b in blocks_from_dom(dom, keep=keep))
    everything = " ".join(b.body for b in blocks_from_dom(dom))
    assert "Section 3" in everything and "Section 3" not in kept
    assert PROSE[0] in kept


def test_link_dense_block_inside_article_removed():
    related = ('<div class="more"><p>' + " | ".join(
        f'<a href="/r{i}">Related headline {i} about floods</a>' for i in range(6)) + "</p></div>")
    doc = blockcrawl.extract(article_page(related))
    assert "Related headline" not in doc.text
    assert PROSE[2] in doc.text


def test_article_split_over_sibling_columns_is_whole():
    cols = "".join(f'<div class="col"><p>{p}</p></div>' for p in PROSE)
    page = f"<html><body>{NAV}<div class='story'>{cols}</div>{SIDEBAR}</body></html>"
    doc = blockcrawl.extract(page)
    for p in PROSE:
        assert p in doc.text
    assert "Another story" not in doc.text


def test_json_ld_article_body_fallback():
    body = " ".join(PROSE)
    ld = json.dumps({"@context": "https://schema.org", "@graph": [
        {"@type": "WebPage"}, {"@type": "NewsArticle", "headline": "Flood", "articleBody": body}]})
    page = (f'<html><head><script type="application/ld+json">{ld}</script></head>'
            f'<body>{NAV}<div id="root"></div>{FOOTER}</body></html>')
    doc = blockcrawl.extract(page)
    assert PROSE[0] in doc.text and PROSE[3] in doc.text
    assert "Section 3" not in doc.text and "Copyright" not in doc.text


def test_json_ld_selects_matching_text_nodes():
    # the text is on the page but in pieces too short for scoring: the articleBody points at them
    short = ["A short line of the story here.", "Another short line of the story."]
    ld = json.dumps({"@type": "Article", "articleBody": " ".join(short) + " " + PROSE[0]})
    page = (f'<html><head><script type="application/ld+json">{ld}</script></head><body>'
            f'<span>{short[0]}</span><span>{short[1]}</span>{NAV}</body></html>')
    doc = blockcrawl.extract(page)
    assert short[0] in doc.text and "Section 3" not in doc.text


@pytest.mark.parametrize("html", ["", "   ", "<html></html>", "<<<>>><p", "\x00\x01\x02",
                                  b"\xff\xfe\x00", "<html><body><nav><a href=/>Home</a></nav></body></html>",
                                  "<script>only()</script>", "<div><p>unclosed <b>tags"])
def test_empty_or_malformed_pages(html):
    doc = blockcrawl.extract(html)
    assert isinstance(doc, Document)
    assert doc.algorithm == "auto"
    if not doc.text:
        assert doc.blocks == []


def test_nav_only_page_gives_empty_document():
    doc = blockcrawl.extract("<html><body>" + NAV + FOOTER + "</body></html>")
    assert doc.text == "" and doc.blocks == []


def test_deeply_nested_page():
    depth = 100_000
    html = "<div>" * depth + "<p>" + PROSE[0] + "</p>" + "</div>" * depth
    doc = blockcrawl.extract(html)
    assert PROSE[0] in doc.text


def test_plain_text_page_kept():
    # an old-style page: text straight in <body>, separated by <br>
    page = "<html><body>" + "<br><br>".join(PROSE) + "</body></html>"
    doc = blockcrawl.extract(page)
    for p in PROSE:
        assert p in doc.text


def test_unknown_algorithm_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown algorithm"):
        blockcrawl.extract("<p>x</p>", algorithm="nope")


def test_all_algorithm_keeps_everything():
    doc = blockcrawl.extract(article_page(), algorithm="all")
    assert "Section 3" in doc.text and PROSE[0] in doc.text


def test_pipeline_main_mode_dedups_across_pages():
    pipe = SitePipeline(mode="main", tokenizer=WordTokenizer())
    first = pipe.process(article_page(), "http://gazette.test/a")
    assert PROSE[0] in first.text and "Section 3" not in first.text
    assert first.chunks and all("Section 3" not in c.text for c in first.chunks)
    second = pipe.process(article_page(), "http://gazette.test/b")
    assert second.blocks == [] and second.duplicates == len(first.blocks)


def test_cli_main_mode(tmp_path: Path):
    page = tmp_path / "flood.html"
    page.write_text(article_page(), encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, "-m", "blockcrawl", "extract", str(page), "--mode", "main",
                          "--tokenizer", "words"], capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    text = " ".join(r["text"] for r in rows)
    assert PROSE[1] in text and "Section 3" not in text
    bad = subprocess.run([sys.executable, "-m", "blockcrawl", "extract", str(page), "--mode", "main",
                          "--algorithm", "nope"], capture_output=True, text=True, cwd=root)
    assert bad.returncode == 2 and "unknown algorithm" in bad.stderr and "Traceback" not in bad.stderr


def test_tiny_page_without_article_keeps_its_text():
    # nothing scores as an article: the text that is not furniture is the content
    doc = blockcrawl.extract("<html><body>" + NAV + "<p>Opening hours: 9 to 5.</p></body></html>")
    assert doc.text == "Opening hours: 9 to 5."


@pytest.mark.parametrize("html", ["<span>word " * 100_000, "<h2>x" * 50_000, "<a href=/>x " * 50_000])
def test_deep_inline_nesting(html):
    doc = blockcrawl.extract(html)
    assert doc.text.startswith(("word", "x"))


def test_photo_captions_credits_and_ad_labels_dropped():
    figure = ('<figure><img src="/a.jpg"><figcaption>Boats on Main Street on Tuesday.</figcaption></figure>'
              '<div class="image-caption">Sandbags at the fairground</div>'
              '<p>Photo: Jane Doe / Gazette</p><div>Advertisement</div>')
    doc = blockcrawl.extract(article_page(figure))
    for gone in ("Boats on Main Street", "Sandbags at the fairground", "Jane Doe", "Advertisement"):
        assert gone not in doc.text, gone
    assert PROSE[3] in doc.text


def test_title_heading_repeating_the_page_title_is_dropped():
    page = article_page().replace("<title>Flood - The Valley Gazette</title>",
                                  "<title>Flood reaches the lower town | The Valley Gazette</title>")
    doc = blockcrawl.extract(page)
    assert "Flood reaches the lower town" not in doc.text
    assert "What comes next" in doc.text and PROSE[0] in doc.text


def test_forum_thread_keeps_every_post():
    posts = "".join(
        f'<div class="post"><div class="meta"><a href="/u/{i}">member{i}</a> posted on 12 May</div>'
        f'<div class="msg"><p>{p}</p></div></div>' for i, p in enumerate(PROSE))
    page = f"<html><body>{NAV}<div id='thread'>{posts}</div>{SIDEBAR}{FOOTER}</body></html>"
    doc = blockcrawl.extract(page)
    for p in PROSE:
        assert p in doc.text
    assert "Another story" not in doc.text and "Copyright" not in doc.text


def test_heading_left_empty_at_the_end_is_trimmed():
    tail = '<h3>You may also like</h3><div class="teasers"><a href="/x">Other story</a></div><p>Share</p>'
    doc = blockcrawl.extract(article_page(tail))
    assert "You may also like" not in doc.text and "Share" not in doc.text.split("\n")
    assert 'level = read_gauge("upper-bridge")' in doc.text


def test_block_pipeline_keeps_the_title_heading_as_context():
    from blockcrawl import SitePipeline

    page = ("<html><head><title>Europe Countries - Atlas</title></head><body><nav><a href='/'>Home</a>"
            "<a href='/x'>Other</a></nav><article><h1>Europe Countries</h1><section><h2>Germany</h2><p>"
            + "Germany is a country of central Europe with many rivers, forests and old towns. " * 3
            + "</p></section><section><h2>France</h2><p>"
            + "France is a country of western Europe with long coasts, mountains and vineyards. " * 3
            + "</p></section></article></body></html>")
    doc = blockcrawl.extract(page)
    assert "Europe Countries" not in doc.text  # Document.text: the title heading is dropped
    res = SitePipeline(mode="main").process(page)
    paths = {b.heading_path for b in res.blocks if b.kind == "text"}
    assert ("Europe Countries", "Germany") in paths and ("Europe Countries", "France") in paths

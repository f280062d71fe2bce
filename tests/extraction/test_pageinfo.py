"""Page info: metadata from every source, dates, the article/listing classifier, the summary,
and their bounds on hostile pages."""
import json
import math

import pytest

import blockcrawl
from blockcrawl import SitePipeline
from blockcrawl.chunk import WordTokenizer
from blockcrawl.extraction import jsonld
from blockcrawl.extraction.dates import normalize_date
from blockcrawl.extraction.jsonld import MAX_BYTES
from blockcrawl.extraction.metadata import page_meta
from blockcrawl.extraction.nfas import FEATURES, classify, model
from blockcrawl.extraction.pageinfo import page_info
from blockcrawl.extraction.summary import MAX_CHARS, sentences, summarize
from blockcrawl.parse import Dom, load, parse_html
from blockcrawl.records import PAGE_TYPES, PageInfo, PageMeta

from ..support.scaling import growth
from .test_auto import PROSE as AUTO_PROSE

PROSE = [*AUTO_PROSE,  # tests/extraction/test_auto.py's four paragraphs and one more
         "The levee engineers said the flood crest would pass the lower town by Thursday, and that the "
         "levee would be rebuilt higher before the next flood season, whatever the repairs cost."]
NAV = '<nav><ul>' + "".join(f'<li><a href="/s{i}">Section {i}</a></li>' for i in range(8)) + "</ul></nav>"


def article_page(head: str = "", body_extra: str = "") -> str:
    paras = "".join(f"<p>{p}</p>" for p in PROSE)
    return (f"<html><head><title>Flood hits the lower town | Valley Gazette</title>{head}</head><body>{NAV}"
            f"<article><h1>Flood hits the lower town</h1>{body_extra}{paras}</article>"
            "<footer><p>Copyright 2024 The Valley Gazette</p></footer></body></html>")


def listing_page() -> str:
    items = "".join(
        f'<article class="teaser"><h2><a href="/2024/03/{i:02d}/story-number-{i}">Story headline number {i} '
        f'of the day</a></h2><time datetime="2024-03-{i:02d}">March {i}</time>'
        f'<p><a href="/2024/03/{i:02d}/story-number-{i}">A short teaser line for story {i}.</a></p></article>'
        for i in range(1, 25))
    return (f"<html><head><title>News - Valley Gazette</title></head><body>{NAV}<main>"
            f"<h1>Latest news</h1>{items}</main><footer><a href='/about'>About</a></footer></body></html>")


# --- metadata, one test per source ----------------------------------------------------------

def test_meta_tags():
    head = ('<meta name="author" content="Ann Writer"><meta name="description" content="The river  rose.">'
            '<meta http-equiv="content-language" content="de-DE"><meta name="application-name" content="Gazette">'
            '<meta name="date" content="05.03.2024"><meta name="last-modified" content="2024-03-06">'
            '<link rel="canonical" href="/news/flood">')
    m = page_meta(load(article_page(head), "https://gazette.example/news/flood?utm=x"))
    assert m == PageMeta(title="Flood hits the lower town | Valley Gazette", author="Ann Writer",
                         published="2024-03-05", modified="2024-03-06", language="de-de",
                         description="The river rose.", canonical="https://gazette.example/news/flood",
                         site_name="Gazette")


def test_opengraph_wins_over_plain_meta():
    head = ('<meta property="og:title" content="Flood hits town"><meta name="description" content="plain">'
            '<meta property="og:description" content="From OG"><meta property="og:site_name" content="Valley Gazette">'
            '<meta property="og:url" content="https://gazette.example/flood">'
            '<meta property="og:locale" content="en_GB">'
            '<meta property="article:published_time" content="2024-03-05T10:00:00Z">'
            '<meta property="article:modified_time" content="2024-03-05T12:30:00+01:00">'
            '<meta property="article:author" content="https://facebook.com/ann">')
    m = page_meta(load(article_page(head)))
    assert (m.title, m.description, m.site_name, m.canonical) == (
        "Flood hits town", "From OG", "Valley Gazette", "https://gazette.example/flood")
    assert m.published == "2024-03-05T10:00:00+00:00" and m.modified == "2024-03-05T12:30:00+01:00"
    assert m.language == "en-gb"
    assert m.author == ""  # article:author is a profile URL, not a name
    for bad in ("/staff/ann-writer/", "262588213843476"):
        assert page_meta(load(article_page(f'<meta name="author" content="{bad}">'))).author == ""


def test_json_ld_graph_with_author_reference():
    ld = {"@context": "https://schema.org", "@graph": [
        {"@type": "WebSite", "@id": "#site", "name": "Valley Gazette"},
        {"@type": "Person", "@id": "#ann", "name": "Ann Writer"},
        {"@type": ["NewsArticle"], "headline": "Flood &amp; levee", "datePublished": "2024-03-05T10:00:00Z",
         "dateModified": "Tue, 05 Mar 2024 12:00:00 GMT", "inLanguage": "en",
         "author": [{"@id": "#ann"}, {"@type": "Person", "name": "Bob Reporter"}, "Ann Writer"],
         "publisher": {"@type": "Organization", "name": "Gazette Media"},
         "mainEntityOfPage": {"@id": "https://gazette.example/flood"}, "description": "Water everywhere."},
    ]}
    head = f'<script type="application/ld+json">{json.dumps(ld)}</script>'
    m = page_meta(load(article_page(head)))
    assert m.title == "Flood & levee"
    assert m.author == "Ann Writer, Bob Reporter"
    assert (m.published, m.modified) == ("2024-03-05T10:00:00+00:00", "2024-03-05T12:00:00+00:00")
    assert (m.canonical, m.site_name, m.description) == ("https://gazette.example/flood", "Gazette Media",
                                                         "Water everywhere.")


def test_json_ld_array_and_blog_posting():
    ld = [{"@type": "BreadcrumbList", "itemListElement": []},
          {"@type": "BlogPosting", "headline": "A post", "author": {"@type": "Person", "name": "Cy"},
           "datePublished": "March 5, 2024"}]
    m = page_meta(load(article_page(f'<script type="application/ld+json">{json.dumps(ld)}</script>')))
    assert (m.title, m.author, m.published) == ("A post", "Cy", "2024-03-05")


def test_microdata():
    body = ('<div itemprop="author" itemscope itemtype="https://schema.org/Person">By '
            '<span itemprop="name">Dee Micro</span></div>'
            '<span itemprop="datePublished" content="2024-03-05">5 March</span>'
            '<time itemprop="dateModified" datetime="2024-03-07T08:00">7 March</time>'
            '<h2 itemprop="headline">Micro headline</h2>')
    m = page_meta(load(article_page(body_extra=body)))
    assert (m.author, m.published, m.modified) == ("Dee Micro", "2024-03-05", "2024-03-07T08:00:00")
    assert m.title == "Micro headline"


def test_time_inside_the_one_article():
    m = page_meta(load(article_page(body_extra='<p>Posted <time datetime="2024-03-05">Tuesday</time></p>')))
    assert m.published == "2024-03-05"
    # a listing's times are its teasers', not the page's
    assert page_meta(load(listing_page())).published == ""


def test_html_lang_and_empty_page():
    assert page_meta(load('<html lang="pt_BR"><p>Olá</p></html>')).language == "pt-br"
    assert page_meta(load('<html lang="not a tag!"><p>x</p></html>')).language == ""
    assert page_meta(load(b"\x89PNG\r\n\x1a\n" + bytes(200))) == PageMeta()


@pytest.mark.parametrize(("value", "iso"), [
    ("2024-03-05T10:00:00Z", "2024-03-05T10:00:00+00:00"),
    ("2024-03-05T10:00:00.123456-05:00", "2024-03-05T10:00:00-05:00"),
    ("2024-03-05 10:00", "2024-03-05T10:00:00"),
    ("2024-03-05", "2024-03-05"),
    ("20240305", "2024-03-05"),
    ("Tue, 05 Mar 2024 10:00:00 GMT", "2024-03-05T10:00:00+00:00"),
    ("Tue, 05 Mar 2024 10:00:00 +0100", "2024-03-05T10:00:00+01:00"),
    ("March 5, 2024", "2024-03-05"),
    ("Tuesday, March 5th, 2024 at 3:04 pm EST", "2024-03-05T15:04:00-05:00"),
    ("5 March 2024", "2024-03-05"),
    ("05.03.2024", "2024-03-05"),
    ("5. März 2024 14:30", "2024-03-05T14:30:00"),
    ("le 5 mars 2024", "2024-03-05"),
    ("2024/03/05", "2024-03-05"),
    ("03/05/2024", "2024-03-05"),  # month first, as US pages write it
    ("25/03/2024", "2024-03-25"),  # ... unless it cannot be
    ("2024-02-30", ""), ("2024-03-05T10:00:00-72:00", "2024-03-05T10:00:00"), ("yesterday", ""),
    ("", ""), ("1 day ago", ""), ("9" * 10_000, ""),
])
def test_date_normalisation(value, iso):
    assert normalize_date(value) == iso


# --- classifier ------------------------------------------------------------------------------

def test_model_matches_features():
    m = model()
    assert tuple(m["classes"]) == PAGE_TYPES and len(m["mean"]) == len(FEATURES)


def test_classify_article_and_listing():
    art = load(article_page(), "https://gazette.example/2024/03/05/flood-hits-the-lower-town")
    kind, p = classify(art, "\n\n".join(PROSE))
    assert kind == "article" and p > 0.5
    lst = load(listing_page(), "https://gazette.example/news/")
    text = "\n\n".join(f"Story headline number {i} of the day\n\nA short teaser line for story {i}."
                       for i in range(1, 25))
    kind, p = classify(lst, text)
    assert kind == "listing" and p < 0.5
    assert classify(load(b"%PDF-1.4 binary"), "") == ("other", 0.0)


def _feature(page: str, name: str, url: str = "https://shop.example/item/1") -> float:
    from blockcrawl.extraction.metadata import meta_from_scan, scan
    from blockcrawl.extraction.nfas import features

    dom = load(page, url)
    s = scan(dom)
    return features(dom, "", s, meta_from_scan(dom, s))[FEATURES.index(name)]


def test_feature_p_share():
    # prose in <p>: the article's text is nearly all in paragraphs, a table page's none of it
    assert _feature(article_page(), "p_share") > 0.8
    table = "<table>" + "".join(f"<tr><td>{p}</td></tr>" for p in PROSE) + "</table>"
    assert _feature(f"<html><body><h1>Flood</h1>{table}</body></html>", "p_share") == 0.0


def test_feature_cell_share():
    cells = "".join(f"<tr><td>Row {i} value</td><td>{i * 7}</td></tr>" for i in range(20))
    page = f"<html><body><h1>Rates</h1><p>{PROSE[0]}</p><table>{cells}</table></body></html>"
    share = _feature(page, "cell_share")
    assert 0.4 < share < 0.9  # the table's text, not the paragraph's
    # a <p> inside a cell is prose: counted as p_share, not as a cell
    nested = f"<html><body><table><tr><td><p>{PROSE[0]}</p></td></tr></table></body></html>"
    assert _feature(nested, "cell_share") == 0.0 and _feature(nested, "p_share") > 0.9


def test_feature_price_and_cart_marks():
    shop = ('<html><body><h1>Blue kettle</h1><span class="product-price">$30</span>'
            '<span class="PriceOld">$40</span><span id="price">$40</span><button class="btn add-to-cart">Add</button>'
            '<div class="mini-Basket"></div></body></html>')
    assert _feature(shop, "price_marks") == pytest.approx(math.log1p(2))
    assert _feature(shop, "cart_marks") == pytest.approx(math.log1p(2))
    assert _feature(article_page(), "price_marks") == 0.0 and _feature(article_page(), "cart_marks") == 0.0


def _shape(page: str) -> dict[str, float]:
    from blockcrawl.extraction.nfas import SHAPE_FEATURES, shape_features

    return dict(zip(SHAPE_FEATURES, shape_features(load(page, "https://gazette.example/news/"))))


def test_shape_listing_group_of_teasers():
    # 24 <article class=teaser> under <main>: the group holding the most text, each item a link
    # and a heading, no image
    f = _shape(listing_page())
    assert f["g_items"] == pytest.approx(math.log1p(24))
    assert f["g_tag_article"] == 1.0 and f["g_tag_li"] == 0.0
    assert f["g_with_link"] == 1.0 and f["g_with_head"] == 1.0 and f["g_with_img"] == 0.0
    assert f["g_links"] == pytest.approx(2.0) and f["g_link_share"] > 0.6
    assert f["g_share"] > 0.7 and f["has_main"] == 1.0 and f["main_share"] > 0.8
    assert f["dates"] == 0.0  # "March 5" has no year: no date


def test_shape_article_group_is_its_paragraphs():
    # the article's repeated structure is its five <p>s: no links, no images, no headings inside
    f = _shape(article_page())
    assert f["g_items"] == pytest.approx(math.log1p(len(PROSE)))
    assert f["g_with_link"] == 0.0 and f["g_link_share"] == 0.0 and f["g_heads"] == 0.0
    assert f["g_share"] > 0.8 and f["has_main"] == 0.0 and f["main_share"] == 0.0


def test_shape_groups_need_one_tag_class_and_parent():
    # two cards of one class and one of another, and three rows spread over two tables: no
    # group of GROUP_MIN (3) same-shape siblings
    page = ('<html><body><div><div class="card">Red kettle</div><div class="card">Blue kettle</div>'
            '<div class="card wide">Green kettle</div></div><table><tr><td>a</td></tr><tr><td>b</td></tr>'
            '</table><table><tr><td>c</td></tr></table></body></html>')
    f = _shape(page)
    assert f["g_items"] == 0.0 and f["g_groups"] == 0.0 and f["g_max"] == 0.0
    f = _shape(page.replace("card wide", "card"))
    assert f["g_items"] == pytest.approx(math.log1p(3)) and f["g_tag_div"] == 1.0
    assert f["g_groups"] == pytest.approx(math.log1p(1))


def test_shape_shop_grid_prices_and_images():
    cards = "".join(f'<li class="product"><a href="/p/{i}"><img src="/{i}.jpg">Kettle model {i}</a>'
                    f'<span class="price">${10 + i}.99</span></li>' for i in range(12))
    page = (f'<html><body><div role="main"><h1>Kettles</h1><ul>{cards}</ul></div>'
            '<p>Prices from 9,99 EUR or 9.99 € on 2024-03-05 and 5 March 2024.</p></body></html>')
    f = _shape(page)
    assert f["g_tag_li"] == 1.0 and f["g_with_img"] == 1.0 and f["g_imgs"] == 1.0
    assert f["prices"] == pytest.approx(math.log1p(14)) and f["price_density"] > 0
    assert f["dates"] == pytest.approx(math.log1p(2))
    assert f["has_main"] == 1.0 and 0.5 < f["main_share"] < 1.0  # role=main; the <p> after it is outside
    assert _shape(article_page())["prices"] == 0.0


def test_shape_features_are_linear_in_siblings():
    """4x the items of one list costs < 8x the CPU (linear 4x, quadratic 16x)."""
    from blockcrawl.extraction.nfas import shape_features

    def dom(n: int) -> Dom:
        return parse_html("<html><body><ul>" + "".join(f'<li class="x"><a href="/{i}">item {i}</a></li>'
                                                       for i in range(n)) + "</ul></body></html>")
    assert growth(shape_features, dom(5_000), dom(20_000)) < 8


# --- summary ---------------------------------------------------------------------------------

def test_summary_picks_sentences_of_the_text():
    text = "Flood hits the lower town\n\n" + "\n\n".join(PROSE)
    s = summarize(text, 2)
    picked = sentences(s)
    assert len(picked) == 2 and all(p in text for p in picked)
    assert "levee" in s.lower()  # the chain the text repeats most
    assert summarize("Too short.") == "" and summarize("") == ""
    assert summarize(text, 10) == " ".join(sentences(text))


def test_summary_is_bounded():
    """Only the first MAX_CHARS characters are read: 4x a text already over it costs the same CPU
    (a linear summarizer 4x; tests/support/scaling.py)."""
    def text(n: int) -> str:
        return " ".join(f"Sentence number {i} talks about levees and floods and towns." for i in range(n))
    small, large = text(25_000), text(100_000)
    assert len(small) > 10 * MAX_CHARS
    ratio = growth(summarize, small, large, repeat=3)
    assert ratio < 2, ratio
    s = summarize(large)
    assert 0 < len(s) <= 1200


# --- page_info, the pipeline, extract() -------------------------------------------------------

def test_page_info_article():
    head = '<meta property="og:type" content="article"><meta name="author" content="Ann Writer">'
    dom = load(article_page(head), "https://gazette.example/2024/03/05/flood-hits-the-lower-town")
    info = page_info(dom, "\n\n".join(PROSE), cluster=3)
    assert isinstance(info, PageInfo) and info.kind == "article" and info.cluster == 3
    assert info.meta.author == "Ann Writer" and info.summary
    assert all(sent in PROSE for sent in sentences(info.summary))
    assert json.loads(json.dumps(info.to_dict()))["meta"]["author"] == "Ann Writer"


def test_page_info_listing_has_no_summary():
    info = page_info(load(listing_page(), "https://gazette.example/news/"), "Story headline number 1 of the day")
    assert info.kind != "article" and info.summary == ""


def test_pipeline_main_mode_and_extract_set_info():
    html = article_page('<meta name="author" content="Ann Writer">')
    url = "https://gazette.example/2024/03/05/flood-hits-the-lower-town"
    res = SitePipeline(mode="main", tokenizer=WordTokenizer()).process(html, url)
    assert res.info is not None and res.info.kind == "article" and res.info.text == res.text
    assert res.info.meta.author == "Ann Writer" and res.info.cluster == -1
    assert SitePipeline(mode="blocks", tokenizer=WordTokenizer()).process(html, url).info is None
    doc = blockcrawl.extract(html, url)
    assert doc.info is not None and doc.info.text == doc.text and doc.info.kind == "article"
    bare = blockcrawl.extract(html, url, info=False)
    assert bare.info is None and bare.text == doc.text and bare.blocks == doc.blocks


# --- bounds ----------------------------------------------------------------------------------

def test_deep_nesting_is_linear():
    """100,000 nested <div>s: 4x the depth costs < 8x the CPU (linear 4x, quadratic 16x)."""
    def dom(n: int) -> Dom:
        return parse_html('<html><head><meta name="author" content="Deep"></head><body>' + "<div>" * n
                          + '<span itemprop="datePublished" content="2024-03-05">x</span>' + "</div>" * n
                          + "</body></html>")
    large = dom(100_000)
    ratio = growth(lambda d: page_info(d, "x"), dom(25_000), large)
    assert ratio < 8, ratio
    info = page_info(large, "x")
    assert info.meta.author == "Deep" and info.meta.published == "2024-03-05"


def test_deeply_nested_json_ld_is_skipped():
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    head = (f'<script type="application/ld+json">{deep}</script>'
            '<script type="application/ld+json">{"@type": "Article", "headline": "Still read"}</script>')
    assert page_meta(load(article_page(head))).title == "Still read"


def test_huge_json_ld_is_bounded(monkeypatch):
    big = json.dumps({"@type": "NewsArticle", "headline": "Huge", "articleBody": "word " * 1_100_000})
    assert len(big) > 5_000_000 > MAX_BYTES
    head = (f'<script type="application/ld+json">{big}</script>'
            '<script type="application/ld+json">{"@type": "Article", "headline": "Small"}</script>')
    dom = load(article_page(head))
    parsed: list[int] = []  # characters handed to json.loads: the work, counted

    class CountingJson:
        @staticmethod
        def loads(raw: str) -> object:
            parsed.append(len(raw))
            return json.loads(raw)
    monkeypatch.setattr(jsonld, "json", CountingJson)
    m = page_meta(dom)
    assert m.title == "Small"  # the 5 MB script is over the budget and skipped whole
    assert parsed and sum(parsed) <= MAX_BYTES, parsed  # ... never parsed


def test_only_articles_keeps_listing_teasers_out_of_the_site_dedup():
    """crawl --only-articles: a front page that runs the top story in full must not make the
    story's text "already seen" when its article page comes (the listing stores nothing)."""
    story = "<h2>Flood hits the lower town</h2>" + "".join(f"<p>{p}</p>" for p in PROSE)
    listing = listing_page().replace("<h1>Latest news</h1>", f"<h1>Latest news</h1><section>{story}</section>")
    art_url = "https://gazette.example/2024/03/05/flood-hits-the-lower-town"
    results = {}
    for only in (False, True):
        pipe = SitePipeline(mode="main", tokenizer=WordTokenizer(), only_articles=only)
        lst = pipe.process(listing, "https://gazette.example/news/")
        assert lst.info is not None and lst.info.kind == "listing"
        results[only] = (lst, pipe.process(article_page(), art_url))
    lst, art = results[False]
    # without the option the front page ate the story, until the site dedup judged by place
    # (chunk.dedup): the story on the front page is not the article page's template
    assert lst.blocks and art.duplicates == 0 and PROSE[0][:40] in " ".join(b.text for b in art.blocks)
    lst, art = results[True]
    assert not lst.blocks and not lst.chunks and art.duplicates == 0
    assert PROSE[0][:40] in " ".join(b.text for b in art.blocks)


# Scores are float sums whose order followed a set's hash order: this text's summary took another
# second sentence under PYTHONHASHSEED=3 than under 1, 2, 4, 5 and 6 (found among 400 random texts).
SEED_TEXT = ("Policy solar river policy rain city. Market market energy city grid policy price wind. Rain rain "
             "power panel. Battery panel rain storage policy solar. Panel coal cost battery. Market power river "
             "water. Storage coal cost wind. City coal storage price rain grid water city wind. Cost price panel "
             "solar storage city. Coal power storage policy energy rain panel policy solar.")


def test_summary_is_the_same_in_every_process():
    import os
    import subprocess
    import sys

    code = ("import sys; from blockcrawl.extraction.summary import summarize; "
            "sys.stdout.write(summarize(sys.stdin.read(), 3))")
    outs = set()
    for seed in range(1, 7):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        outs.add(subprocess.run([sys.executable, "-c", code], input=SEED_TEXT, capture_output=True, text=True,
                                env=env, check=True).stdout)
    assert len(outs) == 1, outs

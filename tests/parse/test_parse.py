"""Loading: charsets, broken input, deep nesting."""
import codecs

import pytest

from blockcrawl import decode_html, extract_blocks, extract_text, parse_html
from blockcrawl.parse import looks_binary
from blockcrawl.parse.dom import TEXT
from blockcrawl.parse.linear import DEEP_LIMIT

from ..support.scaling import growth

SEED002 = """<!DOCTYPE html>
<html>
    <body>
        <script type='text/javascript'>alert('test')</script>
        <h1>Header</h1>
        Some text
        <div>
            Just text
            <div>
                Inner text
                <a href='#'>Link text</a>
            </div>
            <p>Paragraph.</p>
        </div>
    </body>
</html>
"""


def test_seed002_text_extraction_is_exact():
    assert extract_text(SEED002) == "Header Some text Just text Inner text Link text Paragraph."


def test_style_noscript_template_skipped():
    html = ("<body><style>p{color:red}</style><noscript>enable js</noscript>"
            "<template><p>tpl</p></template><p>kept</p></body>")
    assert extract_text(html) == "kept"


def test_a_self_closed_iframe_in_noscript_does_not_swallow_the_page():
    """A tag manager's <noscript><iframe .../></noscript>: a browser reads <noscript> as raw text;
    read as markup, "/>" does not close an iframe and its raw text ran to the end of the page."""
    html = ('<body><noscript><iframe src="https://gtm.example/ns.html" height="0" width="0" /></noscript>'
            "<p>kept</p></body>")
    assert extract_text(html) == "kept"


def _nested(n: int) -> str:
    return "<body>" + "".join(f"<div>lol{i}" for i in range(n)) + "<div>test</div>" + "</div>" * n + "</body>"


def test_100000_nested_divs_extract_test():
    text = extract_text(_nested(100_000))
    assert text.endswith("lol99999 test")
    dom = parse_html(_nested(100_000))
    assert max(dom.depth) > 100_000  # every level kept, none silently dropped
    blocks = extract_blocks(_nested(100_000))
    assert blocks[-1].text == "test"


def test_deep_fallback_and_lexbor_agree_on_text():
    # just below and just above the fallback threshold give the same text
    for n in (DEEP_LIMIT - 10, DEEP_LIMIT + 10):
        text = extract_text(_nested(n))
        assert text.startswith("lol0 lol1 ") and text.endswith(f"lol{n - 1} test")


def test_broken_markup_and_nul_bytes():
    html = b"<html><body><div><p>one<b>two</i></p></div></span><p>th\x00ree<div><td>four</body></body>"
    text = extract_text(html)
    for word in ("one", "two", "three", "four"):
        assert word in text
    assert "\x00" not in text


def test_charset_from_header_meta_bom_and_detection():
    russian = "Привет, мир! Это тестовая страница на русском языке."
    body = f"<html><head><meta charset='windows-1251'></head><body><p>{russian}</p></body></html>"
    raw = body.encode("cp1251")
    d = decode_html(raw)  # no header: the <meta> decides
    assert d.source == "meta" and russian in d.text
    assert russian in decode_html(raw, "text/html; charset=windows-1251").text
    # a header that lies (utf-8) does not win over bytes that are not utf-8
    assert russian in decode_html(raw, "text/html; charset=utf-8").text
    assert decode_html(codecs.BOM_UTF8 + "é".encode()).text == "é"
    assert decode_html("日本語".encode("utf-16-le").join([codecs.BOM_UTF16_LE, b""])).text == "日本語"
    sjis = ("<p>" + "日本語のテキストです。" * 20 + "</p>").encode("shift_jis")
    assert "日本語のテキスト" in decode_html(sjis).text  # undeclared: detected


def test_misdeclared_charset_gives_text():
    raw = "<meta charset='iso-1252'><p>café crème</p>".encode("cp1252")
    assert "café crème" in extract_text(raw)
    raw = "<meta charset='no-such-charset'><p>naïve</p>".encode()
    assert "naïve" in extract_text(raw)


def test_binary_bodies_recognised():
    assert looks_binary(b"%PDF-1.7 ...")
    assert looks_binary(bytes(range(256)) * 4)
    assert not looks_binary("<html><body>héllo</body></html>".encode())


def test_dom_arrays_are_consistent():
    dom = parse_html(SEED002)
    for i in range(len(dom)):
        assert i < dom.end[i] <= len(dom)
        p = dom.parent[i]
        if p >= 0:
            assert p < i < dom.end[i] <= dom.end[p]
            assert dom.depth[i] == dom.depth[p] + 1
    assert dom.tag.count(TEXT) > 0
    assert dom.path(dom.find("p")) == "html/body/div/p"



def test_skipped_is_every_node_inside_a_skipped_element():
    # skipped is set at the build's end by slices over the skipped elements' subtrees: the same as
    # "a SKIP_TAGS element, or a node whose parent is skipped", for both builders, with skipped
    # elements nested, side by side, and as the last nodes of the page
    from blockcrawl.parse.dom import SKIP_TAGS
    from blockcrawl.parse.linear import parse_linear

    html = ("<html><head><title>t</title><style>a{}</style></head><body><p>a<svg><g><text>s</text>"
            "<math>m</math></g></svg>b</p><select><option>o</select><div><template><p>x</p></template>"
            "<i>c</i></div><canvas>k</canvas><noscript><p>n<script>q</script></p></noscript><p>end"
            "<script>z</script>")
    for dom in (parse_html(html), parse_linear(html, None)):
        for i in range(len(dom)):
            p = dom.parent[i]
            inside = (dom.tag[i] != TEXT and dom.tag[i] in SKIP_TAGS) or (p >= 0 and dom.skipped[p])
            assert dom.skipped[i] == inside, (i, dom.tag[i])
        assert any(dom.skipped) and not all(dom.skipped)


# ---------------------------------------------------------------------------- binary bodies
def _random_bytes(n: int, seed: int = 7) -> bytes:
    import random

    return random.Random(seed).randbytes(n)


def test_binary_bodies_give_an_empty_document_with_a_reason():
    import gzip
    import zlib

    from blockcrawl import SitePipeline, extract
    from blockcrawl.parse import load, sniff_binary

    page = ("<html><body><p>" + "Some words of a real page. " * 200 + "</p></body></html>").encode()
    bodies = {
        "gzip": gzip.compress(page), "zlib": zlib.compress(page), "pdf": b"%PDF-1.7\n" + _random_bytes(3000),
        "png": b"\x89PNG\r\n\x1a\n" + _random_bytes(3000), "binary": _random_bytes(20_000),
    }
    for kind, body in bodies.items():
        assert sniff_binary(body) == kind, kind
        dom = load(body, "https://example.org/x", "text/html; charset=utf-8")
        assert dom.binary == kind and len(dom) == 0
        assert extract_text(body) == "" and extract_blocks(body) == []
        if kind == "gzip":  # extract() and SitePipeline inflate it first, as the crawl worker does (one path)
            assert extract(body).text.startswith("Some words") and SitePipeline(mode="main").process(body).chunks
            continue
        assert extract(body).text == ""
        assert SitePipeline(mode="main").process(body).chunks == []
    # random bytes used to be 52 chunks
    assert SitePipeline(mode="blocks").process(bodies["binary"]).chunks == []


def test_text_bodies_are_not_binary():
    from blockcrawl.parse import sniff_binary

    assert sniff_binary("<html><body>héllo</body></html>".encode()) is None
    assert sniff_binary(b"Plain text, no markup: x^2 + y^2.\n") is None  # "x^" is a zlib header
    assert sniff_binary(codecs.BOM_UTF16_LE + "<p>日本語</p>".encode("utf-16-le")) is None
    assert sniff_binary(codecs.BOM_UTF16_BE + "<p>text</p>".encode("utf-16-be")) is None
    # UTF-16 without BOM: NULs only, in one byte column
    body = "<html><body><p>Grüße aus Köln</p></body></html>".encode("utf-16-le")
    assert sniff_binary(body) is None and "Grüße aus Köln" in extract_text(body)
    # a page that starts with markup keeps its text around a stray NUL (dropped)
    assert sniff_binary(b"<meta charset=utf-8><p>a\x00b\x01c</p>") is None
    # a control byte in a body that does not start with markup: binary, per WHATWG
    assert sniff_binary(b"hello \x01 world") == "binary"
    assert extract_text("\x00\x01\x02\x03 binary as str \x04\x05") == ""


# ---------------------------------------------------------------------------- charset labels
def test_only_whatwg_charset_labels_are_honoured():
    from blockcrawl.parse import normalize_charset

    for label in ("utf-7", "cp500", "unicode_escape", "rot13", "hex", "utf-32", "punycode", "idna"):
        assert normalize_charset(label) is None, label
    assert normalize_charset("latin1") == "cp1252" and normalize_charset(" ISO-8859-1 ") == "cp1252"
    assert normalize_charset("shift_jis") == "cp932" and normalize_charset("x-mac-cyrillic") == "mac-cyrillic"
    assert normalize_charset("utf-16") == "utf-16-le" and normalize_charset("euc-kr") == "cp949"
    assert normalize_charset("iso-2022-kr") == "replacement"

    text = "<html><body><p>plain +AGEAYgBj- words</p></body></html>"
    raw = text.encode("ascii")
    for where in ("header", "meta", "http-equiv"):
        for label in ("utf-7", "cp500", "unicode_escape"):
            if where == "header":
                d = decode_html(raw, f"text/html; charset={label}")
            elif where == "meta":
                d = decode_html(f"<meta charset='{label}'>".encode() + raw)
            else:
                d = decode_html(f'<meta http-equiv="Content-Type" content="text/html; charset={label}">'.encode() + raw)
            assert d.encoding == "utf-8" and "plain +AGEAYgBj- words" in d.text, (where, label)
    # unknown label ignored: detection proceeds
    raw = "<meta charset='utf-7'><p>Привет, мир! Это тестовая страница на русском языке.</p>".encode("cp1251")
    assert "Привет, мир!" in decode_html(raw).text


def test_replacement_encodings_decode_to_one_replacement_character():
    from blockcrawl.parse import load

    raw = "<p>안녕하세요</p>".encode("iso2022_kr")
    d = decode_html(raw, "text/html; charset=iso-2022-kr")
    assert d.text == "\ufffd" and d.encoding == "replacement"
    dom = load(b"<meta charset=hz-gb-2312>" + raw)
    assert len(dom) == 0 and dom.binary == "replacement-encoding"


# ---------------------------------------------------------------------------- deep nesting
DEEP_SHAPES = {
    "ul-li": lambda n: "<body>" + "<ul><li>x" * n + "</li></ul>" * n,
    "Div": lambda n: "<body>" + "<Div>x" * n + "</Div>" * n,
    "span": lambda n: "<body>" + "<span>x" * n + "</span>" * n,
    "table": lambda n: "<body>" + "<table><tr><td>x" * n,
}


@pytest.mark.slow
def test_deep_nesting_of_any_tag_is_linear():
    # before: 32k nested <ul><li> took 8.8 s, 50k over 20 s (quadratic); mixed-case <Div> 1.9 s.
    # 4x the depth must cost < 8x the CPU (linear 4x, quadratic 16x; tests/support/scaling.py)
    from blockcrawl import extract

    for name, shape in DEEP_SHAPES.items():
        ratio = growth(extract, shape(12_500), shape(50_000))  # decode + parse + main content + blocks
        assert ratio < 8, (name, ratio)
    assert extract_text(DEEP_SHAPES["ul-li"](3000)) == " ".join(["x"] * 3000)
    assert [b.text for b in extract_blocks(DEEP_SHAPES["Div"](3000))] == ["x"] * 3000


def test_unclosed_paragraphs_are_not_deep_nesting():
    from blockcrawl.parse.linear import max_depth_exceeds

    assert not max_depth_exceeds("<body>" + "<p>x" * 5000 + "<ul>" + "<li>y" * 5000, DEEP_LIMIT)
    assert max_depth_exceeds("<body>" + "<SPAN>x" * 5000, DEEP_LIMIT)


def test_depth_check_counts_stop_only_when_the_limit_is_out_of_reach():
    from blockcrawl.parse.linear import max_depth_exceeds

    # too few start tags for the limit ("</" and void tags are no start; a comment's "<" is
    # counted as one, an over-count): no walk
    assert not max_depth_exceeds("<div>" * (DEEP_LIMIT - 1) + "</div>" * 5000, DEEP_LIMIT)
    # many siblings first, the deep part last: the walk must not stop while the start tags left
    # could still reach the limit
    assert max_depth_exceeds("<p>x" * 3000 + "<div>" * (DEEP_LIMIT + 1), DEEP_LIMIT)
    assert not max_depth_exceeds("<p>x" * 3000 + "<div>" * (DEEP_LIMIT - 1), DEEP_LIMIT)
    assert max_depth_exceeds("<br>" * 3000 + "<!--c-->" * 50 + "<b>" * (DEEP_LIMIT + 1), DEEP_LIMIT)
    assert not max_depth_exceeds("<br>" * 3000 + "<b>" * DEEP_LIMIT, DEEP_LIMIT)


def test_depth_check_reads_tags_as_the_lazy_pattern_did():
    # the depth check's tag pattern reads each character once (possessive runs); it must find the
    # same tags, names and self-closing marks as the lazy `[^<>]*?(/?)>` it replaced
    import re

    from blockcrawl.parse.linear import _TAG_RE

    lazy = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^<>]*?(/?)>")
    cases = ["<br/>", "<a//>", "<x/ >", "<p class='a/b'>t</p>", "<img src=x/>", "<a href=/>",
             "<div a='1' / >", "</p/>", "<b>x<i>y</b>", "<a <b>", "<a", "<9>", "< a>", "<A1B2/>",
             "<p>a > b</p>", "<img//src=x//>", "<svg/><path d='M0/0'/></svg>", "<a/ b/>"]
    for html in cases + ["".join(cases)]:
        got = [(e, t, bool(c)) for e, t, c in _TAG_RE.findall(html)]
        assert got == [(e, t, bool(c)) for e, t, c in lazy.findall(html)], html


def test_long_tag_scan_finds_what_the_character_class_found():
    # cap_attributes' long-tag pattern reads "no '>' then no '<'" with one-character runs: the same
    # matches as the two-character class it replaced
    import re

    from blockcrawl.parse.build import _LONG_TAG_RE, MAX_ELEMENT_ATTRS

    k = 2 * MAX_ELEMENT_ATTRS - 1
    before = re.compile(f"<[A-Za-z][^<>]{{{k}}}")
    cases = ["<a " + "x=1 " * k + ">", "<a " + "x " * 1000 + "<b>" + "y " * k, "<a" + "b" * k + ">" + "<" * 3,
             "<p>" + "t" * 2 * k + "<a" + "c" * (k - 1) + ">", "<" + "z" * k, "</a" + "d" * 2 * k, "<a" + "e" * k]
    for html in cases + ["".join(cases)]:
        assert [m.span() for m in _LONG_TAG_RE.finditer(html)] == [m.span() for m in before.finditer(html)]


def test_depth_check_is_linear_on_unterminated_tags():
    from blockcrawl.parse.linear import max_depth_exceeds

    # one long unterminated tag name or body, then many tags: each character read once. The
    # tags are as many in both: the walk stops once the start tags left cannot reach the limit
    # (after ~500 of 2,500 here), so more tags would not be more work in proportion
    small = "<" + "a" * 20_000 + "<p>x" * 2500
    big = "<" + "a" * 80_000 + "<p>x" * 2500
    assert growth(lambda h: max_depth_exceeds(h, DEEP_LIMIT), small, big) < 8


def test_linear_builder_reads_attributes_comments_and_raw_text():
    html = ("<body>" + "<div class='c' id=\"d&amp;\">" * (DEEP_LIMIT + 5)
            + "<!-- <p>hidden</p> --><script>if (a < b) { x = '</div>' }</script>"
            + "<p title='t'>caf&eacute; <b>Hel</b>lo</p><style>p{}</style><textarea>a &lt; b</textarea>"
            + "</div>" * (DEEP_LIMIT + 5))
    dom = parse_html(html)
    assert max(dom.depth) > DEEP_LIMIT
    assert dom.get_attr(dom.find("div"), "id") == "d&" and dom.get_attr(dom.find("p"), "title") == "t"
    assert extract_text(html) == "café Hello"
    assert next(dom.text[i] for i in range(len(dom)) if dom.tag[i] == TEXT and dom.skipped[i]).startswith("if (a < b)")


# ---------------------------------------------------------------------------- word boundaries
def test_block_elements_separate_words_inline_ones_do_not():
    html = "<body><div><p>Hello world</p><a>Link</a> <b>Hel</b>lo<br>next<span>x</span><img>y</div></body>"
    assert extract_text(html) == "Hello world Link Hello nextx y"
    (block,) = extract_blocks(html)
    assert block.text.split() == ["Hello", "world", "Link", "Hello", "nextx", "y"]
    assert extract_blocks("<p>Hello world</p><a>Link</a>")[0].text == "Hello world\nLink"
    assert extract_blocks("<h2><b>Ti</b>tle</h2><p><i>a</i>b</p>")[0].text == "Title: ab"
    table = "<table><tr><td>one</td><td>two</td></tr><tr><th>three</th></tr></table>"
    # (a data table now: its cells are joined by " | ", test_tables.py)
    assert extract_text(table) == "one two three"
    assert [w for w in extract_blocks(table)[0].text.split() if w != "|"] == ["one", "two", "three"]


def _show_noscript_node_by_node(d):  # the definition show_noscript's slices and C loops must match
    from blockcrawl.parse.build import NOSCRIPT_MIN, NOSCRIPT_SHARE
    from blockcrawl.parse.dom import SKIP_TAGS

    tags, texts, parent, skipped = d.tag, d.text, d.parent, list(d.skipped)
    inside = [False] * len(tags)
    shown = hidden = 0
    for i in range(len(tags)):
        p = parent[i]
        if tags[i] == "noscript":
            inside[i] = p >= 0 and not skipped[p]
        elif p >= 0:
            inside[i] = inside[p]
        if tags[i] == TEXT:
            k = len(texts[i].strip())
            if inside[i]:
                hidden += k
            elif not skipped[i]:
                shown += k
    if hidden < NOSCRIPT_MIN or shown >= NOSCRIPT_SHARE * hidden:
        return skipped
    for i in range(len(tags)):
        if inside[i]:
            t = tags[i]
            skipped[i] = False if t == "noscript" else ((t in SKIP_TAGS and t != TEXT) or skipped[parent[i]])
    return skipped


def test_show_noscript_matches_its_node_by_node_definition():
    # (the lexbor Dom has been through show_noscript once already: a second pass must agree too)
    from blockcrawl.parse.build import show_noscript
    from blockcrawl.parse.linear import parse_linear

    long = "Words of the page that only shows without JavaScript. " * 8
    pages = [
        f"<body><noscript><p>{long}</p><noscript><p>inner {long}</p></noscript><script>x</script></noscript></body>",
        f"<body><p>short</p><noscript><div><p>{long}</p></div></noscript><noscript>{long}</noscript></body>",
        f"<html><head><noscript>{long}</noscript></head><body><noscript><p>{long}</p></noscript></body></html>",
        f"<body><p>{long}</p><noscript><p>{long}</p></noscript></body>",
        "<body>" + "<noscript>" * 50 + long + "</noscript>" * 50 + "</body>",
        f"<body><noscript>hi</noscript><svg><noscript>{long}</noscript></svg></body>",
    ]
    for html in pages:
        for d in (parse_html(html), parse_linear(html, None)):
            want = _show_noscript_node_by_node(d)
            assert show_noscript(d).skipped == want, html


def test_a_huge_title_is_stored_cut_to_max_title(tmp_path):
    """A 2,000,000-character <title> was stored (and printed) whole."""
    from blockcrawl.parse.dom import MAX_TITLE
    from blockcrawl.pipeline import SitePipeline
    from blockcrawl.store import Store

    html = "<html><head><title>" + "Long title words " * 120_000 + "</title></head><body><p>Body text here.</p></body></html>"
    res = SitePipeline(tokenizer="words").process(html, "http://t.test/")
    assert 0 < len(res.title) <= MAX_TITLE == 1000 and res.title.startswith("Long title words")
    with Store(tmp_path / "t.db") as st:
        st.save_page("http://t.test/", res.blocks, res.chunks, title=res.title)
        (stored,) = st.db.execute("SELECT title FROM pages").fetchone()
    assert len(stored) <= MAX_TITLE
    assert SitePipeline(tokenizer="words").process("<title> Short  one </title><p>x</p>", "u").title == "Short one"

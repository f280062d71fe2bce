"""Loading: charsets, broken input, deep nesting."""
import codecs

from blockcrawl import decode_html, extract_blocks, extract_text, parse_html
from blockcrawl.parse import looks_binary
from blockcrawl.parse.dom import DEEP_LIMIT, TEXT

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
    raw = "<meta charset='no-such-charset'><p>naïve</p>".encode("utf-8")
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

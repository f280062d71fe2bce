"""Page types (extraction.nfas: WCXB's seven) and the main-content rule each type is selected by
(extraction.params: type_rules), on small hand-made pages, one per rule."""
from dataclasses import replace

import pytest

from blockcrawl.extraction import auto, nfas
from blockcrawl.extraction.api import main_content
from blockcrawl.extraction.article import article
from blockcrawl.extraction.features import compute
from blockcrawl.extraction.params import DEFAULTS
from blockcrawl.parse import load
from blockcrawl.records import PAGE_KINDS, PAGE_TYPES

NAV = '<nav><ul>' + "".join(f'<li><a href="/s{i}">Section {i}</a></li>' for i in range(10)) + "</ul></nav>"
FOOTER = "<footer><p>Copyright 2024 Example Ltd, all rights reserved.</p><a href='/privacy'>Privacy</a></footer>"
MENU = ('<div class="menu"><a href="/a">Products</a> <a href="/b">Pricing</a> <a href="/c">Support</a> '
        '<a href="/d">Company</a></div>')


ARTICLE_ONLY = replace(DEFAULTS, type_rules=None)  # every page selected as an article

def listing_page() -> str:
    items = "".join(
        f'<div class="card"><h3><a href="/recipes/{i}">Slow-cooked bean stew number {i}</a></h3>'
        f'<a href="/recipes/{i}">Ready in {20 + i} minutes, serves four</a></div>' for i in range(1, 21))
    return (f"<html><head><title>Dinner recipes</title></head><body>{NAV}<main><h1>Dinner recipes</h1>"
            f'<p>Quick dinners for every night of the week, tested in our kitchen.</p>'
            f'<div class="grid">{items}</div></main>{FOOTER}</body></html>')


def docs_page() -> str:
    params = "".join(f"<dt><code>opt{i}</code></dt><dd>Sets option {i}.</dd>" for i in range(6))
    rows = "".join(f"<tr><td>flag{i}</td><td>bool</td><td>off</td></tr>" for i in range(5))
    return (f"<html><head><title>open() - Example API</title></head><body>{NAV}"
            '<aside class="toc"><a href="#a">Parameters</a> <a href="#b">Flags</a></aside>'
            "<main><h1>open()</h1><p>Opens a stream and returns a handle that reads the file in blocks, "
            "buffering as configured by the options below, which every caller should read first.</p>"
            f"<h2>Parameters</h2><dl>{params}</dl><h2>Flags</h2>"
            f"<table><tr><th>name</th><th>type</th><th>default</th></tr>{rows}</table>"
            '<div class="note">Note: the handle must be closed.</div>'
            "<pre>h = open('data.bin')\nh.close()</pre></main>"
            f"{FOOTER}</body></html>")


def service_page() -> str:
    sections = "".join(
        f"<section><h2>Service area {i}</h2><p>We plan, install and maintain systems of kind {i} for "
        f"homes and offices across the county, with one engineer from start to finish.</p>"
        f'<ul class="links"><li><a href="/s{i}/a">Installation of kind {i}</a></li>'
        f'<li><a href="/s{i}/b">Repairs of kind {i}</a></li><li><a href="/s{i}/c">Maintenance plans {i}</a></li>'
        f"</ul></section>" for i in range(1, 6))
    return (f"<html><head><title>Our services</title></head><body>{MENU}"
            f'<div class="wrap"><h1>Our services</h1>{sections}</div>{FOOTER}</body></html>')


def _typed(html: str, rule: str) -> str:
    dom = load(html)
    keep = auto.typed_rule(dom, compute(dom), rule, keep_title=False)
    assert keep is not None
    return main_content(dom, keep=keep)[1]


def _article(html: str) -> str:
    return main_content(load(html), "auto", params=ARTICLE_ONLY)[1]


def test_seven_types_and_the_model():
    assert PAGE_TYPES == ("article", "documentation", "service", "forum", "collection", "listing", "product")
    assert set(PAGE_TYPES) < set(PAGE_KINDS) and "other" in PAGE_KINDS
    assert tuple(nfas.model()["classes"]) == PAGE_TYPES
    assert set(DEFAULTS.type_rules or {}) <= set(PAGE_TYPES) and "article" not in (DEFAULTS.type_rules or {})


def test_listing_rule_keeps_items_and_teasers():
    html = listing_page()
    text = _typed(html, "region")
    for i in (1, 10, 20):
        assert f"Slow-cooked bean stew number {i}" in text and f"Ready in {20 + i} minutes" in text
    assert "Section 3" not in text and "Copyright" not in text
    # the article rule drops the link-dense teasers: the reason for the rule
    assert "Slow-cooked bean stew number 10" not in _article(html)


def test_documentation_rule_keeps_the_whole_body():
    text = _typed(docs_page(), "region")
    for want in ("opt5", "Sets option 5.", "flag4", "Note: the handle must be closed.", "h.close()",
                 "Opens a stream"):
        assert want in text
    assert "Section 3" not in text and "Copyright" not in text


def test_page_rule_keeps_entries_outside_main():
    html = listing_page().replace("<main>", "<div>").replace("</main>", "</div>")
    text = _typed(html, "page")
    assert "Slow-cooked bean stew number 20" in text and "Section 3" not in text


def test_service_rule_keeps_every_section():
    html = service_page()
    text = _typed(html, "wide")
    for i in range(1, 6):
        assert f"Service area {i}" in text and f"systems of kind {i}" in text
    assert "Copyright" not in text
    # each section's link list stays (the last one is after the last prose: the edge trim drops it)
    assert all(f"Repairs of kind {i}" in text for i in range(1, 5))
    assert not any(f"Repairs of kind {i}" in _article(html) for i in range(1, 6))


@pytest.mark.parametrize("kind,rule,page", [("listing", "region", listing_page),
                                            ("documentation", "docs", docs_page),
                                            ("service", "sections", service_page), ("article", None, listing_page)])
def test_select_dispatches_on_the_page_type(monkeypatch, kind, rule, page):
    """select() asks nfas.page_type and applies that type's rule; an article keeps the article rule."""
    calls = []
    monkeypatch.setattr(nfas, "page_type", lambda dom, keep: calls.append(kind) or kind)
    dom = load(page())
    keep = auto.select(dom)
    assert calls == [kind]
    assert DEFAULTS.type_rules is not None and DEFAULTS.type_rules.get(kind) == rule
    if rule:
        assert keep == auto.typed_rule(dom, compute(dom), rule, False)
    else:
        assert keep == auto.select(dom, params=ARTICLE_ONLY)


def test_type_rules_off_is_the_article_rule(monkeypatch):
    monkeypatch.setattr(nfas, "page_type", lambda dom, keep: pytest.fail("no typing when the rules are off"))
    dom = load(service_page())
    assert auto.select(dom, params=ARTICLE_ONLY) == article(dom, compute(dom), strict=True)


def test_page_info_reuses_the_type_auto_selected_by():
    from blockcrawl.extraction.pageinfo import page_info

    dom = load(docs_page(), "https://docs.example/api/open")
    _, text = main_content(dom, "auto")
    typed = nfas.last_type(dom)
    assert typed is not None and typed[0] in PAGE_TYPES
    info = page_info(dom, text)
    assert info.kind == typed[0]
    assert nfas.last_type(load(docs_page())) is None  # another Dom: classified afresh


def test_mask_text_separates_blocks():
    dom = load("<div><p>One <b>two</b></p><p>three</p><ul><li>four</li></ul></div>")
    keep = [t == "#text" for t in dom.tag]
    assert nfas.mask_text(dom, keep) == "One two\n\nthree\n\nfour"


def test_search_kind_takes_the_seven_types():
    from blockcrawl.retrieval.options import SearchError, _check_kind

    for t in PAGE_TYPES:
        assert _check_kind(t.upper()) == t
    with pytest.raises(SearchError):
        _check_kind("news")


def test_search_cli_kind_choices(capsys):
    from blockcrawl.cli import main

    with pytest.raises(SystemExit) as e:
        main(["search", "--store", "nothing.db", "x", "--kind", "news"])
    assert e.value.code == 2 and "documentation" in capsys.readouterr().err


def test_price_pattern_finds_what_the_lookahead_form_found():
    # nfas._PRICE reads its first character by a class (sre skips to candidates in C): the same
    # matches as the lookahead form it replaced, on prices, near-prices and mixed text
    import re

    from blockcrawl.extraction.nfas import _PRICE

    before = re.compile(r"(?=[$€£¥]|\d)(?:[$€£¥]\s?\d|\d(?:[.,]\d\d)\s?(?:€|eur\b|usd\b|gbp\b|kr\b))")
    text = ("$5 $ 12 €3 £ 9.99 ¥100 12,50 € 3.99eur 4.50 usdx 7,25 kr 9.99gbp 1.2 € $$5 5$ 12.345 eur "
            "٣.٥٠ € 10.00\u00a0eur €€1 €\n2 a1.23 € 99.99 kr. 0.99usd, $ ¥ 3,00 gbp")
    for s in (text, text.upper().lower(), "", "$", "1.23"):
        assert [m.span() for m in _PRICE.finditer(s)] == [m.span() for m in before.finditer(s)]
    assert len(_PRICE.findall(text)) > 10

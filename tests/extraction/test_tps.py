"""TPS (seed 001): disjoint-alphabet splits of the tag path sequence."""
import numpy as np

from blockcrawl.extraction import blocks_from_dom, tps
from blockcrawl.extraction.registry import get_selector
from blockcrawl.parse import load


def seq(*xs):
    return np.asarray(xs, dtype=np.int32)


def test_split_between_disjoint_alphabets():
    # x a b a b a b | c d c d c d: the alphabets {a, b} and {c, d} do not meet. (Symbols at the
    # lowest count - x here - never take part: thresholds start at the smallest count.)
    assert tps.find_split(seq(7, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3)) == 7
    # symbols at the lowest count are ignored: a, b (2 each) cannot split off c, d (3 each)
    assert tps.find_split(seq(0, 1, 0, 1, 2, 3, 2, 3, 2, 3)) == -1


def test_no_split_inside_one_region():
    assert tps.find_split(seq(0, 1, 0, 1, 0, 1)) == -1
    assert tps.find_split(seq(0, 1, 2, 1, 0)) == -1  # 0 spans everything
    assert tps.find_split(seq(5)) == -1


def test_count_threshold_filters_rare_symbols_that_span_regions():
    # 9 (3 times) ties both halves together; once the threshold passes 3, only symbols occurring
    # more often take part and the split appears after the last 1.
    s = seq(9, 0, 1, 0, 1, 0, 1, 0, 1, 9, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 9)
    assert tps.find_split(s) == 9
    # Occurring as often as the region symbols, 9 is never filtered out: no split.
    s2 = seq(9, 0, 1, 0, 1, 9, 0, 1, 0, 1, 9, 2, 3, 2, 3, 9, 2, 3, 2, 3, 9)
    assert tps.find_split(s2) == -1


NAV = "".join(f"<li><a href='/{k}'>Menu item {k}</a></li>" for k in range(6))
ARTICLE = "".join(f"<p>Paragraph {k} of the article, with its own sentence.</p>" for k in range(10))
PAGE = (f"<html><body><div id=nav><ul>{NAV}</ul></div><div id=main><h1>The headline</h1>{ARTICLE}"
        f"</div><div id=foot><span>Copyright</span></div></body></html>")


def test_symbols_numbered_by_first_appearance():
    t = tps.build_tps(load(PAGE))
    firsts = [int(np.flatnonzero(t.symbols == s)[0]) for s in range(len(t.path_ids))]
    assert firsts == sorted(firsts)
    assert t.path(0) == "html/body"
    assert t.path(int(t.symbols[5])) == "html/body/div/ul/li/a/#text"


def test_page_splits_at_the_menu_and_keeps_the_article():
    dom = load(PAGE)
    res = tps.analyze(dom)
    assert len(res.steps) >= 2  # at least one split happened
    text = "\n".join(b.text for b in blocks_from_dom(dom, keep=get_selector("tps")(dom)))
    assert "Paragraph 0 of the article" in text and "Paragraph 9 of the article" in text
    assert "Menu item" not in text
    # the menu region is its own segment, the article another
    segs = tps.segments(res.tps)
    assert len(segs) >= 2
    menu_nodes = {dom.text[i] for i in res.tps.nodes[segs[0][0]:segs[0][1]] if dom.tag[i] == "#text"}
    assert menu_nodes and all(t.startswith("Menu item") for t in menu_nodes)


def test_segments_respect_min_share():
    t = tps.build_tps(load(PAGE))
    total = len(t)
    for a, b in tps.segments(t, 0.05):
        assert b - a > 0.05 * total
    # a huge minimum keeps nothing
    assert tps.segments(t, 1.0) == []


def test_deeply_nested_page():
    n = 100_000
    dom = load("<html><body><p>Intro.</p>" + "<div>" * n + "deep text" + "</div>" * n + "</body></html>")
    keep = tps.select(dom)
    texts = [b.text for b in blocks_from_dom(dom, keep=keep)]
    assert any("deep text" in t for t in texts)

"""CETR (the seed-004 baseline): text-to-tag ratios per line, smoothed, clustered."""
import numpy as np

from blockcrawl.extraction import blocks_from_dom, cetr
from blockcrawl.extraction.registry import get_selector
from blockcrawl.parse import load

PROSE = ("Rain fell over the valley for a week, and the river rose until the old bridge, built in "
         "1887, could no longer be crossed by the farmers on the east bank. ")
NAV = "".join(f"<li><a href='/{k}'>Link {k}</a></li>" for k in range(15))
PAGE = (f"<html><body><ul>{NAV}</ul><div><h1>Flood</h1>" + "".join(f"<p>{PROSE * 2}</p>" for _ in range(6))
        + f"</div><div><a href=/a>About</a> | <a href=/b>Terms</a></div><ul>{NAV}</ul></body></html>")


def test_lines_follow_block_elements():
    dom = load("<body><div><p>One two</p><p>three <b>four</b></p></div></body>")
    lines = cetr.page_lines(dom)
    texts = [" ".join(dom.text[i] for i in ns) for ns in lines.nodes if ns]
    assert texts == ["One two", "three  four"]
    # the second paragraph's line holds <p>, <b>, </b>, </p>
    k = next(k for k, ns in enumerate(lines.nodes) if ns and dom.text[ns[0]] == "three ")
    assert lines.tags[k] == 4 and lines.chars[k] == len("three") + len("four")


def test_smoothing_and_lookahead():
    flat = np.full(10, 5.0)
    assert np.allclose(cetr.gaussian_smooth(flat, 1.0), 5.0)
    spike = np.zeros(9)
    spike[4] = 9.0
    sm = cetr.gaussian_smooth(spike, 1.0)
    assert sm.argmax() == 4 and sm[3] > 0 and sm[4] < 9.0
    d = cetr.lookahead_delta(np.array([0.0, 3.0, 3.0, 3.0, 0.0]))
    assert d[0] == 3.0 and d[-1] == 0.0 and abs(d[1] - 1.0) < 1e-9


def test_kmeans_separates_dense_lines_from_the_origin_cluster():
    rng = np.random.default_rng(0)
    noise = rng.uniform(0, 2, size=(30, 2))
    dense = np.column_stack([rng.uniform(60, 80, 10), rng.uniform(0, 5, 10)])
    labels, cents = cetr.kmeans_origin(np.vstack([noise, dense]), k=2)
    assert (labels[:30] == 0).all() and (labels[30:] != 0).all()
    assert np.allclose(cents[0], 0.0)


def test_page_keeps_prose_and_drops_menus():
    dom = load(PAGE)
    res = cetr.analyze(dom)
    assert res.content.any() and not res.content.all()
    text = "\n".join(b.text for b in blocks_from_dom(dom, keep=get_selector("cetr")(dom)))
    assert "could no longer be crossed" in text
    assert "Link 7" not in text and "Terms" not in text


def test_deep_page():
    n = 100_000
    dom = load("<html><body>" + "<div>" * n + "deep text" + "</div>" * n + "</body></html>")
    keep = cetr.select(dom)
    assert len(keep) == len(dom)


def test_every_page_selector_keeps_a_lone_paragraph_and_survives_odd_input():
    from blockcrawl.extraction.registry import ALGORITHMS
    names = [n for n in ("tps", "tps-text", "cepr", "cetr") if n in ALGORITHMS]
    assert len(names) == 4 and not any(ALGORITHMS[n].is_site for n in names)
    for name in names:
        sel = get_selector(name)
        dom = load("<html><body><p>Only one paragraph here.</p></body></html>")
        assert [b.text for b in blocks_from_dom(dom, keep=sel(dom))] == ["Only one paragraph here."]
        for odd in ("", "<body></body>", "<script>x=1</script>", "<p> </p>", "plain words"):
            d = load(odd)
            m = sel(d)
            assert m is None or len(m) == len(d)

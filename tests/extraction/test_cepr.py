"""CEPR (seed 004): text-to-tag-path ratios smoothed by path similarity."""
import numpy as np

from blockcrawl.extraction import blocks_from_dom, cepr
from blockcrawl.extraction.registry import get_selector
from blockcrawl.extraction.tagpath import PathSimilarity, levenshtein, tag_paths
from blockcrawl.parse import load

PROSE = ("The committee met on Tuesday to discuss the budget, which had grown by a third since "
         "last year; members disagreed about the cause, and the chair asked for a report. ")
NAV = "".join(f"<li><a href='/{k}'>Section {k}</a></li>" for k in range(12))
PAGE = (f"<html><body><ul class=menu>{NAV}</ul><div class=story><h1>Budget row</h1>"
        f"<p>{PROSE * 2}</p><p>{PROSE} See <a href='/r'>the report</a> for details. {PROSE}</p>"
        f"<p>{PROSE * 3}</p></div><div class=foot><a href=/a>About</a> <a href=/c>Contact</a>"
        f"</div></body></html>")


def test_levenshtein():
    assert levenshtein([1, 2, 3], [1, 2, 3]) == 0
    assert levenshtein([1, 2, 3], [1, 3]) == 1
    assert levenshtein([], [4, 5]) == 2
    assert levenshtein([1, 2, 3, 4], [4, 3, 2, 1]) == 4


def test_long_text_paths_kept_link_lists_dropped():
    dom = load(PAGE)
    res = cepr.analyze(dom)
    p_path = next(res.paths[k] for k, i in enumerate(res.nodes) if dom.text[i].startswith("The committee"))
    li_path = next(res.paths[k] for k, i in enumerate(res.nodes) if dom.text[i] == "Section 0")
    assert res.tpr[p_path] > 10 * res.tpr[li_path]
    assert res.etpr[p_path] >= res.tpr[p_path]
    text = "\n".join(b.text for b in blocks_from_dom(dom, keep=get_selector("cepr")(dom)))
    assert "budget, which had grown" in text
    assert "Section 3" not in text and "Contact" not in text


def test_inline_link_in_content_kept_by_smoothing():
    dom = load(PAGE)
    res = cepr.analyze(dom)
    k = next(k for k, i in enumerate(res.nodes) if dom.text[i] == "the report")
    # on its own the short link text is far below the threshold; its neighbours lift it
    assert res.raw[k] < res.threshold <= res.smoothed[k]
    assert res.content[k]


def test_path_similarity():
    dom = load(PAGE)
    tp = tag_paths(dom)
    sim = PathSimilarity(tp)
    p_text = tp.node_path[next(i for i in range(len(dom)) if dom.text[i].startswith("The committee"))]
    a_in_p = tp.node_path[next(i for i in range(len(dom)) if dom.text[i] == "the report")]
    menu = tp.node_path[next(i for i in range(len(dom)) if dom.text[i] == "Section 0")]
    assert sim(p_text, p_text) == 1.0
    # html/body/div/p/#text vs html/body/div/p/a/#text: one insertion over 6 labels
    assert abs(sim(p_text, a_in_p) - (1 - 1 / 6)) < 1e-9
    assert sim(p_text, menu) < sim(p_text, a_in_p)
    assert sim(p_text, menu) == sim(menu, p_text)


def test_smoothing_weight_depends_on_path_similarity():
    values = np.array([100.0, 0.0, 0.0])
    same = cepr.smooth(values, [0, 1, 1], lambda a, b: 1.0, sigma=1.0)
    unlike = cepr.smooth(values, [0, 1, 1], lambda a, b: 1.0 if a == b else 0.0, sigma=1.0)
    assert same[1] > 10
    assert unlike[1] == 0.0 and unlike[0] == 100.0
    half = cepr.smooth(values, [0, 1, 1], lambda a, b: 1.0 if a == b else 0.5, sigma=1.0)
    assert 0 < half[1] < same[1]


def test_lambda_moves_the_threshold():
    dom = load(PAGE)
    loose = cepr.analyze(dom, lam=0.0)
    strict = cepr.analyze(dom, lam=5.0)
    assert loose.content.all()
    assert strict.content.sum() < loose.content.sum()


def test_empty_and_deep_pages():
    assert cepr.select(load("")) is None or not any(cepr.select(load("")))
    n = 100_000
    dom = load("<html><body><p>Intro.</p>" + "<div>" * n + "deep text" + "</div>" * n + "</body></html>")
    keep = cepr.select(dom)
    assert len(keep) == len(dom)

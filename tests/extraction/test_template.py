"""Template removal by clustering (seed 003): structural similarity, SMDPW, canopy, removal."""
import pytest

from blockcrawl.extraction import blocks_from_dom, template
from blockcrawl.extraction.registry import ALGORITHMS, get_selector, is_site
from blockcrawl.parse import load

HEADER = ("<div class=top><a href=/>Home</a><a href=/news>News</a><a href=/sport>Sport</a></div>"
          "<div class=search><form><input name=q></form></div>")
FOOTER = "<div class=bottom><p>Copyright Example Media</p><p>Privacy policy</p></div>"


def article(title: str, paras: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paras)
    return (f"<html><body>{HEADER}<div class=main><h1>{title}</h1>{body}</div>{FOOTER}"
            "</body></html>")


PAGE_A = article("Dam opens", ["The new dam opened on Monday.", "It took nine years to build.",
                               "Engineers expect it to run for a century."])
PAGE_B = article("Mayor resigns", ["The mayor resigned after a vote.", "A successor is due in May."])
OTHER = ("<html><body><table><tr><td>Price list</td><td>12</td></tr><tr><td>Shipping</td>"
         "<td>3</td></tr></table><ul><li>one</li><li>two</li><li>three</li><li>four</li></ul>"
         "<span>x</span></body></html>")


def tree(html: str) -> template.Tree:
    return template.build_tree(load(html))


def test_registry_marks_template_as_a_site_algorithm():
    assert "template" in ALGORITHMS and ALGORITHMS["template"].is_site and is_site("template+cepr")
    assert not ALGORITHMS["cepr"].is_site and not is_site("cepr")
    assert get_selector("template") is template.select_site


def test_similarity_same_template_high_other_structure_low():
    a, b, o = tree(PAGE_A), tree(PAGE_B), tree(OTHER)
    assert template.similarity(a, a) == pytest.approx(1.0)
    s_ab, s_ao = template.similarity(a, b), template.similarity(a, o)
    assert s_ab > 0.5 > s_ao
    assert s_ao == 0.0
    assert template.similarity(a, b) == pytest.approx(template.similarity(b, a))


def test_strict_rule_needs_equal_child_counts():
    # the main divs hold 4 and 3 children: the paper's rule scores that subtree 0
    a, b = tree(PAGE_A), tree(PAGE_B)
    assert template.similarity(a, b, strict=True) < template.similarity(a, b, strict=False)


def test_smdpw_weights_grow_toward_the_ends():
    w = template.depth1_weights(5, "smdpw")
    assert sum(w) == pytest.approx(1.0)
    assert w[0] > w[1] > w[2] and w[4] > w[3] > w[2] and w[0] == pytest.approx(w[4])
    assert template.depth1_weights(5, "even") == [pytest.approx(0.2)] * 5


def test_smdpw_punishes_a_different_header_more_than_even_weights():
    page = "<html><body>{}<div class=m><p>a</p></div><div class=n><p>b</p></div><div class=f><p>c</p></div></body></html>"
    a = tree(page.format("<div class=h><p>x</p></div>"))
    b = tree(page.format("<div class=h><p>x</p><p>y</p></div>"))  # header differs
    even = template.similarity(a, b, "even", strict=True)
    smdpw = template.similarity(a, b, "smdpw", strict=True)
    assert even == pytest.approx(0.75)
    assert smdpw < even


def test_canopy_thresholds():
    sims = {(0, 1): 0.9, (0, 2): 0.3, (1, 2): 0.3}

    def sim(i, j):
        return 1.0 if i == j else sims[(min(i, j), max(i, j))]

    # 2 is within T1 = 0.8 of 0 (distance 0.7) so it joins canopy 0, but not within T2 = 0.5,
    # so it stays in the pool and opens its own canopy; 1 leaves the pool with 0.
    assert template.canopy(3, sim, t1=0.8, t2=0.5) == [[0, 1, 2], [2]]
    # a loose T2 takes 2 out of the pool too: a single canopy
    assert template.canopy(3, sim, t1=0.8, t2=0.75) == [[0, 1, 2]]
    # a tighter T1 keeps 2 out of the first canopy
    assert template.canopy(3, sim, t1=0.6, t2=0.5) == [[0, 1], [2]]
    with pytest.raises(ValueError):
        template.canopy(3, sim, t1=0.5, t2=0.5)


def test_site_clusters_pages_and_removes_shared_parts():
    doms = [load(PAGE_A), load(PAGE_B), load(OTHER)]
    res = template.analyze_site(doms, fallback=None)
    assert res.cluster_of[0] == res.cluster_of[1] != res.cluster_of[2]
    text_a = "\n".join(b.text for b in blocks_from_dom(doms[0], keep=res.masks[0]))
    assert "nine years" in text_a and "Dam opens" in text_a
    assert "Copyright" not in text_a and "Sport" not in text_a
    assert res.shared[0] and res.shared[1]
    # the lone page has nothing to compare with: no removal without a fallback
    assert res.masks[2] is None


def test_lone_page_uses_the_fallback_selector():
    doms = [load(PAGE_A), load(OTHER)]
    masks = template.analyze_site(doms, fallback="cepr").masks
    assert masks[0] is not None and masks[1] is not None
    assert masks == [get_selector("cepr")(d) for d in doms]


def test_deep_pages_compare_without_recursion():
    n = 100_000
    html = "<html><body>" + "<div>" * n + "deep text" + "</div>" * n + "</body></html>"
    a = template.build_tree(load(html))
    assert template.similarity(a, a) == pytest.approx(1.0)


def test_smdpw_a_change_at_the_top_costs_more_than_one_in_the_middle():
    parts = ["<div class=a><p>1</p></div>", "<div class=b><p>2</p></div>", "<div class=c><p>3</p></div>",
             "<div class=d><p>4</p></div>", "<div class=e><p>5</p></div>"]

    def page(k=None):
        ps = list(parts)
        if k is not None:
            ps[k] = "<section><p>changed</p></section>"
        return tree("<html><body>" + "".join(ps) + "</body></html>")

    base, top, middle = page(), page(0), page(2)
    assert template.similarity(base, top, "even") == pytest.approx(template.similarity(base, middle, "even"))
    assert template.similarity(base, top, "smdpw") < template.similarity(base, middle, "smdpw")
    # one extra block in the middle: the relaxed rule still pairs the ends, the strict rule cannot
    extra = tree("<html><body>" + "".join(parts[:3] + ["<div class=x><p>ad</p></div>"] + parts[3:]) + "</body></html>")
    assert template.similarity(base, extra, strict=True) == 0.0
    assert template.similarity(base, extra) > 0.5

"""Site learning (extraction/site): SMDPW + Canopy, tree-alignment templates, PP-WNE + MPM, the
SiteModel and the `site` algorithm in SitePipeline, on synthetic sites generated here."""
from __future__ import annotations

import json
import logging
import random

import pytest

from blockcrawl import PipelineConfig, SitePipeline
from blockcrawl.errors import ConfigError
from blockcrawl.extraction import site
from blockcrawl.extraction.api import main_content
from blockcrawl.extraction.auto import select as auto_select
from blockcrawl.extraction.registry import ALGORITHMS, is_site
from blockcrawl.extraction.site import patterns as pp
from blockcrawl.extraction.site import tree as st
from blockcrawl.parse import Dom, load

from ..support.scaling import growth

WORDS = ("river stone market winter garden council bridge harvest engine library orchard signal "
         "village lantern museum harbor railway meadow forest festival archive canal tower").split()
NAV = "<header class='top'><nav class='menu'><a href='/'>Home</a> <a href='/news'>News</a> " \
      "<a href='/sport'>Sport</a> <a href='/about'>About us</a></nav></header>"
SIDE = "<aside class='side'><h3>Popular now</h3><ul><li><a href='/p1'>Mayor opens the new bridge</a></li>" \
       "<li><a href='/p2'>Storm closes the harbor</a></li></ul></aside>"
FOOT = "<footer class='foot'><p>Copyright 2026 The Daily Lantern. All rights reserved.</p>" \
       "<p>Contact the newsroom at desk@example.org</p></footer>"


def sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + ", " + \
        " ".join(rng.choice(WORDS) for _ in range(6)) + "."


def article(k: int, *, variant: str = "a") -> tuple[str, list[str]]:
    """An article page and its article paragraphs. Every page has one short paragraph ("Update:
    ...") in a box of its own, which auto alone tends to leave out."""
    rng = random.Random(k)
    paras = [sentence(rng) for _ in range(rng.randint(4, 7))]
    note = f"Update {k}: the {rng.choice(WORDS)} reopened."
    body = "".join(f"<p>{p}</p>" for p in paras)
    if variant == "a":
        main = (f"<div class='wrap'><div class='main'><article class='story'><h1>Story {k} headline here</h1>"
                f"<div class='story-body'>{body}<div class='note'><p>{note}</p></div></div></article></div>{SIDE}</div>")
    else:  # the redesign: another wrapper, another class
        main = (f"<main id='content'><section class='post'><h2>Story {k} headline here</h2>"
                f"<div class='post-text'>{body}<div class='note'><p>{note}</p></div></div></section></main>")
    html = f"<html><head><title>Story {k}</title></head><body>{NAV}{main}{FOOT}</body></html>"
    return html, paras + [note]


def listing(k: int) -> str:
    rng = random.Random(1000 + k)
    items = "".join(f"<li class='teaser'><a href='/s{j}'>{sentence(rng, 6)}</a><span>{rng.choice(WORDS)}</span></li>"
                    for j in range(12))
    return (f"<html><head><title>Section {k}</title></head><body>{NAV}<div class='listing'><h1>Section {k}</h1>"
            f"<ul class='teasers'>{items}</ul></div>{FOOT}</body></html>")


def doms_of(htmls: list[str]) -> list:
    return [load(h, f"http://site.test/{i}") for i, h in enumerate(htmls)]


def model_text(model: site.SiteModel, dom) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    mask, cluster = model.select(dom, auto_select(dom))
    return main_content(dom, keep=mask)[1], cluster


# ---------------------------------------------------------------------------------- SMDPW, Canopy
def test_smdpw_alignment_same_template_high_other_low() -> None:
    a, _ = article(1)
    b, _ = article(2)
    c = listing(1)
    ta, tb, tc = (st.build_tree(load(h)) for h in (a, b, c))
    assert st.similarity(ta, ta) == pytest.approx(1.0)
    s_ab, s_ac = st.similarity(ta, tb), st.similarity(ta, tc)
    assert s_ab > 0.9 > s_ac
    assert st.similarity(ta, tb) == pytest.approx(st.similarity(tb, ta))


def test_dp_alignment_survives_an_inserted_block() -> None:
    """A banner inserted at the top shifts every later sibling: positional matching loses the
    page, the LCS alignment only the banner."""
    a, _ = article(1)
    b = a.replace("<body>", "<body><div class='promo'><p>Subscribe today</p></div>")
    sim = st.similarity(st.build_tree(load(a)), st.build_tree(load(b)))
    assert sim > 0.6


def test_body_class_naming_the_page_does_not_split_the_template() -> None:
    # MediaWiki writes the page name into <body class="... page-Thomas_Jefferson ...">: the roots
    # are the same element whatever their class (every cetd Wikipedia pair scored 0.0 before)
    a, b = (article(k)[0].replace("<body>", f"<body class='mediawiki page-Story_{k}'>") for k in (1, 2))
    assert st.similarity(st.build_tree(load(a)), st.build_tree(load(b))) > 0.9


def test_lcs_pairs_with_common_ends_are_a_longest_common_subsequence() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("abc") for _ in range(rng.randint(0, 12))]
        b = [rng.choice("abc") for _ in range(rng.randint(0, 12))]
        if rng.random() < 0.5:  # shared head and tail, as pages of one template have
            a, b = ["h", "x"] + a + ["f"], ["h", "x"] + b + ["f"]
        pairs = st._lcs_pairs(a, b)
        assert all(a[i] == b[j] for i, j in pairs)
        assert all(i1 < i2 and j1 < j2 for (i1, j1), (i2, j2) in zip(pairs, pairs[1:]))
        best = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]  # the textbook DP
        for i in range(len(a)):
            for j in range(len(b)):
                best[i + 1][j + 1] = best[i][j] + 1 if a[i] == b[j] else max(best[i][j + 1], best[i + 1][j])
        assert len(pairs) == best[len(a)][len(b)]


def test_depth1_weights_grow_toward_the_ends() -> None:
    w = st.depth1_weights(5)
    assert sum(w) == pytest.approx(1.0) and w[0] == w[4] > w[1] > w[2]
    assert st.depth1_weights(3, boost=0) == [pytest.approx(1 / 3)] * 3


def test_canopy_needs_t1_above_t2() -> None:
    with pytest.raises(ConfigError):
        st.canopy(3, lambda i, j: 1.0, 0.4, 0.4)
    sims = {(0, 1): 0.9, (0, 2): 0.1, (1, 2): 0.1}
    out = st.canopy(3, lambda i, j: sims[(min(i, j), max(i, j))], 0.5, 0.3)
    assert out == [[0, 1], [2]]


@pytest.mark.slow
def test_tree_is_bounded_and_alignment_iterative_on_100k_nesting() -> None:
    def deep(n: int) -> Dom:
        return load("<html><body>" + "<div>" * n + "<p>deep text here</p>" + "</div>" * n + "</body></html>")
    d = deep(100_000)
    t = st.build_tree(d)
    assert len(t) == st.MAX_NODES
    assert st.similarity(t, t) == pytest.approx(1.0)
    # a learned model meets the page: bounded, no recursion, and auto's text survives
    doms = doms_of([article(k)[0] for k in range(4)])
    model = site.learn(doms, [auto_select(d) for d in doms])
    texts: list[str] = []

    def meet(page: Dom) -> None:
        tree = st.build_tree(page)
        st.similarity(tree, tree)
        texts.append(main_content(page, keep=model.select(page, auto_select(page))[0])[1])
    ratio = growth(meet, deep(25_000), d)  # 4x the depth: < 8x the CPU (linear 4x, quadratic 16x)
    assert ratio < 8, ratio
    assert "deep text here" in texts[-1]


# ---------------------------------------------------------------------------------- PP-WNE, MPM
def test_mpm_is_a_small_cover_without_negatives() -> None:
    samples = [pp.Sample(["d:div.body#", "s3:div/p/#text"], 100, True, k % 3) for k in range(9)]
    samples += [pp.Sample(["d:div.side#", "s3:div/p/#text"], 100, False, k % 3) for k in range(9)]
    samples += [pp.Sample(["d:div.body#", "a2:div.note#/#text"], 30, True, k % 3) for k in range(3)]
    pats = pp.mpm(samples, 3)
    assert pats == ["d:div.body#"]  # one pattern covers all; s3 matches as much noise


def test_node_keys_bounded_depth() -> None:
    d = load("<html><body>" + "<div class='x'>" * 5000 + "<p>t</p>" + "</div>" * 5000 + "</body></html>")
    i = max(k for k in range(len(d)) if d.tag[k] == "#text")
    keys = pp.node_keys(pp.Labeller(d), i)
    assert "d:div.x#" in keys and len(keys) < 15


def test_node_keys_shared_memo_gives_the_same_keys() -> None:
    # the memo (ancestor chain -> keys) shared by a site's pages changes nothing but the time
    memo: dict[tuple[str, ...], list[str]] = {}
    for k in range(4):
        d = load(article(k)[0] if k % 2 else listing(k))
        fresh, shared = pp.Labeller(d), pp.Labeller(d, memo)
        nodes = [i for i in range(len(d)) if d.tag[i] == "#text" and d.text[i].strip()]
        assert [pp.node_keys(shared, i) for i in nodes] == [pp.node_keys(fresh, i) for i in nodes]
    assert memo and all(len(c) <= pp.DEPTH for c in memo)
    d = load("<html><body>" + "<div class='x'>" * 5000 + "<p>t</p>" + "</div>" * 5000 + "</body></html>")
    i = max(k for k in range(len(d)) if d.tag[k] == "#text")
    assert pp.node_keys(pp.Labeller(d, memo), i) == pp.node_keys(pp.Labeller(d), i)


def test_combine_modes_add_pattern_text_where_they_say() -> None:
    html, paras = article(3)
    dom = load(html)
    auto = auto_select(dom)
    side = "Mayor opens the new bridge"
    assert side not in main_content(dom, keep=auto)[1]
    c = site.Cluster(st.Tree([], [], [], []), ["d:aside.side#", "d:div.story-body#"], {})
    texts = {mode: main_content(dom, keep=site.model.apply(dom, c, auto, mode)[0])[1]
             for mode in ("union", "region", "auto", "model")}
    assert side in texts["union"] and side in texts["model"]  # the pattern matches the aside
    assert side not in texts["region"] and side not in texts["auto"]  # outside auto's article
    assert all(p in texts[m] for p in paras for m in texts)


# ---------------------------------------------------------------------------------- the model
def test_model_removes_template_and_keeps_article_text_on_several_templates() -> None:
    pages = [article(k) for k in range(8)]
    htmls = [h for h, _ in pages] + [listing(k) for k in range(4)]
    doms = doms_of(htmls)
    model = site.learn(doms, [auto_select(d) for d in doms])
    assert len(model.clusters) >= 2  # articles and listings
    # unseen article pages of the same template
    for k in (20, 21, 22):
        html, paras = article(k)
        text, cluster = model_text(model, load(html))
        assert cluster >= 0
        for p in paras:
            assert p in text
        for boiler in ("Home", "Copyright 2026", "Popular now", "Mayor opens the new bridge"):
            assert boiler not in text


NOTICE = ("<p class='notice'>Our standards: every story on this site is checked by two editors before "
          "it is published in the paper.</p>")


def test_template_text_auto_keeps_is_dropped_also_on_a_page_that_falls_back() -> None:
    def page(k: int) -> tuple[str, list[str]]:
        html, paras = article(k)
        return html.replace("<div class='story-body'>", "<div class='story-body'>" + NOTICE), paras

    doms = doms_of([page(k)[0] for k in range(8)])
    autos = [auto_select(d) for d in doms]
    assert all("two editors" in main_content(d, keep=a)[1] for d, a in zip(doms, autos))  # auto keeps it
    model = site.learn(doms, autos)
    text, cluster = model_text(model, load(page(30)[0]))
    assert cluster >= 0 and "two editors" not in text and all(p in text for p in page(30)[1])
    # the article moved out of its box: the patterns keep too little, the page falls back to auto,
    # but the notice, at its place in the template, is still dropped
    html, paras = page(31)
    body = "".join(f"<p>{p}</p>" for p in paras[:-1])
    html = html.replace(body, "").replace("</article>", f"</article><div class='longform'>{body}</div>")
    dom = load(html)
    assert "two editors" in main_content(dom, keep=auto_select(dom))[1]
    text, cluster = model_text(model, dom)
    assert cluster == -1 and "two editors" not in text and all(p in text for p in paras)


def test_json_round_trip_and_format_key() -> None:
    doms = doms_of([article(k)[0] for k in range(6)])
    model = site.learn(doms, [auto_select(d) for d in doms])
    js = model.to_json()
    assert json.loads(js)["format"] == site.FORMAT
    again = site.SiteModel.from_json(js)
    assert again.to_json() == js
    html, paras = article(30)
    assert model_text(again, load(html))[0] == model_text(model, load(html))[0]
    with pytest.raises(ValueError):
        site.SiteModel.from_json(js.replace(f'"format":{site.FORMAT}', '"format":999'))
    for bad in ("{nope", "[]", '{"format": 1}', js.replace('"template":{', '"template":[{').replace('}}]', '}]}]', 1)):
        with pytest.raises(ValueError):
            site.SiteModel.from_json(bad)
    # a damaged model in the store: the pipeline logs it and learns again
    pipe = SitePipeline(mode="main", algorithm="site", tokenizer="words")
    pipe.load_model("{nope")
    assert pipe.site is not None and pipe.site.model is None and pipe.site.collecting


def test_one_page_site_and_unrelated_pages_fall_back_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    one = doms_of([article(1)[0]])
    with caplog.at_level(logging.INFO, logger="blockcrawl.site"):
        model = site.learn(one, [auto_select(d) for d in one])
    assert not model.clusters and len([r for r in caplog.records if r.name == "blockcrawl.site"]) == 1
    mask, cluster = model.select(one[0], auto_select(one[0]))
    assert cluster == -1 and list(mask or []) == list(auto_select(one[0]) or [])
    rng = random.Random(5)
    unrelated = []
    for k in range(5):  # pages that share nothing: different tags, nesting, no common text
        tag = ("section", "table", "ul", "dl", "form")[k]
        unrelated.append(f"<html><body><{tag} class='c{k}'>" + "<div>" * (k + 1) +
                         f"<p>{sentence(rng)}</p>" + "</div>" * (k + 1) + f"</{tag}></body></html>")
    doms = doms_of(unrelated)
    model = site.learn(doms, [auto_select(d) for d in doms])
    assert not model.clusters
    assert all(model.select(d, auto_select(d))[1] == -1 for d in doms)


def test_template_change_falls_back_then_relearns() -> None:
    pipe = SitePipeline(mode="main", algorithm="site", tokenizer="words", learn_pages=5)
    models = []
    for k in range(5):
        models.append(pipe.process(article(k)[0], f"http://site.test/a{k}").model)
    assert models[-1] is not None and models[:-1] == [None] * 4
    assert pipe.site is not None and pipe.site.version == 1
    # the redesign: every page falls back to auto (far from the centre, or patterns miss)
    fell = 0
    for k in range(5, 5 + 25):
        res = pipe.process(article(k, variant="b")[0], f"http://site.test/b{k}")
        for p in article(k, variant="b")[1][:-1]:
            assert p in res.text  # auto's text at least
        fell += res.model is None
    assert pipe.site.version >= 2  # re-learned on the new template
    html, paras = article(99, variant="b")
    res = pipe.process(html, "http://site.test/b99")
    assert paras[-1] in res.text and "Copyright 2026" not in res.text


# ---------------------------------------------------------------------------------- pipeline
def test_pipeline_revises_collected_pages_without_double_chunking() -> None:
    pipe = SitePipeline(mode="main", algorithm="site", tokenizer="words", learn_pages=4, chunk_size=200, overlap=0)
    results = [pipe.process(article(k)[0], f"http://site.test/{k}") for k in range(6)]
    assert [r.model is not None for r in results] == [False, False, False, True, False, False]
    learned = results[3]
    assert [r.url for r in learned.revised] == [f"http://site.test/{k}" for k in range(3)]
    # the revised pages and the later ones carry the article, short note included
    for k, r in [(0, learned.revised[0]), (1, learned.revised[1]), (2, learned.revised[2]),
                 (3, learned), (4, results[4])]:
        for p in article(k)[1]:
            assert p in r.text
    # dedup rewound: every chunk text of the revised run is new once across the site
    texts = [c.text for r in learned.revised + [learned, results[4], results[5]] for c in r.chunks]
    assert len(texts) == len(set(texts))
    # the model JSON restores into another pipeline (crawl --resume)
    other = SitePipeline(mode="main", algorithm="site", tokenizer="words", learn_pages=4)
    other.load_model(learned.model or "")
    res = other.process(article(50)[0], "http://site.test/50")
    assert res.model is None and article(50)[1][-1] in res.text


def test_finish_learns_a_site_smaller_than_learn_pages() -> None:
    pipe = SitePipeline(mode="main", algorithm="site", tokenizer="words", learn_pages=100, chunk_size=200, overlap=0)
    assert pipe.finish() is None  # nothing collected
    results = [pipe.process(article(k)[0], f"http://site.test/{k}") for k in range(5)]
    assert all(r.model is None and not r.revised for r in results)
    done = pipe.finish()
    assert done is not None and done.model is not None and json.loads(done.model)["clusters"]
    assert [r.url for r in done.revised] == [f"http://site.test/{k}" for k in range(5)]
    for k, r in enumerate(done.revised):
        for p in article(k)[1]:
            assert p in r.text
    texts = [c.text for r in done.revised for c in r.chunks]  # dedup rewound: none counted twice
    assert texts and len(texts) == len(set(texts))
    assert pipe.finish() is None  # learned: nothing more to do
    later = pipe.process(article(7)[0], "http://site.test/7")
    assert later.model is None and later.info is not None and later.info.cluster >= 0
    one = SitePipeline(mode="main", algorithm="site", tokenizer="words", learn_pages=100)
    one.process(article(1)[0])
    assert one.finish() is None  # one page: no model, collection goes on
    assert SitePipeline(mode="main", tokenizer="words").finish() is None  # auto: nothing to learn


def test_learn_seconds_is_checked_at_each_page() -> None:
    pipe = SitePipeline(mode="main", algorithm="site", tokenizer="words", learn_pages=100, learn_seconds=0.0)
    first = pipe.process(article(1)[0])  # one page collected, time is up: learns on one page
    assert first.model is not None and json.loads(first.model)["clusters"] == []
    assert first.revised == []


def test_process_site_uses_the_model_and_registry_entry() -> None:
    assert "site" in ALGORITHMS and is_site("site")
    pipe = SitePipeline(mode="main", algorithm="site", tokenizer="words")
    pages = [(article(k)[0], f"http://site.test/{k}", "text/html") for k in range(6)]
    res = pipe.process_site(pages)
    for k, r in enumerate(res):
        assert article(k)[1][-1] in r.text and "Copyright 2026" not in r.text
    assert site.select_site(doms_of([h for h, _, _ in pages]))[0] is not None


def test_config_validation() -> None:
    assert PipelineConfig().learn_pages == 20 and PipelineConfig().learn_seconds == 60.0
    for bad in ({"learn_pages": 0}, {"learn_pages": True}, {"learn_pages": 2.0},
                {"learn_seconds": -1.0}, {"learn_seconds": float("nan")}, {"learn_seconds": "5"}):
        with pytest.raises(ConfigError):
            PipelineConfig(**bad)  # type: ignore[arg-type]


def test_learning_time_is_bounded(monkeypatch) -> None:
    """Learning is O(pages x clusters) tree alignments (SMDPW, each on trees of at most
    MAX_NODES), selecting a page one per cluster: the alignments, counted."""
    from blockcrawl.extraction.site import model as sm

    doms = doms_of([article(k)[0] for k in range(20)])
    autos = [auto_select(d) for d in doms]
    calls = [0]
    align = sm.align

    def counting_align(*args, **kw):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return align(*args, **kw)
    monkeypatch.setattr(sm, "align", counting_align)
    model = site.learn(doms, autos)
    learned, calls[0] = calls[0], 0
    for d, a in zip(doms, autos):
        model.select(d, a)
    assert 0 < learned <= len(doms) * sm.MAX_CLUSTERS, learned  # all pairs would be 190
    assert 0 < calls[0] <= len(doms) * len(model.clusters), calls[0]


def test_revising_a_page_with_its_first_mask_reuses_its_result_and_equals_a_full_rerun(monkeypatch) -> None:
    """SitePipeline._again (a collected page the model gives the mask it had) must give what
    processing the page again gives: same blocks after the rewound dedup, chunks, text, Markdown,
    info with the new cluster. The site repeats a block across pages so the dedup matters."""
    import blockcrawl.pipeline as pl

    def pages() -> list[tuple[str, str]]:
        out = []
        for k in range(6):
            html = article(k)[0].replace("</article>", "<p>" + "Shared closing line of every story, kept once. " * 3
                                         + "</p></article>")
            out.append((html, f"http://site.test/{k}"))
        out.append((listing(1), "http://site.test/l1"))
        return out

    def run() -> list[pl.PageResult]:
        pipe = SitePipeline(mode="main", algorithm="site", tokenizer="words", learn_pages=100, chunk_size=60, overlap=0)
        for html, url in pages():
            pipe.process_dom(load(html, url), markdown=True)
        done = pipe.finish(markdown=True)
        assert done is not None
        return done.revised

    calls: list[int] = []
    again = pl.SitePipeline._again

    def counting(self, f, cluster, *rest):  # type: ignore[no-untyped-def]
        calls.append(cluster)
        return again(self, f, cluster, *rest)

    monkeypatch.setattr(pl.SitePipeline, "_again", counting)
    fast = run()
    assert calls  # the shortcut was taken
    monkeypatch.setattr(pl, "_same", lambda a, b: False)
    slow = run()
    assert len(fast) == len(slow) == 7
    for a, b in zip(fast, slow):
        assert (a.url, a.title, a.text, a.markdown, a.duplicates) == (b.url, b.title, b.text, b.markdown, b.duplicates)
        assert a.blocks == b.blocks and a.chunks == b.chunks and a.info == b.info

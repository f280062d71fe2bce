"""Page info through a real crawl: a server on 127.0.0.1 (tests/support/crawlsite.py), the CLI's crawl with
a worker process (PageOut and its PageInfo cross a process boundary), export and sites; and the
worker-side mapping of a pipeline's revised pages and model (crawl.analysis.process.page_out)."""
from __future__ import annotations

import json

from blockcrawl.cli import main
from blockcrawl.crawl.analysis import process
from blockcrawl.pipeline import PageResult, PipelineConfig
from blockcrawl.records import PAGE_KINDS, Block, PageInfo, PageMeta

from ..support.crawlsite import Route, Site, page

STORY = ("The harbour authority approved the new ferry schedule on Tuesday after a long public consultation. "
         "Residents of the outer islands had asked for an earlier morning crossing for years. ")


OTHER = ("The regional council published its budget for the coming year, with more money for schools. "
         "Teachers welcomed the plan, while farmers said the road repairs they need were left out again. ")


def news_site() -> dict[str, Route]:
    head = ('<meta property="og:title" content="Ferry schedule"><meta name="author" content="Ann Author">'
            '<meta property="article:published_time" content="2024-03-05T10:00:00Z">')
    r = {"/": Route(page("Home", ["/news/1.html", "/news/2.html"], "Latest news from the islands."))}
    for i in (1, 2):
        # two different stories (the same text twice would be the site's duplicate, stored once)
        body = STORY * (2 + i) if i == 1 else OTHER * (2 + i)
        r[f"/news/{i}.html"] = Route(page(f"Story {i}", ["/"], body, extra_head=head))
    return r


def test_crawl_stores_page_info_and_export_shows_it(tmp_path, capsys):
    site = Site(news_site()).start()
    try:
        db = str(tmp_path / "s.db")
        assert main(["crawl", site.origin + "/", "--store", db, "--algorithm", "auto", "--workers", "1",
                     "--tokenizer", "words", "--no-progress"]) == 0
        capsys.readouterr()
        assert main(["export", "--store", db, "--what", "pages"]) == 0
        recs = {r["url"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
        assert len(recs) == 3
        for r in recs.values():
            assert {"text", "kind", "kind_score", "summary", "meta", "cluster", "page_type"} <= set(r)
            assert r["text"] and isinstance(r["meta"], dict) and r["cluster"] == -1
            assert r["page_type"] == r["kind"] and r["page_type"] in PAGE_KINDS
        assert "harbour authority" in recs[site.origin + "/news/1.html"]["text"]
        assert main(["sites", "--store", db]) == 0  # auto learns no model
        err = capsys.readouterr().err
        assert "no site models" in err and len(err.splitlines()) == 1
        # --only-articles: without a page classifier (kind "") no page is an article, so no blocks;
        # every page is still stored with its info and every link followed
        db2 = str(tmp_path / "o.db")
        assert main(["crawl", site.origin + "/", "--store", db2, "--workers", "0", "--tokenizer", "words",
                     "--no-progress", "--only-articles", "--learn-pages", "5", "--learn-seconds", "30"]) == 0
        capsys.readouterr()
        assert main(["export", "--store", db2, "--what", "pages"]) == 0
        recs2 = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert len(recs2) == 3 and all(r["text"] for r in recs2)
        assert all(r["n_blocks"] == 0 for r in recs2 if r["kind"] != "article")
        assert all(r["n_blocks"] > 0 for r in recs2 if r["kind"] == "article")
    finally:
        site.stop()


def test_page_out_carries_info_revised_pages_and_the_model():
    info = PageInfo(text="t", kind="article", kind_score=0.9, summary="s", meta=PageMeta(language="en"), cluster=2)
    block = Block("b", "b", (), "html/body", 0, "http://a.test/1", "h")
    old = PageResult("http://a.test/1", "One", "old text", [block], markdown="m1", info=info)
    no_url = PageResult(None, "x", "x")
    res = PageResult("http://a.test/2", "Two", "text", revised=[old, no_url], model='{"format": 1}')
    out = process.page_out(res, "http://a.test/2", ["/3"])
    assert out.model == '{"format": 1}' and out.hrefs == ["/3"] and out.url is None
    assert out.info == PageInfo(text="text")  # no info from the pipeline: the main text alone
    (rev,) = out.revised  # a revised page without a URL cannot be stored over anything
    assert rev.url == "http://a.test/1" and rev.info is info and rev.blocks == [block] and rev.markdown == "m1"
    assert rev.hrefs == [] and rev.content_hash == process._digest("old text")


def test_load_model_is_refused_by_a_pipeline_without_site_learning():
    process.init_state(PipelineConfig(mode="main", tokenizer="words"))
    try:
        # the default algorithm learns no model (SitePipeline.load_model comes with algorithm "site")
        pipe = process._pipe("http://a.test")
        assert process.load_model("http://a.test", "{}") == hasattr(pipe, "load_model")
    finally:
        process._PIPES.clear()


def test_a_small_site_learns_its_model_when_the_crawl_ends(tmp_path, capsys):
    """Six article pages (under the 20 pages learning waits for, crawled in well under 60 s):
    the site learns at the end of the crawl, in the worker process, and every page is revised."""
    from ..extraction.test_site_learning import article

    routes = {"/": Route(page("Home", [f"/a{k}.html" for k in range(6)]))}
    for k in range(6):
        routes[f"/a{k}.html"] = Route(article(k)[0])
    site = Site(routes).start()
    try:
        db = str(tmp_path / "s.db")
        assert main(["crawl", site.origin + "/", "--store", db, "--algorithm", "site", "--workers", "1",
                     "--tokenizer", "words", "--no-progress"]) == 0
        assert "site learning: 1 models, 7 pages revised" in capsys.readouterr().err
        assert main(["export", "--store", db, "--what", "pages"]) == 0
        recs = {r["url"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
        for k in range(6):
            r = recs[f"{site.origin}/a{k}.html"]
            assert r["cluster"] >= 0 and all(p in r["text"] for p in article(k)[1])
        assert main(["sites", "--store", db]) == 0
        [row] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert row["version"] == 1 and row["clusters"] and row["pages"] >= 6
    finally:
        site.stop()

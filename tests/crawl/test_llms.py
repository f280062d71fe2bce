"""llms.txt in (crawl --llms-txt: its links are seeds, bounded like sitemaps) and out
(export --format llms.txt), on a real loopback site."""
from __future__ import annotations

from blockcrawl.cli import main
from blockcrawl.crawl import CrawlConfig, crawl
from blockcrawl.crawl.sources.llmstxt import is_llms, parse_llms
from blockcrawl.llms import build
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import Store

from ..support.syncsite import SyncSite

SPEC = PipelineConfig(tokenizer="words")
LLMS = """# Sync site

> A test site.

## Docs

- [Page 5](/p5): the fifth
- [Page 9](http://{host}/p9 "nine"): the ninth
- [Full text](/llms-full.txt)
- [Elsewhere](mailto:x@y.test) and [again](/p5#part)
"""


def test_parse_llms_links_bounded():
    base = "http://a.test/llms.txt"
    sm = parse_llms(LLMS.format(host="a.test").encode(), base, max_urls=100, max_bytes=10_000)
    assert sm.urls == ("http://a.test/p5", "http://a.test/p9") and not sm.truncated and not sm.is_index
    assert parse_llms(LLMS.format(host="a.test").encode(), base, max_urls=1, max_bytes=10_000).urls == ("http://a.test/p5",)
    assert parse_llms(LLMS.format(host="a.test").encode(), base, max_urls=9, max_bytes=60).truncated
    assert is_llms("http://a.test/llms.txt") and is_llms("http://a.test/llms-full.txt") and not is_llms("http://a.test/x/llms.txt")
    big = ("[x](/a" + "(" * 5000 + "\n") * 50  # no link closes: one pass, nothing found
    assert parse_llms(big.encode(), base, max_urls=9, max_bytes=10**6).urls == ()


def pages(db) -> set[str]:
    with Store(db, readonly=True) as st:
        return {str(r["url"]).rstrip("/").rsplit("/", 1)[-1] for r in st.records("pages")}


def test_llms_txt_links_are_seeds_only_when_asked(tmp_path):
    site = SyncSite(12)
    site.llms = LLMS.format(host=site.origin.split("//")[1])
    try:
        for name, on in (("off.db", False), ("on.db", True)):
            with Store(tmp_path / name) as st:
                stats = crawl(st, CrawlConfig(seeds=[site.origin + "/"], max_depth=0, llms_txt=on, progress=False), SPEC)
            assert stats.errors == 0  # /llms-full.txt answers 404: a probe, no error
        assert pages(tmp_path / "off.db") == {"127.0.0.1:" + site.origin.rsplit(":", 1)[1]}
        assert pages(tmp_path / "on.db") - pages(tmp_path / "off.db") == {"p5", "p9"}
        site.llms = None
        with Store(tmp_path / "none.db") as st:  # a site without one: nothing more, no error
            stats = crawl(st, CrawlConfig(seeds=[site.origin + "/"], max_depth=0, llms_txt=True, progress=False), SPEC)
        assert stats.errors == 0 and len(pages(tmp_path / "none.db")) == 1
    finally:
        site.stop()


def test_export_writes_an_llms_txt_of_the_crawl(tmp_path, capsys):
    site = SyncSite(5)
    db = tmp_path / "x.db"
    try:
        with Store(db) as st:
            crawl(st, CrawlConfig(seeds=[site.origin + "/p0"], progress=False), SPEC)
    finally:
        site.stop()
    assert main(["export", "--store", str(db), "--what", "pages", "--format", "llms.txt"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("# ") and any(x.startswith("## ") for x in lines)
    entries = [x for x in lines if x.startswith("- [")]
    assert len(entries) == 5 and all(f"]({site.origin}/p" in x for x in entries)
    assert any("Page 3" in x for x in entries)
    # what it writes, read back as a discovery source, lists every page
    base = site.origin + "/llms.txt"
    assert len(parse_llms(out.encode(), base, max_urls=100, max_bytes=10**6).urls) == 5
    assert main(["export", "--store", str(db), "--format", "llms.txt"]) == 2  # chunks have no llms.txt
    assert "--what pages" in capsys.readouterr().err


def test_build_sections_by_kind_and_notes_from_headings():
    text = build([{"url": "http://a.test/", "title": "Home", "kind": "listing", "summary": "All about A."},
                  {"url": "http://a.test/x", "title": "X [draft]", "kind": "article", "summary": ""}],
                 {"http://a.test/x": ["Intro", "Usage"]})
    assert text.splitlines()[:3] == ["# Home", "", "> All about A."]
    assert "## Articles" in text and "## Listings" in text
    assert "- [X \\[draft\\]](http://a.test/x): Intro; Usage" in text

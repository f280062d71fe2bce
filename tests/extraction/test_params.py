"""The extraction parameters object (extraction.params): one frozen ExtractionParams passed down
from the selector, a tuning run a copy (dataclasses.replace), never a patch of module state."""
import dataclasses
import pickle
from dataclasses import replace

import pytest

import blockcrawl
from blockcrawl import PipelineConfig, SitePipeline
from blockcrawl.errors import ConfigError
from blockcrawl.extraction import auto
from blockcrawl.extraction.params import DEFAULTS, ExtractionParams
from blockcrawl.parse import load

from .test_auto import PROSE, article_page

NOTICE = "<p>This page is best viewed in an up-to-date web browser with style sheets (CSS) enabled.</p>"
SHORT = "<html><body><div class='story'>" + "".join(f"<p>{p}</p>" for p in PROSE[:2]) + "</div></body></html>"


def test_params_are_frozen_and_their_tables_read_only():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULTS.min_text = 1  # type: ignore[misc]
    assert DEFAULTS.type_rules is not None
    with pytest.raises(TypeError):
        DEFAULTS.type_rules["article"] = "region"  # type: ignore[index]
    # a table given as a dict is frozen too, and the defaults' table is not touched
    p = replace(DEFAULTS, type_rules={"listing": "region"})
    with pytest.raises(TypeError):
        p.type_rules["forum"] = "thread"  # type: ignore[index]
    assert "forum" in DEFAULTS.type_rules and "forum" not in p.type_rules
    # the crawl sends its config pickled to the parse workers
    assert pickle.loads(pickle.dumps(p)) == p and hash(p) == hash(replace(p))


def test_a_tuning_run_is_a_copy_passed_down_and_leaves_the_defaults_alone():
    """notice: a browser notice is no text by default; with notice=False it is the article's.
    The default run after the tuned one is the first one again (nothing was patched)."""
    html = article_page(NOTICE)
    dom = load(html)
    first = auto.select(dom)
    tuned = auto.select(dom, params=replace(DEFAULTS, notice=False))
    assert tuned != first and sum(tuned or ()) == sum(first or ()) + 1
    assert auto.select(dom) == first
    # the same through the library's entry point
    text = blockcrawl.extract(html).text
    assert "best viewed" not in text
    assert "best viewed" in blockcrawl.extract(html, params=replace(DEFAULTS, notice=False)).text
    assert blockcrawl.extract(html, params=DEFAULTS).text == text


def test_pipeline_config_carries_the_params():
    tuned = replace(DEFAULTS, notice=False)
    base = SitePipeline(PipelineConfig(mode="main", algorithm="auto"))
    cfg = PipelineConfig(mode="main", algorithm="auto", params=tuned)
    assert cfg.params is tuned and PipelineConfig().params is DEFAULTS
    html = article_page(NOTICE)
    a = "".join(b.text for b in base.process(html, "http://example.test/a").blocks)
    b = "".join(b.text for b in SitePipeline(cfg).process(html, "http://example.test/a").blocks)
    assert "best viewed" not in a and "best viewed" in b
    # the same through process_site (a page algorithm's site selector)
    c = "".join(b.text for r in SitePipeline(cfg).process_site([(html, "http://example.test/a", None)])
                for b in r.blocks)
    assert c == b


def test_algorithms_that_take_no_params_refuse_them():
    tuned = replace(DEFAULTS, min_text=1)
    for algorithm in ("tps", "site", "auto+template"):
        with pytest.raises(ConfigError, match="takes no extraction parameters"):
            PipelineConfig(mode="main", algorithm=algorithm, params=tuned)
    PipelineConfig(mode="main", algorithm="tps", params=replace(DEFAULTS))  # the defaults: fine
    with pytest.raises(ConfigError, match="ExtractionParams"):
        PipelineConfig(params={"min_text": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        blockcrawl.extract(SHORT, algorithm="tps", params=tuned)
    assert isinstance(DEFAULTS, ExtractionParams)


BOOK = ("<html><head><title>A Book</title></head><body><h1>The Book</h1><p>" + PROSE[0] + "</p>"
        "<ul class='details'><li><b>Publisher:</b> Zebra Press</li><li><b>ISBN-13:</b> 9780000000001</li>"
        "<li><b>Pages:</b> 320</li></ul></body></html>")


def test_the_record_block_reads_its_bounds_from_the_params():
    """pairs_max cuts the record's rows; the default keeps all three; the facts cache tells the
    two runs apart."""
    from blockcrawl.extraction.records import page_facts, record_block

    dom = load(BOOK)
    assert len(page_facts(dom)) == 3
    one = replace(DEFAULTS, pairs_max=1)
    rec = record_block(dom, 0, params=one)
    assert rec is not None and rec.rows == ("Publisher: Zebra Press",)
    assert len(page_facts(dom)) == 3
    pipe = SitePipeline(PipelineConfig(mode="main", algorithm="auto", params=one))
    recs = [b for b in pipe.process(BOOK, "http://example.test/b").blocks if b.kind == "record"]
    assert [r.rows for r in recs] == [("Publisher: Zebra Press",)]

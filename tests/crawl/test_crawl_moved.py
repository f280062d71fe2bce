"""The crawl modules' old flat names still import, warn, and give the moved module itself."""
from __future__ import annotations

import importlib
import sys

import pytest

import blockcrawl.crawl
from blockcrawl.crawl._moved import MOVED


def _fresh(name: str) -> None:
    sys.modules.pop(name, None)
    parent, _, child = name.rpartition(".")
    if hasattr(sys.modules[parent], child) and parent == "blockcrawl.crawl":
        delattr(sys.modules[parent], child)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_name_warns_and_is_the_moved_module(old: str) -> None:
    name = f"blockcrawl.crawl.{old}"
    _fresh(name)
    with pytest.warns(DeprecationWarning, match=f"blockcrawl.crawl.{MOVED[old]}"):
        mod = importlib.import_module(name)
    assert mod is importlib.import_module(f"blockcrawl.crawl.{MOVED[old]}")


def test_from_import_of_an_old_name_gives_the_same_objects() -> None:
    _fresh("blockcrawl.crawl.fetch")
    with pytest.warns(DeprecationWarning):
        from blockcrawl.crawl.fetch import AiohttpFetcher
    from blockcrawl.crawl.net.fetch import AiohttpFetcher as now
    assert AiohttpFetcher is now


def test_the_engine_names_and_pipeline_spec_warn() -> None:
    from blockcrawl.crawl import engine
    from blockcrawl.crawl.analysis import process
    from blockcrawl.pipeline import PipelineConfig
    with pytest.warns(DeprecationWarning, match="blockcrawl.crawl.Crawler"):
        assert engine.Crawler is blockcrawl.crawl.Crawler
    with pytest.warns(DeprecationWarning, match="PipelineConfig"):
        assert process.PipelineSpec is PipelineConfig
    with pytest.raises(AttributeError):
        engine.nothing  # noqa: B018


def test_a_name_never_there_is_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("blockcrawl.crawl.nothing_here")

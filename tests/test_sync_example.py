"""examples/sync_qdrant.py against embedded Qdrant (its own client, extra `sync`): crawl a loopback
site, sync, change / remove / add pages, recrawl, sync again: the collection equals
`export --what chunks --vectors`. Skipped when qdrant-client is not installed."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from blockcrawl.cli import main
from blockcrawl.crawl import CrawlConfig, crawl
from blockcrawl.index import build_index
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import Store

from .store.test_store import WordEmbedder
from .support.syncsite import SyncSite

pytest.importorskip("qdrant_client", reason="the sync example needs qdrant-client: pip install 'blockcrawl[sync]'")

SPEC = PipelineConfig(tokenizer="words")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sync_qdrant.py"


def load_example():
    spec = importlib.util.spec_from_file_location("sync_qdrant", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def export(capsys, db: Path) -> dict[int, dict]:
    assert main(["export", "--store", str(db), "--vectors"]) == 0
    return {r["id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}


def test_the_qdrant_collection_follows_the_crawl(tmp_path, capsys):
    ex = load_example()
    site = SyncSite(20)
    db, qd = tmp_path / "site.db", tmp_path / "qdrant"
    try:
        with Store(db) as st:
            crawl(st, CrawlConfig(seeds=[site.origin + "/p0"], progress=False), SPEC)
            build_index(st, embedder=WordEmbedder())
        first = ex.sync(str(db), qd)
        want = export(capsys, db)
        assert first["how"] == "full load" and first["points"] == len(want)
        assert ex.dump(qd) == want
        for i in (2, 7, 11):
            site.edit(i)
        site.edit(9, 0)
        site.n = 23  # p20..p22: p20 and p22 given as seeds, p21 linked from p20
        site.status.update({4: 404, 15: 410})
        site.noindex.add(13)
        with Store(db) as st:
            crawl(st, CrawlConfig(seeds=[site.origin + "/p20", site.origin + "/p22"], recrawl=True, progress=False),
                  SPEC)
            build_index(st, embedder=WordEmbedder())
        second = ex.sync(str(db), qd)
        want2 = export(capsys, db)
        assert second["how"] == "changes" and 0 < second["operations"] < len(want2)
        got = ex.dump(qd)
        assert got == want2
        assert set(want2) - set(want) and set(want) - set(want2)  # chunks came and went
        assert {r["url"].rstrip("/").rsplit("/", 1)[-1] for r in want2.values()} >= {"p20", "p21", "p22"}
        assert not {r["url"].rstrip("/").rsplit("/", 1)[-1] for r in got.values()} & {"p4", "p13", "p15"}
        third = ex.sync(str(db), qd)  # nothing changed since: nothing to do
        assert third["operations"] == 0 and ex.dump(qd) == want2
    finally:
        site.stop()

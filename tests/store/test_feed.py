"""The changes feed (blockcrawl.feed, `blockcrawl changes`, `export --vectors`): applied in order to an
empty index, every feed reproduces `export --what chunks` exactly, on both store backends."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import blockcrawl
from blockcrawl.cli import main
from blockcrawl.crawl import CrawlConfig, crawl
from blockcrawl.errors import ConfigError, StoreError
from blockcrawl.feed import changes_page, parse_since
from blockcrawl.index import build_index
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import open_store

from ..support.pgserver import fresh_db
from ..support.syncsite import SyncSite
from .test_store import WordEmbedder

SPEC = PipelineConfig(tokenizer="words")
FIELDS = ("url", "block_position", "chunk_index", "heading_path", "text", "block_hash", "n_tokens")


def apply(index: dict[int, dict[str, Any]], feed: list[dict[str, Any]]) -> None:
    """What a consumer does with a feed: upsert by chunk id, delete by chunk id."""
    for op in feed:
        if op["op"] == "delete":
            index.pop(op["chunk_id"], None)
        else:
            index[op["chunk_id"]] = {"id": op["chunk_id"], **{k: op[k] for k in FIELDS},
                                     **({"model": op["model"], "vector": op["vector"]} if "vector" in op else {})}


def export(capsys, location: str, *more: str) -> dict[int, dict[str, Any]]:
    code = main(["export", "--store", location, *more])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {r["id"]: r for r in map(json.loads, out.splitlines())}


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return fresh_db(request.getfixturevalue("pg_server"))
    return str(tmp_path / "f.db")


def test_feeds_applied_in_order_reproduce_the_export_with_vectors(location, capsys):
    site = SyncSite(12)
    index: dict[int, dict[str, Any]] = {}
    try:
        with open_store(location) as st:
            crawl(st, CrawlConfig(seeds=[site.origin + "/p0"], progress=False), SPEC)
            build_index(st, embedder=WordEmbedder())
            first = list(blockcrawl.changes(st, since=0, vectors=True))
        assert {r["op"] for r in first} == {"upsert"}
        apply(index, first)
        assert index == export(capsys, location, "--vectors")
        assert all(r["model"] == "words-16" and (r["vector"] is None or len(r["vector"]) == 16) for r in index.values())
        site.edit(3)
        site.edit(10, 0)
        site.n = 13
        site.status[5] = 404
        site.noindex.add(7)
        with open_store(location, create=False) as st:
            crawl(st, CrawlConfig(seeds=[], recrawl=True, progress=False), SPEC)
            build_index(st, embedder=WordEmbedder())
            second = list(blockcrawl.changes(st, since="last", vectors=True))
            assert second == list(blockcrawl.changes(st, since=1, vectors=True))
            pages = {p["url"].rstrip("/").rsplit("/", 1)[-1]: p for p in blockcrawl.changes(st, "last", what="pages",
                                                                                              diff=True)}
            paged, since = [], "last"
            while True:  # the HTTP API's pages, cursor after cursor
                part = changes_page(st, since, 4, vectors=True)
                paged += part["changes"]
                since = part["next"]
                if not part["more"]:
                    break
            assert changes_page(st, since, 4)["changes"] == []
    finally:
        site.stop()
    assert paged == second
    ops = {r["op"] for r in second}
    assert ops == {"upsert", "delete"} and len(second) < len(first)
    apply(index, second)
    want = export(capsys, location, "--vectors")
    assert index == want
    apply(index, second)  # twice: the same
    assert index == want
    plain: dict[int, dict[str, Any]] = {}
    apply(plain, [{k: v for k, v in r.items() if k not in ("vector", "model")} for r in first + second])
    assert plain == export(capsys, location)
    # the page summary: status, reason, and the main text's diff
    assert pages["p3"]["status"] == "changed" and pages["p5"]["status"] == "removed"
    assert pages["p5"]["reason"] == "gone 404" and pages["p7"]["reason"] == "noindex"
    assert pages["p12"]["status"] == "added" and pages["p1"]["status"] == "unchanged"
    diff = pages["p3"]["diff"].splitlines()
    assert any(x.startswith("-") and "version 1" in x for x in diff) and any(x.startswith("+") and "version 2" in x
                                                                              for x in diff)
    assert pages["p1"]["diff"] == ""


def test_since_forms_and_bad_input_in_one_line(tmp_path, capsys):
    assert parse_since("last") == ("last", 0) and parse_since("4") == ("crawl", 4)
    assert parse_since("cursor:17") == ("cursor", 17)
    assert parse_since("2026-12-01") == parse_since("2026-12-01T00:00:00Z") == parse_since("2026-12-01T01:00+01:00")
    with pytest.raises(ConfigError):
        parse_since("yesterday")
    site = SyncSite(4)
    db = str(tmp_path / "s.db")
    try:
        with open_store(db) as st:
            crawl(st, CrawlConfig(seeds=[site.origin + "/p0"], progress=False), SPEC)
    finally:
        site.stop()
    for args in (["--since", "yesterday"], ["--what", "pages", "--vectors"], ["--diff"], ["--vectors"]):
        code = main(["changes", "--store", db, *args])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1, (args, err)
    assert "not indexed" in err[0]
    code = main(["changes", "--store", db, "--since", "2000-01-01"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and len(out) == len(export(capsys, db)) and all(json.loads(x)["op"] == "upsert" for x in out)


def test_compaction_keeps_the_newest_crawl_and_refuses_what_it_dropped(tmp_path, capsys):
    site = SyncSite(6)
    db = str(tmp_path / "c.db")
    try:
        with open_store(db) as st:
            crawl(st, CrawlConfig(seeds=[site.origin + "/p0"], progress=False), SPEC)
        for i in (1, 2):
            site.edit(i)
            with open_store(db, create=False) as st:
                crawl(st, CrawlConfig(seeds=[], recrawl=True, progress=False), SPEC)
    finally:
        site.stop()
    with open_store(db, readonly=True) as st:
        last = list(blockcrawl.changes(st, "last"))
    assert main(["changes", "--store", db, "--compact", "0"]) == 0
    assert "changes compacted" in capsys.readouterr().err
    with open_store(db, readonly=True) as st:
        assert [c["compacted"] > 0 for c in st.crawls()] == [True, True, False]
        assert list(blockcrawl.changes(st, "last")) == last  # the newest crawl's changes are kept
        assert list(blockcrawl.changes(st, 2)) == last
        for since in (0, 1, "2000-01-01"):
            with pytest.raises(StoreError, match="compacted"):
                list(blockcrawl.changes(st, since))
    code = main(["changes", "--store", db, "--since", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "export --what chunks" in err[0]


def test_the_http_api_pages_the_feed_by_cursor(tmp_path):
    import urllib.error
    import urllib.parse
    import urllib.request

    from blockcrawl.retrieval.serve import make_server, serve_in_thread

    site = SyncSite(6)
    db = tmp_path / "h.db"
    try:
        with open_store(db) as st:
            crawl(st, CrawlConfig(seeds=[site.origin + "/p0"], progress=False), SPEC)
            build_index(st, embedder=WordEmbedder())
            want = list(blockcrawl.changes(st, since=0, vectors=True))
    finally:
        site.stop()
    srv = make_server(db, "127.0.0.1", 0, embedder=WordEmbedder(), access_log=False)
    serve_in_thread(srv)
    base = "http://{}:{}/api/changes?".format(*srv.server_address)

    def get(**params: str) -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(base + urllib.parse.urlencode(params), timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
    try:
        got, since, pages = [], "0", 0
        while True:
            status, body = get(since=since, limit="7", vectors="1")
            assert status == 200
            got += body["changes"]
            since, pages = body["next"], pages + 1
            if not body["more"]:
                break
        assert got == want and pages == -(-len(want) // 7)
        assert get(since="soon")[0] == 400 and get(limit="0")[0] == 400 and get(limit="x")[0] == 400
        assert get(since=since)[1]["changes"] == []
    finally:
        srv.shutdown()
        srv.server_close()


def test_crawl_keep_changes_compacts_when_the_crawl_finishes(tmp_path, capsys):
    site = SyncSite(4)
    db = str(tmp_path / "k.db")
    base = ["crawl", "--no-progress", "--workers", "0", "--tokenizer", "words", "--store", db]
    try:
        assert main([*base, site.origin + "/p0"]) == 0
        site.edit(1)
        assert main([*base, "--recrawl", "--keep-changes", "1h"]) == 0  # crawl 1 ended just now: kept
        site.edit(2)
        assert main([*base, "--recrawl", "--keep-changes", "0"]) == 0
    finally:
        site.stop()
    capsys.readouterr()
    assert main(["changes", "--store", db, "--crawls"]) == 0
    crawls = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(c["id"], c["finished"], c["compacted"] > 0) for c in crawls] == [(1, 1, True), (2, 1, True), (3, 1, False)]
    assert main(["changes", "--store", db, "--what", "pages"]) == 0
    pages = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert sorted(p["status"] for p in pages) == ["changed", "unchanged", "unchanged", "unchanged"]


def test_vectors_asked_before_the_index_caught_up_is_one_line_and_no_output(tmp_path, capsys):
    site = SyncSite(4)
    db = str(tmp_path / "v.db")
    try:
        with open_store(db) as st:
            crawl(st, CrawlConfig(seeds=[site.origin + "/p0"], progress=False), SPEC)
            build_index(st, embedder=WordEmbedder())
        site.edit(1)
        with open_store(db, create=False) as st:
            crawl(st, CrawlConfig(seeds=[], recrawl=True, progress=False), SPEC)
    finally:
        site.stop()
    capsys.readouterr()
    for args in (["changes", "--since", "last", "--vectors"], ["export", "--vectors"]):
        code = main([args[0], "--store", db, *args[1:]])
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "blockcrawl index" in err, (args, err)
    assert main(["changes", "--store", db, "--since", "last"]) == 0  # without vectors: fine
    assert capsys.readouterr().out

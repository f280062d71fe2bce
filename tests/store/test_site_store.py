"""Store schema 5: page info with each page, site models, their export and the `sites` command,
the page-info search filters (kind, lang, since), and a version-4 store migrated in place."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from blockcrawl.cli import main
from blockcrawl.index import build_index
from blockcrawl.records import Block, Chunk, PageInfo, PageMeta
from blockcrawl.retrieval import SearchError, search
from blockcrawl.store import SCHEMA_VERSION, Store

from ..retrieval.test_serve import HashEmbedder
from .test_store_sqlite import columns

EMB = HashEmbedder()

# A store as schema version 4 wrote it (blockcrawl/store/schema.py at e590669), with one page.
V4_SCHEMA = """
CREATE TABLE pages (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, final_url TEXT, status INTEGER,
    content_type TEXT, title TEXT, content_hash TEXT, fetched_at REAL, markdown TEXT, etag TEXT,
    last_modified TEXT, body_hash TEXT);
CREATE TABLE blocks (id INTEGER PRIMARY KEY, page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, kind TEXT NOT NULL, heading_path TEXT NOT NULL, tag_path TEXT NOT NULL,
    text TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX blocks_page ON blocks(page_id);
CREATE INDEX blocks_hash ON blocks(hash);
CREATE TABLE chunks (id INTEGER PRIMARY KEY, page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    block_position INTEGER NOT NULL, chunk_index INTEGER NOT NULL, url TEXT NOT NULL, heading_path TEXT NOT NULL,
    text TEXT NOT NULL, block_hash TEXT NOT NULL, n_tokens INTEGER NOT NULL, context TEXT NOT NULL DEFAULT '');
CREATE INDEX chunks_page ON chunks(page_id);
CREATE TABLE frontier (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, fetch_url TEXT, host TEXT NOT NULL,
    depth INTEGER NOT NULL, kind TEXT NOT NULL DEFAULT 'page', state INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0, not_before REAL NOT NULL DEFAULT 0, hops INTEGER NOT NULL DEFAULT 0,
    trail INTEGER NOT NULL DEFAULT 0, via TEXT, status INTEGER, error TEXT, updated REAL);
CREATE INDEX frontier_state ON frontier(state);
CREATE TABLE crawl_log (id INTEGER PRIMARY KEY, t REAL NOT NULL, url TEXT NOT NULL, event TEXT NOT NULL,
    status INTEGER, error TEXT, detail TEXT, bytes INTEGER, elapsed REAL);
CREATE TABLE crawl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO pages(id, url, final_url, status, title, etag, markdown) VALUES
    (1, 'http://a.test/', 'http://a.test/', 200, 'A', '"v1"', '# A');
INSERT INTO blocks VALUES (1, 1, 0, 'text', '["A"]', 'html/body/p', 'old text', 'h1');
INSERT INTO chunks VALUES (1, 1, 0, 0, 'http://a.test/', '["A"]', 'old text', 'h1', 2, 'A');
PRAGMA application_id=1651262322;
PRAGMA user_version=4;
"""


def v4_store(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(V4_SCHEMA)
    db.commit()
    db.close()
    return path


def info(text: str, kind: str = "article", lang: str = "en", published: str = "", cluster: int = -1) -> PageInfo:
    return PageInfo(text=text, kind=kind, kind_score=0.8 if kind == "article" else 0.2, summary=text[:20],
                    meta=PageMeta(title=text[:10], author="Ann Author", published=published, language=lang),
                    cluster=cluster)


def content(url: str, texts: list[str]) -> tuple[list[Block], list[Chunk]]:
    bl = [Block(t, t, ("H",), "html/body/p", i, url, f"h{url}{i}") for i, t in enumerate(texts)]
    ch = [Chunk(t, url, ("H",), i, 0, f"h{url}{i}", len(t.split())) for i, t in enumerate(texts)]
    return bl, ch


# ---- migration --------------------------------------------------------------------------------------

def test_version_4_store_is_read_as_it_is_and_migrated_by_a_writer(tmp_path):
    path = v4_store(tmp_path / "v4.db")
    with Store(path, readonly=True) as st:  # a reader never migrates: the new keys read as empty
        assert st.schema_version == 4
        (rec,) = st.records("pages")
        assert rec["url"] == "http://a.test/" and rec["n_blocks"] == 1
        assert (rec["text"], rec["kind"], rec["kind_score"], rec["summary"], rec["cluster"], rec["meta"]) == \
            (None, None, None, None, -1, {})
        assert st.site_models() == []
        assert st.pages_matching(kind="article") == [] and st.pages_matching() == [1]
    assert "kind" not in columns(path, "pages")
    with Store(path) as st:
        assert st.schema_version == SCHEMA_VERSION
        (rec,) = st.records("pages")  # the old row kept, its info empty, cluster -1
        assert rec["title"] == "A" and rec["text"] is None and rec["cluster"] == -1 and rec["meta"] == {}
        st.save_site_model("http://a.test", '{"format": 1}', version=1, pages=3, fallbacks=0)
        bl, ch = content("http://a.test/b", ["new text"])
        st.save_page("http://a.test/b", bl, ch, info=info("new text"))
    assert {"text", "kind", "kind_score", "summary", "meta", "cluster"} <= columns(path, "pages")
    assert {"site", "version", "model", "learned_at", "pages", "fallbacks"} == columns(path, "site_models")
    for store in (path, tmp_path / "new.db"):  # the filters' covering index, in a migrated and a new store
        Store(store).close()
        db = sqlite3.connect(store)
        assert db.execute("SELECT 1 FROM sqlite_master WHERE type='index' AND name='pages_info'").fetchone()
        db.close()
    with Store(path) as st:  # opening again migrates nothing
        assert st.schema_version == SCHEMA_VERSION
        assert [r["site"] for r in st.site_models()] == ["http://a.test"]
        assert [r["kind"] for r in st.records("pages")] == [None, "article"]
        assert st.page_markdown().__next__()[2] == "# A"


# ---- page info and site models -------------------------------------------------------------------

def test_page_info_is_stored_exported_and_replaced_with_the_content(tmp_path):
    url = "http://a.test/x"
    with Store(tmp_path / "s.db") as st:
        bl, ch = content(url, ["one", "two"])
        st.save_page(url, bl, ch, status=203, title="X", etag='"e"', last_modified="Mon", body_hash="b", markdown="m",
                     content_hash="c1", info=info("one two", published="2024-03-05", cluster=-1))
        (rec,) = st.records("pages")
        assert rec["text"] == "one two" and rec["kind"] == "article" and rec["kind_score"] == 0.8
        assert rec["summary"] == "one two" and rec["cluster"] == -1
        assert rec["meta"] == {"title": "one two", "author": "Ann Author", "published": "2024-03-05", "modified": "",
                               "language": "en", "description": "", "canonical": "", "site_name": ""}
        json.dumps(rec)
        fetched = st.db.execute("SELECT fetched_at FROM pages").fetchone()[0]
        # a page revised by a learned model: content and info replaced, what the fetch gave kept
        bl, ch = content(url, ["only one"])
        assert st.replace_content(url, bl, ch, markdown="m2", content_hash="c2",
                                  info=info("only one", kind="listing", cluster=4)) == rec["id"]
        assert st.replace_content("http://a.test/never", bl, ch) is None
        (rec,) = st.records("pages")
        assert (rec["text"], rec["kind"], rec["cluster"], rec["content_hash"], rec["n_blocks"], rec["n_chunks"]) == \
            ("only one", "listing", 4, "c2", 1, 1)
        assert (rec["status"], rec["title"]) == (203, "X")
        assert st.db.execute("SELECT etag, last_modified, body_hash, fetched_at, markdown FROM pages").fetchone() == \
            ('"e"', "Mon", "b", fetched, "m2")
        assert [c["text"] for c in st.records("chunks")] == ["only one"]
        # saved again without info (--no-extract): the info goes, as the Markdown does
        st.save_page(url, [], [])
        (rec,) = st.records("pages")
        assert rec["text"] is None and rec["meta"] == {} and rec["cluster"] == -1


def test_site_models_saved_replaced_and_listed(tmp_path):
    with Store(tmp_path / "s.db") as st:
        assert st.site_models() == []
        st.save_site_model("http://b.test", '{"v": 1}', version=1, pages=20, fallbacks=2)
        st.save_site_model("http://a.test:8080", '{"v": 1}', version=1, pages=5, fallbacks=0)
        first = st.site_models()[1]["learned_at"]
        st.save_site_model("http://b.test", '{"v": 1}', version=1, pages=21, fallbacks=3)  # counts only
        rows = st.site_models()
        assert [(r["site"], r["version"], r["pages"], r["fallbacks"]) for r in rows] == \
            [("http://a.test:8080", 1, 5, 0), ("http://b.test", 1, 21, 3)]
        assert rows[1]["learned_at"] == first  # the same version keeps its time
        st.save_site_model("http://b.test", '{"v": 2}', version=2, pages=1, fallbacks=0)
        row = st.site_models()[1]
        assert (row["model"], row["version"]) == ('{"v": 2}', 2) and row["learned_at"] >= first
        assert set(row) == {"site", "version", "model", "learned_at", "pages", "fallbacks"}


# ---- search filters by page info ------------------------------------------------------------------

@pytest.fixture(scope="module")
def news(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("news") / "news.db"
    with Store(path) as st:
        # 60 English articles of 2023 full of alpha: they fill any unfiltered top 300 of "alpha"
        for i in range(60):
            url = f"http://n.test/a{i:02d}"
            bl, ch = content(url, [f"alpha alpha alpha beta{i} n{j}" for j in range(6)])
            st.save_page(url, bl, ch, info=info("alpha", published=f"2023-0{1 + i % 9}-15"))
        filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 3
        for url, kind, lang, published in (("http://n.test/list", "listing", "en", ""),
                                           ("http://n.test/de", "article", "de", "2024-05-01T08:00:00+02:00"),
                                           ("http://n.test/gb", "article", "en-GB", "2024-02-29"),
                                           ("http://n.test/other", "other", "", "2024-06-01")):
            bl, ch = content(url, [f"{filler} gamma alpha {filler}"])
            st.save_page(url, bl, ch, info=info("x", kind=kind, lang=lang.lower(), published=published))
        bl, ch = content("http://n.test/noinfo", [f"{filler} alpha {filler}"])
        st.save_page("http://n.test/noinfo", bl, ch)  # stored without info: never matches a filter
    build_index(path, embedder=EMB)
    return path


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_page_info_filters_apply_before_the_top_k_cut(news, mode):
    with Store(news, readonly=True) as st:
        def urls(**kw: object) -> set[str]:
            return {h.url for h in search(st, "alpha", 10, mode, EMB, **kw)}  # type: ignore[arg-type]

        assert not {u for u in {h.url for h in search(st, "alpha", 100, mode, EMB, per_page=None)}
                    if not u.startswith("http://n.test/a")}  # unfiltered: only the 60 articles
        assert urls(kind="listing") == {"http://n.test/list"}
        assert urls(kind="other") == {"http://n.test/other"}
        assert urls(lang="de") == {"http://n.test/de"}
        assert urls(lang="EN-gb") == {"http://n.test/gb"}
        assert len(st.pages_matching(lang="en")) == 62  # the articles, the listing and en-gb
        assert urls(lang="en-us") == set()
        assert urls(since="2024-01-01") == {"http://n.test/de", "http://n.test/gb", "http://n.test/other"}
        assert urls(since="2024-03-01", kind="article") == {"http://n.test/de"}
        assert urls(since="2024-03-01", lang="de", site="n.test", url_prefix="http://n.test/d") == {"http://n.test/de"}
        assert urls(since="2030-01-01") == set()
        assert st.pages_matching(kind="article", lang="en", since="2024-02-29") == [
            st.pages_matching(url_prefix="http://n.test/gb")[0]]


@pytest.mark.parametrize("kw,msg", [({"kind": "news"}, "kind must"), ({"lang": "english!"}, "lang must"),
                                    ({"since": "yesterday"}, "since must"), ({"since": "2024-13-01"}, "since must")])
def test_bad_page_info_filters_are_one_line_errors(news, kw, msg):
    with pytest.raises(SearchError, match=msg):
        search(news, "alpha", 5, "keyword", EMB, **kw)


# ---- export and the sites command ----------------------------------------------------------------

def test_export_pages_has_the_info_keys(tmp_path, capsys):
    path = tmp_path / "s.db"
    with Store(path) as st:
        bl, ch = content("http://a.test/", ["text"])
        st.save_page("http://a.test/", bl, ch, info=info("the text", published="2024-01-02"))
    assert main(["export", "--store", str(path), "--what", "pages"]) == 0
    (rec,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rec["text"] == "the text" and rec["kind"] == "article" and rec["meta"]["published"] == "2024-01-02"
    assert {"kind_score", "summary", "cluster", "n_blocks"} <= set(rec)


def test_sites_lists_models_leniently(tmp_path, capsys):
    path = tmp_path / "s.db"
    with Store(path) as st:
        st.save_site_model("http://a.test", json.dumps({"format": 2, "clusters": [
            {"id": 0, "pages": 12, "patterns": ["/news/*"], "template": {"big": "tree"}, "name": "article"},
            {"id": 3, "pages": ["/x", "/y"], "patterns": "/tag/*"}]}), version=2, pages=40, fallbacks=4)
        st.save_site_model("http://b.test", json.dumps({"clusters": {"7": {"patterns": []}}}), version=1, pages=0,
                           fallbacks=0)
        st.save_site_model("http://c.test", "not json", version=1, pages=1, fallbacks=1)
    assert main(["sites", "--store", str(path)]) == 0
    a, b, c = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert a["site"] == "http://a.test" and a["version"] == 2 and a["format"] == 2
    assert (a["pages"], a["fallbacks"], a["fallback_rate"]) == (40, 4, 0.1)
    assert a["learned_at"].endswith("+00:00")
    assert a["clusters"] == [{"id": 0, "pages": 12, "patterns": ["/news/*"], "name": "article"},
                             {"id": 3, "pages": 2, "patterns": ["/tag/*"]}]
    assert b["clusters"] == [{"id": "7", "pages": None, "patterns": []}] and b["fallback_rate"] is None
    assert c["clusters"] == [] and "not JSON" in c["error"]
    assert main(["sites", "--store", str(path), "--model"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["model"]["clusters"][0]["template"] == {"big": "tree"}


def test_sites_without_models_and_on_a_bad_store(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["sites", "--help"])
    assert e.value.code == 0 and "blockcrawl sites --store news.db" in capsys.readouterr().out
    path = tmp_path / "s.db"
    Store(path).close()
    assert main(["sites", "--store", str(path)]) == 0
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.splitlines()) == 1 and "no site models" in out.err
    assert main(["sites", "--store", str(v4_store(tmp_path / "v4.db"))]) == 0  # an older store has none either
    assert "no site models" in capsys.readouterr().err
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 100)
    for store in (bad, tmp_path / "missing.db"):
        assert main(["sites", "--store", str(store)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and err.startswith("blockcrawl sites: ") and "Traceback" not in err

"""The store contract: every test here runs against both backends, an SQLite file in a temporary
folder and a PostgreSQL database on a real server (tests/support/pgserver.py; skipped without one, failed
with BLOCKCRAWL_REQUIRE_SERVERS=1). The SQLite file's own faults are in tests/store/test_store_sqlite.py,
PostgreSQL's own (migrations under concurrency, bm25 equal to FTS5's, DSNs) in tests/store/test_postgres.py."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from blockcrawl import SitePipeline
from blockcrawl.cli import main
from blockcrawl.crawl.frontier import DONE, IN_FLIGHT, QUEUED, Item
from blockcrawl.errors import NotIndexed, StoreError, StoreMissing
from blockcrawl.index import build_index
from blockcrawl.records import Block, Chunk, PageInfo, PageMeta
from blockcrawl.retrieval import search
from blockcrawl.store import (
    SCHEMA_VERSION,
    ChunkSource,
    KeywordIndex,
    PageSink,
    RecordSource,
    SearchStore,
    VectorIndex,
    open_store,
)

from ..chunk.test_sections_dedup_chunks import PAGE1
from ..support.pgserver import fresh_db
from ..support.search_pages import PAGES

ROOT = Path(__file__).resolve().parents[2]


class WordEmbedder:
    """A model-free embedder: hashed bag of words, unit length (enough to index and search)."""

    name, dim = "words-16", 16

    def embed(self, texts: list[str]) -> np.ndarray:
        m = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                m[i, hashlib.sha1(w.encode()).digest()[0] % self.dim] += 1.0
        m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-9)
        return m


def indexed(path: Path) -> Path:
    """An SQLite store at path holding PAGES, indexed (tests/store/test_store_sqlite.py)."""
    from ..support.search_pages import fill

    fill(path)
    with open_store(path, create=False) as st:
        build_index(st, embedder=WordEmbedder())
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, list[str]]:
    """The command in this process (a traceback would fail the test): exit code, stdout, stderr lines."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err.strip().splitlines()


def cli(*args: str, **kw: object) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    return subprocess.Popen([sys.executable, "-m", "blockcrawl", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)  # type: ignore[call-overload]


# ---- the two backends -----------------------------------------------------------------------------

@dataclass
class Backend:
    kind: str  # "sqlite" | "postgres"
    location: str  # a file path or a postgresql:// URL

    def open(self, **kw: Any) -> Any:
        return open_store(self.location, **kw)

    def fill(self, pages: dict[str, str] | None = None, info: bool = False) -> None:
        """pages (default PAGES) stored as the crawl stores them; with info, every other page gets
        page info (kind, language, date, cluster)."""
        pipe = SitePipeline()
        with self.open() as st:
            for n, (url, html) in enumerate((PAGES if pages is None else pages).items()):
                r = pipe.process(html, url)
                kw: dict[str, Any] = {}
                if info and n % 2 == 0:
                    kw["info"] = PageInfo(r.text[:200], "article" if n % 4 == 0 else "listing", 0.25 * (n % 4),
                                          "a summary", PageMeta(title=r.title, language="en-gb" if n % 3 == 0 else "de",
                                                                published=f"2024-0{1 + n % 9}-05"), cluster=n % 3)
                st.save_page(url, r.blocks, r.chunks, title=r.title, content_hash=str(len(r.text)),
                             markdown=f"# {url}" if n % 3 else None, **kw)

    def indexed(self) -> Backend:
        self.fill()
        with self.open(create=False) as st:
            build_index(st, embedder=WordEmbedder())
        return self

    def raw(self, sql: str) -> None:
        """One statement behind the store's back (another program's connection)."""
        if self.kind == "sqlite":
            import sqlite3

            db = sqlite3.connect(self.location)
            db.execute(sql)
            db.commit()
            db.close()
        else:
            import psycopg

            with psycopg.connect(self.location, autocommit=True) as db:
                db.execute(sql)  # type: ignore[arg-type]

    def set_version(self, v: int) -> None:
        if self.kind == "sqlite":
            self.raw(f"PRAGMA user_version={v}")
        else:
            self.raw(f"UPDATE blockcrawl_meta SET value='{v}' WHERE key='schema_version'")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "postgres":
        server = request.getfixturevalue("pg_server")  # skips (or fails in CI) without a server
        return Backend("postgres", fresh_db(server))
    return Backend("sqlite", str(tmp_path / "s.db"))


def chunk(text: str, url: str = "http://x.test/", pos: int = 0, idx: int = 0, heading: tuple[str, ...] = ("H",),
          context: str = "") -> Chunk:
    return Chunk(text, url, heading, pos, idx, f"h{pos}", len(text.split()), context)


def block(text: str, pos: int, kind: str = "text") -> Block:
    return Block(text, text, ("H",), "body/p", pos, None, f"h{pos}", kind)


# ---- opening ----------------------------------------------------------------------------------------

def test_new_store_at_the_current_version(backend):
    with pytest.raises(StoreMissing):  # nothing there yet, and nothing made by asking
        backend.open(create=False)
    with pytest.raises(StoreMissing):
        backend.open(readonly=True)
    with backend.open() as st:
        assert st.schema_version == SCHEMA_VERSION
        assert isinstance(st, PageSink) and isinstance(st, ChunkSource)
        assert st.count_chunks() == 0 and st.site_models() == [] and st.index_meta() == {}
    with backend.open(create=False) as st:  # opening again migrates nothing
        assert st.schema_version == SCHEMA_VERSION
    with backend.open(readonly=True) as st:
        assert isinstance(st, (SearchStore, RecordSource, KeywordIndex, VectorIndex))
        with pytest.raises(StoreError, match="read-only"):
            st.frontier()
        with pytest.raises(StoreError, match="read-only"):
            st.save_page("http://x.test/", [], [])


def test_newer_store_is_refused_in_one_line(backend, capsys):
    backend.fill({})
    backend.set_version(SCHEMA_VERSION + 1)
    for kw in ({}, {"readonly": True}):
        with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}.*upgrade blockcrawl"):
            backend.open(**kw)
    for args in (["export"], ["search", "x", "--mode", "keyword"], ["index"]):
        code, _, err = run_cli(capsys, *args, "--store", backend.location)
        assert code == 2 and len(err) == 1 and "upgrade blockcrawl" in err[0], (args, err)


def test_damage_found_after_opening_names_the_store(backend):
    backend.fill()
    with backend.open(readonly=True) as st:
        backend.raw("DROP TABLE blocks")
        with pytest.raises(StoreError) as e:
            st.has_blocks()
        assert "blocks" in str(e.value) and backend.location.split("@")[-1] in str(e.value)
        assert "pg-test-pw" not in str(e.value)  # a URL's password is never shown


# ---- pages ------------------------------------------------------------------------------------------

def test_pages_saved_replaced_and_deleted(backend):
    with backend.open() as st:
        blocks = [block("Intro", 0, "heading"), block("First text here", 1), block("Second text", 2)]
        chunks = [chunk("Intro", pos=0), chunk("First text here", pos=1), chunk("Second text", pos=2)]
        pid = st.save_page("http://x.test/", blocks, chunks, title="X", etag='"e1"', last_modified="Mon",
                           body_hash="b1")
        other = st.save_page("http://y.test/a", [block("Other", 0)], [chunk("Other", "http://y.test/a")])
        st.commit()
        assert st.has_blocks() and st.count_chunks() == 4
        assert [t for _, t in st.page_chunks(pid)] == ["Intro", "First text here", "Second text"]
        assert st.block_texts([(pid, 1), (pid, 2), (pid, 9), (other, 0)]) == {
            (pid, 1): "First text here", (pid, 2): "Second text", (other, 0): "Other"}
        ids, pages = st.chunk_pages()
        assert ids.tolist() == sorted(ids.tolist()) and sorted(set(pages.tolist())) == sorted([pid, other])
        got = st.chunks_by_id([*ids.tolist(), 10**9])
        assert set(got) == set(ids.tolist()) and got[ids[0]].title == "X" and got[ids[0]].heading_path == ("H",)
        # saved again under the same URL: the same page, its content replaced
        assert st.save_page("http://x.test/", [block("New", 0)], [chunk("New")], title="X2") == pid
        st.commit()
        assert [t for _, t in st.page_chunks(pid)] == ["New"] and st.count_chunks() == 2
        # recrawl: oldest fetch first; touch_page keeps validators it is not given
        st.touch_page("http://y.test/a", etag='"e2"')
        st.commit()
        rows = st.recrawl_pages()
        assert [r[0] for r in rows] == ["http://x.test/", "http://y.test/a"] and rows[1][3] == '"e2"'
        assert st.delete_page("http://x.test/") and not st.delete_page("http://x.test/")
        st.commit()
        assert st.count_chunks() == 1 and [r["url"] for r in st.records("pages")] == ["http://y.test/a"]


def test_replace_content_keeps_the_fetch_columns(backend):
    backend.fill(dict(list(PAGES.items())[:3]), info=True)
    with backend.open() as st:
        before = next(r for r in st.records("pages") if r["url"] == "http://site.test/europe")
        assert before["kind"] == "article" and before["meta"]["language"] == "en-gb" and before["cluster"] == 0
        r = SitePipeline().process(PAGE1, "http://site.test/europe")
        assert st.replace_content("http://site.test/europe", r.blocks, r.chunks, markdown="# M") == before["id"]
        assert st.replace_content("http://nowhere.test/", r.blocks, r.chunks) is None
        st.commit()
        after = next(r for r in st.records("pages") if r["url"] == "http://site.test/europe")
        assert after["fetched_at"] == before["fetched_at"] and after["title"] == before["title"]
        assert after["kind"] is None and after["meta"] == {} and after["cluster"] == -1
        assert after["n_chunks"] == len(r.chunks)
        assert ("http://site.test/europe", before["title"], "# M") in [m[:3] for m in st.page_markdown()]


def test_site_models_keep_their_learned_time_within_a_version(backend):
    """The two backends had drifted here: PostgreSQL renewed learned_at on every save."""
    with backend.open() as st:
        st.save_site_model("http://b.test", '{"format": 1}', version=1, pages=3, fallbacks=0)
        st.save_site_model("http://a.test", '{"format": 1}', version=1, pages=20, fallbacks=2)
        st.commit()
        first = {m["site"]: m for m in st.site_models()}
        assert list(first) == ["http://a.test", "http://b.test"]
        st.save_site_model("http://a.test", '{"format": 1}', version=1, pages=21, fallbacks=2)  # counts only
        st.commit()
        same = {m["site"]: m for m in st.site_models()}["http://a.test"]
        assert same["learned_at"] == first["http://a.test"]["learned_at"] and same["pages"] == 21
        st.save_site_model("http://a.test", '{"format": 1, "x": 2}', version=2, pages=25, fallbacks=1)
        st.commit()
        new = {m["site"]: m for m in st.site_models()}["http://a.test"]
        assert (new["version"], new["model"], new["pages"]) == (2, '{"format": 1, "x": 2}', 25)
        assert new["learned_at"] > first["http://a.test"]["learned_at"]


def test_block_hashes_by_site(backend):
    backend.fill({**PAGES, "http://other.test/": "<html><h1>Other</h1><p>A page of another site.</p></html>"})
    with backend.open() as st:
        everything = st.block_hashes()
        site = st.block_hashes("http://site.test/")
        other = st.block_hashes("http://other.test/")
        assert other and site and len(site) + len(other) == len(everything)
        assert st.block_hashes("http://site.test/eu") == st.block_hashes("http://site.test/europe")
        assert st.block_hashes("http://nothing.test/") == []


def test_page_filters(backend):
    pages = {f"http://site.test/n{i}": PAGES["http://site.test/cooking"] for i in range(8)}
    pages["http://sub.site.test:8080/x"] = PAGE1
    pages["http://site.testing/y"] = PAGE1
    backend.fill(pages, info=True)
    with backend.open(readonly=True) as st:
        ids = {r["url"]: r["id"] for r in st.records("pages")}

        def urls(found: list[int]) -> list[str]:
            return [u for u, i in ids.items() if i in found]
        assert urls(st.pages_matching(site="site.test")) == [*list(pages)[:9]]
        assert urls(st.pages_matching(site="sub.site.test:8080")) == ["http://sub.site.test:8080/x"]
        assert urls(st.pages_matching(url_prefix="http://site.test/n1")) == ["http://site.test/n1"]
        assert urls(st.pages_matching(kind="article")) == ["http://site.test/n0", "http://site.test/n4",
                                                          "http://sub.site.test:8080/x"]
        assert urls(st.pages_matching(lang="en")) == ["http://site.test/n0", "http://site.test/n6"]
        assert urls(st.pages_matching(lang="de")) == ["http://site.test/n2", "http://site.test/n4",
                                                     "http://sub.site.test:8080/x"]
        assert urls(st.pages_matching(since="2024-05-01")) == ["http://site.test/n4", "http://site.test/n6",
                                                                "http://sub.site.test:8080/x"]
        assert urls(st.pages_matching(site="site.test", kind="listing")) == ["http://site.test/n2",
                                                                            "http://site.test/n6"]
        assert st.pages_matching() == sorted(ids.values())


# ---- the frontier and one crawl at a time -----------------------------------------------------------

def test_frontier_roundtrip(backend):
    with backend.open() as st:
        fr = st.frontier()
        fr.set_meta("seeds", "[1]")
        fr.set_meta("seeds", "[2]")
        fr.add([Item("http://a.test/", "http://a.test", 0), Item("http://a.test/x", "http://a.test", 1, trail=2)])
        fr.add([Item("http://a.test/", "http://a.test", 5)])  # seen: ignored
        fr.mark("http://a.test/", DONE, status=200)
        fr.mark("http://a.test/x", IN_FLIGHT, attempts=1, not_before=3.0)
        fr.log("http://a.test/", "retry", 503, "HTTP 503", "x" * 600, nbytes=10, elapsed=0.1)
        st.commit()
        assert fr.get_meta("seeds") == "[2]" and fr.get_meta("nothing") is None and fr.size() == 2
        assert fr.seen_urls() == {"http://a.test/", "http://a.test/x"}
        # interrupted (in flight) goes back to the queue
        assert [(i.url, i.depth, i.attempts, i.trail) for i in fr.restore()] == [("http://a.test/x", 1, 1, 2)]
        st.commit()
        assert [r["state"] for r in st.records("frontier")] == ["done", "queued"]
        fr.mark("http://a.test/x", QUEUED, attempts=2, not_before=5.0)
        fr.reset()
        st.commit()
        assert fr.size() == 0 and fr.get_meta("seeds") is None


def test_frontier_faults_are_one_line(backend):
    """A database fault under the frontier (here: its log table dropped behind the store's back, as
    a full disk or a lost connection would fail it) is a StoreError naming the store, as from the
    store's own methods, not the driver's exception."""
    st = backend.open()
    try:
        fr = st.frontier()
        backend.raw("DROP TABLE crawl_log")
        with pytest.raises(StoreError, match="crawl_log") as e:
            fr.log("http://a.test/", "fetched", 200)
        assert backend.location.split("@")[-1] in str(e.value) and "pg-test-pw" not in str(e.value)
    finally:
        st.close()


def test_one_crawl_at_a_time_readers_go_on(backend):
    """A second crawl of the same store reset the first one's frontier (109 of 199 pages lost):
    refused, and the message says what still works."""
    backend.fill()
    with backend.open(who="blockcrawl crawl") as first:
        first.frontier()
        with pytest.raises(StoreError, match=r"blockcrawl crawl \(pid \d+\).*search and export still work"):
            second = backend.open(who="another crawl")  # SQLite: the file's lock
            try:
                second.frontier()  # PostgreSQL: the frontier's
            finally:
                second.close()
        with backend.open(readonly=True) as reader:
            assert len(list(reader.records("pages"))) == len(PAGES)


def test_readers_see_commits_only(backend):
    backend.fill()
    writer = backend.open()
    try:
        r = SitePipeline().process("<html><h1>Zeppelin</h1><p>An airship called Zeppelin floated by.</p></html>",
                                   "http://z.test/")
        writer.save_page("http://z.test/", r.blocks, r.chunks, title="Z")
        with backend.open(readonly=True) as reader:
            assert len(list(reader.records("pages"))) == len(PAGES)  # not committed yet
            writer.commit()
            assert len(list(reader.records("pages"))) == len(PAGES) + 1
    finally:
        writer.close()


# ---- the index --------------------------------------------------------------------------------------

def test_index_lifecycle(backend):
    with backend.open() as st:
        pid = st.save_page("http://x.test/", [block("Heading", 0, "heading"), block("Alpha text", 1),
                                              block("Beta text", 2)],
                           [chunk("Heading", pos=0), chunk("Alpha text", pos=1, context="T"),
                            chunk("Beta text", pos=2), chunk("Alpha text", "http://x.test/", pos=2, idx=1)])
        st.commit()
        assert st.index_meta() == {}
        assert st.begin_index("m1", 2) == {}
        todo = st.chunks_to_embed()
        assert [cid for cid, _ in todo] == sorted(cid for cid, _ in todo)  # by id, in both (they had drifted)
        assert [t for _, t in todo] == ["T > Alpha text", "Beta text", "Alpha text"]  # heading-only left out
        ids = [cid for cid, _ in todo]
        assert st.chunks_to_embed(after=ids[0]) == todo[1:]  # the live indexer's next look: newer ids only
        assert st.chunks_to_embed(after=ids[-1]) == []
        keys = [b"k-alpha-ctx".ljust(20, b"."), b"k-beta".ljust(20, b"."), b"k-alpha".ljust(20, b".")]
        vecs = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
        st.save_vectors(keys[:2], vecs[:2], [[ids[0]], [ids[1]]])
        st.map_vectors([])
        st.save_vectors(keys[2:], vecs[2:], [[ids[2]]])
        assert st.vector_keys() == set(keys) and st.chunks_to_embed() == []
        st.finish_index(1, 123.0)
        meta = st.index_meta()
        assert (meta["model"], meta["dim"], meta["generation"]) == ("m1", "2", "1")
        got_ids, matrix = st.load_vectors(2)
        assert got_ids.tolist() == ids and np.allclose(matrix, vecs)
        # the page saved anew: its old chunks' vectors are unused, its new chunks lack one
        st.save_page("http://x.test/", [block("Gamma", 0)], [chunk("Gamma")])
        assert st.drop_unused_vectors() == 3 and st.vector_keys() == set()
        assert [t for _, t in st.chunks_to_embed()] == ["Gamma"]
        st.save_vectors([keys[0]], vecs[:1], [[st.chunks_to_embed()[0][0]]])
        st.commit()
        # another model: the vectors of the old one are dropped (another space)
        assert st.begin_index("m2", 2)["model"] == "m1"
        assert st.vector_keys() == set() and len(st.chunks_to_embed()) == 1
        assert st.load_vectors(2)[1].shape == (0, 2)
        assert st.delete_page("http://x.test/") and st.count_chunks() == 0
        assert pid not in st.pages_matching()


def test_keyword_and_vector_search(backend, capsys):
    backend.indexed()
    with backend.open(readonly=True) as st:
        hits = st.keyword_ranked("Germany Berlin", 5)
        assert hits and all(s > 0 for _, s in hits)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        cooking = st.pages_matching(url_prefix="http://site.test/cooking")
        assert st.keyword_ranked("Germany Berlin", 5, pages=cooking) == []
        assert st.keyword_ranked("bread", 5, pages=cooking)
        assert st.keyword_ranked("xyzzy", 5) == [] and st.keyword_ranked("", 5) == []
        found = search(st, "German landscape mountains", 3, "vector", embedder=WordEmbedder())
        assert found and all(h.url.startswith("http://site.test/") for h in found)
    code, out, err = run_cli(capsys, "search", "Deutschland", "--mode", "keyword", "--store", backend.location, "--json")
    assert code == 0 and json.loads(out.splitlines()[0])["heading_path"] == ["Europe Countries", "Germany"], err
    code, out, err = run_cli(capsys, "export", "--what", "pages", "--store", backend.location)
    assert code == 0 and len(out.splitlines()) == len(PAGES), err


def test_keyword_search_finds_a_cjk_word_inside_a_sentence(backend):
    """FTS5's tokenizer kept a run of CJK characters as one token: 東京 inside 東京都に住んでいます was
    not found. Both backends index CJK runs as bigrams (store.cjk)."""
    pages = {
        "http://cjk.test/ja": "<html><head><title>日記</title></head><body><h1>日記</h1><p>私は東京都に住んでいます。"
                              "毎日、中国語と日本語を勉強しています。</p></body></html>",
        "http://cjk.test/zh": "<html><head><title>新闻</title></head><body><h1>新闻</h1><p>北京是中华人民共和国的首都，"
                              "也是一座历史悠久的城市。</p></body></html>",
        "http://cjk.test/ko": "<html><head><title>일기</title></head><body><h1>일기</h1><p>서울에서 한국어를 공부합니다.</p>"
                              "</body></html>",
        "http://cjk.test/en": "<html><head><title>Notes</title></head><body><h1>Notes</h1><p>Tokyo and Beijing are "
                              "capitals, and Seoul too.</p></body></html>",
    }
    backend.fill(pages)
    with backend.open() as st:
        st.begin_index("m", 2)
        st.commit()
        url = {cid: c.url for cid, c in st.chunks_by_id(st.chunk_pages()[0].tolist()).items()}

        def found(q: str) -> set[str]:
            return {url[cid] for cid, _ in st.keyword_ranked(q, 10)}
        for word, where in (("東京", "ja"), ("東京都", "ja"), ("中国語", "ja"), ("勉強", "ja"), ("首都", "zh"),
                            ("历史", "zh"), ("人民共和国", "zh"), ("한국어", "ko"), ("서울", "ko"), ("住んで", "ja")):
            assert found(word) == {f"http://cjk.test/{where}"}, word
        assert found("東京 首都") == {"http://cjk.test/ja", "http://cjk.test/zh"}  # words OR-ed, as in Latin
        assert found("本語と") == set()  # a phrase of bigrams (本語 語と), not its bigrams anywhere
        assert found("首") == {"http://cjk.test/zh"}  # one character: the bigrams it begins
        assert found("tokyo") == {"http://cjk.test/en"} and found("capitals seoul") == {"http://cjk.test/en"}
        # a page saved anew is indexed the same way (SQLite: the index's triggers; PostgreSQL: save_page)
        r = SitePipeline().process("<html><body><h1>旅行</h1><p>京都の古いお寺を見物しました。</p></body></html>",
                                   "http://cjk.test/ja")
        st.save_page("http://cjk.test/ja", r.blocks, r.chunks, title="旅行")
        st.commit()
        url = {cid: c.url for cid, c in st.chunks_by_id(st.chunk_pages()[0].tolist()).items()}
        assert found("東京") == set() and found("お寺") == {"http://cjk.test/ja"}


def test_reader_from_many_threads(backend):
    """serve's request threads share one reader: each borrows its own connection."""
    backend.indexed()
    with backend.open(readonly=True) as st:
        expected = st.keyword_ranked("Germany Berlin", 5)
        results: list[object] = []

        def work() -> None:
            try:
                for _ in range(10):
                    results.append(st.keyword_ranked("Germany Berlin", 5) == expected and
                                   len(st.chunks_by_id([i for i, _ in expected])) == len(expected))
            except Exception as e:  # noqa: BLE001 - collected for the assert
                results.append(e)
        threads = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in threads]
        [t.join() for t in threads]
    assert expected and results == [True] * 40


# An `index` run of another process, stopped after begin_index (the model recorded, no vector yet)
# until its stdin closes; then it ends without finishing, as a killed run does.
_FIRST_INDEX = """
import sys
from blockcrawl.store import open_store
st = open_store(sys.argv[1], create=False, who="blockcrawl index")
st.begin_index("words-16", 16)
print("ready", flush=True)
sys.stdin.read()
"""


def test_search_during_the_first_index_says_so(backend, capsys):
    """While the first `index` ran, search said "never indexed", though the lock message promises
    that search works: it says the store is being indexed for the first time (exit 2)."""
    backend.fill()
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    p = subprocess.Popen([sys.executable, "-c", _FIRST_INDEX, backend.location], env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready", p.stderr.read() if p.stderr else ""
        code, out, err = run_cli(capsys, "search", "germany", "--mode", "keyword", "--store", backend.location)
        assert code == 2 and len(err) == 1 and "being indexed for the first time" in err[0], err
        assert "never indexed" not in err[0] and "blockcrawl index (pid" in err[0]
        with backend.open(readonly=True) as st, pytest.raises(NotIndexed, match="once that run finishes"):
            st.index_meta()
    finally:
        p.communicate(input="", timeout=60)
    # the run ended without finishing: never indexed, as before
    code, out, err = run_cli(capsys, "search", "germany", "--mode", "keyword", "--store", backend.location)
    assert code == 2 and len(err) == 1 and "never indexed" in err[0], err


# ---- export -----------------------------------------------------------------------------------------

def test_records_and_markdown(backend):
    backend.fill()
    with backend.open() as st:
        fr = st.frontier()
        fr.add([Item("http://site.test/europe", "http://site.test", 0)])
        fr.mark("http://site.test/europe", QUEUED, attempts=1, not_before=5.0)
    with backend.open(readonly=True) as st:
        pages = list(st.records("pages"))
        assert len(pages) == len(PAGES) and all(p["n_chunks"] for p in pages)
        assert [p["id"] for p in pages] == sorted(p["id"] for p in pages)
        chunks = list(st.records("chunks"))
        assert isinstance(chunks[0]["heading_path"], list) and len(chunks) == st.count_chunks()
        blocks = list(st.records("blocks"))
        assert blocks and set(blocks[0]) == {"id", "url", "position", "kind", "heading_path", "tag_path", "text", "hash"}
        assert [r["state"] for r in st.records("frontier")] == ["queued"]
        with pytest.raises(StoreError, match="cannot export"):
            list(st.records("secrets"))
        md = list(st.page_markdown())
        assert [m[0] for m in md] == list(PAGES)
        # fill() stores Markdown for every page but each third: those come with their blocks instead
        assert [m[2] is None for m in md] == [n % 3 == 0 for n in range(len(PAGES))]
        assert all(m[3] for m in md if m[2] is None) and all(not m[3] for m in md if m[2] is not None)


def test_no_sql_outside_the_store():
    """Not a backend test: a backend must be one more implementation in blockcrawl/store, so no other
    module may import sqlite3 or hold SQL."""
    pkg = ROOT / "blockcrawl"
    offenders = []
    for f in pkg.rglob("*.py"):
        if f.is_relative_to(pkg / "store"):
            continue
        text = f.read_text()
        if re.search(r"^\s*(import sqlite3|from sqlite3)", text, re.MULTILINE) or \
                re.search(r"\b(SELECT \w.* FROM|INSERT INTO|CREATE TABLE|DELETE FROM)\b", text):
            offenders.append(str(f.relative_to(ROOT)))
    assert offenders == []

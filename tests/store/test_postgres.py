"""The PostgreSQL store against a real server (tests/support/pgserver.py): the same records, rankings and CLI
behaviour as the SQLite store on the same pages."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from blockcrawl.errors import StoreError, StoreMissing
from blockcrawl.pipeline import SitePipeline
from blockcrawl.records import PageInfo, PageMeta
from blockcrawl.store import SqliteStore, open_store
from blockcrawl.store import schema as sqlite_schema

from ..support.crawlsite import Route, Site
from ..support.pgserver import PASSWORD, fresh_db
from ..support.search_pages import PAGES

pytest.importorskip("psycopg")

from blockcrawl.store import pgschema, pgsearch  # noqa: E402 - after the skip: psycopg is optional
from blockcrawl.store.postgres import PostgresStore, redact  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# more pages than search_pages: words common and rare across chunks, for the bm25 comparison
EXTRA = {
    f"http://site.test/note{i}": f"""<html><head><title>Note {i}</title></head><body><h1>Note {i}</h1>
<div><h2>Europe and {'bread' if i % 3 == 0 else 'python'}</h2><p>Germany Europe Europe news {i} about
{'the database file on disk' if i % 2 else 'flour water salt yeast'} and {' '.join(['news'] * (i % 4))} Zürich
crème brûlée {'SQLite' if i % 5 == 0 else 'Python'} language interpreter, population {i * 1000}.</p></div>
<div><h2>More</h2><p>Another paragraph number {i} mentions countries, cities and rivers of Asia and Europe.</p></div>
</body></html>"""
    for i in range(24)
}
QUERIES = ["python database file", "Europe", "bread oven crust", "zurich creme brulee", "news Germany",
           "population of the countries", "SQLite language interpreter", "Asia rivers cities", "the", "xyzzy",
           "europe news python", "Note 7", "flour yeast database"]


def _fill(store: SqliteStore | PostgresStore, pages: dict[str, str], with_info: bool = True) -> None:
    pipe = SitePipeline()
    for n, (url, html) in enumerate(pages.items()):
        r = pipe.process(html, url)
        info = None
        kw = {}
        if n % 2 == 0 and with_info:
            info = PageInfo(r.text[:200], "article" if n % 4 == 0 else "listing", 0.25 * (n % 4), "a summary",
                            PageMeta(title=r.title, language="en-gb" if n % 3 == 0 else "de",
                                     published=f"2024-0{1 + n % 9}-05"), cluster=n % 3)
            kw["info"] = info
        store.save_page(url, r.blocks, r.chunks, title=r.title, content_hash=str(len(r.text)),
                        markdown=r.markdown if n % 3 else None, **kw)
    store.commit()


def _both(tmp_path: Path, server, pages: dict[str, str]) -> tuple[Path, str]:
    path = tmp_path / "s.db"
    with SqliteStore(path) as st:
        _fill(st, pages)
        sqlite_schema.ensure_index_schema(st.db)  # the keyword index, as `index` creates it
    dsn = fresh_db(server)
    with open_store(dsn) as pg:
        _fill(pg, pages)
    return path, dsn


def _without(rec: dict, *keys: str) -> dict:
    return {k: v for k, v in rec.items() if k not in keys}


# ---------------------------------------------------------------------- opening, migrations


def test_open_store_picks_backend_and_hides_password(tmp_path, pg_server):
    st = open_store(tmp_path / "a.db")
    assert isinstance(st, SqliteStore)
    st.close()
    dsn = fresh_db(pg_server)
    with open_store(dsn.replace("postgresql://", "postgres://")) as pg:
        assert isinstance(pg, PostgresStore)
    assert redact("postgresql://u:s3cret@h:5/db?password=x&sslmode=off") == "postgresql://u@h:5/db?sslmode=off"
    assert pgschema.SCHEMA_VERSION >= sqlite_schema.SCHEMA_VERSION  # same numbering: never behind SQLite


def test_migrations_from_empty_database(pg_server):
    dsn = fresh_db(pg_server)
    with pytest.raises(StoreMissing):
        open_store(dsn, readonly=True)
    with pytest.raises(StoreMissing):
        open_store(dsn, create=False)
    with open_store(dsn) as st:
        assert st.schema_version == pgschema.SCHEMA_VERSION == sqlite_schema.SCHEMA_VERSION == 7
        cols = {r[0] for r in st.db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name='pages'")}
        assert {"markdown", "etag", "body_hash", "text", "kind", "kind_score", "summary", "meta", "cluster"} <= cols
        assert st.site_models() == []
    with open_store(dsn) as st:  # opening again migrates nothing
        assert st.schema_version == 7
    # a store left at version 3 by an older blockcrawl: the next writer brings it to 6
    old = fresh_db(pg_server)
    import psycopg

    with psycopg.connect(old, autocommit=True) as db:
        db.execute(pgschema.META)
        for step in pgschema.MIGRATIONS[:3]:
            step(db)
        db.execute("INSERT INTO blockcrawl_meta VALUES ('schema_version', '3')")
        db.execute("INSERT INTO pages(url, title) VALUES ('http://a.test/', 'kept')")
    with pytest.raises(StoreError, match="version 3"):
        open_store(old, readonly=True)
    with open_store(old) as st:
        assert st.schema_version == 7
        assert [r["title"] for r in st.records("pages")] == ["kept"]
        assert next(iter(st.records("pages")))["cluster"] == -1
    # another program's tables, or a newer store: refused, one line
    foreign = fresh_db(pg_server)
    with psycopg.connect(foreign, autocommit=True) as db:
        db.execute("CREATE TABLE pages (x int)")
    with pytest.raises(StoreError, match="not a blockcrawl store"):
        open_store(foreign)
    with psycopg.connect(old, autocommit=True) as db:
        db.execute("UPDATE blockcrawl_meta SET value='99'")
    with pytest.raises(StoreError, match="upgrade blockcrawl"):
        open_store(old)


def test_version_5_keyword_columns_are_redone_with_cjk_bigrams(pg_server):
    """Schema 6 recomputes tsv of the chunks holding CJK text (their runs as bigrams, store.cjk)."""
    import psycopg

    from blockcrawl.records import Chunk

    dsn = fresh_db(pg_server)
    with open_store(dsn) as st:
        st.save_page("http://cjk.test/", [], [Chunk("私は東京都に住んでいます", None, ("日記",), 0, 0, "h", 1)])
        st.save_page("http://en.test/", [], [Chunk("Tokyo notes", None, ("Notes",), 0, 0, "h", 2)])
    with psycopg.connect(dsn, autocommit=True) as db:  # as schema 5 wrote them: each CJK run one token
        db.execute("UPDATE chunks SET tsv = %s::tsvector, n_tok = 2 WHERE url = 'http://cjk.test/'",
                   ("'私は東京都に住んでいます':1A '日記':2B",))
        en = db.execute("SELECT tsv::text FROM chunks WHERE url = 'http://en.test/'").fetchone()
        db.execute("UPDATE blockcrawl_meta SET value = '5' WHERE key = 'schema_version'")
    with open_store(dsn) as st:
        assert st.schema_version == 7
        hits = st.keyword_ranked("東京", 5)
        assert [st.chunks_by_id([c])[c].url for c, _ in hits] == ["http://cjk.test/"]
        assert [c for c, _ in st.keyword_ranked("日記", 5)] == [c for c, _ in hits]  # the heading too
    with psycopg.connect(dsn, autocommit=True) as db:  # other chunks are left as they were
        assert db.execute("SELECT tsv::text FROM chunks WHERE url = 'http://en.test/'").fetchone() == en


def test_concurrent_first_open_migrates_once(pg_server):
    dsn = fresh_db(pg_server)
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            open_store(dsn).close()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=opener) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with open_store(dsn, readonly=True) as st:
        assert st.schema_version == 7


# ---------------------------------------------------------------------- the same records as SQLite


def test_records_equal_sqlite(tmp_path, pg_server):
    path, dsn = _both(tmp_path, pg_server, {**PAGES, **dict(list(EXTRA.items())[:6])})
    with SqliteStore(path, readonly=True) as sq, open_store(dsn, readonly=True) as pg:
        for what in ("pages", "blocks", "chunks", "frontier"):
            a, b = list(sq.records(what)), list(pg.records(what))
            if what == "pages":
                a = [_without(r, "fetched_at") for r in a]
                b = [_without(r, "fetched_at") for r in b]
            assert a == b, what
        assert list(sq.page_markdown()) == list(pg.page_markdown())
        for args in ({"site": "site.test"}, {"url_prefix": "http://site.test/note1"}):
            assert sq.pages_matching(**args) == pg.pages_matching(**args)
        assert sq.chunks_by_id([1, 5, 9, 999]) == pg.chunks_by_id([1, 5, 9, 999])
        assert sq.block_texts([(1, 0), (2, 1), (9, 9)]) == pg.block_texts([(1, 0), (2, 1), (9, 9)])
        assert sq.page_chunks(3) == pg.page_chunks(3)
        assert [a.tolist() for a in sq.chunk_pages()] == [a.tolist() for a in pg.chunk_pages()]
    with SqliteStore(path) as sq, open_store(dsn) as pg:
        assert sq.block_hashes("http://site.test/note") == pg.block_hashes("http://site.test/note")
        assert sq.chunks_to_embed() == pg.chunks_to_embed()
        assert sq.recrawl_pages()[0][:2] == pg.recrawl_pages()[0][:2]


def test_concurrent_writers_of_different_pages(pg_server):
    """Four writers, each saving its own pages (and all of them one shared URL) in interleaved
    transactions: every page once, with exactly its own blocks and chunks."""
    dsn = fresh_db(pg_server)
    open_store(dsn).close()
    pipe = SitePipeline()
    r = pipe.process(PAGES["http://site.test/cooking"], "http://x.test/")
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            with open_store(dsn, who=f"writer {w}") as st:
                for i in range(15):
                    st.save_page(f"http://w{w}.test/{i}", r.blocks, r.chunks, title=f"{w}/{i}")
                    if i % 5 == 4:
                        st.save_page("http://shared.test/", r.blocks, r.chunks, title=f"shared by {w}")
                        st.commit()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with open_store(dsn, readonly=True) as st:
        pages = list(st.records("pages"))
        assert len(pages) == 4 * 15 + 1
        assert {p["n_chunks"] for p in pages} == {len(r.chunks)} and {p["n_blocks"] for p in pages} == {len(r.blocks)}
        assert sum(1 for _ in st.records("chunks")) == len(pages) * len(r.chunks)


# ---------------------------------------------------------------------- keyword ranking = FTS5's bm25


def _overlap(a: list[int], b: list[int]) -> float:
    return len(set(a) & set(b)) / len(set(a) | set(b)) if a or b else 1.0


def test_keyword_ranking_matches_sqlite_bm25(tmp_path, pg_server):
    """Same chunks in both stores (same ids): the same ranked ids and bm25 scores for every query,
    with the common-terms rule off and on (a low threshold makes 'europe' and 'news' common)."""
    from blockcrawl.store.sqlite import keyword_ranked as sqlite_ranked

    path, dsn = _both(tmp_path, pg_server, {**PAGES, **EXTRA})
    with SqliteStore(path, readonly=True) as sq, open_store(dsn, readonly=True) as pg:
        overlaps = []
        for q in QUERIES:
            for kw in ({}, {"common_share": 0.2, "common_min_rows": 1},
                       {"common_share": 0.9, "common_min_rows": 1, "select_max_rows": 3}):
                a = sqlite_ranked(sq.db, q, 10, **kw)
                b = pgsearch.keyword_ranked(pg.db, q, 10, **kw)
                assert [i for i, _ in a] == [i for i, _ in b], (q, kw)
                assert [round(s, 9) for _, s in a] == [round(s, 9) for _, s in b], (q, kw)
                overlaps.append(_overlap([i for i, _ in a], [i for i, _ in b]))
            pages = sq.pages_matching(url_prefix="http://site.test/note1")
            a, b = sq.keyword_ranked(q, 5, pages), pg.keyword_ranked(q, 5, pages)
            assert [i for i, _ in a] == [i for i, _ in b] and [s for _, s in a] == pytest.approx([s for _, s in b])
        assert min(overlaps) == 1.0
        assert pg.keyword_ranked("", 5) == [] and pg.keyword_ranked("xyzzy", 5) == []


# ---------------------------------------------------------------------- CLI


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("cmd", [("search", "x"), ("export",), ("index",), ("crawl", "http://127.0.0.1:9/")])
def test_bad_dsn_is_one_line_exit_2(cmd, pg_server):
    for dsn in ("postgresql://bob:s3cretpw@127.0.0.1:1/db",  # nothing listens
                pg_server.dsn().replace(PASSWORD, "s3cretpw"),  # a wrong password
                pg_server.dsn("no_such_db"),  # no such database
                pg_server.dsn("no_such_db").replace(f"//{pg_server.pg_user}:", "//bob:"),  # no such user
                "postgresql://bob:s3cretpw@127.0.0.1:notaport/db"):  # malformed
        r = _cli(*cmd, "--store", dsn)
        assert r.returncode == 2, (dsn, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
        assert "s3cretpw" not in r.stderr + r.stdout and PASSWORD not in r.stderr + r.stdout
        assert r.stderr.startswith(f"blockcrawl {cmd[0]}: ")


def _site() -> Site:
    routes = {"/robots.txt": Route("User-agent: *\n", ctype="text/plain")}
    links = "".join(f'<a href="/{u.rsplit("/", 1)[1]}">{u}</a> ' for u in PAGES)
    routes["/"] = Route(f"<html><head><title>Home</title></head><body><h1>Home</h1><p>{links}</p></body></html>")
    for url, html in PAGES.items():
        routes["/" + url.rsplit("/", 1)[1]] = Route(html)
    return Site(routes).start()


@pytest.mark.slow
def test_cli_crawl_index_search_export_like_sqlite(tmp_path, pg_server):
    """`crawl`, `index`, `search` and `export` with --store postgresql://...: the same pages, chunks
    and search results as the same commands on an SQLite file."""
    site = _site()
    try:
        dsn = fresh_db(pg_server)  # with its password: never printed
        path = str(tmp_path / "s.db")
        for store in (path, dsn):
            r = _cli("crawl", site.origin + "/", "--store", store, "--no-progress", "--concurrency", "1",
                     "--per-host", "1", "--workers", "0", "--allow-private")
            assert r.returncode == 0, r.stderr
            assert PASSWORD not in r.stderr + r.stdout
            r = _cli("index", "--store", store, "--quiet")
            assert r.returncode == 0, r.stderr
            assert ("indexed postgresql://" in r.stderr) == (store == dsn) and PASSWORD not in r.stderr
    finally:
        site.stop()
    for what in ("pages", "chunks", "blocks", "frontier"):
        a, b = (_cli("export", "--store", s, "--what", what) for s in (path, dsn))
        assert a.returncode == b.returncode == 0, b.stderr
        ra = [_without(json.loads(x), "fetched_at") for x in a.stdout.splitlines()]
        rb = [_without(json.loads(x), "fetched_at") for x in b.stdout.splitlines()]
        assert ra == rb and ra, what
    md = [_cli("export", "--store", s, "--what", "pages", "--format", "markdown").stdout for s in (path, dsn)]
    assert md[0] == md[1]
    # one search through the CLI on each (a process loads the model: ~10 s under load), the rest in process
    a, b = (_cli("search", "--store", s, "geography of Germany", "--json", "-k", "5") for s in (path, dsn))
    assert a.returncode == b.returncode == 0, b.stderr
    assert [json.loads(x)["text"] for x in a.stdout.splitlines()] == [json.loads(x)["text"] for x in b.stdout.splitlines()]
    from blockcrawl.index import default_embedder
    from blockcrawl.retrieval import search

    emb = default_embedder()
    with open_store(path, readonly=True) as sq, open_store(dsn, readonly=True) as pg:
        for q in ("geography of Germany", "how to bake bread", "embedded database engine", "Bundesrepublik"):
            for mode in ("vector", "keyword", "hybrid"):
                ta = [h.text for h in search(sq, q, 5, mode, emb)]
                assert ta == [h.text for h in search(pg, q, 5, mode, emb)], (q, mode)
    r = _cli("index", "--store", dsn, "--ann")
    assert r.returncode == 2 and "exactly" in r.stderr
    r = _cli("crawl", "--store", dsn, "--resume")
    assert r.returncode == 0, r.stderr  # the crawl finished: nothing left, but the frontier is there


@pytest.mark.slow
def test_vector_search_identical_order(tmp_path, pg_server):
    """The same embedder over the same chunks: the same vectors (bytes) and the same vector order."""
    import numpy as np

    from blockcrawl.index import build_index, default_embedder
    from blockcrawl.retrieval import search

    path, dsn = _both(tmp_path, pg_server, {**PAGES, **dict(list(EXTRA.items())[:6])})
    emb = default_embedder()
    build_index(path, embedder=emb, batch_size=8)
    build_index(dsn, embedder=emb, batch_size=8)
    with SqliteStore(path, readonly=True) as sq, open_store(dsn, readonly=True) as pg:
        ia, ma = sq.load_vectors()
        ib, mb = pg.load_vectors()
        assert ia.tolist() == ib.tolist() and np.array_equal(ma, mb)
        for q in ("geography of Germany", "database on disk", "sweet dessert", "note about rivers"):
            a = [h.text for h in search(sq, q, 8, "vector", emb, per_page=None)]
            b = [h.text for h in search(pg, q, 8, "vector", emb, per_page=None)]
            assert a == b, q
            a = [h.text for h in search(sq, q, 8, "hybrid", emb)]
            assert a == [h.text for h in search(pg, q, 8, "hybrid", emb)], q
    # a re-crawl of one unchanged page keeps its chunks (ids and vector mappings): the re-index
    # has nothing to embed and nothing to map again
    with open_store(dsn) as pg:
        r = SitePipeline().process(PAGES["http://site.test/cooking"], "http://site.test/cooking")
        pg.save_page("http://site.test/cooking", r.blocks, r.chunks, title=r.title)
    st = build_index(dsn, embedder=emb)
    assert st.embedded == 0 and st.reused == 0


class _FlatEmbedder:
    """Every text the same unit vector: hybrid ranking then follows the keyword ranking (no model)."""

    name, dim = "flat", 4

    def embed(self, texts: list[str]):
        import numpy as np

        return np.full((len(texts), 4), 0.5, dtype=np.float32)


def test_serve_on_postgres(pg_server):
    """`serve` over a PostgreSQL store: the request threads read through their own connections."""
    import urllib.request

    from blockcrawl.index import build_index
    from blockcrawl.retrieval.serve import make_server

    dsn = fresh_db(pg_server)
    with open_store(dsn) as pg:
        _fill(pg, PAGES)
    build_index(dsn, embedder=_FlatEmbedder())
    srv = make_server(dsn, port=0, embedder=_FlatEmbedder(), access_log=False)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        host, port = srv.server_address[:2]
        for mode in ("keyword", "hybrid"):
            with urllib.request.urlopen(f"http://{host}:{port}/api/search?q=embedded+database&k=2&mode={mode}") as r:
                hits = json.load(r)["hits"]
            assert hits[0]["heading_path"] == ["Languages", "SQLite"], mode
    finally:
        srv.shutdown()
        srv.server_close()


def test_tokens_are_fts5s():
    """pgsearch.tokens() against SQLite's own unicode61 tokenizer (remove_diacritics 2) on text
    that trips a naive \\w+ split: marks, scripts, case rules, separators; as SQLite's index holds
    it, CJK runs split into bigrams (schema 6, store.cjk)."""
    import sqlite3

    from blockcrawl.store.cjk import split_cjk

    texts = ["Zürich crème brûlée ÉCOLE", "wl\u0325k\u02b7os drim\u0303ba t\u0361\u0283 a\u02d1\u026a",
             "snake_case x2 3.14 high-level", "ΛΆΡΝΑΚΑΣ λάρνακας 5 µm",
             "\u0939\u093f\u0928\u094d\u0926\u0940 \ud55c\uad6d\uc5b4 \u30d9\u30b9\u30c8 \u0439\u043e\u0434",
             "Straße ǅ ﬁ ² ½ Ⅻ drim\u00adba", '["Europe", "Countries \\"x\\""]']
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(t, tokenize='unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, f, instance)")
    for t in texts:
        db.execute("DELETE FROM f")
        db.execute("INSERT INTO f VALUES (?)", (split_cjk(t),))
        fts = [str(r[0]) for r in db.execute("SELECT term FROM temp.v ORDER BY offset")]
        assert pgsearch.tokens(t) == fts, t

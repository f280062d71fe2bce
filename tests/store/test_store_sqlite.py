"""The SQLite store's own faults, which a database server does not have: the file's schema versions
(PRAGMA user_version), damaged and foreign files, read-only folders, the writer's flock, paths that
are not files. What both backends share is tested once for both in tests/store/test_store.py."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from blockcrawl import SitePipeline
from blockcrawl.crawl.frontier import DONE, Item
from blockcrawl.errors import StoreError, StoreMissing
from blockcrawl.index import build_index
from blockcrawl.retrieval import search
from blockcrawl.store import (
    SCHEMA_VERSION,
    ChunkSource,
    KeywordIndex,
    PageSink,
    RecordSource,
    SearchStore,
    Store,
    VectorIndex,
)

from ..support.crawlsite import Site, chain_site
from ..support.search_pages import PAGES, fill
from .test_store import WordEmbedder, cli, indexed, run_cli

# ---- schema versions and migrations ---------------------------------------------------------------

# A store as written before versioning (user_version 0): tables created by the modules that used
# them, frontier from before the date-trap guard (no trail column).
V0_SCHEMA = """
CREATE TABLE pages (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, final_url TEXT, status INTEGER,
    content_type TEXT, title TEXT, content_hash TEXT, fetched_at REAL);
CREATE TABLE blocks (id INTEGER PRIMARY KEY, page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, kind TEXT NOT NULL, heading_path TEXT NOT NULL, tag_path TEXT NOT NULL,
    text TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE chunks (id INTEGER PRIMARY KEY, page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    block_position INTEGER NOT NULL, chunk_index INTEGER NOT NULL, url TEXT NOT NULL, heading_path TEXT NOT NULL,
    text TEXT NOT NULL, block_hash TEXT NOT NULL, n_tokens INTEGER NOT NULL);
CREATE TABLE frontier (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, fetch_url TEXT, host TEXT NOT NULL,
    depth INTEGER NOT NULL, kind TEXT NOT NULL DEFAULT 'page', state INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0, not_before REAL NOT NULL DEFAULT 0, hops INTEGER NOT NULL DEFAULT 0,
    via TEXT, status INTEGER, error TEXT, updated REAL);
CREATE TABLE crawl_log (id INTEGER PRIMARY KEY, t REAL NOT NULL, url TEXT NOT NULL, event TEXT NOT NULL,
    status INTEGER, error TEXT, detail TEXT, bytes INTEGER, elapsed REAL);
CREATE TABLE crawl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO pages(id, url, title) VALUES (1, 'http://a.test/', 'A');
INSERT INTO chunks VALUES (1, 1, 0, 0, 'http://a.test/', '["A"]', 'old text', 'h', 2);
INSERT INTO frontier(url, host, depth, state) VALUES ('http://a.test/', 'http://a.test', 0, 2),
    ('http://a.test/next', 'http://a.test', 1, 0);
INSERT INTO crawl_meta VALUES ('seeds', '["http://a.test/"]');
"""


def v0_store(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(V0_SCHEMA)
    db.commit()
    db.close()
    return path


def columns(path: Path, table: str) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    finally:
        db.close()


def test_new_store_has_every_table_at_the_current_version(tmp_path):
    with Store(tmp_path / "new" / "s.db") as st:  # folders created for a new store
        assert st.schema_version == SCHEMA_VERSION
        tables = {r[0] for r in st.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"pages", "blocks", "chunks", "frontier", "crawl_log", "crawl_meta"} <= tables
    assert "trail" in columns(tmp_path / "new" / "s.db", "frontier")


def test_version_0_store_is_migrated_in_place(tmp_path):
    path = v0_store(tmp_path / "old.db")
    # readers never write: a version-0 store is read as it is, and stays at version 0
    with Store(path, readonly=True) as st:
        assert st.schema_version == 0
        assert [r["url"] for r in st.records("frontier")] == ["http://a.test/", "http://a.test/next"]
    assert "trail" not in columns(path, "frontier")
    # the first writer migrates: trail added, rows kept, the crawl resumable
    with Store(path) as st:
        assert st.schema_version == SCHEMA_VERSION
        fr = st.frontier()
        assert fr.size() == 2 and fr.get_meta("seeds") == '["http://a.test/"]'
        assert [(it.url, it.trail) for it in fr.restore()] == [("http://a.test/next", 0)]
        fr.add([Item("http://a.test/deep", "http://a.test", 2, trail=3)])
        fr.mark("http://a.test/next", DONE, 200)
    assert "trail" in columns(path, "frontier")
    with Store(path) as st:  # opening again migrates nothing
        assert st.schema_version == SCHEMA_VERSION
        assert [(it.url, it.trail) for it in st.frontier().restore()] == [("http://a.test/deep", 3)]
        assert sorted(r["state"] for r in st.records("frontier")) == ["done", "done", "queued"]
        assert st.block_hashes() == [] and st.count_chunks() == 1


def test_newer_or_foreign_files_are_refused_untouched(tmp_path, capsys):
    newer = tmp_path / "newer.db"
    fill(newer, {})
    db = sqlite3.connect(newer)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    foreign = tmp_path / "foreign.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
    db.commit()
    db.close()
    for path, msg in ((newer, f"schema version {SCHEMA_VERSION + 1}"), (foreign, "not a blockcrawl store")):
        before = path.read_bytes()
        for kw in ({}, {"readonly": True}):
            with pytest.raises(StoreError, match=msg):
                Store(path, **kw)
        assert path.read_bytes() == before  # not migrated, not switched to WAL
        for args in (["export"], ["search", "x", "--mode", "keyword"], ["index"], ["crawl", "--resume"]):
            code, _, err = run_cli(capsys, *args, "--store", str(path))
            assert code == 2 and len(err) == 1 and msg in err[0], (args, err)


# ---- damaged files: one line, exit 2 --------------------------------------------------------------

def test_damaged_and_non_sqlite_files_are_one_line(tmp_path, capsys):
    good = indexed(tmp_path / "good.db")
    data = good.read_bytes()
    bad = {"text.db": b"just some text, not SQLite\n" * 200, "half.db": data[:len(data) // 2 // 4096 * 4096],
           "header.db": data[:100], "empty-ish.db": b"SQLite format 3\0"}
    for name, content in bad.items():
        path = tmp_path / name
        path.write_bytes(content)
        for args in (["export", "--what", "chunks"], ["search", "germany", "--mode", "keyword"], ["index"]):
            code, out, err = run_cli(capsys, *args, "--store", str(path))
            assert code == 2 and len(err) == 1 and str(path) in err[0], (name, args, err)
            assert "Traceback" not in err[0] and out == ""
    # serve too, as its own process (it would print the traceback on stderr)
    p = cli("serve", "--store", str(tmp_path / "half.db"), "--port", "0")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and len(err.strip().splitlines()) == 1 and "half.db" in err, err


def test_errors_inside_a_query_name_the_store(tmp_path):
    """Damage found after opening (here: chunks_fts dropped behind the store's back) is a StoreError."""
    path = indexed(tmp_path / "s.db")
    with Store(path, readonly=True) as st:
        db = sqlite3.connect(path)
        db.execute("DROP TABLE chunks_fts")
        db.commit()
        db.close()
        with pytest.raises(StoreError, match=r"s\.db: no such table"):
            st.keyword_ranked("germany", 5)


# ---- read-only stores -----------------------------------------------------------------------------

def _make_read_only(folder: Path) -> bool:
    """The folder and its files read-only even for root (chattr +i), else by mode bits; False if
    this system lets us write anyway (then the test cannot tell)."""
    for f in folder.iterdir():
        f.chmod(0o444)
    folder.chmod(0o555)
    if os.geteuid() == 0 and shutil.which("chattr"):
        for f in [*folder.iterdir(), folder]:
            subprocess.run(["chattr", "+i", str(f)], capture_output=True, check=False)
    try:
        (folder / "probe").touch()
    except OSError:
        return True
    (folder / "probe").unlink()
    return False


def _undo_read_only(folder: Path) -> None:
    if os.geteuid() == 0 and shutil.which("chattr"):
        for f in [folder, *folder.iterdir()]:
            subprocess.run(["chattr", "-i", str(f)], capture_output=True, check=False)
    folder.chmod(0o755)


def test_read_only_store_is_searched_and_exported(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = indexed(folder / "s.db")
    # no -wal/-shm left behind (the .vecs files are index's memory-mapped copy of the vectors)
    assert {p.name for p in folder.iterdir()} - {"s.db.vecs.npy", "s.db.vecs.ids.npy", "s.db.vecs.json"} == {
        "s.db", "s.db.lock"}
    (folder / "s.db.lock").unlink()
    if not _make_read_only(folder):
        _undo_read_only(folder)
        pytest.skip("cannot make a folder read-only here")
    try:
        # SQLite cannot create s.db-shm in the folder: mode=ro fails, immutable=1 reads
        with Store(path, readonly=True) as st:
            assert isinstance(st, SearchStore) and st.index_meta()["model"] == "words-16"
            hits = search(st, "German landscape mountains", 3, "vector", embedder=WordEmbedder())
            assert hits and all(h.url.startswith("http://site.test/") for h in hits)
        code, out, err = run_cli(capsys, "search", "Deutschland", "--mode", "keyword", "--store", str(path), "--json")
        assert code == 0 and json.loads(out.splitlines()[0])["heading_path"] == ["Europe Countries", "Germany"]
        code, out, err = run_cli(capsys, "export", "--what", "pages", "--store", str(path))
        assert code == 0 and len(out.splitlines()) == len(PAGES)
        for args in (["index"], ["crawl", "--resume"], ["crawl", "http://site.test/"]):
            code, out, err = run_cli(capsys, *args, "--store", str(path))
            assert code == 2 and len(err) == 1 and "cannot write" in err[0], (args, err)
        with pytest.raises(StoreError, match="cannot write"):
            Store(path)
    finally:
        _undo_read_only(folder)


# ---- one writer per store -------------------------------------------------------------------------

def test_one_writer_many_readers(tmp_path):
    path = indexed(tmp_path / "w.db")
    writer = Store(path, who="blockcrawl crawl")
    try:
        assert isinstance(writer, PageSink) and isinstance(writer, ChunkSource)
        for kw in ({}, {"create": False}):
            with pytest.raises(StoreError, match=r"being written by blockcrawl crawl \(pid \d+\)"):
                Store(path, **kw)
        with pytest.raises(StoreError, match="being written"):
            build_index(path, embedder=WordEmbedder())
        # readers do not wait for the writer, and see its commits
        pipe = SitePipeline()
        r = pipe.process("<html><h1>Zeppelin</h1><p>An airship called Zeppelin floated by.</p></html>",
                         "http://z.test/")
        writer.save_page("http://z.test/", r.blocks, r.chunks, title="Z")
        with Store(path, readonly=True) as reader:
            assert isinstance(reader, (RecordSource, KeywordIndex, VectorIndex))
            assert len(list(reader.records("pages"))) == len(PAGES)  # not committed yet
            writer.commit()
            assert len(list(reader.records("pages"))) == len(PAGES) + 1
            assert search(reader, "zeppelin", 1, "keyword")[0].url == "http://z.test/"
    finally:
        writer.close()
    with Store(path) as again:  # released on close
        assert again.count_chunks() > 0


@pytest.mark.slow
def test_second_crawl_is_refused_while_the_first_runs(tmp_path):
    """Before the lock, a second crawl reset the first one's frontier: 109 of 199 pages were
    never fetched after --resume. Now it is refused in one line and the first crawl completes."""
    n = 40
    site = Site(chain_site(n, latency=0.25)).start()  # >= 10 s: outlasts three CLI starts on a busy machine
    try:
        db = tmp_path / "c.db"
        args = ["crawl", site.origin + "/p0.html", "--store", str(db), "--no-progress", "--tokenizer", "words",
                "--concurrency", "1", "--workers", "0"]
        first = cli(*args)
        deadline = time.time() + 60
        while len(site.hits) < 4 and time.time() < deadline:
            time.sleep(0.02)
        second = cli(*args)
        _, err = second.communicate(timeout=60)
        assert second.returncode == 2 and len(err.strip().splitlines()) == 1, err
        assert "being written by blockcrawl crawl (pid" in err
        index = cli("index", "--store", str(db), "--quiet")
        _, err = index.communicate(timeout=120)
        assert index.returncode == 2 and "being written by blockcrawl crawl" in err, err
        export = cli("export", "--what", "frontier", "--store", str(db))  # readers still work
        out, err = export.communicate(timeout=60)
        assert export.returncode == 0 and out.strip(), err
        assert first.poll() is None  # the export ran during the crawl
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        paths = [h.path for h in site.hits if h.path not in ("/robots.txt", "/sitemap.xml")]  # (probe: no sitemap)
        assert sorted(paths) == sorted(f"/p{i}.html" for i in range(n))  # each page once, none lost
        with Store(db, readonly=True) as st:
            assert {r["state"] for r in st.records("frontier")
                    if "/nope/" not in str(r["url"]) and "/sitemap.xml" not in str(r["url"])} == {"done"}
    finally:
        site.stop()


def test_resume_with_a_mistyped_path_creates_nothing(tmp_path, capsys):
    for args in (["crawl", "--resume"], ["crawl", "--resume", "http://site.test/"]):
        typo = tmp_path / "no" / "such" / "stor.db"
        code, _, err = run_cli(capsys, *args, "--store", str(typo))
        assert code == 2 and len(err) == 1 and "no store at" in err[0], err
        assert not (tmp_path / "no").exists()  # neither the file nor its folders
    with pytest.raises(StoreMissing):
        Store(tmp_path / "x.db", create=False)
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "x.db.lock").exists()


# ---- paths that are not a store file --------------------------------------------------------------

def test_non_regular_file_is_refused_and_left_alone(tmp_path, capsys):
    """`--store /dev/null` left /dev/null-journal (and /dev/null.lock) behind: refused in one line."""
    dev = Path("/dev/null")
    before = {p for p in (Path("/dev/null-journal"), Path("/dev/null-wal"), Path("/dev/null.lock")) if p.exists()}
    for args in (["index"], ["crawl", "http://127.0.0.1:9/"], ["search", "x", "--mode", "keyword"], ["export"]):
        code, out, err = run_cli(capsys, *args, "--store", str(dev))
        assert code == 2 and len(err) == 1 and "/dev/null is not a regular file" in err[0], (args, err)
    after = {p for p in (Path("/dev/null-journal"), Path("/dev/null-wal"), Path("/dev/null.lock")) if p.exists()}
    assert after == before
    link = tmp_path / "s.db"
    link.symlink_to(dev)  # the same through a symbolic link
    with pytest.raises(StoreError, match="not a regular file"):
        Store(link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


def test_lock_path_that_is_a_folder_says_so(tmp_path, capsys):
    path = tmp_path / "s.db"
    fill(path)
    (tmp_path / "s.db.lock").unlink()
    (tmp_path / "s.db.lock").mkdir()
    with pytest.raises(StoreError) as e:
        Store(path)
    assert "s.db.lock is a folder" in str(e.value) and "read-only" not in str(e.value)
    code, _, err = run_cli(capsys, "index", "--store", str(path))
    assert code == 2 and len(err) == 1 and "s.db.lock is a folder" in err[0], err
    with Store(path, readonly=True) as st:  # readers take no lock
        assert st.count_chunks() > 0


# ---- schema 6: the keyword index splits CJK runs into bigrams ---------------------------------------

# chunks_fts as schema 5 made it: CJK runs whole, filled by FTS5's 'rebuild'
V5_FTS = """
DROP TRIGGER chunks_fts_on_insert; DROP TRIGGER chunks_fts_on_delete; DROP TRIGGER chunks_fts_on_update;
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5(text, heading_path, context, content='chunks', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER chunks_fts_on_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text, heading_path, context) VALUES (new.id, new.text, new.heading_path, new.context);
END;
CREATE TRIGGER chunks_fts_on_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading_path, context)
    VALUES ('delete', old.id, old.text, old.heading_path, old.context);
END;
CREATE TRIGGER chunks_fts_on_update AFTER UPDATE OF text, heading_path, context ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading_path, context)
    VALUES ('delete', old.id, old.text, old.heading_path, old.context);
    INSERT INTO chunks_fts(rowid, text, heading_path, context) VALUES (new.id, new.text, new.heading_path, new.context);
END;
INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
PRAGMA user_version=5;
"""


def test_version_5_index_is_rebuilt_with_cjk_bigrams(tmp_path):
    path = tmp_path / "s.db"
    ja = "<html><body><h1>日記</h1><p>私は東京都に住んでいます。</p></body></html>"
    fill(path, {"http://cjk.test/": ja, "http://en.test/": "<html><body><h1>Notes</h1><p>Tokyo notes.</p></body></html>"})
    with Store(path) as st:
        st.begin_index("m", 2)
    db = sqlite3.connect(path)
    db.executescript(V5_FTS)
    db.close()
    with Store(path, readonly=True) as st:  # a reader leaves the file as it is and asks it as it was built
        assert st.schema_version == 5
        assert st.keyword_ranked("東京", 5) == [] and st.keyword_ranked("tokyo", 5)
        assert st.keyword_ranked("私は東京都に住んでいます", 5)  # the whole run was the token
    with Store(path) as st:  # the writer migrates: the index rebuilt, CJK words found inside the run
        assert st.schema_version == SCHEMA_VERSION
        ids = st.keyword_ranked("東京", 5)
        assert len(ids) == 1 and st.chunks_by_id([ids[0][0]])[ids[0][0]].url == "http://cjk.test/"
        assert [c for c, _ in st.keyword_ranked("住んで", 5)] == [ids[0][0]]
        st.delete_page("http://cjk.test/")  # the triggers delete what they indexed (no FTS5 'malformed')
        st.commit()
        assert st.keyword_ranked("東京", 5) == [] and st.keyword_ranked("tokyo", 5)


def test_an_sqlite_url_is_the_path_it_names(tmp_path):
    """`--store sqlite:///path` was taken as a relative path named `sqlite:/path`. The URL is read
    as SQLAlchemy reads it: three slashes and a relative path, four and an absolute one."""
    import os
    import subprocess
    import sys

    from blockcrawl.errors import StoreError
    from blockcrawl.store import open_store, sqlite_path

    assert sqlite_path("sqlite:///site.db") == "site.db" and sqlite_path("sqlite:////srv/s.db") == "/srv/s.db"
    assert sqlite_path("site.db") == "site.db"
    for bad in ("sqlite://host/x.db", "sqlite:///", "sqlite:///:memory:", "sqlite:x.db"):
        with pytest.raises(StoreError, match="sqlite:///relative"):
            sqlite_path(bad)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    (tmp_path / "rel").mkdir()
    with open_store(tmp_path / "rel" / "s.db", create=True) as st:
        st.save_page("http://sea.test/", [], [], title="Sea")
    for url in ("sqlite:///rel/s.db", f"sqlite:///{tmp_path}/rel/s.db"):  # relative; absolute (four slashes)
        r = subprocess.run([sys.executable, "-m", "blockcrawl", "export", "--store", url, "--what", "pages"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert r.returncode == 0 and "http://sea.test/" in r.stdout, (url, r.stderr)
    r = subprocess.run([sys.executable, "-m", "blockcrawl", "export", "--store", "sqlite://host/s.db"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "sqlite:///relative" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert not list(tmp_path.glob("sqlite*"))

"""The store: schema versions and migrations, one writer at a time, read-only and damaged files."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from blockcrawl import SitePipeline
from blockcrawl.cli import main
from blockcrawl.crawl.frontier import DONE, QUEUED, Item
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

from .crawlsite import Site, chain_site
from .search_pages import PAGES, fill

ROOT = Path(__file__).resolve().parents[1]


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
    fill(path)
    with Store(path, create=False) as st:
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
    assert {p.name for p in folder.iterdir()} == {"s.db", "s.db.lock", "s.db.vecs.npy", "s.db.vecs.ids.npy",
                                                  "s.db.vecs.json"}
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


def test_reader_from_many_threads(tmp_path):
    """serve's request threads share one reader: each borrows its own connection."""
    path = indexed(tmp_path / "t.db")
    with Store(path, readonly=True) as st:
        expected = st.keyword_ranked("Germany Berlin", 5)
        results: list[object] = []

        def work() -> None:
            try:
                for _ in range(20):
                    results.append(st.keyword_ranked("Germany Berlin", 5) == expected)
            except Exception as e:  # noqa: BLE001 - collected for the assert
                results.append(e)
        threads = [threading.Thread(target=work) for _ in range(6)]
        [t.start() for t in threads]
        [t.join() for t in threads]
    assert expected and results == [True] * 120


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


def test_store_methods_cover_what_the_stages_use(tmp_path):
    """Export's records and the frontier through the store (no SQL in the stages)."""
    path = tmp_path / "r.db"
    fill(path)
    with Store(path) as st:
        fr = st.frontier()
        fr.add([Item("http://site.test/europe", "http://site.test", 0)])
        fr.mark("http://site.test/europe", QUEUED, attempts=1, not_before=5.0)
        fr.log("http://site.test/europe", "retry", 503, "HTTP 503", "x" * 600)
    with Store(path, readonly=True) as st:
        pages = list(st.records("pages"))
        assert len(pages) == len(PAGES) and all(p["n_chunks"] for p in pages)
        chunks = list(st.records("chunks"))
        assert isinstance(chunks[0]["heading_path"], list)
        assert [r["state"] for r in st.records("frontier")] == ["queued"]
        with pytest.raises(StoreError, match="cannot export"):
            list(st.records("secrets"))
        with pytest.raises(StoreError, match="read-only"):
            st.frontier()


def test_no_sql_outside_the_store():
    """A PostgreSQL backend must be one more implementation in blockcrawl/store: no other module
    may import sqlite3 or hold SQL."""
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

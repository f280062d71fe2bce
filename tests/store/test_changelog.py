"""The store's change log (store.changelog): crawls and their page and chunk ops, recorded with the
work they describe, on a real loopback site that changes between crawls."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from blockcrawl.crawl import CrawlConfig, crawl
from blockcrawl.crawl.config import finished
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import Store

from ..support.syncsite import SyncSite

SPEC = PipelineConfig(tokenizer="words")
ROOT = Path(__file__).resolve().parents[2]


def ops(db: Path, crawl_id: int | None = None) -> list[tuple[str, str, str, int | None, str | None]]:
    con = sqlite3.connect(db)
    q = "SELECT what, op, url, chunk_id, reason FROM changes" + ("" if crawl_id is None else f" WHERE crawl_id={crawl_id}")
    rows = con.execute(q + " ORDER BY seq").fetchall()
    con.close()
    return rows


def name(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def replayed_chunks(db: Path) -> set[int]:
    """The chunk ids alive after applying every chunk op in order."""
    live: set[int] = set()
    for what, op, _, cid, _ in ops(db):
        if what == "chunk":
            (live.discard if op == "removed" else live.add)(cid)
    return live


def stored_chunks(db: Path) -> dict[str, list[int]]:
    con = sqlite3.connect(db)
    out: dict[str, list[int]] = {}
    for cid, url in con.execute("SELECT c.id, p.url FROM chunks c JOIN pages p ON p.id = c.page_id ORDER BY c.id"):
        out.setdefault(url, []).append(cid)
    con.close()
    return out


def test_a_recrawl_records_each_page_and_chunk_change_with_its_reason(tmp_path):
    site = SyncSite(12)
    db = tmp_path / "c.db"
    try:
        with Store(db) as st:
            first = crawl(st, CrawlConfig(seeds=[site.origin + "/p0"], progress=False), SPEC)
            assert first.finished and first.crawl_id == 1
        before = stored_chunks(db)
        assert {op for w, op, *_ in ops(db, 1) if w == "page"} == {"added"}
        assert sum(1 for w, op, *_ in ops(db, 1) if (w, op) == ("page", "added")) == 12
        assert replayed_chunks(db) == {c for ids in before.values() for c in ids}
        site.edit(3)
        site.edit(10, 0)
        site.n = 13  # p12, linked from the changed p10
        site.status.update({5: 404, 6: 410})
        site.noindex.add(7)
        with Store(db) as st:
            second = crawl(st, CrawlConfig(seeds=[], recrawl=True, progress=False), SPEC)
            assert second.finished and second.crawl_id == 2
            assert [(c["id"], c["finished"]) for c in st.crawls()] == [(1, 1), (2, 1)]
            counts = st.crawl_counts(2)
    finally:
        site.stop()
    after = stored_chunks(db)
    pages = {name(url): (op, reason) for w, op, url, _, reason in ops(db, 2) if w == "page"}
    assert pages == {"p3": ("changed", None), "p10": ("changed", None), "p12": ("added", None),
                     "p5": ("removed", "gone 404"), "p6": ("removed", "gone 410"), "p7": ("removed", "noindex"),
                     **{f"p{i}": ("unchanged", None) for i in (0, 1, 2, 4, 8, 9, 11)}}
    assert counts["pages_unchanged"] == 7 and counts["pages_removed"] == 3 and counts["pages_added"] == 1
    p3 = next(u for u in after if name(u) == "p3")
    kept, removed = set(before[p3]) & set(after[p3]), set(before[p3]) - set(after[p3])
    assert kept and removed  # the edited section's chunk was replaced, the others kept their ids
    chunk_ops = [(op, cid) for w, op, url, cid, _ in ops(db, 2) if w == "chunk" and url == p3]
    assert {cid for op, cid in chunk_ops if op == "removed"} == removed
    assert {cid for op, cid in chunk_ops if op == "added"} == set(after[p3]) - set(before[p3])
    gone = next(u for u in before if name(u) == "p5")
    assert {cid for w, op, url, cid, _ in ops(db, 2) if w == "chunk" and url == gone} == set(before[gone])
    assert replayed_chunks(db) == {c for ids in after.values() for c in ids}


def test_only_an_interrupted_crawl_is_unfinished():
    assert finished("done") and finished("stopped: page limit") and finished("stopped: time limit")
    assert not finished("stopped: interrupted")


def _count(db: Path, sql: str) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(con.execute(sql).fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_killed_crawl_logs_only_what_it_committed_and_resume_completes_the_log(tmp_path):
    site = SyncSite(40, delay=0.05)
    db = tmp_path / "k.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "blockcrawl", "crawl", "--store", str(db), "--no-progress", "--workers", "0",
           "--tokenizer", "words", "--concurrency", "2"]
    try:
        proc = subprocess.Popen([*cmd, site.origin + "/p0"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 60
        while _count(db, "SELECT count(*) FROM pages") < 5 and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stored = _count(db, "SELECT count(*) FROM pages")
        assert 5 <= stored < 40
        with Store(db) as st:
            assert [(c["id"], c["finished"], c["ended"]) for c in st.crawls()] == [(1, 0, None)]
        # every committed page and chunk has its op, and no op speaks of work that was lost
        assert sum(1 for w, op, *_ in ops(db) if (w, op) == ("page", "added")) == stored
        assert replayed_chunks(db) == {c for ids in stored_chunks(db).values() for c in ids}
        done = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    finally:
        site.stop()
    with Store(db) as st:
        assert [(c["id"], c["finished"]) for c in st.crawls()] == [(1, 1)]  # the same crawl, completed
    assert sum(1 for w, op, *_ in ops(db) if (w, op) == ("page", "added")) == 40
    assert replayed_chunks(db) == {c for ids in stored_chunks(db).values() for c in ids}



def test_a_page_revised_in_place_logs_its_chunk_changes_and_keeps_the_rest(tmp_path):
    from blockcrawl.records import Chunk

    from .test_store import block

    def chunk(text: str, pos: int) -> Chunk:  # a block's hash is its text's, wherever it sits
        return Chunk(text, "http://x.test/", ("H",), pos, 0, "h-" + text, len(text.split()), "")

    db = tmp_path / "r.db"
    url = "http://x.test/"
    with Store(db) as st:
        st.save_page(url, [block("One text", 0), block("Two text", 1)], [chunk("One text", 0), chunk("Two text", 1)],
                     title="T", content_hash="a")
        st.commit()
        before = stored_chunks(db)[url]
        # a site model learned later re-extracts the page: the first block goes, a third comes
        assert st.replace_content(url, [block("Two text", 0), block("Three", 1)],
                                  [chunk("Two text", 0), chunk("Three", 1)], content_hash="b") is not None
        assert st.replace_content("http://x.test/none", [], []) is None  # not stored: nothing logged
        st.commit()
    after = stored_chunks(db)[url]
    log = [(w, op, reason) for w, op, _, _, reason in ops(db)]
    assert log[-4:] == [("page", "changed", "revised"), ("chunk", "removed", None), ("chunk", "moved", None),
                        ("chunk", "added", None)]
    assert before[1] in after and before[0] not in after  # "Two text" kept its id, moved to position 0
    assert replayed_chunks(db) == set(after)

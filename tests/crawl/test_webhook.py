"""`crawl --on-change URL` (crawl.net.webhook): one signed POST per finished crawl, none for an interrupted
one, retried, never failing the crawl, the URL under the crawl's address policy; real loopback
receivers (one up, one failing, one down)."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import blockcrawl
from blockcrawl.cli import main
from blockcrawl.crawl.net.webhook import Delivery, retry_after, sign
from blockcrawl.store import open_store

from ..store.test_changelog import _count
from ..support.servers import free_port
from ..support.syncsite import SyncSite

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec-test-7f3a"


class Receiver:
    """Records every POST (headers, body); answers the statuses in `fail` first, then 204."""

    def __init__(self, fail: tuple[int, ...] = ()) -> None:
        self.posts: list[tuple[dict[str, str], bytes]] = []
        self.fail = list(fail)
        rec = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                rec.posts.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(rec.fail.pop(0) if rec.fail else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def crawl_cli(capsys, *args: str) -> tuple[int, list[str]]:
    code = main(["crawl", "--no-progress", "--workers", "0", "--tokenizer", "words", *args])
    return code, capsys.readouterr().err.strip().splitlines()


def test_signing_and_back_off():
    body = b'{"crawl_id": 1}'
    assert sign(body, "k") == "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    d = Delivery(attempts=4, backoff=0.5)
    assert [retry_after(a, None, d) for a in range(4)] == [0.5, 1.0, 2.0, None]
    assert retry_after(0, 503, d) == 0.5 and retry_after(0, 429, d) == 0.5
    assert retry_after(0, 404, d) is None and retry_after(0, 401, d) is None


def test_one_signed_post_per_finished_crawl_with_the_cursor_of_its_changes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BLOCKCRAWL_WEBHOOK_SECRET", SECRET)
    site, hook = SyncSite(8), Receiver(fail=(503,))  # the first delivery is refused once, then retried
    db = str(tmp_path / "w.db")
    try:
        code, err = crawl_cli(capsys, site.origin + "/p0", "--store", db, "--on-change", hook.url)
        assert code == 0, err
        assert len(hook.posts) == 2 and not any("warning" in e for e in err)
        site.edit(2)
        site.status[4] = 410
        code, err = crawl_cli(capsys, "--recrawl", "--store", db, "--on-change", hook.url)
        assert code == 0, err
    finally:
        site.stop()
        hook.stop()
    assert len(hook.posts) == 3  # a retry, then one per crawl
    bodies = []
    for headers, body in hook.posts[1:]:
        assert headers["x-blockcrawl-signature"] == "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert headers["content-type"] == "application/json"
        bodies.append(json.loads(body))
    assert hook.posts[0][1] == hook.posts[1][1]  # the retry sent the same summary
    first, second = bodies
    assert (first["crawl_id"], second["crawl_id"]) == (1, 2) and first["event"] == "crawl.finished"
    assert first["counts"]["pages_added"] == 8 and second["counts"]["pages_changed"] == 1
    assert second["counts"]["pages_removed"] == 1 and second["counts"]["pages_unchanged"] == 6
    with open_store(db, readonly=True) as st:  # the cursor gives exactly the crawl's changes
        assert list(blockcrawl.changes(st, second["since"])) == list(blockcrawl.changes(st, "last"))
        assert list(blockcrawl.changes(st, first["since"])) == list(blockcrawl.changes(st, 0))


def test_a_receiver_that_is_down_does_not_fail_the_crawl(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("BLOCKCRAWL_WEBHOOK_SECRET", raising=False)
    site = SyncSite(3)
    try:
        code, err = crawl_cli(capsys, site.origin + "/p0", "--store", str(tmp_path / "d.db"),
                              "--on-change", f"http://127.0.0.1:{free_port()}/hook")
    finally:
        site.stop()
    assert code == 0
    assert any("unsigned" in e for e in err)
    assert any("--on-change not delivered" in e and "4 attempts" in e for e in err), err
    assert not any("Traceback" in e for e in err)


def test_the_receiver_meets_the_crawls_address_policy(tmp_path, capsys):
    site = SyncSite(2)
    try:
        for url in ("http://169.254.169.254/hook", "http://10.0.0.1/x", "ftp://127.0.0.1/x"):
            code, err = crawl_cli(capsys, site.origin + "/p0", "--store", str(tmp_path / "p.db"), "--on-change", url)
            assert code == 2 and len(err) == 1, (url, err)
        assert site.requests == 0  # refused before the crawl began
    finally:
        site.stop()


def test_no_post_for_an_interrupted_crawl_and_one_when_resume_finishes_it(tmp_path):
    site, hook = SyncSite(30, delay=0.05), Receiver()
    db = tmp_path / "i.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "BLOCKCRAWL_WEBHOOK_SECRET": SECRET}
    cmd = [sys.executable, "-m", "blockcrawl", "crawl", "--store", str(db), "--no-progress", "--workers", "0",
           "--tokenizer", "words", "--concurrency", "2", "--on-change", hook.url]
    try:
        proc = subprocess.Popen([*cmd, site.origin + "/p0"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 60
        while _count(db, "SELECT count(*) FROM pages") < 3 and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert hook.posts == []
        done = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    finally:
        site.stop()
        hook.stop()
    assert len(hook.posts) == 1
    body = json.loads(hook.posts[0][1])
    assert body["crawl_id"] == 1 and body["counts"]["pages_added"] == 30  # the log completed by --resume


def test_a_scheduled_run_that_overlaps_the_running_one_is_refused_and_changes_nothing(tmp_path, capsys):
    site, hook = SyncSite(16), Receiver()
    db = tmp_path / "s.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "BLOCKCRAWL_WEBHOOK_SECRET": SECRET}
    scheduled = [sys.executable, "-m", "blockcrawl", "crawl", "--recrawl", "--store", str(db), "--no-progress",
                 "--workers", "0", "--tokenizer", "words", "--concurrency", "1", "--on-change", hook.url]
    try:
        code, err = crawl_cli(capsys, site.origin + "/p0", "--store", str(db))
        assert code == 0, err
        site.delay = 0.25  # the next run takes >= 4 s
        site.requests = 0
        first = subprocess.Popen(scheduled, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 60
        while site.requests < 3 and time.monotonic() < end:
            time.sleep(0.02)
        second = subprocess.run(scheduled, env=env, capture_output=True, text=True, timeout=120)
        assert first.poll() is None  # the second ran while the first did
        assert second.returncode == 2 and len(second.stderr.strip().splitlines()) == 1, second.stderr
        assert "being written by blockcrawl crawl" in second.stderr
        _, err1 = first.communicate(timeout=180)
        assert first.returncode == 0, err1
    finally:
        site.stop()
        hook.stop()
    with open_store(db, readonly=True) as st:
        assert [(c["id"], c["finished"]) for c in st.crawls()] == [(1, 1), (2, 1)]
    assert [json.loads(b)["crawl_id"] for _, b in hook.posts] == [2]

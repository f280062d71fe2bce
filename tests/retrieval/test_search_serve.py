"""`blockcrawl search` asks a running `blockcrawl serve` for the same store (retrieval.running), and
searches locally when there is none, when its record is stale, or with --local: the same output.
Real processes: a `blockcrawl serve` started here, `blockcrawl search` run as a user would, each with
its own XDG_RUNTIME_DIR so no other serve on the machine is seen."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from blockcrawl.retrieval import running

from ..support.search_pages import indexed

ROOT = Path(__file__).resolve().parents[2]
QUERY = "SQLite database file"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return indexed(tmp_path_factory.mktemp("search-serve") / "site.db")


def env_for(run_dir: Path) -> dict[str, str]:
    run_dir.mkdir(mode=0o700, exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "XDG_RUNTIME_DIR": str(run_dir)}


def search(store: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blockcrawl", "search", "--store", str(store), QUERY, "-k", "3",
                           *extra], capture_output=True, text=True, env=env, timeout=120)


def start_serve(store: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "blockcrawl", "serve", "--store", str(store), "--port", "0"],
                            stderr=log.open("wb"), env=env)
    for _ in range(600):
        if "Ctrl-C to stop" in log.read_text() or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert proc.poll() is None, log.read_text()
    return proc


def api_calls(log: Path) -> int:
    return sum('"GET /api/search?' in line for line in log.read_text().splitlines())


def record_path(run_dir: Path, store: Path) -> Path:
    return run_dir / "blockcrawl" / f"{running.store_key(store)}.json"


@pytest.mark.slow
def test_search_uses_running_serve_and_falls_back(store, tmp_path):
    env = env_for(tmp_path / "run")
    local = search(store, env)  # no serve yet: searched here
    assert local.returncode == 0 and "SQLite" in local.stdout, local.stderr
    local_json = search(store, env, "--json")

    log = tmp_path / "serve.log"
    proc = start_serve(store, env, log)
    try:
        rec = record_path(tmp_path / "run", store)
        assert json.loads(rec.read_text())["pid"] == proc.pid
        warm = api_calls(log)  # 0: serve logs requests only
        got = search(store, env)
        assert got.returncode == 0, got.stderr
        assert api_calls(log) == warm + 1  # the hits came from the serve ...
        assert got.stdout == local.stdout  # ... and read the same as a local search
        got_json = search(store, env, "--json")
        assert api_calls(log) == warm + 2 and got_json.stdout == local_json.stdout
        forced = search(store, env, "--local")  # --local: the serve is not asked
        assert api_calls(log) == warm + 2 and forced.stdout == local.stdout
        bad = search(store, env, "--mode", "vector", "--since", "yesterday")  # bad input: the same error line
        bad_local = search(store, env, "--mode", "vector", "--since", "yesterday", "--local")
        assert bad.returncode == bad_local.returncode == 2 and bad.stderr == bad_local.stderr
        assert api_calls(log) == warm + 3
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert not rec.exists()  # a serve stopped by SIGTERM removes its record

    proc = start_serve(store, env, log)
    proc.send_signal(signal.SIGKILL)  # no chance to clean up: the record stays, stale
    proc.wait(timeout=30)
    assert rec.exists()
    calls = api_calls(log)
    got = search(store, env)
    assert got.returncode == 0 and got.stdout == local.stdout, got.stderr
    assert api_calls(log) == calls


@pytest.mark.slow
def test_a_query_that_is_not_utf8_is_one_line_also_with_a_serve(store, tmp_path):
    """A command-line byte that is not UTF-8 reaches Python as a lone surrogate: the tokenizer raised a
    TypeError (traceback, exit 1), and forwarding it to a serve raised in urlencode."""
    env = env_for(tmp_path / "run")
    argv = [sys.executable, "-m", "blockcrawl", "search", "--store", str(store).encode(), b"caf\xe9 SQLite"]
    local = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert local.returncode == 2 and "Traceback" not in local.stderr, local.stderr
    assert local.stderr.count("\n") == 1 and "not valid text" in local.stderr, local.stderr
    log = tmp_path / "serve.log"
    proc = start_serve(store, env, log)
    try:
        got = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        assert got.returncode == 2 and got.stderr == local.stderr, got.stderr
        assert search(store, env).returncode == 0 and api_calls(log) == 1  # the serve was asked for the good one
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_stale_or_foreign_records_are_not_used(store, tmp_path):
    """A record whose port now belongs to something else (no token back), or whose pid is gone."""
    env = env_for(tmp_path / "run")
    rec = record_path(tmp_path / "run", store)
    rec.parent.mkdir(mode=0o700, exist_ok=True)
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen(1)
    other.settimeout(60)  # accept() fails the test if the search never tried this port
    port = other.getsockname()[1]
    try:
        # an alive pid (this test's) whose port answers without the token; then a pid that is gone
        done = subprocess.Popen([sys.executable, "-c", "pass"])
        done.wait()
        for pid in (os.getpid(), done.pid):
            rec.write_text(json.dumps({"pid": pid, "host": "127.0.0.1", "port": port, "token": "x" * 32,
                                   "file": running.file_id(store)}))
            proc = subprocess.Popen([sys.executable, "-m", "blockcrawl", "search", "--store", str(store), QUERY,
                                     "-k", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            if pid == os.getpid():
                conn, _ = other.accept()  # the search did connect; answer like some other program
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"hits\": []}")
                conn.close()
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0 and "SQLite" in out, err  # hits from a local search, not []
    finally:
        other.close()


def test_outcome_and_usable_decisions():
    ok = running.ServeRecord(123, "127.0.0.1", 8000, "t")
    assert running.usable(ok, True) and not running.usable(ok, False) and not running.usable(None, True)
    assert not running.usable(running.ServeRecord(123, "10.0.0.5", 8000, "t"), True)  # loopback only
    on_file = running.ServeRecord(123, "127.0.0.1", 8000, "t", "2049:77")
    assert running.usable(on_file, True, "2049:77") and not running.usable(on_file, True, "2049:78")  # new file
    body = json.dumps({"hits": [{"url": "u"}]}).encode()
    assert running.outcome(200, "t", "t", body) == running.Answer(200, [{"url": "u"}])
    assert running.outcome(200, None, "t", body) is None  # not our serve
    assert running.outcome(200, "other", "t", body) is None
    assert running.outcome(503, "t", "t", b'{"error": "busy"}') is None  # search locally instead
    assert running.outcome(400, "t", "t", b'{"error": "k must be"}') == running.Answer(400, [], "k must be")
    assert running.outcome(200, "t", "t", b"not json") is None
    assert running.connect_host("0.0.0.0") == "127.0.0.1" and running.connect_host("192.168.1.2") is None

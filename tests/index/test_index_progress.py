"""`blockcrawl index` draws its progress bar only on a terminal: with stderr in a log file there is
no `\\r` redraw in it, and `--no-progress` (like crawl's) turns the bar off on a terminal too."""
from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from ..support.crawlsite import Route, Site, page

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def _cli(*args: str, stderr: int) -> int:
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], stdout=subprocess.DEVNULL, stderr=stderr,
                          env=ENV, timeout=600, cwd=ROOT).returncode


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    routes = {"/robots.txt": Route("User-agent: *\n", ctype="text/plain"),
              "/": Route(page("Home", [f"/p{i}.html" for i in range(6)], "An index of notes."))}
    for i in range(6):
        routes[f"/p{i}.html"] = Route(page(f"Notes {i}", [], f"Part {i} of the notes on rivers and harbours. " * 20))
    site = Site(routes).start()
    path = tmp_path_factory.mktemp("progress") / "s.db"
    try:
        assert _cli("crawl", site.origin + "/", "--store", str(path), "--no-progress", "--no-sitemaps",
                    stderr=subprocess.DEVNULL) == 0
    finally:
        site.stop()
    return path


def test_index_to_a_log_file_has_no_progress_bar(store, tmp_path):
    log = tmp_path / "index.log"
    with open(log, "wb") as f:
        assert _cli("index", "--store", str(store), stderr=f.fileno()) == 0
    text = log.read_bytes()
    assert b"indexed" in text and b" embedded" in text, text
    assert b"\r" not in text, text
    assert b"embedding" not in text, text  # tqdm's desc


def _on_terminal(*args: str) -> bytes:
    """stderr on a pseudo-terminal: what the command drew there."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # tqdm reads the width
    try:
        rc = _cli(*args, stderr=follower)
        os.close(follower)
        follower = -1
        out = b""
        while True:
            try:
                got = os.read(leader, 65536)
            except OSError:  # EIO: the follower side is closed and drained
                break
            if not got:
                break
            out += got
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert rc == 0, out
    return out


def test_index_on_a_terminal_draws_the_bar_unless_no_progress(store):
    assert b"embedding" in _on_terminal("index", "--store", str(store), "--rebuild")
    drawn = _on_terminal("index", "--store", str(store), "--rebuild", "--no-progress")
    assert b"indexed" in drawn and b"embedding" not in drawn, drawn

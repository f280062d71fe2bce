"""Text from crawled pages reaches no terminal with control characters: `search`'s listing,
`extract --format text|markdown` and `export --format markdown` print it through plaintext.plain;
JSON escapes it itself. Real CLI runs on a page that carries the escapes."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from blockcrawl.index import build_index
from blockcrawl.plaintext import plain

from ..support.search_pages import fill
from .test_serve import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but newline and tab

# clear screen + home, an OSC 8 hyperlink to elsewhere, a window title, colours, a bare CR that
# overwrites, backspaces, an 8-bit CSI, NUL and DEL
HOSTILE = ("<html><head><title>Cloves\x1b]0;pwned-title\x07</title></head><body>"
           "<h1>Zanzibar\x1b[2J\x1b[H markets</h1><div><h2>Spice \x1b[31mred\x1b[0m trade</h2>"
           "<p>Zanzibar cloves \x1b]8;;http://evil.example/\x1b\\click here\x1b]8;;\x1b\\ are sold every "
           "morning; totally safe\rDANGER overwritten; back\x08\x08space; csi\x9b31m; nul\x00 del\x7f end.</p>"
           "</div></body></html>")


def test_plain_removes_sequences_whole_and_keeps_newline_and_tab():
    assert plain("a\x1b[2J\x1b[Hb") == "ab"
    assert plain("\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\") == "click"
    assert plain("\x1b]0;title\x07x") == "x" and plain("\x9d0;t\x9cx") == "x"
    assert plain("\x1b[31mred\x1b[0m \x9b1mb") == "red b"
    assert plain("one\r\ntwo\rthree") == "one\ntwo\nthree"
    assert plain("back\x08\x08 nul\x00 del\x7f c1\x85 esc\x1b") == "back nul del c1 esc"
    assert plain("tab\there\nline") == "tab\there\nline"
    same = "plain text, «marks», ünïcödé, 中文"
    assert plain(same) is same


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], capture_output=True, text=True, env=ENV,
                          timeout=300, cwd=ROOT)


def test_text_outputs_carry_no_control_characters(tmp_path):
    page = tmp_path / "hostile.html"
    page.write_text(HOSTILE)
    for fmt in ("text", "markdown"):
        for mode in ("blocks", "text", "main"):
            r = run("extract", str(page), "--format", fmt, "--mode", mode, "--tokenizer", "words")
            assert r.returncode == 0, r.stderr
            assert "Zanzibar" in r.stdout and not CONTROL.search(r.stdout), (fmt, mode, r.stdout)
            assert "pwned-title" not in r.stdout
    raw = run("extract", str(page), "--format", "jsonl", "--mode", "text", "--tokenizer", "words")
    assert "\x1b" in json.loads(raw.stdout)["text"]  # JSON keeps the text as it is, escaped

    db = tmp_path / "s.db"
    fill(db, {"http://spice.test/\x1b[2J": HOSTILE})
    build_index(db, embedder=HashEmbedder())
    r = run("export", "--store", str(db), "--what", "pages", "--format", "markdown")
    assert r.returncode == 0 and "Zanzibar" in r.stdout and not CONTROL.search(r.stdout), r.stdout
    r = run("search", "--store", str(db), "Zanzibar cloves sold", "--mode", "keyword", "--local", "--context", "block")
    assert r.returncode == 0 and "click here" in r.stdout, r.stderr
    assert not CONTROL.search(r.stdout) and "Zanzibar markets" in r.stdout, r.stdout
    r = run("search", "--store", str(db), "Zanzibar cloves sold", "--mode", "keyword", "--local", "--json")
    assert "\\u001b" in r.stdout  # JSON Lines as before

"""Code is code: a docs site with highlighted code (tests/support/docsite.py) is crawled over real HTTP on
127.0.0.1 with the CLI's defaults, and every code block's text in the stored chunks and blocks, in
`export --format markdown` and in `extract --mode main` is byte-equal, white space included, to
what Chromium's innerText gives for it (Playwright drives Debian's /usr/bin/chromium, as
crawl/net/render.py does; the browser part skips without it, like tests/crawl/test_render.py).

The comparison drops what no block can hold: blank lines before a code block's first line and
white space after its last (trim_code). Indentation, tabs, blank lines and spaces inside are
compared as they are."""
from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from blockcrawl.crawl.net.render import CHROMIUM_ARGS, chromium_path, unavailable
from blockcrawl.extraction.blocks import extract_blocks
from blockcrawl.extraction.markdown import to_markdown
from blockcrawl.extraction.text import extract_text
from blockcrawl.parse import load

from ..support.crawlsite import Site
from ..support.docsite import FORMATS, docs_page, docs_routes

ROOT = Path(__file__).resolve().parents[2]
needs_chromium = pytest.mark.skipif(unavailable() is not None, reason=f"no browser here: {unavailable()}")


def trim(text: str) -> str:
    """Leading blank lines and trailing white space off; everything else as it is."""
    text = text.rstrip()
    return re.sub(r"\A(?:[ \t\u00a0]*\n)+", "", text)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def _inner_texts(origin: str, paths: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """path -> (innerText of each code <pre> but the line-number gutters, of each inline <code>)."""
    from playwright.sync_api import sync_playwright

    out = {}
    args = [a for a in CHROMIUM_ARGS if not a.startswith("--host-resolver-rules")]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=args, headless=True, timeout=30_000)
        try:
            page = browser.new_page()
            for path in paths:
                page.goto(origin + path, wait_until="load")
                pres = page.eval_on_selector_all("pre:not(.linenodiv pre)", "els => els.map(e => e.innerText)")
                inline = page.eval_on_selector_all("p code", "els => els.map(e => e.innerText)")
                out[path] = (pres, inline)
        finally:
            browser.close()
    return out


@needs_chromium
def test_crawled_code_is_byte_equal_to_inner_text(tmp_path):
    site = Site(docs_routes()).start()
    try:
        paths = [f"/{f}.html" for f, *_ in FORMATS]
        browser = _inner_texts(site.origin, paths)
        db = tmp_path / "docs.db"
        r = _cli("crawl", site.origin + "/", "--store", str(db), "--no-progress", "--workers", "0")
        assert r.returncode == 0, r.stderr
    finally:
        site.stop()
    con = sqlite3.connect(db)
    chunks: dict[str, str] = {}
    blocks: dict[str, str] = {}
    for url, text in con.execute("SELECT url, text FROM chunks ORDER BY id"):
        chunks[url.rsplit("/", 1)[-1]] = chunks.get(url.rsplit("/", 1)[-1], "") + "\n\x00" + text
    for url, text in con.execute("SELECT p.url, b.text FROM blocks b JOIN pages p ON p.id = b.page_id"):
        blocks[url.rsplit("/", 1)[-1]] = blocks.get(url.rsplit("/", 1)[-1], "") + "\n\x00" + text
    con.close()
    md = _cli("export", "--store", str(db), "--what", "pages", "--format", "markdown")
    assert md.returncode == 0, md.stderr
    n_code = 0
    for path, (pres, inline) in browser.items():
        name = path.lstrip("/")
        assert len(pres) == 3, pres  # YAML, Python, C: the fixture is what the test believes
        saved = tmp_path / name
        saved.write_text(docs_page(paths.index(path)), encoding="utf-8")
        main = _cli("extract", str(saved), "--mode", "main", "--format", "text")
        main_md = _cli("extract", str(saved), "--mode", "main", "--format", "markdown")
        assert main.returncode == 0 and main_md.returncode == 0, main.stderr + main_md.stderr
        for inner in pres:
            code = trim(inner)
            assert "\n" in code and code.strip() != code.split("\n")[-1]  # real multi-line code
            assert code in chunks.get(name, ""), (name, code)
            assert code in blocks.get(name, ""), (name, code)
            assert code in main.stdout, (name, code)
            assert code in main_md.stdout, (name, code)
            assert code in md.stdout, (name, code)
            n_code += 1
        for inner in inline:
            assert inner in chunks.get(name, "") and inner in main.stdout, (name, inner)
        assert "SQLite format 3" in inline and "SQLiteformat3" not in chunks[name]
    assert n_code == 3 * len(FORMATS)


# --------------------------------------------------------------------- without a browser

PAGE = docs_page(0)


def test_code_keeps_white_space_everywhere():
    """The same promise on one page, against the fixture's own source: the YAML block's lines
    as written, in the blocks, the page text and the Markdown; inline spans never glued."""
    yaml = ("meta:\n  id: zip\n  endian: le\n\nseq:\n  - id: magic\n    contents: 'PK\\\\x03\\\\x04'\n"
            "  - id: local_files\n    type: local_file\n    repeat: eos")
    assert yaml in "\n".join(b.text for b in extract_blocks(PAGE))
    assert yaml in extract_text(PAGE)
    assert yaml in to_markdown(load(PAGE))
    assert "\tuint8_t  kind[4];\n\n\tuint8_t *data;  // length bytes" in extract_text(PAGE)
    text = extract_text(PAGE)
    assert "SQLite format 3" in text and "SQLiteformat3" not in text


def test_mask_dropping_white_space_nodes_does_not_glue_tokens():
    """A mask that keeps only non-blank text nodes (what `auto` gives highlighted code) still
    reads the code with its white space, and inline spans with their spaces."""
    from blockcrawl.extraction.blocks import blocks_from_dom
    from blockcrawl.parse import TEXT

    dom = load("<body><p>Starts with <code><span>SQLite</span> <span>format</span> <span>3</span></code> here.</p>"
               "<pre><span>meta</span><span>:</span>\n  <span>id</span><span>:</span> <span>zip</span></pre></body>")
    keep = [t == TEXT and bool(x.strip()) for t, x in zip(dom.tag, dom.text)]
    texts = [b.body for b in blocks_from_dom(dom, keep=keep)]
    assert texts == ["Starts with SQLite format 3 here.", "meta:\n  id: zip"]
    md = to_markdown(dom, keep)
    assert "`SQLite format 3`" in md and "```\nmeta:\n  id: zip\n```" in md

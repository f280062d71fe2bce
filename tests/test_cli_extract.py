"""`blockcrawl extract` as a user runs it: a subprocess over files, folders and standard input."""
import json
import subprocess
import sys
from pathlib import Path

from .test_seed000_blocks import PAGE1, PAGE2

ROOT = Path(__file__).resolve().parents[1]


def run(*args, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], cwd=ROOT, input=stdin,
                          capture_output=True, timeout=120)


def test_extract_jsonl_over_a_folder(tmp_path):
    (tmp_path / "a.html").write_text(PAGE1, encoding="utf-8")
    (tmp_path / "b.html").write_text(PAGE2, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not html", encoding="utf-8")
    r = run("extract", str(tmp_path), "--chunk-size", "100", "--overlap", "20")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert {"url", "text", "heading_path", "chunk_index", "block_hash"} <= set(rows[0])
    assert sum("Britannica contains" in row["text"] for row in rows) == 1
    germany = [row for row in rows if row["heading_path"] == ["Europe Countries", "Germany"]]
    assert len(germany) == 1 and germany[0]["url"].endswith("a.html")
    china = [row for row in rows if row["heading_path"][-1:] == ["China"]]
    assert [row["chunk_index"] for row in china] == list(range(len(china))) and len(china) >= 2


def test_extract_text_mode_from_stdin():
    r = run("extract", "-", "--mode", "text", "--format", "text",
            stdin=b"<h1>Header</h1> Some text <div><script>x()</script><p>Paragraph.</p></div>")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().strip() == "Header Some text Paragraph."


def test_extract_markdown_and_full_path(tmp_path):
    page = tmp_path / "p.html"
    page.write_text(PAGE1, encoding="utf-8")
    md = run("extract", str(page), "--format", "markdown").stdout.decode()
    assert "# Europe Countries" in md and "## Germany" in md
    assert md.index("## Germany") < md.index("Germany, officially") < md.index("## France")
    rows = [json.loads(x) for x in run("extract", str(page), "--full-path").stdout.decode().splitlines()]
    assert any(row["text"].startswith("Europe Countries > France: France, officially") for row in rows)


def test_missing_file_and_bad_options_give_one_line_errors(tmp_path):
    (tmp_path / "ok.html").write_text("<p>fine</p>", encoding="utf-8")
    r = run("extract", str(tmp_path / "missing.html"), str(tmp_path / "ok.html"), "--mode", "text")
    assert r.returncode == 1
    assert b"fine" in r.stdout  # the good file is still processed
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "missing.html" in err[0] and "Traceback" not in r.stderr.decode()
    r = run("extract", str(tmp_path / "ok.html"), "--chunk-size", "10", "--overlap", "10")
    assert r.returncode == 2 and b"overlap" in r.stderr


def _site_page(topic: str, body: str) -> str:
    return (f"<html><body><div id='top'><a href='/'>Home</a> <a href='/news'>News</a> <a href='/about'>About us</a>"
            f"<p>Subscribe to the weekly letter of the Springfield Gazette today.</p></div>"
            f"<div id='content'><h1>{topic}</h1><p>{body}</p></div>"
            f"<div id='bottom'><p>Copyright Springfield Gazette, all rights reserved worldwide.</p></div></body></html>")


def test_template_algorithm_sees_the_pages_as_one_site(tmp_path):
    bodies = {"rain": "Heavy rain flooded the lower town on Monday and the river rose two metres overnight.",
              "fair": "The county fair opens on Friday with a parade, a cattle show and fireworks at ten.",
              "road": "Road works on the main street will close the bridge for three weeks from June."}
    for name, body in bodies.items():
        (tmp_path / f"{name}.html").write_text(_site_page(name.title(), body), encoding="utf-8")
    r = run("extract", str(tmp_path), "--mode", "main", "--algorithm", "template", "--format", "text",
            "--no-dedup")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    for body in bodies.values():
        assert body in out
    # the parts the three pages share are template, removed on every page
    assert "Subscribe to the weekly letter" not in out and "Copyright Springfield" not in out

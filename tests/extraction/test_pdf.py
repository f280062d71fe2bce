"""PDFs: blocks with headings and page numbers (extraction.pdf), and crawled by the real CLI from
a local server: stored like pages, encrypted and broken ones logged on one line and skipped."""
from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from blockcrawl.crawl.decisions.policy import Scope, make_policy, reject_reason
from blockcrawl.extraction.pdf import PdfError, is_pdf, pdf_blocks

from ..support.crawlsite import Route, Site, page
from ..support.pdfgen import make_pdf, report

ROOT = Path(__file__).resolve().parents[2]
PDF_TYPES = "text/html,application/xhtml+xml,application/pdf"


def encrypted(user_password: str) -> bytes:
    import pypdf

    w = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(report())))
    w.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    w.write(out)
    return out.getvalue()


def test_outline_headings_and_page_numbers_in_the_heading_path():
    title, blocks = pdf_blocks(report(), "http://x.test/r.pdf")
    assert title == "Report"
    paths = [b.heading_path for b in blocks]
    assert paths[:4] == [("Report", "1 Introduction", "p. 1"), ("Report", "2 Methods", "p. 2"),
                         ("Report", "2 Methods", "2.1 Data", "p. 3"), ("Report", "2 Methods", "2.1 Data", "p. 4")]
    assert blocks[1].text == "2 Methods > p. 2: We fetch pages with aiohttp and parse them with lexbor."
    assert blocks[1].body == "We fetch pages with aiohttp and parse them with lexbor."
    assert [b.position for b in blocks] == list(range(len(blocks))) and blocks[0].url == "http://x.test/r.pdf"
    full = pdf_blocks(report(), full_path=True)[1]
    assert full[3].text.startswith("Report > 2 Methods > 2.1 Data > p. 4: More method")


def test_font_size_headings_without_outline():
    pdf = make_pdf([[(20, "Big Heading"), (10, "body text line one"), (10, "body text line two"),
                     (14, "Sub heading"), (10, "more body text here")], [(10, "page two text")]])
    title, blocks = pdf_blocks(pdf)
    assert title == "Big Heading"  # no document title: the first top heading
    assert [(b.heading_path, b.body) for b in blocks] == [
        (("Big Heading", "p. 1"), "body text line one\nbody text line two"),
        (("Big Heading", "Sub heading", "p. 1"), "more body text here"),
        (("Big Heading", "Sub heading", "p. 2"), "page two text")]


def test_encrypted_broken_and_huge_pdfs_raise_one_line_errors():
    with pytest.raises(PdfError, match="encrypted"):
        pdf_blocks(encrypted("secret"))
    assert len(pdf_blocks(encrypted(""))[1]) == 5  # an empty user password opens it
    for bad in (b"%PDF-1.4\n garbage", report()[:300], b""):
        with pytest.raises(PdfError, match="broken PDF"):
            pdf_blocks(bad)
    with pytest.raises(PdfError, match="6 pages, more than the limit of 5"):
        pdf_blocks(report(6), max_pages=5)
    with pytest.raises(PdfError, match="text longer"):
        pdf_blocks(report(), max_chars=100)
    assert is_pdf("application/pdf; qs=1", b"") and is_pdf("text/html", b"%PDF-1.7 ...")
    assert not is_pdf("text/html", b"<html>%PDF-")


def test_pdf_links_pass_the_extension_filter_only_when_pdfs_are_wanted():
    scope = Scope("any", frozenset(), frozenset())
    html = make_policy(scope)
    pdf = make_policy(scope, content_types=("text/html", "application/xhtml+xml", "application/pdf"))
    assert reject_reason(html, "http://a.test/r.pdf", 1) == "extension"
    assert reject_reason(pdf, "http://a.test/r.pdf", 1) is None
    assert reject_reason(pdf, "http://a.test/i.png", 1) == "extension"  # the others stay filtered


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def pdf_site():
    links = ["/report.pdf", "/secret.pdf", "/broken.pdf", "/image.png", "/typed.html"]
    s = Site({
        "/": Route(page("Home page", links, "The home page links to reports and other documents of the site.")),
        "/report.pdf": Route(report(), ctype="application/pdf"),
        "/secret.pdf": Route(encrypted("secret"), ctype="application/pdf"),
        "/broken.pdf": Route(report()[:400], ctype="application/pdf"),
        "/image.png": Route(b"\x89PNG\r\n", ctype="image/png"),
        # a PDF sent as octet-stream is refused by type; one sent as HTML is read as a PDF
        "/typed.html": Route(make_pdf([[(10, "A PDF served as text/html is still read as one.")]]), ctype="text/html"),
    }).start()
    yield s
    s.stop()


def test_crawl_stores_pdfs_and_logs_unreadable_ones(pdf_site, tmp_path):
    db = tmp_path / "c.db"
    r = cli("crawl", pdf_site.origin + "/", "--store", str(db), "--content-types", PDF_TYPES, "--tokenizer", "words",
            "--no-progress", "--workers", "0", "--ignore-robots")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "/image.png" not in pdf_site.paths()  # still filtered by its extension
    con = sqlite3.connect(db)
    pages = dict(con.execute("SELECT url, content_type FROM pages"))
    origin = pdf_site.origin
    assert set(pages) == {origin + "/", origin + "/report.pdf", origin + "/typed.html"}
    rows = con.execute("SELECT b.heading_path, b.text FROM blocks b JOIN pages p ON p.id = b.page_id "
                       "WHERE p.url = ? ORDER BY b.position", (origin + "/report.pdf",)).fetchall()
    assert json.loads(rows[3][0]) == ["Report", "2 Methods", "2.1 Data", "p. 4"]
    chunks = con.execute("SELECT heading_path FROM chunks WHERE url = ?", (origin + "/report.pdf",)).fetchall()
    # pages 3 and 4 of "2.1 Data" are two short sibling sections, and with page 2 still a fragment:
    # one chunk under "2 Methods", the heading all three share
    assert len(rows) == 5 and [json.loads(c[0]) for c in chunks][1] == ["Report", "2 Methods"]
    assert len(chunks) == 3
    log = con.execute("SELECT url, event, error, detail FROM crawl_log WHERE url LIKE '%.pdf'").fetchall()
    failed = {u.rsplit("/", 1)[1]: (err, detail) for u, ev, err, detail in log if ev == "failed"}
    assert failed["secret.pdf"] == ("pdf", "encrypted (a password is needed)")
    assert failed["broken.pdf"][0] == "pdf" and failed["broken.pdf"][1].startswith("broken PDF")
    assert len([x for x in log if x[0].endswith(("secret.pdf", "broken.pdf"))]) == 2  # one line each
    con.close()
    r = cli("export", "--store", str(db), "--what", "pages", "--format", "markdown")
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert (f"<!-- {origin}/report.pdf -->\n# Report\n\n## 1 Introduction\n\n<!-- p. 1 -->\n\nThe crawler reads the web"
            in r.stdout)
    assert "### 2.1 Data\n\n<!-- p. 3 -->\n\nThe data set" in r.stdout


def test_default_crawl_does_not_fetch_pdf_links(pdf_site, tmp_path):
    db = tmp_path / "c.db"
    r = cli("crawl", pdf_site.origin + "/", "--store", str(db), "--tokenizer", "words", "--no-progress",
            "--workers", "0", "--ignore-robots")
    assert r.returncode == 0, r.stderr
    assert not [p for p in pdf_site.paths() if p.endswith(".pdf")]


def test_extract_cli_reads_a_pdf_file(tmp_path):
    (tmp_path / "r.pdf").write_bytes(report())
    (tmp_path / "bad.pdf").write_bytes(report()[:300])
    r = cli("extract", str(tmp_path / "r.pdf"), str(tmp_path / "bad.pdf"), "--tokenizer", "words")
    assert r.returncode == 1  # one input could not be read: one line, the other still extracted
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    # extract prints chunks: page 2 and pages 3 and 4 of "2.1 Data" (short sections) are one
    assert rows[1]["heading_path"] == ["Report", "2 Methods"] and "p. 4: " in rows[1]["text"]
    assert "2.1 Data > p. 3: " in rows[1]["text"] and len(rows) == 3
    assert r.stderr.count("\n") == 1 and "bad.pdf: broken PDF" in r.stderr

"""One extraction path: blockcrawl.extract(), SitePipeline(mode="main") and the crawl worker
(crawl.analysis.process.analyse) give one main text for one page (bench/onepath.py checks the same over
every development page: 0 disagreements on 3,177 pages).

The crawl worker carries no text before page info: its content_hash is the hash of the main
text it extracted, so the test compares that hash with the hash of extract()'s text (and the
info texts, where page info is there)."""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from blockcrawl import extract
from blockcrawl.crawl.analysis import process
from blockcrawl.crawl.urls import canonicalize
from blockcrawl.pipeline import PipelineConfig, SitePipeline

from .chunk.test_sections_dedup_chunks import PAGE1, PAGE2

ROOT = Path(__file__).resolve().parents[1]
DEMO = sorted((ROOT / "examples" / "demo-site").rglob("*.html"))
PROSE = ("The river rose by two metres overnight and the old bridge, built in 1872, was closed to traffic "
         "while engineers from the county council inspected its piers for damage. ")
NAV = "<nav><ul>" + "".join(f'<li><a href="/s{i}">Section {i}</a></li>' for i in range(12)) + "</ul></nav>"


def _json_ld_only() -> bytes:
    """A script-rendered article: an empty app root, the article only in JSON-LD articleBody."""
    body = " ".join([PROSE] * 4)
    ld = json.dumps({"@context": "https://schema.org", "@type": "NewsArticle", "headline": "Flood",
                     "articleBody": body})
    return (f'<!DOCTYPE html><html><head><title>Flood</title><script type="application/ld+json">{ld}</script>'
            '<script src="/app.js"></script></head><body><div id="root"></div></body></html>').encode()


def _table_page() -> bytes:
    rows = "".join(f"<tr><td>{y}</td><td>Film number {y - 1990}</td><td>Lead role in a long drama</td></tr>"
                   for y in range(1991, 2011))
    return (f"<html><head><title>Filmography of Ann Example</title></head><body>{NAV}<main>"
            "<h1>Filmography of Ann Example</h1><p>" + PROSE + "</p><table><caption>Films</caption>"
            f"<tr><th>Year</th><th>Title</th><th>Role</th></tr>{rows}</table><p>{PROSE}</p></main>"
            "<footer>Copyright Example Films</footer></body></html>").encode()


def _article(title: str = "Old bridge closed after the flood") -> str:
    return (f"<html><head><title>{title} | The Daily Example</title></head><body>{NAV}<article><h1>{title}</h1>"
            + "".join(f"<p>{PROSE}Paragraph {i}.</p>" for i in range(6)) + "</article><aside>Most read: "
            "<a href='/x'>a story</a></aside></body></html>")


SYNTHETIC: dict[str, tuple[bytes, str]] = {
    "json-ld-only": (_json_ld_only(), "The river rose by two metres"),
    "table": (_table_page(), "Film number 7"),
    "article": (_article().encode(), "Paragraph 5."),
    # a gzip file served as HTML without Content-Encoding: the crawl worker inflated it, extract()
    # and SitePipeline read it as binary and gave "" (fixed: extraction.api.raw_body)
    "gzip body": (gzip.compress(_article().encode()), "Paragraph 5."),
    "windows-1252": (('<html><head><meta charset="windows-1252"><title>Caf\u00e9 news</title></head><body>'
                      + "<article>" + "".join(f"<p>Caf\u00e9 cr\u00e8me {PROSE}</p>" for _ in range(4))
                      + "</article></body></html>").encode("cp1252"), "Caf\u00e9 cr\u00e8me"),
    "noindex": (_article().replace("<head>", '<head><meta name="robots" content="noindex">').encode(), "Paragraph 5."),
    "navigation only": (f"<html><body>{NAV}</body></html>".encode(), ""),
    "empty": (b"", ""),
}


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _three(pages: list[tuple[bytes, str]], algorithm: str = "auto") -> list[str]:
    """The pages of one site through the three paths; each page's extract() text, after
    asserting that the other two agree with it."""
    cfg = PipelineConfig(mode="main", algorithm=algorithm, tokenizer="words")
    process.init_state(cfg)
    pipe = SitePipeline(cfg)
    texts = []
    for body, url in pages:
        doc = extract(body, url, algorithm=algorithm)
        res = pipe.process(body, url)
        out = process.analyse("http://site.example", body, url, "text/html", True, extract=True)
        assert res.text == doc.text, url
        assert out.error is None, url
        assert out.content_hash == _digest(doc.text), url
        for info in (getattr(res, "info", None), getattr(out, "info", None), getattr(doc, "info", None)):
            if info is not None:
                assert info.text == doc.text, url
        texts.append(doc.text)
    return texts


def test_bundled_pages_agree():
    pages = [(p.read_bytes(), "http://demo.example/" + p.relative_to(ROOT / "examples" / "demo-site").as_posix())
             for p in DEMO]
    pages += [(PAGE1.encode(), "http://britannica.example/europe"), (PAGE2.encode(), "http://britannica.example/asia")]
    assert len(pages) >= 6
    texts = _three(pages)
    assert sum(1 for t in texts if len(t) > 100) >= 4  # real main texts, not agreement on nothing
    # the second Britannica page repeats the banner: site dedup drops blocks, never the text
    assert "China" in texts[-1] and "Germany" in texts[-2]


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_pages_agree(name):
    body, expected = SYNTHETIC[name]
    url = canonicalize(f"http://news.example/{name.replace(' ', '-')}.html")
    assert url is not None
    (text,) = _three([(body, url)])
    if expected:
        assert expected in text
    else:
        assert text == ""


def test_the_same_article_twice_on_a_site_keeps_its_text():
    """Site dedup removes the second copy's blocks (they were seen), not its text."""
    body = _article().encode()
    a, b = _three([(body, "http://news.example/a.html"), (body, "http://news.example/b.html")])
    assert a == b and "Paragraph 0." in a


def test_every_page_algorithm_agrees_on_the_table_page():
    from blockcrawl.extraction.registry import ALGORITHMS

    names = [n for n, a in ALGORITHMS.items() if not a.is_site]
    for name in names:
        try:
            ALGORITHMS[name].page_selector()
        except ImportError:
            continue
        _three([(_table_page(), "http://films.example/ann.html")], algorithm=name)

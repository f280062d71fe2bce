"""The search page (retrieval/page.html) in Chromium, driven by Playwright as a user would: type a
query, see the query's words highlighted, page forward and back, filter by site, date, language and
kind; hits of one page under one title; long words wrapped. `blockcrawl serve` runs in this process
on a store made by the real pipeline (page info: language, dates) and indexed with the real model,
and the page runs under the server's own CSP (no inline handlers, hashed script, Trusted Types)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from blockcrawl.crawl.net.render import CHROMIUM_ARGS, chromium_path, unavailable
from blockcrawl.index import build_index, default_embedder
from blockcrawl.pipeline import SitePipeline
from blockcrawl.store import Store

from .test_serve import start, stop

pytestmark = [pytest.mark.slow, pytest.mark.skipif(unavailable() is not None, reason=f"no browser: {unavailable()}")]

LONG_WORD = "Pneumono" + "ultramicroscopicsilicovolcano" * 6 + "coniosis"  # 190 letters, no break


def news(i: int) -> str:
    # two sections, each long enough to be a chunk of its own: a page gives several hits
    return (f"<html lang='en'><head><title>Harbour news {i}</title>"
            f"<meta property='article:published_time' content='2024-{i:02d}-10T08:00:00Z'></head><body><article>"
            f"<h1>Harbour news {i}</h1><h2>The lighthouse</h2><p>The lighthouse keeper of harbour {i} climbed the "
            f"tower at dusk, lit the lamp and watched the ships pass the rocks until the morning came. Each "
            f"night of the winter he wrote the weather, the wind and the names of the boats in his book.</p>"
            f"<h2>The town</h2><p>In the town of harbour {i} the lighthouse keeper is known by everyone, and the "
            f"fishermen thank the keeper for every safe return from the sea. On market days the children ask "
            f"him about storms, and he tells them how the light is seen far out beyond the rocks.</p>"
            f"</article></body></html>")


def docs(i: int) -> str:
    return (f"<html lang='de'><head><title>Leuchtturm Handbuch {i}</title></head><body><main><h1>Handbuch {i}</h1>"
            f"<h2>Wartung</h2><p>Der lighthouse keeper prüft die Lampe {i} jeden Abend, reinigt die Linse und "
            f"notiert den Ölstand im Buch des Turms.</p></main></body></html>")


# the word in the title, the URL and the text (short enough to be its own snippet)
LONG = (f"<html lang='en'><head><title>{LONG_WORD}</title></head><body><main><h2>Longest word</h2><p>The word "
        f"{LONG_WORD} wraps.</p></main></body></html>")
LONG_URL = "http://news.test/words/" + LONG_WORD.lower()


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("page") / "site.db"
    pages = {f"http://news.test/2024/{i:02d}": news(i) for i in range(1, 10)}
    pages.update({f"http://docs.test/handbuch/{i}": docs(i) for i in range(1, 5)})
    pages[LONG_URL] = LONG
    with Store(path) as st:
        for url, html in pages.items():
            # mode main, as a crawl: page info (kind, language, date); a pipeline each, so the near-twin
            # paragraphs are not dropped as the site's repeated text
            r = SitePipeline(mode="main").process(html, url)
            st.save_page(url, r.blocks, r.chunks, title=r.title, markdown=r.markdown, info=r.info)
    build_index(path, embedder=default_embedder(), batch_size=8)
    srv, url = start(path, embedder=default_embedder(), access_log=False)
    yield url
    stop(srv)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    args = [a for a in CHROMIUM_ARGS if not a.startswith("--host-resolver-rules")]  # the server is on 127.0.0.1
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path(), args=args)
        yield b
        b.close()


@pytest.fixture
def page(browser, base) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1000, "height": 900})
    p = ctx.new_page()
    p.csp_errors = []  # CSP and Trusted Types violations, and any script error (a 400 is an answer, not one)
    p.on("console", lambda m: p.csp_errors.append(m.text)
         if m.type == "error" and not m.text.startswith("Failed to load resource") else None)
    p.on("pageerror", lambda e: p.csp_errors.append(str(e)))
    p.goto(base + "/")
    yield p
    assert p.csp_errors == []
    ctx.close()


def results(p) -> list[dict[str, Any]]:
    """The groups shown: url, title, cite, and each hit's rank, chunk id, crumbs and marked words."""
    return p.eval_on_selector_all(".group", """gs => gs.map(g => ({
        url: g.dataset.url, title: g.querySelector('.title').textContent, cite: g.querySelector('cite').textContent,
        hits: [...g.querySelectorAll('.hit')].map(h => ({rank: +h.dataset.rank, id: +h.dataset.chunkId,
            crumbs: [...h.querySelectorAll('.crumbs span:not(.score)')].map(s => s.textContent),
            marks: [...h.querySelectorAll('mark')].map(m => m.textContent)}))}))""")


def done(p) -> int:
    return int(p.get_attribute("#results", "data-done") or 0)


def act(p, action: Any, before: int | None = None) -> str:
    """Do something that searches, wait until that search is answered; the status line then.
    before: the count of answered searches to wait past (0 after loading the page anew)."""
    before = done(p) if before is None else before
    action()
    p.wait_for_function("n => +(document.getElementById('results').dataset.done || 0) > n", arg=before,
                        timeout=60_000)
    return str(p.text_content("#status"))


def enter(p, field: str, value: str) -> str:
    p.fill(field, value)
    return act(p, lambda: p.press(field, "Enter"))


def search(p, query: str) -> str:
    return enter(p, "#q", query)


def test_type_a_query_see_highlights_and_page_forward(page):
    assert search(page, "lighthouse keeper").startswith("Results 1–10 (10 hits")
    first = results(page)
    hits = [h for g in first for h in g["hits"]]
    assert sorted(h["rank"] for h in hits) == list(range(1, 11))
    # the query's words are highlighted, and only they
    marks = [m.lower() for h in hits for m in h["marks"]]
    assert marks and set(marks) <= {"lighthouse", "keeper"} and sum(1 for h in hits if h["marks"]) >= 5
    # hits from the same page sit under one title, which shows the page's URL
    assert len({g["url"] for g in first}) == len(first) and len(first) < len(hits)
    for g in first:
        assert g["cite"] == g["url"] and g["title"]
        assert page.get_attribute(f'.group[data-url="{g["url"]}"] > a', "href") == g["url"]
        assert all(h["crumbs"] for h in g["hits"])  # the heading path
    assert page.is_hidden("#prev") and page.is_visible("#next")
    assert act(page, lambda: page.click("#next")).startswith("Results 11–")
    second = [h for g in results(page) for h in g["hits"]]
    assert sorted(h["rank"] for h in second)[0] == 11 and not {h["id"] for h in second} & {h["id"] for h in hits}
    assert parse_qs(urlsplit(page.url).query)["offset"] == ["10"] and page.is_visible("#prev")
    # the address can be shared: loading it shows the same page of results
    assert act(page, lambda: page.goto(page.url), before=0).startswith("Results 11–")
    assert [h["id"] for g in results(page) for h in g["hits"]] == [h["id"] for h in second]
    assert act(page, lambda: page.click("#prev")).startswith("Results 1–10 ")
    assert [h["id"] for g in results(page) for h in g["hits"]] == [h["id"] for h in hits]


def test_filters(page):
    search(page, "lighthouse keeper")
    assert enter(page, "#site", "docs.test").startswith("Results 1–")
    assert {urlsplit(g["url"]).hostname for g in results(page)} == {"docs.test"}
    page.fill("#site", "")
    assert enter(page, "#lang", "de").startswith("Results 1–")
    assert {g["title"].split()[0] for g in results(page)} == {"Leuchtturm"}
    page.fill("#lang", "")
    # a date input and a select search at once, on their change event
    assert act(page, lambda: page.fill("#since", "2024-07-01")).startswith("Results 1–")
    shown = {g["url"] for g in results(page)}
    assert shown == {f"http://news.test/2024/{i:02d}" for i in (7, 8, 9)}
    assert parse_qs(urlsplit(page.url).query)["since"] == ["2024-07-01"]
    assert act(page, lambda: page.select_option("#kind", "other")) == "No results with these filters"
    assert results(page) == [] and parse_qs(urlsplit(page.url).query)["kind"] == ["other"]
    act(page, lambda: page.fill("#since", ""))  # a date input searches on its own: wait for that answer
    assert act(page, lambda: page.select_option("#kind", "article")).startswith("Results 1–")
    assert all(g["url"].startswith("http://news.test/") for g in results(page))
    assert enter(page, "#site", "nowhere.test") == "No results with these filters"
    assert enter(page, "#site", "https://bad/").startswith("Error: site must be a host name")


def test_long_words_wrap_on_a_narrow_screen(page):
    page.set_viewport_size({"width": 360, "height": 800})
    assert search(page, LONG_WORD).startswith("Results 1–")
    first = results(page)[0]
    assert first["url"] == LONG_URL and first["title"] == LONG_WORD and first["hits"][0]["marks"] == [LONG_WORD]
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, overflow
    rights = page.eval_on_selector_all(".text, cite, .group > a, .crumbs", "es => es.map(e => e.getBoundingClientRect().right)")
    assert rights and max(rights) <= 360


def test_markup_in_the_query_stays_text(page):
    status = search(page, "<img src=x onerror=alert(1)> lighthouse")
    assert status.startswith("Results") or status.startswith("No results")
    assert page.evaluate("() => document.querySelectorAll('img').length") == 0
    assert page.input_value("#q") == "<img src=x onerror=alert(1)> lighthouse"

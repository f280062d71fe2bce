"""The page-text fallback of the page-type rules (extraction.listing): a listing or collection
whose rule finds a teaser keeps its items; a page whose rule found its text keeps that mask."""
import pytest

from blockcrawl.extraction import auto, listing, nfas
from blockcrawl.extraction.api import main_content
from blockcrawl.extraction.features import compute
from blockcrawl.parse import TEXT, load

from .test_pagetypes import _article

NAV = '<nav><ul>' + "".join(f'<li><a href="/s{i}">Section {i}</a></li>' for i in range(10)) + "</ul></nav>"
FOOTER = ("<footer><p>Copyright 2024 Example Ltd, all rights reserved.</p>"
          "<a href='/privacy'>Privacy</a></footer>")


def jobs_page(items: int = 30) -> str:
    """A job board without <main>: every card is one link (title, company, place, salary)."""
    cards = "".join(
        f'<li class="job"><a href="/jobs/{i}"><span class="title">Backend engineer number {i}</span>'
        f'<span class="company">Company {i} Ltd</span><span class="place">Remote, Europe</span>'
        f'<span class="pay">${50 + i},000 a year</span></a></li>' for i in range(1, items + 1))
    return (f"<html><head><title>Remote backend jobs</title></head><body>{NAV}"
            '<div class="content"><div class="intro"><p>Sign up to get new jobs by email.</p></div>'
            f'<section class="jobs"><h2>Backend jobs</h2><ul>{cards}</ul></section></div>'
            f"{FOOTER}</body></html>")


def story_page() -> str:
    """An article with a column of teaser links beside it (no furniture name on the column)."""
    prose = "".join(f"<p>The council met on Tuesday, and paragraph {i} of the report says so, at "
                    f"length, with figures, quotes and the reasons given by each side.</p>" for i in range(12))
    teasers = "".join(f'<div class="t"><a href="/n/{i}">Other story headline number {i}</a></div>'
                      for i in range(8))
    return (f"<html><head><title>Council vote</title></head><body>{NAV}<div class='wrap'>"
            f"<div class='story'><h1>Council vote</h1>{prose}</div><div class='col'>{teasers}</div>"
            f"</div>{FOOTER}</body></html>")


def _select_as(monkeypatch, html: str, kind: str) -> str:
    monkeypatch.setattr(nfas, "page_type", lambda dom, keep: kind)
    dom = load(html)
    return main_content(dom, keep=auto.select(dom))[1]


def test_listing_without_main_keeps_every_item_and_drops_furniture(monkeypatch):
    html = jobs_page()
    text = _select_as(monkeypatch, html, "listing")
    for i in (1, 15, 30):
        assert f"Backend engineer number {i}" in text and f"${50 + i},000 a year" in text
    assert "Backend jobs" in text
    assert "Section 3" not in text and "Copyright" not in text
    # the article rule alone keeps none of the cards: what the fallback is for
    assert "Backend engineer number 15" not in _article(html)


def test_collection_without_main_keeps_its_entries(monkeypatch):
    html = jobs_page(12).replace("Backend engineer", "Oak chair model")
    text = _select_as(monkeypatch, html, "collection")
    assert all(f"Oak chair model number {i}" in text for i in (1, 6, 12))
    assert "Privacy" not in text


def test_a_page_whose_rule_found_its_text_keeps_that_mask(monkeypatch):
    """A story typed listing: the article rule keeps most of the page's text, so the teaser
    column beside it stays out."""
    html = story_page()
    text = _select_as(monkeypatch, html, "listing")
    assert "paragraph 11 of the report" in text
    assert "Other story headline number 3" not in text
    assert text == _article(html)


@pytest.mark.parametrize("kind", ["listing", "collection", "article"])
def test_fallback_is_the_share_of_the_page_text(kind):
    dom = load(jobs_page())
    f = compute(dom)
    page = auto._whole(dom, f, region=False)
    texts = [j for j in range(len(dom)) if page[j]]
    total = sum(f.text_len[j] for j in texts)
    share = listing.PAGE_SHARE[kind]
    # a mask of the first nodes holding just under / just over the share
    under, kept = [False] * len(dom), 0
    for j in texts:
        if kept + f.text_len[j] >= share * total:
            break
        under[j] = True
        kept += f.text_len[j]
    over = list(under)
    for j in texts:
        if not over[j]:
            over[j] = True
            kept += f.text_len[j]
            if kept >= share * total:
                break
    assert listing.page_fallback(dom, f, under, kind) == page
    assert listing.page_fallback(dom, f, over, kind) is over
    assert listing.page_fallback(dom, f, under, "forum") is under  # no share: the rule's mask


def test_fallback_keeps_only_text_nodes_outside_furniture():
    dom = load(jobs_page(5))
    f = compute(dom)
    keep = listing.page_fallback(dom, f, [False] * len(dom), "listing")
    assert any(keep) and all(dom.tag[j] == TEXT for j in range(len(dom)) if keep[j])
    nav = dom.find("nav")
    assert not any(keep[nav:dom.end[nav]])


def _list_page(table: bool) -> str:
    rows = "".join(f"<tr><th>{2000 + i}</th><td>Winner number {i}</td><td>{i * 3} points</td></tr>" for i in range(12))
    body = (f"<table class='wikitable'><caption>Results by year</caption>{rows}</table>" if table else
            "<ul>" + "".join(f"<li>Winner number {i} scored {i * 3} points</li>" for i in range(12)) + "</ul>")
    more = "".join(f"<p>Background paragraph {i} about the league, its seasons and its many clubs over the years.</p>"
                   for i in range(20))
    return f"<html><body><h1>List of winners</h1>{body}<h2>See also</h2>{more}</body></html>"


@pytest.mark.parametrize("table", [True, False])
def test_a_listing_whose_rule_kept_its_data_table_keeps_that_mask(table):
    """A list page typed listing whose rule kept its results table (a Wikipedia "List of ..."
    page) is not widened to the page's text: the fallback there added see-also lists and
    navigation and cost wtq-dev's table answers .016 R@5. A plain list is widened as before."""
    dom = load(_list_page(table))
    f = compute(dom)
    first = dom.find("table" if table else "ul")
    keep = [dom.tag[j] == TEXT and first <= j < dom.end[first] for j in range(len(dom))]
    got = listing.page_fallback(dom, f, keep, "listing")
    if table:
        assert got is keep
    else:
        assert got == auto._whole(dom, f, region=False)
    assert listing.page_fallback(dom, f, keep, "collection") == auto._whole(dom, f, region=False)

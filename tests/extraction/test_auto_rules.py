"""The rules of `auto` tuned on the development sets, each on a small page where the rule decides
the outcome."""
import blockcrawl
from blockcrawl.parse import load

from .test_auto import NAV, PROSE, article_page

POST = "<p>" + " ".join(PROSE) + "</p>"


# ---------------------------------------------------------------- noscript holding the page

def test_noscript_page_is_read_when_the_body_shows_nothing():
    html = ('<html><head><title>Forum</title></head><body><script src="/ember.js"></script>'
            '<div id="app"></div><noscript><header><a href="/">Forum</a></header>'
            f'<div id="main-outlet"><h1>Levee question</h1>{POST}{POST}</div>'
            '<script>var x = "not text";</script></noscript></body></html>')
    doc = blockcrawl.extract(html)
    assert PROSE[0][:40] in doc.text
    assert "not text" not in doc.text
    dom = load(html)
    assert not any(dom.skipped[i] for i in range(len(dom)) if dom.text[i].startswith(PROSE[0][:20]))


def test_noscript_stays_hidden_beside_a_visible_page():
    plea = "<noscript><p>" + "Please enable JavaScript to use every feature of this site. " * 5 + "</p></noscript>"
    doc = blockcrawl.extract(article_page(plea))
    assert PROSE[0][:40] in doc.text
    assert "enable JavaScript" not in doc.text


# ---------------------------------------------------------------- folded content

ANSWERS = [
    "The levee was raised by two metres in the spring, with clay brought in from the quarry upriver, "
    "and the new pumps at the railway line can move three times the water the old ones could. "
    "They were tested in the autumn, in front of the whole council and half the town.",
    "Households below the railway line can ask the council for sandbags at any time of year, and the "
    "fire station keeps a list of neighbours who need help to leave their homes in a hurry. "
    "Ask for the form at the town hall, or print it from the council's website.",
]


def _faq_page(fold: str, extra: str = "") -> str:
    items = "".join(f'<div class="qa-item"><h3>Question {i}</h3><div class="{fold}" style="display:none">'
                    f"<p>{a}</p></div></div>" for i, a in enumerate(ANSWERS))
    return article_page(f'<section class="questions">{items}</section>{extra}')


def test_folded_prose_is_content():
    doc = blockcrawl.extract(_faq_page("accordion-panel"))
    assert ANSWERS[0][:40] in doc.text and ANSWERS[1][:40] in doc.text


def test_hidden_prose_that_is_not_folded_stays_out():
    doc = blockcrawl.extract(_faq_page("teaser-copy"))
    assert PROSE[0][:40] in doc.text
    assert ANSWERS[0][:40] not in doc.text


def test_folded_menu_stays_out():
    menu = ('<div class="dropdown"><ul class="collapse" hidden>' + "".join(
        f'<li><a href="/s{i}">Another section of the newspaper number {i}</a></li>' for i in range(8)) + "</ul></div>")
    doc = blockcrawl.extract(_faq_page("accordion-panel", menu))
    assert "Another section" not in doc.text


def test_react_streamed_segments_are_content():
    """React's streamed rendering sends a Suspense boundary's content as <div hidden id="S:n">,
    moved into place by its script: the reader's text. Another hidden div stays out."""
    seg = f'<div hidden id="S:0"><section><h2>Flood plan</h2><p>{ANSWERS[1]}</p></section></div>'
    other = f'<div hidden id="teaser-7"><p>{ANSWERS[0]}</p></div>'
    html = (f"<html><body>{NAV}<main><h1>Our town</h1>{POST}{POST}<template id=\"B:0\"></template></main>"
            f"{other}{seg}<script>$RC('B:0','S:0')</script></body></html>")
    doc = blockcrawl.extract(html)
    assert PROSE[0][:40] in doc.text and ANSWERS[1][:40] in doc.text
    assert ANSWERS[0][:40] not in doc.text


# ---------------------------------------------------------------- prose spread over many sections

def _landing_page(links: bool = False) -> str:
    """A product page: four features, each a heading, a paragraph and a list of short points, each
    in its own row/column wrappers; the first feature has two paragraphs, so it wins the vote."""
    rows = []
    for i, text in enumerate(PROSE):
        extra = f"<p>{PROSE[(i + 1) % 4]}</p>" if i == 0 else ""
        points = "".join(f'<li>{"<a href=/p>" if links else ""}Point {i}.{k} in short'
                         f'{"</a>" if links else ""}</li>' for k in range(8))
        rows.append(f'<div class="row"><div class="col"><section><h2>Feature {i}</h2><p>{text}</p>{extra}'
                    f"<ul>{points}</ul></section></div></div>")
    return (f"<html><head><title>Product</title></head><body>{NAV}<div class=\"page\">{''.join(rows)}</div>"
            "</body></html>")


def test_prose_spread_over_sections_is_kept_whole():
    doc = blockcrawl.extract(_landing_page())
    for text in PROSE:
        assert text[:40] in doc.text
    assert "Section 3" not in doc.text  # the menu stays out


def test_widening_leaves_teaser_sections_out(monkeypatch):
    """Sections whose points are links (a teaser grid) are not brought in by the article rule's
    widening (the page is typed a service page, whose rule keeps every section: tests/extraction/test_pagetypes.py)."""
    from dataclasses import replace

    from blockcrawl.extraction.params import DEFAULTS

    doc = blockcrawl.extract(_landing_page(links=True), params=replace(DEFAULTS, type_rules=None))
    assert PROSE[0][:40] in doc.text
    assert PROSE[3][:40] not in doc.text


# ---------------------------------------------------------------- precision rules (autotune3)

TEASER = ("Another story from the same newspaper, about the council budget and the new bus routes, "
          "with a long excerpt of its first paragraph to tempt the reader into clicking through.")


def test_nocontent_box_is_furniture_whatever_its_other_names():
    """class="nocontent" (a search appliance's "do not index") beside a content word is furniture."""
    box = f'<div class="most-read nocontent article-content"><p>{TEASER}</p><p>{TEASER}</p></div>'
    doc = blockcrawl.extract(article_page(box))
    assert PROSE[0][:40] in doc.text
    assert TEASER[:40] not in doc.text
    doc = blockcrawl.extract(article_page(f'<div class="most-popular article-list"><div>'
                                          f'<p>{TEASER}</p><p>{TEASER}</p></div></div>'))
    assert TEASER[:40] not in doc.text


def test_browser_notice_is_not_text():
    notice = ("<p>This page is best viewed in an up-to-date web browser with style sheets (CSS) enabled. "
              "Please consider upgrading your browser software.</p>")
    doc = blockcrawl.extract(article_page(notice))
    assert PROSE[0][:40] in doc.text
    assert "best viewed" not in doc.text
    # an article about browsers is text: the notice addresses the reader
    doc = blockcrawl.extract(article_page("<p>The reader app is removing support for older browsers, "
                                          "notably Internet Explorer 6, and requires JavaScript.</p>"))
    assert "removing support for older browsers" in doc.text


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a regex (split at '|' outside parentheses)."""
    out, depth, cur = [], 0, ""
    for ch in pattern:
        depth += (ch == "(") - (ch == ")")
        if ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def test_notice_phrases_start_with_the_lookahead_letters():
    # NOTICE_AT looks for a phrase only where one of NOTICE_START's letters is: every alternative
    # of NOTICE_PHRASES must start with one of them (an alternative opening with a group: each of its own)
    from blockcrawl.extraction.patterns import NOTICE_PHRASES, NOTICE_START

    todo, firsts = _alternatives(NOTICE_PHRASES.pattern), set()
    while todo:
        alt = todo.pop()
        if alt.startswith("("):
            depth = 0
            for k, ch in enumerate(alt):
                depth += (ch == "(") - (ch == ")")
                if depth == 0:
                    todo += _alternatives(alt[1:k])
                    break
        else:
            firsts.add(alt[0].lower())
    assert firsts and firsts <= set(NOTICE_START), firsts


def test_related_stories_bigger_than_the_article_stay_out():
    """A related-stories column of long excerpts can hold most of the page's text; it is no wrapper."""
    items = "".join(f'<li><a href="/s{i}"><h3>Headline {i}</h3></a><p class="dek">{TEASER} {TEASER} {TEASER}</p></li>'
                    for i in range(6))
    doc = blockcrawl.extract(article_page(f'<section class="module related-stories"><ul>{items}</ul></section>'))
    assert PROSE[0][:40] in doc.text
    assert TEASER[:40] not in doc.text


def test_name_patterns_read_lower_cased_ascii_names_as_written():
    # furniture._finds reads an ASCII class/id lower-cased with the pattern compiled without re.I (3x
    # faster): the same answer as the case-insensitive pattern on the name as written
    import re

    from blockcrawl.extraction import furniture
    from blockcrawl.extraction import patterns as pt

    names = ["NavBar", "site-FOOTER", "Footnote", "footer", "BIG-AD-slot", "ads", "Adsense", "loading",
             "MostPopular", "most-popular", "nocontent x", "NoContent", "Share-Bar", "social İcons",
             "ſhare", "cooKie", "related-Posts entry-content", "col-md-4", "", "TAGS-list", "hero-Banner"]
    patterns = [pt.UNLIKELY, pt.MAYBE, pt.REMOVE, pt.CREDIT, pt.NEGATIVE, pt.POSITIVE,
                re.compile(pt.STRONG, re.I), re.compile(pt.TEASERS, re.I),
                re.compile(r"\Snav", re.I), re.compile(r"Nav", re.I), re.compile(r"\x41d", re.I)]
    assert furniture._cased(pt.UNLIKELY.pattern, pt.UNLIKELY.flags) is not None  # the fast path is taken
    assert furniture._cased(r"\Snav", re.I) is None and furniture._cased("Nav", re.I) is None  # ... only where it is exact
    for rx in patterns:
        for s in names:
            assert furniture._finds(rx, s) == (rx.search(s) is not None), (rx.pattern, s)

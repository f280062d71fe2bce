"""The recall rules of `auto` tuned on the development sets (docs/notes/autotune.md), each on a
small page where the rule decides the outcome."""
import blockcrawl
from blockcrawl.parse import load

from .test_auto import PROSE, article_page

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

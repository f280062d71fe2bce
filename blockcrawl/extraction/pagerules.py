"""Rules of the product, forum and service page types: what auto's `mild`, `wide` and `region`
masks keep on such pages that their readers do not search for, removed after the mask is made.

Measured on wcxb-dev (WCXB word F1, pages the shipped model types as that type, docs/algorithms.md
"Page types"): the loss on product and forum pages is precision (P .60 / R .79 product, P .75 /
R .91 forum), and most of it is text said twice or text of a known kind:
- a carousel's cloned slides, a feature list repeated for each colour, a forum signature under
  every post of its author: the same text node again. `dedup` keeps the first copy (forum .791 ->
  .822, product .615 -> .638; every one of the five site folds gains on both);
- on a product page, its reviews and ratings, its questions and answers, its legal footnotes
  (`PRODUCT_DROP`): product .638 -> .658; a text node that is a bare URL: .660;
- on a forum thread, the signatures and the authors' statistics (`FORUM_DROP`): .822 -> .833.
A documentation page's <main> minus its prev/next, edit, "on this page" and "last modified"
boxes (`DOCS_DROP`): .932 -> .935. A service page's sections are the <main> region's text when the page has a <main> holding text
(auto's `region`), else auto's `wide` mask: service .804 -> .835.

All of it is one pass over the flat Dom (a dropped element is skipped whole), O(n).
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..parse import TEXT, Dom
from ..parse.dom import Attrs

# A text node repeating an earlier kept one is dropped from this many characters (whitespace
# normalised): shorter ones ("Yes", "No", "$20.00", "Reply") are a table's cells and a post's
# labels, said again on purpose. 10 vs 30 vs 80 on wcxb-dev forum pages: .822 / .816 / .812.
DEDUP_MIN = 10
# An element named like this is dropped unless it holds this share of the kept text (a wrapper
# named "product-reviews-page" holding the whole product is no review list; 0.5 / 0.8 / none:
# product .650 / .658 / .658).
DROP_SHARE = 0.8
# Names of what a product page's reader does not search for: reviews and ratings (not
# "preview"), testimonials, questions and answers, disclaimers and footnotes. On wcxb-dev's product
# pages, each alone: reviews +.011, questions +.008, disclaimers +.004 word F1.
PRODUCT_DROP = re.compile(r"(?<!p)review|rating|testimonial|disclaimer|footnote|questions|\bqa\b|"
                          r"q-?and-?a", re.I)
# A documentation page's furniture inside its <main>: the "last modified" line, the page footer
# and its "was this helpful?" box, prev/next links, breadcrumbs, the table of contents ("on this
# page") and edit links. wcxb-dev documentation pages typed so: .932 -> .935 (no site fold loses).
DOCS_DROP = re.compile(r"last-?modified|last-?updated|article-?footer|page-?footer|feedback|helpful|"
                       r"prev-?next|pagination|breadcrumb|\btoc\b|on-?this-?page|edit-?(this|page|on)|"
                       r"edit-?link", re.I)
# A forum post's signature ("sig" as a word: not "design", "signin") and its author's statistics
# beside it (XenForo's message-userExtras: "Messages 1,204 Reaction score 311 Joined ...", 16 of
# wcxb-dev's forum pages): signatures .822 -> .827, statistics .827 -> .833 (every site fold gains).
FORUM_DROP = re.compile(r"signature|\bsig\b|user-?extras|user-?stats", re.I)


def dedup(dom: Dom, keep: list[bool], min_len: int = DEDUP_MIN) -> list[bool]:
    """Unkeep every kept text node (of min_len characters or more) whose text a kept node before it
    already said; keep is changed in place and returned."""
    seen: set[str] = set()
    tags, texts = dom.tag, dom.text
    for j in range(len(dom)):
        if keep[j] and tags[j] == TEXT:
            t = " ".join(texts[j].split())
            if len(t) >= min_len:
                if t in seen:
                    keep[j] = False
                else:
                    seen.add(t)
    return keep


@lru_cache(maxsize=8192)
def _named(names: str, pattern: re.Pattern[str]) -> bool:
    return pattern.search(names) is not None


def _names(a: Attrs | None) -> str:
    if not a:
        return ""
    c, d = a.get("class"), a.get("id")
    return f"{c or ''} {d or ''}" if c or d else ""


def drop_named(dom: Dom, keep: list[bool], pattern: re.Pattern[str], share: float = DROP_SHARE
               ) -> list[bool]:
    """Unkeep the text of elements whose class/id matches pattern, unless one holds share of the
    kept text or more; keep is changed in place and returned."""
    n = len(dom)
    tags, ends, attrs, texts = dom.tag, dom.end, dom.attrs, dom.text
    kept = [0] * (n + 1)  # prefix sums of kept characters: an element's kept text in O(1)
    for j in range(n):
        kept[j + 1] = kept[j] + (len(texts[j].strip()) if keep[j] and tags[j] == TEXT else 0)
    limit = share * kept[n]
    j = 0
    while j < n:
        if tags[j] != TEXT:
            names = _names(attrs[j])
            e = ends[j]
            if names and _named(names, pattern) and 0 < kept[e] - kept[j] < limit:
                for k in range(j, e):
                    keep[k] = False
                j = e
                continue
        j += 1
    return keep


# A price alone in its text node: "$35.00", "EUR 12,50", "1.299,00 €", "249 kr".
PRICE = re.compile(r"\s*(?:[$\u20ac\u00a3\u00a5\u20b9]|USD|EUR|GBP)\s?\d[\d,.]*\s*$|"
                   r"\s*\d[\d,.]*\s?(?:[$\u20ac\u00a3]|EUR|USD|kr)\s*$")
PRICE_WINDOW = 300  # nodes after the page's <h1> searched for its price


def price(dom: Dom, keep: list[bool], dead: list[bool]) -> list[bool]:
    """Keep the first price after the page's first <h1> that is not in page furniture (dead).
    A price stands alone before the description, so the article rule's edge trimming drops it;
    it is one or two words of the gold on wcxb-dev (neutral there: .658 with or without), and the
    fact a shopper asks first."""
    tags, texts, skipped = dom.tag, dom.text, dom.skipped
    n = len(dom)
    h = next((i for i in range(n) if tags[i] == "h1"), -1)
    if h < 0:
        return keep
    for j in range(h, min(n, h + PRICE_WINDOW)):
        if tags[j] == TEXT and not dead[j] and not skipped[j] and PRICE.match(texts[j]):
            keep[j] = True
            break
    return keep


# A text node that is a bare address: an image or variant URL of a product's data dump.
URL = re.compile(r"\s*(https?://|www\.)\S+\s*$")


def drop_urls(dom: Dom, keep: list[bool]) -> list[bool]:
    """Unkeep the text nodes that are nothing but a URL (product pages .658 -> .660)."""
    tags, texts = dom.tag, dom.text
    for j in range(len(dom)):
        if keep[j] and tags[j] == TEXT and URL.match(texts[j]):
            keep[j] = False
    return keep


def product(dom: Dom, keep: list[bool], dead: list[bool], owner: list[int]) -> list[bool]:
    """A product page's description, specifications and price: the mask minus its reviews,
    questions and footnotes and bare URLs, each text said once, plus its price (dead: auto's
    furniture mask; owner unused, the rules take one signature)."""
    return price(dom, drop_urls(dom, dedup(dom, drop_named(dom, keep, PRODUCT_DROP))), dead)


def docs(dom: Dom, keep: list[bool], dead: list[bool], owner: list[int]) -> list[bool]:
    """A documentation page's whole body minus its navigation and footer boxes (dead, owner:
    unused, the rules take one signature)."""
    return drop_named(dom, keep, DOCS_DROP)


def thread(dom: Dom, keep: list[bool], dead: list[bool], owner: list[int]) -> list[bool]:
    """A forum thread's posts with their authors: the mask minus signatures, each text said once,
    with the first post's head (dead, owner: auto's furniture mask and text block owners)."""
    return dedup(dom, drop_named(dom, first_head(dom, keep, dead, owner), FORUM_DROP))


HEAD_UP = 2  # levels from the first kept text block up to its post (p -> post body -> post)


def first_head(dom: Dom, keep: list[bool], dead: list[bool], owner: list[int]) -> list[bool]:
    """Keep the text before the first kept node inside its post (HEAD_UP levels up): the first
    post's author and date, which auto's edge trimming drops as short lines before the first
    prose (the authors of later posts stay, being inside). Neutral on wcxb-dev's forum pages
    (.827 with or without; 1 / 2 / 3 levels: .827 / .827 / .825)."""
    tags, skipped, parent = dom.tag, dom.skipped, dom.parent
    j0 = next((j for j in range(len(dom)) if keep[j]), -1)
    if j0 < 0:
        return keep
    g = owner[j0]
    for _ in range(HEAD_UP):
        if parent[g] >= 0:
            g = parent[g]
    for q in range(g, j0):
        if tags[q] == TEXT and not dead[q] and not skipped[q] and dom.text[q].strip():
            keep[q] = True
    return keep

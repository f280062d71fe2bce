"""Rules of the product, forum and service page types: what auto's `mild`, `wide` and `region`
masks keep on such pages that their readers do not search for, removed after the mask is made.

On product and forum pages the masks lose precision, not recall, and most of what they keep
wrongly is text said twice or text of a known kind:
- a carousel's cloned slides, a feature list repeated for each colour, a forum signature under
  every post of its author: the same text node again. `dedup` keeps the first copy;
- on a product page, its reviews and ratings, its questions and answers, its legal footnotes
  (`patterns.PRODUCT_DROP`), and text nodes that are a bare URL;
- on a forum thread, the signatures and the authors' statistics (`patterns.FORUM_DROP`).
A documentation page's <main> loses its prev/next, edit, "on this page" and "last modified"
boxes (`patterns.DOCS_DROP`). A service page's sections are the <main> region's text when the page has a
<main> holding text (auto's `region`), else auto's `wide` mask; then (`service`, after the
page-text fallback) its calls to action and its blocks said twice go. The measurements behind each
removal and its parameters (extraction.params): docs/decisions/0012-per-type-removals.md.

All of it is one pass over the flat Dom (a dropped element is skipped whole), O(n).
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..parse import TEXT, Dom
from ..parse.dom import Attrs
from .params import DEFAULTS, ExtractionParams
from .patterns import (
    CTA_NAME,
    CTA_VERB,
    DOCS_DROP,
    FORUM_DROP,
    FURNITURE_HEADING,
    FURNITURE_NAMES,
    PRICE,
    PRODUCT_DROP,
    URL,
)

# A text node repeating an earlier kept one is dropped from this many characters (whitespace
# normalised): shorter ones ("Yes", "No", "$20.00", "Reply") are a table's cells and a post's
# labels, said again on purpose (longer minimums keep more repeats; decision 0012): params.dedup_min.
# An element named like this is dropped unless it holds this share of the kept text (a wrapper
# named "product-reviews-page" holding the whole product is no review list; decision 0012):
# params.drop_share.
# The page types whose mask loses those boxes and sections (drop_furniture), and which: on a
# product page all of it; on a listing only the other products' boxes and sections, as a
# listing's items carry their own ratings (a film list's "7.9 (76K)"). The record block
# (extraction.records) reads no pairs inside any of them, on any page.
# (params.furniture_kinds; the product furniture's names and headings: extraction.patterns).


def one_product(dom: Dom) -> bool:
    """The page declares exactly one product or book in its JSON-LD (jsonld.SCHEMA_TYPES): a
    product page, whatever its shape (a listing's items are an ItemList or several products)."""
    from .jsonld import SCHEMA_TYPES, ld_values, walk

    n = 0
    for d in walk(ld_values(dom)):
        t = d.get("@type")
        if any(isinstance(x, str) and SCHEMA_TYPES.match(x) for x in (t if isinstance(t, list) else [t])):
            n += 1
            if n > 1:
                return False
    return n == 1


def drop_furniture(dom: Dom, keep: list[bool], names: re.Pattern[str] = FURNITURE_NAMES,
                   heading: re.Pattern[str] = FURNITURE_HEADING, share: float = DEFAULTS.drop_share,
                   heading_chars: int = DEFAULTS.furniture_heading_chars) -> list[bool]:
    """keep without the page's furniture (a new mask): the elements whose class/id matches names
    (unless one holds share of the kept text), and the sections whose heading (of at most
    heading_chars) matches heading: the heading's parent when that holds less than share
    of the kept text, else the nodes from the heading to the next heading as high. Two flat
    passes, O(n)."""
    out = drop_named(dom, list(keep), names, share)
    n = len(dom)
    tags, ends, texts, parent, skipped = dom.tag, dom.end, dom.text, dom.parent, dom.skipped
    kept = [0] * (n + 1)
    for j in range(n):
        kept[j + 1] = kept[j] + (len(texts[j].strip()) if out[j] and tags[j] == TEXT else 0)
    limit = share * kept[n]
    level = 0  # inside a flat section under a furniture heading: its level
    j = 0
    while j < n:
        t = tags[j]
        if t in _LEVELS:
            lv = _LEVELS[t]
            if level and lv <= level:
                level = 0
            if not skipped[j] and ends[j] - j <= 16:
                h = " ".join(texts[q] for q in range(j, ends[j]) if tags[q] == TEXT).strip()
                if len(h) <= heading_chars and heading.search(h):
                    p = parent[j]
                    if p >= 0 and kept[ends[p]] - kept[p] < limit and tags[p] not in ("body", "main", "article"):
                        out[p:ends[p]] = [False] * (ends[p] - p)
                        j = ends[p]
                        continue
                    level = lv
        if level:
            out[j] = False
        j += 1
    return out


_LEVELS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}




def dedup(dom: Dom, keep: list[bool], min_len: int = DEFAULTS.dedup_min) -> list[bool]:
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


def drop_named(dom: Dom, keep: list[bool], pattern: re.Pattern[str], share: float = DEFAULTS.drop_share
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




def price(dom: Dom, keep: list[bool], dead: list[bool], window: int = DEFAULTS.price_window) -> list[bool]:
    """Keep the first price after the page's first <h1> that is not in page furniture (dead).
    A price stands alone before the description, so the article rule's edge trimming drops it;
    it is one or two words of the gold on wcxb-dev (neutral there: .658 with or without), and the
    fact a shopper asks first."""
    tags, texts, skipped = dom.tag, dom.text, dom.skipped
    n = len(dom)
    h = next((i for i in range(n) if tags[i] == "h1"), -1)
    if h < 0:
        return keep
    for j in range(h, min(n, h + window)):
        if tags[j] == TEXT and not dead[j] and not skipped[j] and PRICE.match(texts[j]):
            keep[j] = True
            break
    return keep




def drop_urls(dom: Dom, keep: list[bool]) -> list[bool]:
    """Unkeep the text nodes that are nothing but a URL (a product's image and variant links)."""
    tags, texts = dom.tag, dom.text
    for j in range(len(dom)):
        if keep[j] and tags[j] == TEXT and URL.match(texts[j]):
            keep[j] = False
    return keep


def product(dom: Dom, keep: list[bool], dead: list[bool], owner: list[int],
            params: ExtractionParams = DEFAULTS) -> list[bool]:
    """A product page's description, specifications and price: the mask minus its reviews,
    questions and footnotes and bare URLs, each text said once, plus its price (dead: auto's
    furniture mask; owner unused, the rules take one signature)."""
    named = drop_named(dom, keep, PRODUCT_DROP, params.drop_share)
    return price(dom, drop_urls(dom, dedup(dom, named, params.dedup_min)), dead, params.price_window)


def docs(dom: Dom, keep: list[bool], dead: list[bool], owner: list[int],
         params: ExtractionParams = DEFAULTS) -> list[bool]:
    """A documentation page's whole body minus its navigation and footer boxes (dead, owner:
    unused, the rules take one signature)."""
    return drop_named(dom, keep, DOCS_DROP, params.drop_share)


def thread(dom: Dom, keep: list[bool], dead: list[bool], owner: list[int],
           params: ExtractionParams = DEFAULTS) -> list[bool]:
    """A forum thread's posts with their authors: the mask minus signatures, each text said once,
    with the first post's head (dead, owner: auto's furniture mask and text block owners)."""
    head = first_head(dom, keep, dead, owner, params.head_up)
    return dedup(dom, drop_named(dom, head, FORUM_DROP, params.drop_share), params.dedup_min)


def first_head(dom: Dom, keep: list[bool], dead: list[bool], owner: list[int],
               up: int = DEFAULTS.head_up) -> list[bool]:
    """Keep the text before the first kept node inside its post (`up` levels: p -> post body -> post): the first
    post's author and date, which auto's edge trimming drops as short lines before the first
    prose (the authors of later posts stay, being inside). Neutral on wcxb-dev's forum pages
    (.827 with or without; 1 / 2 / 3 levels: .827 / .827 / .825)."""
    tags, skipped, parent = dom.tag, dom.skipped, dom.parent
    j0 = next((j for j in range(len(dom)) if keep[j]), -1)
    if j0 < 0:
        return keep
    g = owner[j0]
    for _ in range(up):
        if parent[g] >= 0:
            g = parent[g]
    for q in range(g, j0):
        if tags[q] == TEXT and not dead[q] and not skipped[q] and dom.text[q].strip():
            keep[q] = True
    return keep


# A service page's calls to action: "Learn more", "Get started", "Book a demo", "See plans", "Contact
# us" under every section and card. WCXB's annotators keep a service page's sections, not its
# buttons. A call to action is a link or button of at most params.cta_words words, standing outside any
# sentence (no text node beside it in its parent: "read our <a>terms</a>" stays), that is named as
# a button (a <button>, class/id/role btn, button, cta) or opens with a call's verb (CTA_VERB):
# any short link would take a collection's product names with it. Measured in decision 0012.


def calls_to_action(dom: Dom, keep: list[bool], max_words: int = 6,
                    max_chars: int = DEFAULTS.cta_chars) -> list[bool]:
    """keep without the page's calls to action (a new mask). Two flat passes: the parents holding
    text of their own, then every <a> and <button> (they do not nest in one another's text)."""
    n = len(dom)
    tags, texts, ends, parent, attrs = dom.tag, dom.text, dom.end, dom.parent, dom.attrs
    out = list(keep)
    in_sentence = [False] * n  # an element with a text node of its own beside its children
    kept = [0] * (n + 1)  # prefix sums of kept characters: an element's kept text in O(1)
    for j in range(n):
        k = 0
        if tags[j] == TEXT:
            s = texts[j].strip()
            if s:
                p = parent[j]
                if p >= 0:
                    in_sentence[p] = True
                if keep[j]:
                    k = len(s)
        kept[j + 1] = kept[j] + k
    j = 0
    while j < n:
        t = tags[j]
        if t != "a" and t != "button":
            j += 1
            continue
        e = ends[j]
        k = kept[e] - kept[j]
        p = parent[j]
        if 0 < k <= max_chars and not (p >= 0 and in_sentence[p]):
            words = " ".join(texts[q] for q in range(j, e) if tags[q] == TEXT and out[q]).split()
            if 0 < len(words) <= max_words:
                names = _names(attrs[j])
                a = attrs[j]
                if a and a.get("role"):
                    names += " " + (a.get("role") or "")
                if t == "button" or (names and _named(names, CTA_NAME)) or CTA_VERB.match(words[0]):
                    out[j:e] = [False] * (e - j)
        j = e if e > j else j + 1
    return out


# A block said twice whole on a service page: a carousel's cloned slides (a testimonial with its
# author), the desktop and the mobile copy of a section (linear.app's "hide-laptop" twin). The
# second copy of an element holding at least two kept text nodes and params.repeat_chars
# characters, its kept text nodes the same as an earlier element's, is dropped. Whole blocks, not
# each text node said again (dedup, the forum and product rule): on a service page a short label
# or a price said twice is often content. Measured in decision 0012.
_MOD = (1 << 61) - 1
_BASE = 1_000_003


def repeated_blocks(dom: Dom, keep: list[bool], min_chars: int = 80) -> list[bool]:
    """keep without the second and later copies of a block (a new mask). One flat pass builds
    prefix sums of the kept text nodes (count, characters, a polynomial hash of their
    whitespace-normalised texts), so each element's kept text is compared in O(1); a copy is
    skipped whole. An element inside the first copy (its wrapper chain) is no copy."""
    n = len(dom)
    tags, texts, ends = dom.tag, dom.text, dom.end
    out = list(keep)
    before = [0] * (n + 1)  # kept text nodes before node j
    chars = [0]  # prefix sums over the kept text nodes, in order
    hashes = [0]
    for j in range(n):
        c = 0
        if keep[j] and tags[j] == TEXT:
            t = " ".join(texts[j].split())
            if t:
                c = 1
                chars.append(chars[-1] + len(t))
                hashes.append((hashes[-1] * _BASE + (hash(t) & _MOD)) % _MOD)
        before[j + 1] = before[j] + c
    powers = [1] * len(hashes)
    for i in range(1, len(powers)):
        powers[i] = powers[i - 1] * _BASE % _MOD
    first: dict[tuple[int, int, int], int] = {}  # a block's signature -> the end of its first copy
    j = 0
    while j < n:
        if tags[j] != TEXT:
            e = ends[j]
            lo, hi = before[j], before[e]
            if hi - lo >= 2 and chars[hi] - chars[lo] >= min_chars:
                sig = (hi - lo, chars[hi] - chars[lo], (hashes[hi] - hashes[lo] * powers[hi - lo]) % _MOD)
                end = first.get(sig)
                if end is None:
                    first[sig] = e
                elif end <= j:
                    out[j:e] = [False] * (e - j)
                    j = e
                    continue
        j += 1
    return out


# The page types whose mask (after listing.page_fallback) loses its calls to action and its blocks
# said twice (auto.select).
# (params.service_kinds)


def service(dom: Dom, keep: list[bool], params: ExtractionParams = DEFAULTS) -> list[bool]:
    """A service page's sections: the mask without its calls to action and second copies."""
    if params.cta_words:
        keep = calls_to_action(dom, keep, params.cta_words, params.cta_chars)
    if params.repeat_chars:
        keep = repeated_blocks(dom, keep, params.repeat_chars)
    return keep

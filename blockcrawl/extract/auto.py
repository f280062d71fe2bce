"""`auto`: the default main-content selector.

Readability-style scoring on the flat Dom, made O(n):
1. one pass of per-node aggregates (text, link text, commas, tag counts per subtree);
2. page furniture is masked out up front: nav/aside/footer/form elements and elements whose
   class/id name a menu, sidebar, comment list, share bar, ad, cookie banner...;
3. each text block (the text a block-level element owns directly) votes for its ancestors with
   1 + commas + length/100; a candidate's score is its votes times (1 - link density) plus a
   class/id weight; the best candidate, the siblings that score close to it, and their
   descendants form the article;
4. inside it, link lists, forms and widgets are cleaned away (link density, tag counts), while
   headings, lists, tables, code and quotes that carry text stay.
If that leaves almost nothing, the page's JSON-LD articleBody (schema.org) is matched against its
text nodes instead. The result is a keep mask for blocks_from_dom.
"""
from __future__ import annotations

import json
import re

from ..parse import TEXT, Dom
from .features import Features, compute

# Elements that own the text inside them (a text block).
OWNER_TAGS = frozenset({
    "p", "div", "td", "th", "li", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "section",
    "article", "main", "dd", "dt", "figcaption", "caption", "body", "table", "ul", "ol", "dl", "form",
    "header", "footer", "nav", "aside", "center", "address", "details", "summary", "figure", "tr",
    "legend", "fieldset", "html",
})
# Page furniture by element name.
FURNITURE_TAGS = frozenset({"nav", "aside", "footer", "button", "dialog", "menu", "select",
                            "input", "label", "option"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

_UNLIKELY = re.compile(
    r"-ad-|\bads?\b|advert|banner|breadcrumb|combx|comment|communit|cookie|consent|gdpr|disqus|"
    r"(?<![a-z])foot(?![a-z])|"
    r"footer|masthead|menu|navbar|\bnav\b|navigation|related|recommend|remark|replies|rss|shoutbox|"
    r"sidebar|skyscraper|social|sponsor|share|sharing|pagination|pager|popup|modal|newsletter|"
    r"subscribe|signup|promo|outbrain|taboola|widget|toolbar|login|byline|author-bio|tags?-?list|"
    r"trending|most-?popular|breaking|skip-?link|print-?only|more-?(news|stories|posts|articles)|"
    r"also-?like|you-?might|read-?next|up-?next|latest-?(news|posts|stories)", re.I)
_MAYBE = re.compile(r"and|article|body|column|content|main|shadow|story|entry|post|embed", re.I)
_POSITIVE = re.compile(r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story|"
                       r"prose|rich-?text", re.I)
_NEGATIVE = re.compile(
    r"-ad-|hidden|\bhid\b|banner|combx|comment|com-|contact|foot|footer|footnote|gdpr|masthead|"
    r"media|meta|outbrain|promo|related|scroll|share|shoutbox|sidebar|skyscraper|sponsor|shopping|"
    r"tags|tool|widget|nav|menu|social|caption|credit", re.I)
_TAG_BASE = {"div": 5, "article": 8, "main": 5, "section": 2, "pre": 3, "td": 3, "blockquote": 3,
             "address": -3, "ol": -3, "ul": -3, "dl": -3, "dd": -3, "dt": -3, "li": -3, "form": -3,
             "h1": -5, "h2": -5, "h3": -5, "h4": -5, "h5": -5, "h6": -5, "th": -5}
_SENTENCE_END = re.compile(r"[.!?]\s*$|[.!?][\"'\u201d\u2019)]\s*$")
DEBUG: dict | None = None  # development aid: the chosen candidates
BIG_SHARE = 0.4
MIN_TEXT = 250
JUNK_RATIO = 0.2  # an ancestor joins the article if it adds at most this junk per prose char
JUNK_STOP = 1.0
JUNK_BLINK = True
LEVELS = (1.0, 0.5, 1 / 6)  # share of a block's vote for its container, grandparent, next
SELF_VOTE = frozenset({"body", "html", "div", "td", "section", "article", "main"})
JUNK_LD = (0.2, 0.33, 0.5)  # link density that condemns a container: bad name, no name, any
CLIMB_LINK = 0.3  # ...and at most this much link text per added prose char  # stop climbing when the junk an ancestor adds exceeds the prose
LINK_BLOCK = 0.5  # a text block with more link text than this is a link block
INLINE_LINK = 0.3  # weight of links inside prose in link density  # below this many characters the result counts as a miss and a looser pass runs


def _names(dom: Dom, i: int) -> str:
    a = dom.attrs[i]
    if not a:
        return ""
    c, d = a.get("class"), a.get("id")
    if c and d:
        return c + " " + d
    return c or d or ""


def _weight(names: str) -> int:
    if not names:
        return 0
    w = 0
    if _NEGATIVE.search(names):
        w -= 25
    if _POSITIVE.search(names):
        w += 25
    return w


def _hidden(a: dict[str, str] | None) -> bool:
    if not a:
        return False
    if "hidden" in a or a.get("aria-hidden") == "true":
        return True
    st = a.get("style")
    return bool(st) and ("display:none" in st.replace(" ", "").lower()
                         or "visibility:hidden" in st.replace(" ", "").lower())


def select(dom: Dom) -> list[bool] | None:
    """Keep mask of the page's main content (all False if the page has no text)."""
    n = len(dom)
    if n == 0:
        return []
    f = compute(dom)
    keep = _select(dom, f, strict=True)
    if keep is None:
        keep = _select(dom, f, strict=False)
    if keep is None:
        keep = _json_ld(dom)
    if keep is None:
        # Nothing reads like an article: keep whatever text is not page furniture.
        dead, _ = _furniture(dom, f, strict=True)
        tags, tl = dom.tag, f.text_len
        keep = [tags[j] == TEXT and tl[j] > 0 and not dead[j] for j in range(n)]
    return keep


def _furniture(dom: Dom, f: Features, strict: bool) -> tuple[list[bool], list[int]]:
    """(dead, owner): nodes inside page furniture, and the text block owner of every node."""
    n = len(dom)
    tags, parent, attrs, skipped = dom.tag, dom.parent, dom.attrs, dom.skipped
    tl = f.text_len
    dead = [False] * n
    big = BIG_SHARE * tl[dom.body()]
    owner = [0] * n
    for i in range(n):
        p = parent[i]
        t = tags[i]
        if p >= 0:
            if dead[p]:
                dead[i] = True
            owner[i] = i if t in OWNER_TAGS else owner[p]
        else:
            owner[i] = i
        if t == TEXT or dead[i] or skipped[i]:
            continue
        if t in FURNITURE_TAGS:
            dead[i] = True
            continue
        if tl[i] > big:  # a wrapper of most of the page (an ASP.NET <form>) is no furniture
            continue
        if t == "form":
            dead[i] = True
            continue
        a = attrs[i]
        if a is None or t in ("body", "html", "a", "article", "main"):
            continue
        if _hidden(a):
            dead[i] = True
            continue
        if strict:
            names = _names(dom, i)
            if names and _UNLIKELY.search(names) and not _MAYBE.search(names):
                dead[i] = True
    return dead, owner


def _select(dom: Dom, f: Features, strict: bool) -> list[bool] | None:
    n = len(dom)
    tags, parent, ends, attrs, skipped = dom.tag, dom.parent, dom.end, dom.attrs, dom.skipped
    tl, ll, cm = f.text_len, f.link_len, f.commas

    # 1. furniture mask (top-down) and the text block owner of every node
    dead, owner = _furniture(dom, f, strict)

    if DEBUG is not None:
        DEBUG[f'dead{strict}'] = dead
    # 2. text per owner (a text block), then live text and "boilerplate link" text per subtree:
    # a block that is mostly link text counts whole, links inside prose count a little.
    own_tl: dict[int, int] = {}
    own_ll: dict[int, int] = {}
    own_cm: dict[int, int] = {}
    for j in range(n):
        if tl[j] and tags[j] == TEXT and not dead[j]:
            b = owner[j]
            own_tl[b] = own_tl.get(b, 0) + tl[j]
            own_ll[b] = own_ll.get(b, 0) + ll[j]
            own_cm[b] = own_cm.get(b, 0) + cm[j]
    live = [0] * n
    blink = [0.0] * n
    lraw = [0] * n  # live link text
    prose = [0] * n  # text of prose blocks (those that vote)
    for b, length in own_tl.items():
        live[b] = length
        if length >= 25 and tags[b] not in HEADINGS and own_ll[b] <= LINK_BLOCK * length:
            prose[b] = length
        k = own_ll[b]
        blink[b] = length if k > LINK_BLOCK * length else k * INLINE_LINK
        lraw[b] = k
    for i in range(n - 1, 0, -1):
        if live[i]:
            p = parent[i]
            live[p] += live[i]
            blink[p] += blink[i]
            lraw[p] += lraw[i]
            prose[p] += prose[i]

    # 3. votes for ancestors
    votes: dict[int, float] = {}
    for b, length in own_tl.items():
        if length < 25 or tags[b] in HEADINGS:
            continue
        if own_ll[b] > LINK_BLOCK * length:
            continue
        s = 1 + own_cm[b] + min(length // 100, 3)
        # A paragraph votes for its container; text straight in a container (a div of <br> lines,
        # <body> itself) also votes for that container.
        c = b if tags[b] in SELF_VOTE else parent[b]
        level = 0
        while c >= 0 and level < len(LEVELS):
            votes[c] = votes.get(c, 0.0) + s * LEVELS[level]
            c = parent[c]
            level += 1
    if not votes:
        return None
    score: dict[int, float] = {}
    weight: dict[int, int] = {}
    best, best_score = -1, float("-inf")
    for c, v in votes.items():
        w = _weight(_names(dom, c))
        weight[c] = w
        bonus = _TAG_BASE.get(tags[c], 0) + w
        bonus = max(-v, min(v, bonus))  # names adjust a score, they cannot make one
        t = live[c]
        sc = (v + bonus) * (1 - (blink[c] / t if t else 0))
        score[c] = sc
        if sc > best_score:
            best, best_score = c, sc
    if best < 0:
        return None
    top = best
    # Move up while an ancestor adds prose (an article split over sibling containers) and little
    # else; climb past levels that add nothing, stop once the added junk outweighs the prose.
    base_prose, base_junk = prose[top], live[top] - prose[top]
    a = parent[top]
    while a >= 0 and tags[a] != "html":
        dp = prose[a] - base_prose
        dj = (live[a] - prose[a]) - base_junk
        if dj > JUNK_STOP * (base_prose + dp):
            break
        # teaser lists (headline link + excerpt) look like prose but bring their links along
        if dp > 0 and dj <= JUNK_RATIO * dp and lraw[a] - lraw[top] <= CLIMB_LINK * dp:
            top, base_prose, base_junk = a, prose[a], live[a] - prose[a]
        a = parent[a]
    if DEBUG is not None:
        DEBUG[f'top{strict}'] = top
        DEBUG[f'best{strict}'] = best
    # 4. the article: top candidate plus siblings scoring close to it
    roots = [top]
    p = parent[top]
    if p >= 0:
        threshold = max(10.0, best_score * 0.2)
        tw = weight.get(top, 0)
        for s in dom.children(p):
            if s == top or tags[s] == TEXT or dead[s]:
                if tags[s] == TEXT and tl[s] and not dead[s]:
                    pass
                continue
            ok = False
            sc = score.get(s)
            bonus = 0.0
            if tw and _names(dom, s) and _names(dom, s) == _names(dom, top):
                bonus = best_score * 0.2
            if sc is not None and sc + bonus >= threshold:
                ok = True
            elif tags[s] in ("p", "pre", "blockquote", "ul", "ol", "table") or tags[s] in HEADINGS:
                t = tl[s]
                ld = ll[s] / t if t else 1.0
                if t > 80 and ld < 0.25:
                    ok = True
                elif 0 < t <= 80 and ld == 0:
                    ok = True
            if ok:
                roots.append(s)
    roots.sort()

    # 5. keep the text of the roots, minus furniture and link-heavy widgets, the page title
    # repeated as a heading, ad labels, and text repeated verbatim (gallery captions)
    keep = [False] * n
    kept_len = 0
    title = " ".join(dom.title().split()).lower() if DROP_TITLE else ""
    texts = dom.text
    seen: set[str] = set()
    for r in roots:
        j, stop = r, ends[r]
        while j < stop:
            t = tags[j]
            if dead[j] or skipped[j]:
                j = ends[j]
                continue
            if t == TEXT:
                if tl[j]:
                    k = tl[j]
                    if k <= 45 and AD_LABEL.match(texts[j]) or k <= 80 and CREDIT_LINE.search(texts[j]):
                        j += 1
                        continue
                    if DEDUP and k >= 40:
                        key = texts[j].strip()
                        if key in seen:
                            j += 1
                            continue
                        seen.add(key)
                    keep[j] = True
                    kept_len += k
                j += 1
                continue
            if t in DROP_TAGS or (j != r and (
                    (_junk(dom, j, live, blink, cm, weight) if JUNK_BLINK else _junk(dom, j, tl, ll, cm, weight))
                    or _removable(dom, j, tl, f.images, REMOVE_SHARE * tl[r])
                    or (CARDS and t in _CARD_PARENTS and tl[j] <= CARD_SHARE * tl[r] and _cards(dom, j, f)))):
                j = ends[j]
                continue
            if title and t in ("h1", "h2") and tl[j] >= 10 and ends[j] - j <= 64:
                h = " ".join(" ".join(texts[k].split()) for k in range(j, ends[j])
                             if tags[k] == TEXT and texts[k].strip()).lower()
                if h and h in title:
                    j = ends[j]
                    continue
            j += 1
    if TRIM_EDGES:
        kept_len -= _trim_edges(dom, keep, owner, prose, tl)
    if kept_len < MIN_TEXT and strict:
        return None
    if kept_len == 0:
        return None
    return keep


# Inside the article: captions, credits, share bars, bylines and tag lists are not its text.
DROP_TAGS = frozenset({"figcaption"})
_REMOVE = re.compile(r"share|sharing|social|related|recommend|read-?more|gallery|slideshow|carousel|"
                     r"lightbox|\btags?\b|byline|author|"
                     r"dateline|timestamp|\bdate\b|published|newsletter|promo|advert|\bads?\b", re.I)
# Photo credits are dropped when short (captions stay: most annotators count them as text).
_CAPTION = re.compile(r"credit|copyright", re.I)
CAPTION_MAX = 200
USE_REMOVE = True
DROP_TITLE = True  # the article's own title (its <h1> repeats <title>) is not article text
DEDUP = False
REMOVE_SHARE = 0.5
TRIM_EDGES = True
TRIM_MAX = 0
AD_LABEL = re.compile(r"\s*(advertisement|advert|ad|sponsored|anzeige|publicité|publicidad|pubblicità|"
                      r"story continues below( advertisement)?|continue reading( below| the main story)?)\s*[:.]?\s*$", re.I)


def _removable(dom: Dom, i: int, dom_tl: list[int], images: list[int], limit: float) -> bool:
    """Named furniture inside the article, unless it holds much of the article (a wrapper)."""
    if not USE_REMOVE:
        return False
    names = _names(dom, i)
    if not names or dom_tl[i] > limit or _MAYBE.search(names):
        return False
    if _REMOVE.search(names):
        return True
    # a photo caption sits beside its picture (a video's description does not)
    return _CAPTION.search(names) is not None and dom_tl[i] <= CAPTION_MAX


def _trim_edges(dom: Dom, keep: list[bool], owner: list[int], prose: list[int], tl: list[int]) -> int:
    """Unkeep the short non-prose lines (dates, "Share", "Advert", "3 comments") before the first
    and after the last prose block or heading of the article; returns the characters dropped."""
    tags = dom.tag
    kept = [j for j in range(len(keep)) if keep[j]]
    dropped = 0
    for order in (kept, kept[::-1]):
        for j in order:
            b = owner[j]
            if prose[b] or tags[b] in HEADINGS or (TRIM_MAX and tl[b] > TRIM_MAX):
                break
            keep[j] = False
            dropped += tl[j]
    return dropped


_CARD_PARENTS = frozenset({"div", "section", "ul", "ol", "aside"})
CARDS = False
CARD_SHARE = 0.5
MIN_CARDS = 3
CARD_MAX_TEXT = 400  # a teaser is short; a blog index's posts are not


def _cards(dom: Dom, i: int, f) -> bool:
    """A teaser list: at least MIN_CARDS children alike (same tag and class), each a link with a
    headline or a picture - "related stories", "read more" grids."""
    tags, ll, tl = dom.tag, f.link_len, f.text_len
    sig: dict[tuple[str, str], int] = {}
    for c in dom.children(i):
        t = tags[c]
        if t == TEXT:
            continue
        if not (ll[c] and (f.heads[c] or f.images[c]) and tl[c] <= CARD_MAX_TEXT):
            continue
        k = (t, dom.get_attr(c, "class") or "")
        sig[k] = sig.get(k, 0) + 1
    return bool(sig) and max(sig.values()) >= MIN_CARDS


_CLEAN_TAGS = frozenset({"div", "section", "ul", "ol", "table", "dl", "header", "span", "p", "figure",
                         "center", "tbody", "tr", "td", "li"})


def _junk(dom: Dom, i: int, tl: list[int], ll: list, cm: list[int], weight: dict[int, int]) -> bool:
    """Readability's conditional cleaning: a container that is mostly links and little prose."""
    t = dom.tag[i]
    if t not in _CLEAN_TAGS:
        return False
    text = tl[i]
    if text == 0:
        return False
    if cm[i] >= 10:
        return False
    w = weight.get(i)
    if w is None:
        w = _weight(_names(dom, i))
    ld = ll[i] / text
    if w < 0 and ld > JUNK_LD[0]:
        return True
    if w < 25 and ld > JUNK_LD[1]:
        return True
    return ld > JUNK_LD[2]


# Photo credit lines ("Image copyright Reuters", "Photo: AP", "(Getty Images)").
CREDIT_LINE = re.compile(r"^\s*(image|photo|photograph|picture|foto|credit)s?\s*(copyright|credit|:|by\b|\(|©)|"
                         r"getty\s*images|^\s*©|\bAP Photo\b", re.I)
_LD_TYPES = re.compile(r"application/ld\+json", re.I)


def article_body(dom: Dom) -> str | None:
    """The longest schema.org articleBody in the page's JSON-LD scripts, whitespace-normalised."""
    tags, texts = dom.tag, dom.text
    bodies: list[str] = []
    for i in range(len(dom)):
        if tags[i] == "script" and _LD_TYPES.search(dom.get_attr(i, "type") or ""):
            raw = "".join(texts[k] for k in range(i + 1, dom.end[i]) if tags[k] == TEXT)
            try:
                _article_bodies(json.loads(raw), bodies)
            except (ValueError, RecursionError):
                continue
    if not bodies:
        return None
    body = " ".join(max(bodies, key=len).split())
    return body if len(body) >= 80 else None


def _json_ld(dom: Dom) -> list[bool] | None:
    """Keep the text nodes whose text occurs in the page's JSON-LD articleBody."""
    body = article_body(dom)
    if body is None:
        return None
    tags, texts = dom.tag, dom.text
    keep = [False] * len(dom)
    found = False
    for j in range(len(dom)):
        if tags[j] == TEXT and not dom.skipped[j]:
            t = " ".join(texts[j].split())
            if len(t) >= 20 and t in body:
                keep[j] = found = True
    return keep if found else None


def _article_bodies(obj: object, out: list[str]) -> None:
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "articleBody" and isinstance(v, str):
                    out.append(v)
                elif isinstance(v, (dict, list)):
                    stack.append(v)
        elif isinstance(o, list):
            stack.extend(o)

"""What a page says about itself: title, author, dates, language, description, canonical URL,
site name (records.PageMeta), from every place pages put it.

Sources, first that gives a value wins (per field, in this order):
- title: og:title, the JSON-LD article's headline (or name), microdata headline, twitter:title,
  dc.title, <title>;
- author: the JSON-LD article's author (a string, a Person, a list of them, an @id into the
  @graph), microdata author (its itemprop=name if it is an item), <meta name=author>,
  article:author when it is not a URL, dc.creator, parsely-author, byl ("By ..." stripped);
- published: article:published_time, the JSON-LD datePublished, microdata datePublished,
  <meta name=date|pubdate|publishdate|dc.date...>, the first <time datetime> inside the page's
  <article> when it has one (a listing's many <article> teasers each have theirs; the first
  time in <main> was tried and gave listings their first teaser's date), a <time pubdate>;
  modified likewise (article:modified_time, og:updated_time, dateModified, last-modified...);
  dates normalised to ISO 8601 (dates.py), a value that is no date skipped for the next source;
- language: <html lang>, <meta http-equiv=content-language>, <meta name=language>, og:locale,
  JSON-LD inLanguage; lower case, "_" -> "-" ("en_US" -> "en-us");
- description: og:description, <meta name=description>, the JSON-LD description, twitter:description;
- canonical: <link rel=canonical>, og:url, the JSON-LD url / mainEntityOfPage, resolved against
  the page URL;
- site name: og:site_name, the JSON-LD publisher's name, a JSON-LD WebSite's name, application-name.

One linear pass over the flat Dom (scan) collects all of it, and the structure counts the page
classifier (nfas) reads, so page_info walks a page once; subtree texts read for microdata are
capped (64 nodes), JSON-LD goes through jsonld (bounded in bytes and nodes).
"""
from __future__ import annotations

import html as _html
from dataclasses import dataclass, field

from ..parse import TEXT, Dom
from ..records import PageMeta
from .dates import normalize_date
from .jsonld import LD_TYPE, parse_scripts, script_text, walk

SUBTREE_NODES = 64  # nodes read for a microdata value held as element text
MAX_FIELD = {"title": 500, "author": 300, "description": 1000, "site_name": 200, "canonical": 2000}
LONG_TEXT = 150  # a text node this long is prose (a paragraph), a structure count for nfas
MICRO_PROPS = frozenset({"headline", "author", "datepublished", "datemodified", "description",
                         "inlanguage", "name"})
COUNTED = frozenset({"p", "li", "h1", "h2", "h3", "img", "form", "input", "button", "select", "table",
                     "time", "article", "main", "nav", "ul", "ol", "pre", "code", "blockquote", "figure"})


@dataclass(slots=True)
class Scan:
    """What one pass over a page collects: metadata sources and structure counts."""

    metas: dict[str, str] = field(default_factory=dict)  # first content per lower-case name/property
    micro: dict[str, str] = field(default_factory=dict)  # first value per lower-case itemprop
    ld_raw: list[str] = field(default_factory=list)  # JSON-LD script texts
    html_lang: str = ""
    canonical: str = ""
    article_time: str = ""  # the first <time datetime> inside the first top-level <article>
    pubdate_time: str = ""  # the first <time pubdate datetime>
    top_articles: int = 0  # <article> elements not inside another one
    counts: dict[str, int] = field(default_factory=dict)  # elements of the COUNTED names
    links: int = 0
    link_chars: int = 0  # text characters inside <a>
    text_chars: int = 0  # visible text characters
    long_texts: int = 0  # text nodes of >= LONG_TEXT characters
    p_chars: int = 0  # visible text characters inside a <p> (prose), for nfas
    cell_chars: int = 0  # visible text characters inside a <td>/<th> and not in a <p> (tables), for nfas
    price_marks: int = 0  # elements whose class says price (shop pages), for nfas
    cart_marks: int = 0  # elements whose class says cart, basket or add-to, for nfas
    _ld: list[object] | None = None

    def ld(self) -> list[object]:
        """The parsed JSON-LD values (parsed once, on first use)."""
        if self._ld is None:
            self._ld = parse_scripts(self.ld_raw)
        return self._ld


def _subtree_text(dom: Dom, i: int) -> str:
    tags, texts, skipped = dom.tag, dom.text, dom.skipped
    stop = min(dom.end[i], i + SUBTREE_NODES)
    return " ".join(" ".join(texts[k] for k in range(i + 1, stop) if tags[k] == TEXT and not skipped[k]).split())


def _value(dom: Dom, i: int, a: dict[str, str | None]) -> str:
    """A microdata property's value: content, datetime, href/src, else the element's text."""
    for k in ("content", "datetime"):
        v = a.get(k)
        if v:
            return v
    if dom.tag[i] in ("a", "link") and a.get("href"):
        return a["href"] or ""
    return _subtree_text(dom, i)


def scan(dom: Dom) -> Scan:
    """One pass over the page: <meta>, <link rel=canonical>, JSON-LD scripts, itemprops, <time>,
    <html lang>, and the counts of links, text and elements."""
    s = Scan()
    tags, texts, attrs, ends, skipped = dom.tag, dom.text, dom.attrs, dom.end, dom.skipped
    metas, micro, counts = s.metas, s.micro, s.counts
    link_end = -1  # end of the <a> the walk is inside
    article_end = -1
    first_article = True
    author_item_end = -1  # end of an itemprop=author itemscope (its itemprop=name is the author)
    links = link_chars = text_chars = long_texts = p_chars = cell_chars = price_marks = cart_marks = 0
    p_end = cell_end = -1  # ends of the <p> and the table cell the walk is inside
    for i in range(len(tags)):
        tag = tags[i]
        if tag == TEXT:
            if not skipped[i]:
                t = texts[i]
                n = len(t)
                if n and (t[0].isspace() or t[-1].isspace()):
                    n = len(t.strip())
                text_chars += n
                if i < link_end:
                    link_chars += n
                if n >= LONG_TEXT:
                    long_texts += 1
                if i < p_end:
                    p_chars += n
                elif i < cell_end:
                    cell_chars += n
            continue
        if tag in COUNTED:
            counts[tag] = counts.get(tag, 0) + 1
        if tag == "a":
            links += 1
            if ends[i] > link_end:
                link_end = ends[i]
        elif tag == "p":
            if ends[i] > p_end:
                p_end = ends[i]
        elif tag == "td" or tag == "th":
            if ends[i] > cell_end:
                cell_end = ends[i]
        elif tag == "article":
            if i >= article_end:
                s.top_articles += 1
                if first_article:
                    article_end = ends[i]
                    first_article = False
        a = attrs[i]
        if not a:
            continue
        cl = a.get("class")
        if cl:  # the class only: reading id too cost 0.01 ms more a page and found no more shops
            cl = cl.lower()
            if "price" in cl:
                price_marks += 1
            if "cart" in cl or "basket" in cl or "add-to" in cl:
                cart_marks += 1
        if tag == "meta":
            key = a.get("property") or a.get("name") or a.get("itemprop")
            if key is None and a.get("http-equiv"):
                key = "http-equiv:" + (a.get("http-equiv") or "")
            content = a.get("content")
            if key and content:
                key = key.strip().lower()
                if key not in metas:
                    metas[key] = content
        elif tag == "link":
            rel = (a.get("rel") or "").lower().split()
            if "canonical" in rel and a.get("href") and not s.canonical:
                s.canonical = a.get("href") or ""
        elif tag == "script":
            if LD_TYPE.search(a.get("type") or ""):
                s.ld_raw.append(script_text(dom, i))
        elif tag == "html":
            if not s.html_lang and a.get("lang"):
                s.html_lang = a.get("lang") or ""
        elif tag == "time":
            dt = a.get("datetime")
            if dt:
                if i < article_end and not s.article_time:
                    s.article_time = dt
                if "pubdate" in a and not s.pubdate_time:
                    s.pubdate_time = dt
        ip = a.get("itemprop")
        if ip:
            for p in ip.lower().split():
                if p not in MICRO_PROPS:
                    continue
                if p == "name":  # a name is the author's inside an author item, else unused
                    if i < author_item_end and "author" not in micro:
                        micro["author"] = _value(dom, i, a)
                elif p == "author" and "itemscope" in a:
                    if "author" not in micro and i >= author_item_end:
                        author_item_end = ends[i]
                elif p not in micro:  # an author link's text is the name, its href a profile page
                    micro[p] = _subtree_text(dom, i) if p == "author" and tag == "a" else _value(dom, i, a)
    s.links, s.link_chars, s.text_chars, s.long_texts = links, link_chars, text_chars, long_texts
    s.p_chars, s.cell_chars, s.price_marks, s.cart_marks = p_chars, cell_chars, price_marks, cart_marks
    return s


# --- from the scan to PageMeta ---------------------------------------------------------------

_NOT_ARTICLES = frozenset({"discussionforumposting"})  # a forum thread ends in "posting" too


def ld_types(d: dict[str, object]) -> list[str]:
    """The @type names of a JSON-LD node, lower case, without a schema.org prefix."""
    t = d.get("@type")
    names = t if isinstance(t, list) else [t]
    return [n.rsplit("/", 1)[-1].rsplit(":", 1)[-1].lower() for n in names if isinstance(n, str)]


def is_article_type(t: str) -> bool:
    """Article, NewsArticle, BlogPosting, ReportageNewsArticle, TechArticle, LiveBlogPosting, Report..."""
    return (t.endswith("article") or t.endswith("posting") or t == "report") and t not in _NOT_ARTICLES


@dataclass(slots=True)
class LdView:
    main: dict[str, object] | None  # the article (or else the web page) the JSON-LD describes
    ids: dict[str, dict[str, object]]  # nodes by @id, for references ({"@id": "#author"})
    types: set[str]  # every @type seen
    site: str  # a WebSite's name


def ld_view(values: list[object]) -> LdView:
    ids: dict[str, dict[str, object]] = {}
    types: set[str] = set()
    article = page = None
    site = ""
    for d in walk(values):
        ts = ld_types(d)
        types.update(ts)
        i = d.get("@id")
        if isinstance(i, str) and len(d) > 1 and i not in ids:
            ids[i] = d
        if article is None and any(is_article_type(t) for t in ts):
            article = d
        elif page is None and any(t == "webpage" or t.endswith("page") for t in ts):
            page = d
        if not site and "website" in ts and isinstance(d.get("name"), str):
            site = str(d["name"])
    return LdView(article if article is not None else page, ids, types, site)


def _is_url(v: str) -> bool:
    return v.startswith(("http://", "https://", "//", "www."))


def _person(v: str) -> str:
    """v if it can be a name: not a URL, a path ("/staff/adam-candee/") or a number (a profile id)."""
    if _is_url(v) or v.startswith("/") or not any(ch.isalpha() for ch in v):
        return ""
    return v


def _clean(v: object, limit: int = 1000, unescape: bool = False) -> str:
    if isinstance(v, list):
        v = next((x for x in v if isinstance(x, str)), "")
    if not isinstance(v, str):
        return ""
    v = v[: limit * 4]
    if unescape and "&" in v:
        v = _html.unescape(v)
    return " ".join(v.split())[:limit]


def _deref(v: object, ids: dict[str, dict[str, object]]) -> object:
    if isinstance(v, dict) and "name" not in v and isinstance(v.get("@id"), str):
        return ids.get(str(v["@id"]), v)
    return v


def _names(v: object, ids: dict[str, dict[str, object]], limit: int = 5) -> str:
    """"A, B" of a JSON-LD author: a string, a Person/Organization, a list, @id references."""
    items = v if isinstance(v, list) else [v]
    out: list[str] = []
    for it in items[:limit]:
        it = _deref(it, ids)
        if isinstance(it, dict):
            it = it.get("name")
        name = _clean(it, MAX_FIELD["author"], unescape=True)
        if _person(name) and name not in out:
            out.append(name)
    return ", ".join(out)[: MAX_FIELD["author"]]


def _lang(v: str) -> str:
    t = v.strip().split(",")[0].split(";")[0].strip().replace("_", "-").lower()
    parts = t.split("-")
    if not (2 <= len(parts[0]) <= 3 and parts[0].isalpha()) or not all(0 < len(p) <= 8 and p.isalnum() for p in parts):
        return ""
    return t


def _first(*values: str) -> str:
    return next((v for v in values if v), "")


def _first_date(*values: str) -> str:
    for v in values:
        if v:
            d = normalize_date(v)
            if d:
                return d
    return ""


def _url(v: str, base: str | None) -> str:
    v = v.strip()
    if not v:
        return ""
    if base:
        from urllib.parse import urljoin

        try:
            v = urljoin(base, v)
        except ValueError:
            return ""
    return v[: MAX_FIELD["canonical"]]


def meta_from_scan(dom: Dom, s: Scan) -> PageMeta:
    m, mi = s.metas, s.micro
    v = ld_view(s.ld()) if s.ld_raw else LdView(None, {}, set(), "")
    ld: dict[str, object] = v.main or {}

    def meta(*keys: str) -> str:
        return _first(*(_clean(m.get(k, "")) for k in keys))

    title = _first(meta("og:title"), _clean(ld.get("headline") or ld.get("name"), unescape=True),
                   _clean(mi.get("headline")), meta("twitter:title", "dc.title", "dcterms.title"),
                   dom.title())[: MAX_FIELD["title"]]
    byl = meta("byl")
    art_author = meta("article:author")
    author = _first(_names(ld.get("author") or ld.get("creator"), v.ids), _person(_clean(mi.get("author"))),
                    _person(meta("author", "dc.creator", "dcterms.creator", "parsely-author", "sailthru.author")),
                    _person(art_author), _person(byl))[: MAX_FIELD["author"]]
    if author[:3].lower() == "by ":  # "By TOM KRISHER, AP Auto Writer"
        author = author[3:].strip()
    published = _first_date(
        m.get("article:published_time", ""), _clean(ld.get("datePublished")), mi.get("datepublished", ""),
        *(m.get(k, "") for k in ("og:published_time", "published_time", "date", "pubdate", "publishdate",
                                  "publish-date", "publish_date", "dc.date", "dc.date.issued", "dcterms.date",
                                  "dcterms.issued", "dcterms.created", "sailthru.date", "parsely-pub-date",
                                  "article.published", "datepublished")),
        s.article_time if s.top_articles == 1 else "", s.pubdate_time)
    modified = _first_date(
        m.get("article:modified_time", ""), m.get("og:updated_time", ""), _clean(ld.get("dateModified")),
        mi.get("datemodified", ""),
        *(m.get(k, "") for k in ("modified_time", "last-modified", "http-equiv:last-modified",
                                  "dcterms.modified", "dc.date.modified", "article.updated", "datemodified")))
    language = _first(*(_lang(x) for x in (s.html_lang, m.get("http-equiv:content-language", ""),
                                           m.get("language", ""), m.get("og:locale", ""),
                                           _clean(ld.get("inLanguage")), mi.get("inlanguage", ""))))
    description = _first(meta("og:description", "description"), _clean(ld.get("description"), unescape=True),
                         _clean(mi.get("description")), meta("twitter:description", "dc.description")
                         )[: MAX_FIELD["description"]]
    entity = ld.get("mainEntityOfPage")
    if isinstance(entity, dict):
        entity = entity.get("@id") or entity.get("url")
    ld_url = _first(*(x for x in (ld.get("url"), entity) if isinstance(x, str)))
    canonical = _url(_first(s.canonical, m.get("og:url", ""), ld_url), dom.url)
    publisher = _deref(ld.get("publisher"), v.ids)
    pub_name = _clean(publisher.get("name") if isinstance(publisher, dict) else "", unescape=True)
    site_name = _first(meta("og:site_name"), pub_name, _clean(v.site, unescape=True),
                       meta("application-name"))[: MAX_FIELD["site_name"]]
    return PageMeta(title=title, author=author, published=published, modified=modified, language=language,
                    description=description, canonical=canonical, site_name=site_name)


def page_meta(dom: Dom) -> PageMeta:
    """The page's metadata (see the module docstring for the sources and their order).

    >>> from blockcrawl.parse import parse_html
    >>> m = page_meta(parse_html('<html lang="en-GB"><head><meta property="og:title" content="Hi">'
    ...     '<meta property="article:published_time" content="2024-03-05T10:00:00Z"></head></html>'))
    >>> m.title, m.published, m.language
    ('Hi', '2024-03-05T10:00:00+00:00', 'en-gb')
    """
    if not len(dom):
        return PageMeta()
    return meta_from_scan(dom, scan(dom))

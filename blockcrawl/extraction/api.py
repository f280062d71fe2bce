"""`extract(html)`: one page -> its main content as a Document (text + heading-aware blocks).

`main_content` is THE extraction path: extract(), SitePipeline (mode main) and
the crawl workers all call them, so one page gives one text wherever it is extracted (before,
the JSON-LD articleBody fallback lived only in extract(), and a script-rendered article stored
nothing when crawled).
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, compress
from typing import overload

from ..hashing import text_hash
from ..limits import MAX_BODY_BYTES
from ..parse import TEXT, Dom, load
from ..records import Block, Document
from .blocks import blocks_from_dom, outline
from .params import DEFAULTS, ExtractionParams
from .registry import Selector, get

DEFAULT_ALGORITHM = "auto"  # the one default; PipelineConfig and the CLIs read it from here
DEFAULT_MAX_BYTES = MAX_BODY_BYTES  # largest body after decompression (crawl --max-bytes)
TITLE_MIN = 10  # a heading shorter than this is not taken for the page title (as auto does)
TITLE_NODES = 64  # ... nor one of more nodes
_TITLE_TAGS = frozenset({"h1", "h2"})


@overload
def raw_body(body: bytes, limit: int = DEFAULT_MAX_BYTES) -> bytes: ...
@overload
def raw_body(body: str, limit: int = DEFAULT_MAX_BYTES) -> str: ...
@overload
def raw_body(body: str | bytes, limit: int = DEFAULT_MAX_BYTES) -> str | bytes: ...
def raw_body(body: str | bytes, limit: int = DEFAULT_MAX_BYTES) -> str | bytes:
    """The page in a body: a gzip file served as HTML without Content-Encoding is inflated, to
    at most limit bytes (one such page inflated to 50 MB, 2.2 GB of RSS and 64,251 chunks); past
    the limit it is cut there (the parser copes). The crawl worker did this and extract() did
    not: the same bytes gave the crawl the page's text and extract() "" (bench/onepath.py). A
    stream that yields nothing is passed on as it came (parse.sniff_binary judges it)."""
    if isinstance(body, str) or body[:2] != b"\x1f\x8b":
        return body
    from ..compress import inflate

    z = inflate(bytes(body), limit)
    return z.data if z.data else body


def blocks_text(blocks: Sequence[Block], context: frozenset[str] = frozenset()) -> str:
    """The main text of blocks: each heading once, where it first applies, then the block bodies,
    separated by blank lines (a block's text would repeat its heading prefix on every block).
    Headings in context are left out: they are in the blocks only as context (title_context)."""
    parts: list[str] = []
    path: list[str] = []
    for level, text in outline(blocks):
        if level >= 0:
            # a heading nested under the context heading with its words (a recipe card's
            # title under the page's) is a heading of its own
            dup = text in context and text not in path[:level]
            del path[level:]
            path.append(text)
            if dup:
                continue
        parts.append(text)
    return "\n\n".join(parts)


def title_context(dom: Dom, keep: Sequence[bool] | None) -> tuple[Sequence[bool] | None, frozenset[str]]:
    """The mask with the heading that repeats <title> added back, and that heading's text.

    Annotators leave the title heading out of the main text, and so does `auto`; but in the
    blocks it is the heading the article's sections hang under ("Europe Countries > Germany"),
    which search needs. So an h1/h2 of >= 10 characters whose text is inside <title>, that the
    selector dropped and whose parent holds kept text (it heads the article, not the page
    banner), is added to the blocks and left out of the text. One pass (a prefix count of kept
    nodes answers "does this parent hold kept text" in O(1)); headings of > 64 nodes are no
    title."""
    title = " ".join(dom.title().split()).lower()
    if keep is None or not title:
        return keep, frozenset()
    tags, texts, ends, parent, skipped = dom.tag, dom.text, dom.end, dom.parent, dom.skipped
    n = len(dom)
    before = list(accumulate(map(bool, keep), initial=0))  # before[i]: kept nodes among 0..i-1
    out: list[bool] | None = None
    found: set[str] = set()
    for i in compress(range(n), map(_TITLE_TAGS.__contains__, tags)):  # C loops to the h1/h2s
        if skipped[i] or ends[i] - i > TITLE_NODES:
            continue
        nodes = [k for k in range(i, ends[i]) if tags[k] == TEXT and not skipped[k] and texts[k].strip()]
        h = " ".join(" ".join(texts[k].split()) for k in nodes)
        if len(h) < TITLE_MIN or h.lower() not in title or before[ends[i]] > before[i]:
            continue  # short, not the title, or (partly) kept already
        p = parent[i]
        if p < 0 or before[ends[p]] == before[p]:
            continue  # nothing kept around it: a page banner, not the article's heading
        if out is None:
            out = list(keep)
        for k in nodes:
            out[k] = True
        found.add(h)
    return (keep, frozenset()) if out is None else (out, frozenset(found))


def json_ld_block(dom: Dom) -> Block | None:
    """A script-rendered page may carry its article only as JSON-LD (schema.org articleBody)."""
    from .article import article_body

    body = article_body(dom)
    if not body:
        return None
    return Block(text=body, body=body, heading_path=(), tag_path="script[ld+json]", position=0,
                 url=dom.url, hash=text_hash(body))


def main_mask(dom: Dom, algorithm: str = DEFAULT_ALGORITHM, keep: Sequence[bool] | None | object = ...,
              selector: Selector | None = None, params: ExtractionParams | None = None
              ) -> tuple[Sequence[bool] | None, frozenset[str]]:
    """The main-content mask of a parsed page (the algorithm's, the precomputed keep of a site
    algorithm, or selector's) with the title heading added back as context (title_context),
    and that heading's text. The blocks and the markdown of the page both read this mask.
    params: the extraction parameters for a tunable algorithm (registry.Algorithm.tunable)."""
    if keep is ...:
        keep = (selector or get(algorithm).page_selector(params))(dom)
    return title_context(dom, keep)  # type: ignore[arg-type]


def main_content(dom: Dom, algorithm: str = DEFAULT_ALGORITHM, full_path: bool = False,
                 keep: Sequence[bool] | None | object = ..., selector: Selector | None = None,
                 markdown: list[str] | None = None, images: bool = False,
                 params: ExtractionParams | None = None) -> tuple[list[Block], str]:
    """(blocks, text) of a parsed page's main content: main_mask's blocks and, when nothing is
    selected, the page's JSON-LD articleBody, whatever the algorithm, then the page's record
    block (extraction.records: its facts behind its name) unless those blocks already say each
    fact. The text is blocks_text without the context heading and the record: what the selector
    kept. markdown: a list to append the main content's Markdown to (extraction.markdown, same
    mask, images as ![alt](src) if asked; the articleBody when that is used)."""
    if not len(dom):
        return [], ""
    mask, context = main_mask(dom, algorithm, keep, selector, params)
    blocks = blocks_from_dom(dom, keep=mask, full_path=full_path)
    md = None
    if not blocks:
        b = json_ld_block(dom)
        if b is not None:
            blocks = [b]
            if markdown is not None:
                from .markdown import escape
                md = "\n\n".join(escape(p.strip()) for p in b.body.split("\n") if p.strip()) + "\n"
    if markdown is not None:
        from .markdown import to_markdown
        markdown.append(md if md is not None else to_markdown(dom, mask, images=images))
    text = blocks_text(blocks, context)
    if blocks:  # the page's facts, whatever the mask kept (extraction.records); not in the text
        from .records import record_block, said_elsewhere
        rec = record_block(dom, len(blocks), params=params or DEFAULTS)
        if rec is not None and not said_elsewhere(rec, blocks):
            blocks.append(rec)
    return blocks, text


def extract_dom(dom: Dom, algorithm: str = DEFAULT_ALGORITHM, full_path: bool = False,
                info: bool = True, params: ExtractionParams | None = None) -> Document:
    """Main content of a parsed page with the named algorithm (see registry.ALGORITHMS), with
    its PageInfo (metadata, kind, summary: extraction.pageinfo) unless info=False: page info is
    ~2-3 ms of the ~8 ms a page costs (the summary alone ~1.7 ms on an article), which a caller
    wanting only the text should not pay. params: as in main_mask."""
    blocks, text = main_content(dom, algorithm, full_path, params=params)
    page = None
    if info:
        from .pageinfo import page_info

        page = page_info(dom, text)
    return Document(url=dom.url, title=dom.title(), text=text, blocks=blocks, algorithm=algorithm,
                    info=page)


def extract(html: str | bytes, url: str | None = None, algorithm: str = DEFAULT_ALGORITHM,
            content_type: str | None = None, info: bool = True,
            params: ExtractionParams | None = None) -> Document:
    """Main content of one HTML page (text or raw bytes); info=False leaves Document.info None
    (no metadata, kind or summary: about a third less time per page). params: the extraction
    parameters (extraction.params; `replace(DEFAULTS, ...)` for a tuning run) for `auto`.

    >>> doc = extract("<nav><a href='/'>Home</a></nav><article><h1>Title</h1>"
    ...               "<p>" + "Words, words and more words. " * 10 + "</p></article>")
    >>> doc.text.startswith("Title")
    True
    """
    get(algorithm)  # unknown names fail before any work
    return extract_dom(load(raw_body(page_source(html)), url, content_type), algorithm, info=info, params=params)


def page_source(html: object) -> str | bytes:
    """A page given to the library as str, or as any bytes-like object (bytes, bytearray,
    memoryview: taken as bytes); anything else is an InputError that names its type, not a
    TypeError from deep inside the parser."""
    if isinstance(html, (str, bytes)):
        return html
    if isinstance(html, (bytearray, memoryview)):
        return bytes(html)
    from ..errors import InputError
    raise InputError(f"a page must be str or bytes, not {type(html).__name__}")

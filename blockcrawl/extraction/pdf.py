"""PDF bytes -> heading-aware blocks, for the same dedup, chunking and store as HTML pages.

Library: pypdf (BSD licence, pure Python, no dependencies). PyMuPDF was measured beside it on
generated PDFs (reportlab: 5/50/300 pages of lines, 35 pages of justified paragraphs): both got
every word (word precision and recall 1.000), PyMuPDF in ~3 ms/page against pypdf's ~7-13 ms
(2 shared cores, under load). It was not chosen: its AGPL licence would bind blockcrawl (MIT),
its 2.0 wheel pulled in onnxruntime and a layout model, and PDFs are a small share of a crawl,
where 10 ms a page is lost among fetches.

Headings, by what the file offers:
1. the outline (bookmarks): each entry is a heading at its depth, starting on its page; when its
   title is a line of that page's text, the heading starts at that line;
2. else font sizes: text runs set at least HEADING_RATIO times the body size (the size most
   characters have) and shorter than HEADING_MAX_CHARS are headings, bigger sizes higher.
Every block's heading path is (document title, section headings..., "p. N"), so a chunk says
where it came from: "Report > 2 Methods > p. 4". A block is one section's text on one page.

Limits: a PDF of more than max_pages pages, an encrypted one that an empty password does not
open, one pypdf cannot read, or one whose text exceeds max_chars raises PdfError (the crawl logs
one line and stores nothing). The outline is walked with an explicit stack (no recursion) and at
most MAX_OUTLINE entries are read.
"""
from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..hashing import text_hash
from ..limits import MAX_BODY_BYTES
from ..records import Block

DEFAULT_MAX_PAGES = 500  # ~5 s of pypdf at 10 ms/page
DEFAULT_MAX_CHARS = MAX_BODY_BYTES  # extracted text, as the crawl's --max-bytes default
MAX_OUTLINE = 5000
MAX_LEVELS = 4  # heading levels below the title
HEADING_RATIO = 1.2
HEADING_MAX_CHARS = 120
PATH_SEP = " > "
_WS = re.compile(r"[ \t\r\f\v\u00a0]+")
_NO_TITLE = frozenset({"", "untitled", "untitled document", "microsoft word", "document", "(anonymous)", "anonymous"})


class PdfError(ValueError):
    """A PDF that is not read: encrypted, broken, or past a limit. The message is one line."""


def is_pdf(content_type: str | None, body: bytes) -> bool:
    """Served as application/pdf, or the body starts with the PDF header (a PDF served as
    application/octet-stream or text/html is still a PDF)."""
    ctype = (content_type or "").split(";", 1)[0].strip().lower()
    return ctype in ("application/pdf", "application/x-pdf") or body.lstrip(b"\xef\xbb\xbf \t\r\n")[:5] == b"%PDF-"


def _reader(data: bytes) -> Any:
    import logging

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    # pypdf logs each repair it makes ("EOF marker not found"): the crawl log has the one line
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except Exception as e:  # AES without a crypto package, unknown handlers
                raise PdfError(f"encrypted ({type(e).__name__}: {e})") from None
            if not opened:
                raise PdfError("encrypted (a password is needed)")
        return reader
    except PdfError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError,
            RecursionError, AssertionError) as e:
        raise PdfError(f"broken PDF ({type(e).__name__}: {_one_line(e)})") from None


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:200]


def _outline(reader: Any) -> list[tuple[int, str, int]]:
    """(depth, title, page index) of the outline entries in document order, iteratively."""
    try:
        root = reader.outline
    except Exception:  # a damaged outline is no outline
        return []
    out: list[tuple[int, str, int]] = []
    stack: list[tuple[list[Any], int, int]] = [(root, 0, 0)]  # (list, next index, depth)
    while stack and len(out) < MAX_OUTLINE:
        items, i, depth = stack.pop()
        if i >= len(items):
            continue
        stack.append((items, i + 1, depth))
        item = items[i]
        if isinstance(item, list):  # the children of the entry before it
            if depth < 64:
                stack.append((item, 0, depth + 1))
            continue
        try:
            page = reader.get_destination_page_number(item)
            title = " ".join(str(item.title or "").split())
        except Exception:
            continue
        if title and page is not None and page >= 0:
            out.append((depth, title, int(page)))
    return out


def _runs(page: Any) -> tuple[str, list[tuple[str, float]]]:
    """The page's text and its text runs with their rendered font size."""
    runs: list[tuple[str, float]] = []

    def visit(text: str, cm: Sequence[float], tm: Sequence[float], font: Any, size: float) -> None:
        if text.strip():
            a, b, c, d = (tm[0] * cm[0] + tm[1] * cm[2], tm[0] * cm[1] + tm[1] * cm[3],
                          tm[2] * cm[0] + tm[3] * cm[2], tm[2] * cm[1] + tm[3] * cm[3])
            scale = abs(a * d - b * c) ** 0.5 or 1.0
            runs.append((text, round(float(size) * scale, 1)))

    text = page.extract_text(visitor_text=visit) or ""
    return text, runs


def pdf_blocks(data: bytes, url: str | None = None, *, max_pages: int = DEFAULT_MAX_PAGES,
               max_chars: int = DEFAULT_MAX_CHARS, full_path: bool = False) -> tuple[str, list[Block]]:
    """(title, blocks) of a PDF; PdfError when it is not read (see the module docstring)."""
    reader = _reader(data)
    try:
        n = len(reader.pages)
    except Exception as e:
        raise PdfError(f"broken PDF ({type(e).__name__}: {_one_line(e)})") from None
    if n > max_pages:
        raise PdfError(f"{n} pages, more than the limit of {max_pages}")
    pages: list[tuple[str, list[tuple[str, float]]]] = []
    total = 0
    for k in range(n):
        try:
            pages.append(_runs(reader.pages[k]))
        except Exception as e:  # one damaged page: the PDF is broken
            raise PdfError(f"broken PDF (page {k + 1}: {type(e).__name__}: {_one_line(e)})") from None
        total += len(pages[-1][0])
        if total > max_chars:
            raise PdfError(f"text longer than the limit of {max_chars} characters")
    title = _title(reader)
    outline = _outline(reader)
    # headings per page: (line text or "" for "from the page start", depth)
    marks: list[list[tuple[str, int]]] = [[] for _ in range(n)]
    if outline:
        for depth, htext, page in outline:
            if page < n and depth < MAX_LEVELS:
                marks[page].append((htext, depth))
    else:
        marks = _font_headings(pages)
    blocks: list[Block] = []
    path: list[str] = []  # the open section headings, outermost first
    for k, (text, _) in enumerate(pages):
        starts = {_norm(h): (h, d) for h, d in marks[k]}
        lines = {_norm(x) for x in text.split("\n")}
        pending = [(h, d) for h, d in marks[k] if _norm(h) not in lines]
        for h, d in pending:  # outline entries whose title is not a line: from the page start
            del path[d:]
            path.append(h)
        body: list[str] = []
        for raw in text.split("\n"):
            line = _WS.sub(" ", raw).strip()
            if not line:
                continue
            hit = starts.get(_norm(line))
            if hit is not None:
                _emit(blocks, title, path, k, body, url, full_path)
                h, d = hit
                del path[min(d, len(path)):]
                path.append(line if len(line) <= len(h) + 8 else h)
                continue
            body.append(line)
        _emit(blocks, title, path, k, body, url, full_path)
    # the page title: the document's, else its first top heading (not added to the paths twice)
    return title or next((h for m in marks for h, d in m if h and d == 0), ""), blocks


def _norm(s: str) -> str:
    return " ".join(s.split()).lower()


def _emit(blocks: list[Block], title: str, path: list[str], page: int, body: list[str], url: str | None,
          full_path: bool) -> None:
    if not body:
        return
    text_body = "\n".join(body)
    body.clear()
    hp = tuple(p for p in ((title,) if title else ()) + tuple(path)) + (f"p. {page + 1}",)
    label = PATH_SEP.join(hp) if full_path else PATH_SEP.join(hp[-2:])
    text = label + ": " + text_body
    blocks.append(Block(text=text, body=text_body, heading_path=hp, tag_path=f"pdf/page[{page + 1}]",
                        position=len(blocks), url=url, hash=text_hash(text)))


def _title(reader: Any) -> str:
    try:
        meta = reader.metadata
        t = " ".join(str(meta.title or "").split()) if meta is not None else ""
    except Exception:
        return ""
    return "" if t.lower() in _NO_TITLE else t[:300]


def _font_headings(pages: list[tuple[str, list[tuple[str, float]]]]) -> list[list[tuple[str, int]]]:
    """Headings from font sizes: runs HEADING_RATIO x the body size or more, short, one line."""
    chars: Counter[float] = Counter()
    for _, runs in pages:
        for t, size in runs:
            chars[size] += len(t)
    if not chars:
        return [[] for _ in pages]
    body = chars.most_common(1)[0][0]
    big = sorted({s for s in chars if s >= body * HEADING_RATIO}, reverse=True)
    level = {s: min(i, MAX_LEVELS - 1) for i, s in enumerate(big)}
    out: list[list[tuple[str, int]]] = []
    for _, runs in pages:
        marks = []
        for t, size in runs:
            h = " ".join(t.split())
            if size in level and h and len(h) <= HEADING_MAX_CHARS and "\n" not in t.strip():
                marks.append((h, level[size]))
        out.append(marks)
    return out

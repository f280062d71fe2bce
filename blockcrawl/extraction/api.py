"""`extract(html)`: one page -> its main content as a Document (text + heading-aware blocks)."""
from __future__ import annotations

from collections.abc import Sequence

from ..parse import Dom, load
from ..records import Block, Document
from ..hashing import text_hash
from .auto import article_body
from .blocks import blocks_from_dom, outline
from .registry import get_selector, page_selector

DEFAULT_ALGORITHM = "auto"


def blocks_text(blocks: Sequence[Block]) -> str:
    """The main text of blocks: each heading once, where it first applies, then the block bodies,
    separated by blank lines (a block's text would repeat its heading prefix on every block)."""
    parts = [text for _level, text in outline(blocks)]
    return "\n\n".join(parts)


def extract_dom(dom: Dom, algorithm: str = DEFAULT_ALGORITHM, full_path: bool = False) -> Document:
    """Main content of a parsed page with the named algorithm (see registry.ALGORITHMS)."""
    selector = page_selector(algorithm)
    keep = selector(dom) if len(dom) else None
    blocks = blocks_from_dom(dom, keep=keep, full_path=full_path) if len(dom) else []
    if not blocks and algorithm == DEFAULT_ALGORITHM and len(dom):
        # A script-rendered page may carry its article only as JSON-LD (schema.org articleBody).
        body = article_body(dom)
        if body:
            blocks = [Block(text=body, body=body, heading_path=(), tag_path="script[ld+json]",
                            position=0, url=dom.url, hash=text_hash(body))]
    return Document(url=dom.url, title=dom.title(), text=blocks_text(blocks), blocks=blocks,
                    algorithm=algorithm)


def extract(html: str | bytes, url: str | None = None, algorithm: str = DEFAULT_ALGORITHM,
            content_type: str | None = None) -> Document:
    """Main content of one HTML page (text or raw bytes).

    >>> doc = extract("<nav><a href='/'>Home</a></nav><article><h1>Title</h1>"
    ...               "<p>" + "Words, words and more words. " * 10 + "</p></article>")
    >>> doc.text.startswith("Title")
    True
    """
    get_selector(algorithm)  # unknown names fail before any work
    return extract_dom(load(html, url, content_type), algorithm)

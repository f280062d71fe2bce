"""One page through the stages: parse -> extract -> dedup -> chunk. Site state (the set of
blocks already seen) lives in the SitePipeline, so pages of a site must go through one instance
in the order they were seen."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .chunk import DEFAULT_OVERLAP, DEFAULT_SIZE, Deduper, Tokenizer, chunk_blocks, chunk_plain, default_tokenizer
from .extract import blocks_from_dom, dom_text
from .parse import Dom, load
from .records import Block, Chunk

MODES = ("blocks", "plain", "text")
# A main-content selector: which nodes of the page to keep (None keeps everything).
Selector = Callable[[Dom], Sequence[bool] | None]


@dataclass(slots=True)
class PageResult:
    url: str | None
    title: str
    text: str  # page text (mode text/plain) or the kept blocks joined
    blocks: list[Block] = field(default_factory=list)  # new blocks (duplicates removed)
    chunks: list[Chunk] = field(default_factory=list)
    duplicates: int = 0  # blocks dropped as already seen on the site


class SitePipeline:
    def __init__(self, mode: str = "blocks", chunk_size: int = DEFAULT_SIZE,
                 overlap: int = DEFAULT_OVERLAP, tokenizer: Tokenizer | None = None,
                 dedup: bool = True, near_dedup: bool = True, full_path: bool = False,
                 selector: Selector | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        self.mode, self.chunk_size, self.overlap = mode, chunk_size, overlap
        self.tokenizer = tokenizer or default_tokenizer()
        self.deduper = Deduper(near=near_dedup) if dedup else None
        self.full_path, self.selector = full_path, selector

    def process(self, html: str | bytes, url: str | None = None, content_type: str | None = None) -> PageResult:
        return self.process_dom(load(html, url, content_type), url)

    def process_dom(self, dom: Dom, url: str | None = None) -> PageResult:
        """As process(), for a page already parsed (the crawler parses once for links and blocks)."""
        title = dom.title()
        if self.mode != "blocks":
            text = dom_text(dom)
            chunks = chunk_plain(text, url, self.chunk_size, self.overlap, self.tokenizer) if self.mode == "plain" else []
            return PageResult(url, title, text, chunks=chunks)
        keep = self.selector(dom) if self.selector else None
        blocks = blocks_from_dom(dom, keep=keep, full_path=self.full_path)
        new = list(self.deduper.filter(blocks)) if self.deduper else blocks
        chunks = chunk_blocks(new, self.chunk_size, self.overlap, self.tokenizer)
        text = "\n\n".join(b.text for b in new)
        return PageResult(url, title, text, new, chunks, len(blocks) - len(new))

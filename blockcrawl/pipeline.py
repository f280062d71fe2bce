"""One page through the stages: parse -> extract -> dedup -> chunk. Site state (the set of
blocks already seen) lives in the SitePipeline, so pages of a site must go through one instance
in the order they were seen."""
from __future__ import annotations

from .errors import ConfigError

from collections.abc import Sequence
from dataclasses import dataclass, field

from .chunk import DEFAULT_OVERLAP, DEFAULT_SIZE, Deduper, Tokenizer, chunk_blocks, chunk_plain, default_tokenizer
from .extraction import blocks_from_dom, dom_text
from .extraction.api import blocks_text
from .extraction.registry import Selector, page_selector, site_selector
from .parse import Dom, load
from .records import Block, Chunk

MODES = ("blocks", "plain", "text", "main")


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
                 selector: Selector | None = None, algorithm: str = "auto") -> None:
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}")
        self.mode, self.chunk_size, self.overlap = mode, chunk_size, overlap
        self.tokenizer = tokenizer or default_tokenizer()
        self.deduper = Deduper(near=near_dedup) if dedup else None
        if mode == "main" and selector is None:
            selector = page_selector(algorithm, for_blocks=True)
        self.full_path, self.selector, self.algorithm = full_path, selector, algorithm

    def process(self, html: str | bytes, url: str | None = None, content_type: str | None = None) -> PageResult:
        return self.process_dom(load(html, url, content_type))

    def process_site(self, pages: Sequence[tuple[str | bytes, str | None, str | None]]) -> list[PageResult]:
        """(html, url, content type) of a site's pages at once, in order: site algorithms
        (template clustering) see them all; page algorithms behave as with process()."""
        doms = [load(html, url, ctype) for html, url, ctype in pages]
        if self.mode != "main":
            return [self.process_dom(d) for d in doms]
        masks = site_selector(self.algorithm)(doms)
        return [self.process_dom(d, keep) for d, keep in zip(doms, masks)]

    def process_dom(self, dom: Dom, keep: Sequence[bool] | None | object = ...) -> PageResult:
        """A parsed page; keep overrides the selector's mask when given."""
        url = dom.url
        title = dom.title()
        if self.mode in ("plain", "text"):
            text = dom_text(dom)
            chunks = chunk_plain(text, url, self.chunk_size, self.overlap, self.tokenizer) if self.mode == "plain" else []
            return PageResult(url, title, text, chunks=chunks)
        if keep is ...:
            keep = self.selector(dom) if self.selector and len(dom) else None
        blocks = blocks_from_dom(dom, keep=keep, full_path=self.full_path)
        new = list(self.deduper.filter(blocks)) if self.deduper else blocks
        chunks = chunk_blocks(new, self.chunk_size, self.overlap, self.tokenizer)
        # main mode: the article's text, each heading once (blocks_text); blocks mode: block texts
        text = blocks_text(new) if self.mode == "main" else "\n\n".join(b.text for b in new)
        return PageResult(url, title, text, new, chunks, len(blocks) - len(new))

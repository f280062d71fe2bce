"""blockcrawl: crawl websites into clean, de-duplicated, heading-aware text blocks and search them.

Pipeline: crawl -> parse -> extract -> chunk -> index -> search. The front doors below load on
first use (PEP 562), so `import blockcrawl` costs no numpy, aiohttp or torch.

Stage packages are named apart from the functions: `blockcrawl.extract(html)` is a function (the
stage is `blockcrawl.extraction`), `blockcrawl.search(store, query)` too (`blockcrawl.retrieval`).
`blockcrawl.crawl` stays the crawl package, whose modules (`blockcrawl.crawl.urls`...) are public
API; a crawl runs with `blockcrawl.crawl.crawl(store, CrawlConfig(...))`.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

# public name -> module that defines it
_FRONT_DOORS: dict[str, str] = {
    "extract": "blockcrawl.extraction.api",
    "extract_blocks": "blockcrawl.extraction.blocks",
    "extract_text": "blockcrawl.extraction.text",
    "SitePipeline": "blockcrawl.pipeline",
    "PageResult": "blockcrawl.pipeline",
    "PipelineConfig": "blockcrawl.pipeline",
    "CrawlConfig": "blockcrawl.crawl",
    "Store": "blockcrawl.store",
    "open_store": "blockcrawl.store",
    "build_index": "blockcrawl.index",
    "search": "blockcrawl.retrieval",
    "changes": "blockcrawl.feed",
    "Block": "blockcrawl.records",
    "Chunk": "blockcrawl.records",
    "Document": "blockcrawl.records",
    "Deduper": "blockcrawl.chunk",
    "chunk_blocks": "blockcrawl.chunk",
    "chunk_plain": "blockcrawl.chunk",
    "split_text": "blockcrawl.chunk",
    "decode_html": "blockcrawl.parse",
    "parse_html": "blockcrawl.parse",
    "BlockcrawlError": "blockcrawl.errors",
}

__all__ = ["__version__", *sorted(_FRONT_DOORS)]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only; "X as X" marks a re-export
    from .chunk import Deduper as Deduper
    from .chunk import chunk_blocks as chunk_blocks
    from .chunk import chunk_plain as chunk_plain
    from .chunk import split_text as split_text
    from .crawl import CrawlConfig as CrawlConfig
    from .errors import BlockcrawlError as BlockcrawlError
    from .extraction.api import extract as extract
    from .extraction.blocks import extract_blocks as extract_blocks
    from .extraction.text import extract_text as extract_text
    from .feed import changes as changes
    from .index import build_index as build_index
    from .parse import decode_html as decode_html
    from .parse import parse_html as parse_html
    from .pipeline import PageResult as PageResult
    from .pipeline import PipelineConfig as PipelineConfig
    from .pipeline import SitePipeline as SitePipeline
    from .records import Block as Block
    from .records import Chunk as Chunk
    from .records import Document as Document
    from .retrieval import search as search
    from .store import Store as Store
    from .store import open_store as open_store


# the stage packages, imported on first attribute access too: `import blockcrawl` then
# `blockcrawl.crawl.crawl(...)` works (a plain package raises AttributeError until the subpackage is imported)
_PACKAGES = frozenset({"chunk", "crawl", "extraction", "index", "parse", "pipeline", "records", "retrieval",
                       "store", "errors"})


def __getattr__(name: str) -> Any:
    if name in _PACKAGES:
        return importlib.import_module(f"blockcrawl.{name}")
    module = _FRONT_DOORS.get(name)
    if module is None:
        raise AttributeError(f"module 'blockcrawl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FRONT_DOORS))

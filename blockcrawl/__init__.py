"""blockcrawl: crawl websites into clean, de-duplicated, heading-aware text blocks and search them.

Pipeline: crawl -> parse -> extract -> chunk -> index -> search.
"""
from .chunk import Deduper, chunk_blocks, chunk_plain, split_text
from .extract import extract_blocks, extract_text
from .parse import decode_html, parse_html
from .pipeline import PageResult, SitePipeline
from .records import Block, Chunk, Document
from . import extract  # the extract stage's package, callable: blockcrawl.extract(html) -> Document

__version__ = "0.1.0"
__all__ = ["Block", "Chunk", "Deduper", "Document", "PageResult", "SitePipeline", "chunk_blocks",
           "chunk_plain", "decode_html", "extract", "extract_blocks", "extract_text", "parse_html", "split_text"]

"""Chunk stage: token counting, overlapping chunks within blocks, dedup across a site's pages."""
from .dedup import Deduper
from .split import DEFAULT_OVERLAP, DEFAULT_SIZE, chunk_blocks, chunk_plain, split_text
from .tokenize import HFTokenizer, Tokenizer, WordTokenizer, default_tokenizer, get_tokenizer

__all__ = ["DEFAULT_OVERLAP", "DEFAULT_SIZE", "Deduper", "HFTokenizer", "Tokenizer", "WordTokenizer",
           "chunk_blocks", "chunk_plain", "default_tokenizer", "get_tokenizer", "split_text"]

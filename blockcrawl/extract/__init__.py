"""Extract stage: page text (seed 002) and heading-aware blocks (seed 000)."""
from .blocks import blocks_from_dom, extract_blocks
from .text import dom_text, extract_text
from .api import blocks_text, extract_dom

__all__ = ["blocks_text", "extract_dom", "blocks_from_dom", "dom_text", "extract_blocks", "extract_text"]

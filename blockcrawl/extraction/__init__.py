"""Extract stage: page text (seed 002), heading-aware blocks (seed 000), main content (auto, the
tag-path algorithms). The stage is named `extraction` so that `blockcrawl.extract(html)`, the
main-content function, and this package never share a name."""
from __future__ import annotations

from .api import blocks_text, extract, extract_dom
from .blocks import blocks_from_dom, extract_blocks
from .text import dom_text, extract_text

__all__ = ["blocks_from_dom", "blocks_text", "dom_text", "extract", "extract_blocks", "extract_dom", "extract_text"]

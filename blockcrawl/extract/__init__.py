"""Extract stage: page text (seed 002), heading-aware blocks (seed 000), main content (auto...).

The package itself is callable, so that `blockcrawl.extract(html)` is the main-content API while
`blockcrawl.extract.blocks`, `blockcrawl.extract.auto`... stay importable modules."""
from __future__ import annotations

import sys as _sys
import types as _types

from .blocks import blocks_from_dom, extract_blocks
from .text import dom_text, extract_text
from .api import blocks_text, extract, extract_dom
from ..records import Document

__all__ = ["extract", "blocks_text", "extract_dom", "blocks_from_dom", "dom_text", "extract_blocks", "extract_text"]


class _CallableModule(_types.ModuleType):
    def __call__(self, html: str | bytes, url: str | None = None, algorithm: str = "auto",
                 content_type: str | None = None) -> Document:
        """blockcrawl.extract(html, url=None, algorithm="auto") -> Document (see api.extract)."""
        return extract(html, url, algorithm, content_type)


_sys.modules[__name__].__class__ = _CallableModule

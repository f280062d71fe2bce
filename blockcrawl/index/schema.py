"""The key vectors are stored under. The index's tables are the store's (blockcrawl.store.schema).

Names below the key are re-exported for bench/search.py, which builds synthetic stores by hand;
they are SQLite-only and nothing in blockcrawl uses them.
"""
from __future__ import annotations

import hashlib

from ..store.schema import FTS_SCHEMA, VECTOR_SCHEMA, has_table
from ..store.schema import ensure_index_schema as ensure_schema
from ..store.schema import get_index_meta as get_meta
from ..store.schema import set_index_meta as set_meta


def vector_key(model: str, text: str) -> bytes:
    """sha1(model name + text): an unchanged chunk of a re-crawled page (new row id) finds its vector."""
    return hashlib.sha1(model.encode() + b"\0" + text.encode("utf-8", "surrogatepass")).digest()


__all__ = ["FTS_SCHEMA", "VECTOR_SCHEMA", "ensure_schema", "get_meta", "has_table", "set_meta", "vector_key"]

"""Store stage: all of blockcrawl's SQL, behind the protocols the other stages use (store.protocols).

`Store` is the SQLite implementation (one file: pages, blocks, chunks, frontier, crawl log, index);
see docs/store.md for the schema version, migrations, locking rules and adding a backend.
"""
from .protocols import (
    ChunkSource,
    KeywordIndex,
    PageSink,
    RecordSource,
    SearchStore,
    StoredChunk,
    VectorIndex,
)
from .schema import SCHEMA_VERSION
from .sqlite import SqliteStore

Store = SqliteStore  # the name every caller used before there were protocols

__all__ = ["SCHEMA_VERSION", "ChunkSource", "KeywordIndex", "PageSink", "RecordSource", "SearchStore",
           "SqliteStore", "Store", "StoredChunk", "VectorIndex"]

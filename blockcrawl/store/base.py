"""The store contract written once: every method whose SQL both backends share (SqlStore).

SqliteStore (store.sqlite) and PostgresStore (store.postgres) share it so that they cannot drift
apart (two copies did: an order by id in one only, a stored time in one only). What differs is a
small set of hooks, each a few lines:

- placeholders: the SQL here is written with `?`; `_q` turns it into the driver's (`%s` for psycopg);
- upserts: both speak `INSERT ... ON CONFLICT (key) DO UPDATE/NOTHING` (SQLite >= 3.24), no hook;
- JSON paths and byte order: `_json_text`, `BYTE_ORDER`; URL prefixes: `_prefix`;
- locks: `_lock_frontier`, `_prepare_index` (SQLite's writer lock is the file's, taken on open);
- full-text search: `_keyword` (FTS5 against tsvector), `_chunk_extra` (PostgreSQL's keyword columns),
  `_has_index`, and `_drop_mappings` (SQLite drops vector mappings by trigger);
- connections: `_connect_reader`, `_stream` (a server-side cursor in PostgreSQL), `_fault` (which
  driver errors are the store's and how they read as one StoreError line).

The class is cut in three modules of at most 400 lines: store.core (hooks, connections, helpers),
store.writes (PageSink, recrawl, ChunkSource), store.reads (SearchStore, RecordSource).
tests/store/test_store.py runs one contract suite against both backends.
"""
from __future__ import annotations

from .core import SqlCore, guard, hostport, info_row, strip_port, vectors_from
from .reads import StoreReads
from .writes import StoreWrites


class SqlStore(StoreWrites, StoreReads):
    """The methods of PageSink, ChunkSource, SearchStore and RecordSource, once for both backends;
    a backend subclasses it and fills in SqlCore's hooks."""


__all__ = ["SqlCore", "SqlStore", "guard", "hostport", "info_row", "strip_port", "vectors_from"]

"""Store stage: all of blockcrawl's SQL, behind the protocols the other stages use (store.protocols).

`Store` is the SQLite implementation (one file: pages, blocks, chunks, frontier, crawl log, index);
`PostgresStore` (store.postgres, needs psycopg) the same in a PostgreSQL database. `open_store`
picks one by the location's form; every command opens its --store through it. See docs/store.md
for the schema version, migrations, locking rules and adding a backend.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Union

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

if TYPE_CHECKING:
    from .postgres import PostgresStore

Store = SqliteStore  # the default backend under its short name, for callers that name no protocol
# either backend, as the crawl and the commands hold it (postgres is imported only when used)
AnyStore = Union[SqliteStore, "PostgresStore"]  # noqa: UP007 - a runtime alias with a forward reference


def is_postgres(location: str | os.PathLike[str]) -> bool:
    """Whether a --store value is a PostgreSQL URL (postgresql://... or postgres://...)."""
    return isinstance(location, str) and location.lower().startswith(("postgresql://", "postgres://"))


def sqlite_path(location: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """A --store value with an sqlite: URL read as SQLAlchemy reads it: `sqlite:///site.db` is the
    relative path site.db, `sqlite:////srv/site.db` the absolute /srv/site.db. Other values as
    given; an sqlite: URL of another form is a StoreError."""
    if not (isinstance(location, str) and location[:7].lower() == "sqlite:"):
        return location
    rest = location[7:]
    path = rest[3:]
    if not rest.startswith("///") or not path or "?" in path or path.startswith(":memory:"):
        from ..errors import StoreError

        raise StoreError(f"{location[:200]}: an SQLite URL is sqlite:///relative/path.db or "
                         "sqlite:////absolute/path.db (or give the path itself)")
    return path


def open_store(location: str | os.PathLike[str], *, create: bool = True, readonly: bool = False,
               who: str = "a blockcrawl writer") -> AnyStore:
    """The store at location: a PostgresStore for a postgresql:// or postgres:// URL, else the
    SqliteStore file at that path. create: make a missing store (StoreMissing otherwise); readonly:
    a reader; who: how the writer is named to others (the SQLite lock's message, PostgreSQL's
    application_name). Errors are StoreError lines; a URL is never shown with its password."""
    if is_postgres(location):
        from .postgres import PostgresStore

        return PostgresStore(str(location), create=create, readonly=readonly, who=who)
    return SqliteStore(sqlite_path(location), create=create, readonly=readonly, who=who)


__all__ = ["SCHEMA_VERSION", "AnyStore", "ChunkSource", "KeywordIndex", "PageSink", "RecordSource", "SearchStore",
           "SqliteStore", "Store", "StoredChunk", "VectorIndex", "is_postgres", "open_store", "sqlite_path"]

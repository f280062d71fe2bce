"""The store's schema, in one place, and its migrations by `PRAGMA user_version`.

Version history (SCHEMA_VERSION is the newest; a step per version in MIGRATIONS):

- 0: files written before versioning (user_version never set). Their tables were created piecemeal by
  the modules that used them; stores from before the date-trap guard lack frontier.trail.
- 1: every core table created at once (pages, blocks, chunks, frontier, crawl_log, crawl_meta),
  application_id set so that another program's SQLite file is told apart from a store.
- 2: pages.markdown, the main content as Markdown written by the crawl (export --format markdown);
  NULL for pages stored before, which export rebuilds from their blocks.
- 3: pages.etag and pages.last_modified, the validators of the page's last 200 answer, for the
  conditional requests of `crawl --recrawl` (If-None-Match / If-Modified-Since), and pages.body_hash
  (the body's blake2b-128), which tells an unchanged page from a server without validators.
- 4: chunks.context (the page title and outer headings a chunk is embedded with, records.Chunk),
  also a column of chunks_fts (keyword search matches the page title).
- 5: page info (records.PageInfo) in pages: text (the main content as extract() gives it), kind and
  kind_score (the news-page classifier), summary, meta (JSON of records.PageMeta), cluster (the site-
  model cluster the page was extracted with, -1: none); and table site_models, one learned site model
  per site (crawl --algorithm site), reloaded by --resume. NULL/-1 for pages stored before.
- 6: the keyword index splits Chinese, Japanese and Korean text into bigrams (store.cjk): chunks_fts
  indexes blockcrawl_cjk(column), a function every connection that writes chunks registers
  (register_functions; the sqlite3 shell cannot change chunks of an indexed store). Rebuilt in place.
- 7: the change log (store.changelog): table crawls (one row per crawl run: start, end, finished)
  and table changes (every page added / changed / unchanged / removed and chunk added / removed /
  moved, written in the transaction of the work it describes), which `blockcrawl changes` reads.
  Empty for a store migrated from 6: its feed starts at its next crawl.

The index part (index_meta, embeddings, chunk_vectors, chunks_fts and its triggers) is created by the
first `index` run, not with the store: FTS5 triggers on every chunk insert would tax a crawl whose
store is never searched, and filling chunks_fts in one INSERT ... SELECT at the end is faster than row by row.
Its shape is part of the version all the same: a migration changes it when it is there.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ..errors import StoreError
from .cjk import split_cjk

# "blCr": tells a store from any other SQLite file (PRAGMA application_id, in the file header)
APPLICATION_ID = 0x626C4372
SCHEMA_VERSION = 7

CORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,          -- canonical URL
    final_url TEXT,                    -- after redirects
    status INTEGER,
    content_type TEXT,
    title TEXT,
    content_hash TEXT,                 -- hash of the extracted text: unchanged pages are not re-indexed
    fetched_at REAL,                   -- last fetched (a 304 on --recrawl counts)
    markdown TEXT,                     -- main content as Markdown (schema 2; NULL before)
    etag TEXT,                         -- validators of the last 200, for --recrawl's conditional GET
    last_modified TEXT,
    body_hash TEXT,                    -- blake2b-128 of the body: same body on --recrawl = unchanged
    text TEXT,                         -- page info (schema 5): the main content as extract() gives it
    kind TEXT,                         -- article | listing | other ('' not classified)
    kind_score REAL,                   -- probability of 'article'
    summary TEXT,
    meta TEXT,                         -- JSON of records.PageMeta (title, author, published, language...)
    cluster INTEGER DEFAULT -1         -- site-model cluster the page was extracted with (-1: none)
);
CREATE TABLE IF NOT EXISTS blocks (
    id INTEGER PRIMARY KEY,
    page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    kind TEXT NOT NULL,
    heading_path TEXT NOT NULL,        -- JSON list
    tag_path TEXT NOT NULL,
    text TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS blocks_page ON blocks(page_id);
CREATE INDEX IF NOT EXISTS blocks_hash ON blocks(hash);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    block_position INTEGER NOT NULL,
    chunk_index INTEGER NOT NULL,
    url TEXT NOT NULL,
    heading_path TEXT NOT NULL,        -- JSON list
    text TEXT NOT NULL,
    block_hash TEXT NOT NULL,
    n_tokens INTEGER NOT NULL,
    context TEXT NOT NULL DEFAULT ''   -- title > outer headings, embedded with the text
);
CREATE INDEX IF NOT EXISTS chunks_page ON chunks(page_id);

-- The persistent frontier: every URL the crawl ever accepted, keyed by its canonical form, so the
-- table is also the seen-set (see store.frontier).
CREATE TABLE IF NOT EXISTS frontier (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,          -- canonical URL (identity: /x and /x/ are one)
    fetch_url TEXT,                    -- the form requested, if different ("/x" as linked)
    host TEXT NOT NULL,                -- scheme://host[:port]
    depth INTEGER NOT NULL,
    kind TEXT NOT NULL DEFAULT 'page', -- page | sitemap
    state INTEGER NOT NULL DEFAULT 0,  -- 0 queued 1 in_flight 2 done 3 failed 4 skipped
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    hops INTEGER NOT NULL DEFAULT 0,   -- redirects that led here
    trail INTEGER NOT NULL DEFAULT 0,  -- hops from dated page to dated page (crawl.traps)
    via TEXT,                          -- the URL that redirected here
    status INTEGER,
    error TEXT,
    updated REAL
);
CREATE INDEX IF NOT EXISTS frontier_state ON frontier(state);
CREATE TABLE IF NOT EXISTS crawl_log (
    id INTEGER PRIMARY KEY,
    t REAL NOT NULL,
    url TEXT NOT NULL,
    event TEXT NOT NULL,               -- fetched, redirect, retry, failed, skipped
    status INTEGER,
    error TEXT,
    detail TEXT,
    bytes INTEGER,
    elapsed REAL
);
CREATE TABLE IF NOT EXISTS crawl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- one learned site model per site (schema 5): site = scheme://host[:port] as the crawl keys sites
CREATE TABLE IF NOT EXISTS site_models (
    site TEXT PRIMARY KEY,
    version INTEGER,                   -- 1 for the first model of the site, +1 at each relearning
    model TEXT,                        -- the model's JSON (extraction.site), with its "format" key
    learned_at REAL,
    pages INTEGER,                     -- pages the model was learned on
    fallbacks INTEGER                  -- pages the model did not fit (extracted by auto)
);
-- the change log (schema 7, store.changelog): one row per crawl run
CREATE TABLE IF NOT EXISTS crawls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started REAL NOT NULL,
    ended REAL,                        -- NULL: running, or interrupted (--resume goes on with it)
    finished INTEGER NOT NULL DEFAULT 0,
    compacted INTEGER NOT NULL DEFAULT 0  -- its changes were dropped (changes --compact, --keep-changes)
);
-- what each crawl changed, in commit order (seq): page ops and chunk ops
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    crawl_id INTEGER,                  -- NULL: written outside a crawl
    t REAL NOT NULL,
    what TEXT NOT NULL,                -- page | chunk
    op TEXT NOT NULL,                  -- page: added changed unchanged removed; chunk: added removed moved
    url TEXT NOT NULL,
    chunk_id INTEGER,
    reason TEXT,                       -- why a page was removed (gone 404, noindex...) or changed (revised)
    before TEXT                        -- a changed page's main text before the change (changes --diff)
);
CREATE INDEX IF NOT EXISTS changes_crawl ON changes(crawl_id);
CREATE INDEX IF NOT EXISTS changes_chunk ON changes(what, chunk_id);
"""

# - index_meta(key, value): model name, dimension, generation (bumped by every index run).
# - embeddings(key, vec): float32 vectors keyed by sha1(model name + text). save_page deletes and
#   re-inserts a page's chunks (new ids), so keying by content lets an unchanged chunk of a
#   re-crawled page find its vector again instead of being embedded anew.
# - chunk_vectors(chunk_id, key): which vector each chunk has. A trigger drops the row when the chunk
#   is deleted or its text changes, so a reused chunk id never points at another text's vector.
VECTOR_SCHEMA = """
CREATE TABLE IF NOT EXISTS index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunk_vectors (chunk_id INTEGER PRIMARY KEY, key BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS chunk_vectors_key ON chunk_vectors(key);
CREATE TRIGGER IF NOT EXISTS chunk_vectors_on_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_vectors WHERE chunk_id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS chunk_vectors_on_update AFTER UPDATE OF text ON chunks BEGIN
    DELETE FROM chunk_vectors WHERE chunk_id = old.id;
END;
"""

# chunks_fts: FTS5 over chunks (external content: the text is not stored twice), kept in sync with
# chunks by triggers once created, so the crawler needs to know nothing about it.
# remove_diacritics 2: "Zurich" finds "Zürich"; the heading path (JSON text) and the context (title >
# outer headings) are searchable too.
FTS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, heading_path, context, content='chunks', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS chunks_fts_on_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text, heading_path, context)
    VALUES (new.id, blockcrawl_cjk(new.text), blockcrawl_cjk(new.heading_path), blockcrawl_cjk(new.context));
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_on_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading_path, context)
    VALUES ('delete', old.id, blockcrawl_cjk(old.text), blockcrawl_cjk(old.heading_path), blockcrawl_cjk(old.context));
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_on_update AFTER UPDATE OF text, heading_path, context ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading_path, context)
    VALUES ('delete', old.id, blockcrawl_cjk(old.text), blockcrawl_cjk(old.heading_path), blockcrawl_cjk(old.context));
    INSERT INTO chunks_fts(rowid, text, heading_path, context)
    VALUES (new.id, blockcrawl_cjk(new.text), blockcrawl_cjk(new.heading_path), blockcrawl_cjk(new.context));
END;
"""
# FTS5's 'rebuild' would read the chunks as they are: the index holds their CJK-split form (store.cjk),
# so it is filled by this statement (the index's rows differ from the content table's only there:
# nothing reads the text back through chunks_fts, search takes rowid and bm25)
_FTS_FILL = ("INSERT INTO chunks_fts(rowid, text, heading_path, context) SELECT id, blockcrawl_cjk(text), "
             "blockcrawl_cjk(heading_path), blockcrawl_cjk(context) FROM chunks")


def register_functions(db: sqlite3.Connection) -> None:
    """The SQL functions the index's triggers call, on a connection that writes chunks."""
    db.create_function("blockcrawl_cjk", 1, split_cjk, deterministic=True)


def _rebuild_fts(db: sqlite3.Connection) -> None:
    """chunks_fts and its triggers dropped and made anew (in the migration's transaction)."""
    for sql in statements(_FTS_DROP) + statements(FTS_SCHEMA):
        db.execute(sql)
    db.execute(_FTS_FILL)


_FTS_DROP = """
DROP TRIGGER IF EXISTS chunks_fts_on_insert;
DROP TRIGGER IF EXISTS chunks_fts_on_delete;
DROP TRIGGER IF EXISTS chunks_fts_on_update;
DROP TABLE IF EXISTS chunks_fts;
"""

# Tables by which a version-0 file is recognised as a store (any one of them).
_V0_TABLES = frozenset({"pages", "chunks", "frontier"})


def statements(script: str) -> list[str]:
    """A script's statements one by one: executescript() would COMMIT the migration's transaction."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    return out


def has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name=?", (name,)).fetchone() is not None


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in db.execute(f"PRAGMA table_info({table})")}


def _to_1(db: sqlite3.Connection) -> None:
    """0 -> 1: create what is missing, add frontier.trail to stores from before the date-trap guard."""
    if has_table(db, "frontier") and "trail" not in _columns(db, "frontier"):
        db.execute("ALTER TABLE frontier ADD COLUMN trail INTEGER NOT NULL DEFAULT 0")
    for sql in statements(CORE_SCHEMA):
        db.execute(sql)
    db.execute(f"PRAGMA application_id={APPLICATION_ID}")


def _to_2(db: sqlite3.Connection) -> None:
    """1 -> 2: pages.markdown (NULL for the pages already stored)."""
    if "markdown" not in _columns(db, "pages"):
        db.execute("ALTER TABLE pages ADD COLUMN markdown TEXT")


def _to_3(db: sqlite3.Connection) -> None:
    """2 -> 3: pages.etag, pages.last_modified, pages.body_hash (NULL for pages fetched before:
    recrawled unconditionally)."""
    have = _columns(db, "pages")
    for col in ("etag", "last_modified", "body_hash"):
        if col not in have:
            db.execute(f"ALTER TABLE pages ADD COLUMN {col} TEXT")


def _to_4(db: sqlite3.Connection) -> None:
    """3 -> 4: chunks.context (a store created at 0 got it from CORE_SCHEMA in _to_1), and in
    chunks_fts if the store was indexed: the keyword index is rebuilt with the column."""
    if "context" not in _columns(db, "chunks"):
        db.execute("ALTER TABLE chunks ADD COLUMN context TEXT NOT NULL DEFAULT ''")
    if has_table(db, "chunks_fts") and "context" not in _columns(db, "chunks_fts"):
        _rebuild_fts(db)


# (column, type) added to pages by schema 5
_PAGE_INFO_COLUMNS = (("text", "TEXT"), ("kind", "TEXT"), ("kind_score", "REAL"), ("summary", "TEXT"),
                      ("meta", "TEXT"), ("cluster", "INTEGER DEFAULT -1"))


# Search's page-info filters (kind, lang, since: SqliteStore.pages_matching) read kind and meta of
# every page: from this covering index, not from the rows, whose main text sits before them. 5,000
# pages with 2 KB of text each (load 10): 3.8 ms for kind, 10 ms for since, 20 ms for lang, against
# 28, 45 and 58 ms scanning the table.
PAGE_INFO_INDEX = "CREATE INDEX IF NOT EXISTS pages_info ON pages(kind, meta)"


def _to_5(db: sqlite3.Connection) -> None:
    """4 -> 5: the page-info columns of pages (NULL, cluster -1, for the pages already stored),
    their index and the site_models table (a store created at 0 got the table and the columns
    from CORE_SCHEMA in _to_1)."""
    have = _columns(db, "pages")
    for col, typ in _PAGE_INFO_COLUMNS:
        if col not in have:
            db.execute(f"ALTER TABLE pages ADD COLUMN {col} {typ}")
    db.execute(PAGE_INFO_INDEX)
    for sql in statements(CORE_SCHEMA):
        if "site_models" in sql:
            db.execute(sql)


def _to_6(db: sqlite3.Connection) -> None:
    """5 -> 6: the keyword index of an indexed store rebuilt with CJK text split into bigrams."""
    if has_table(db, "chunks_fts"):
        _rebuild_fts(db)


def _to_7(db: sqlite3.Connection) -> None:
    """6 -> 7: the change log's tables, empty."""
    for sql in statements(CORE_SCHEMA):
        if "crawls" in sql or "changes" in sql:
            db.execute(sql)


# MIGRATIONS[i] takes a store from version i to i + 1, inside one transaction. To change the schema:
# edit CORE_SCHEMA (what a new store gets), append a step that brings version SCHEMA_VERSION there,
# bump SCHEMA_VERSION, and add a version-N fixture to tests/store/test_store.py.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_to_1, _to_2, _to_3, _to_4, _to_5, _to_6, _to_7]
assert len(MIGRATIONS) == SCHEMA_VERSION


def check(db: sqlite3.Connection, where: str) -> int:
    """The file's schema version; StoreError (one line) for a file that is not a store this code reads."""
    try:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        app = int(db.execute("PRAGMA application_id").fetchone()[0])
        tables = {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as e:  # "file is not a database", "database disk image is malformed"
        raise StoreError(f"{where} is not a readable SQLite store: {e}") from None
    if app not in (0, APPLICATION_ID) or (app == 0 and tables and not tables & _V0_TABLES):
        raise StoreError(f"{where} is not a blockcrawl store (an SQLite file of another program)")
    if version > SCHEMA_VERSION:
        raise StoreError(f"{where} has store schema version {version}; this blockcrawl reads up to "
                         f"{SCHEMA_VERSION}: upgrade blockcrawl")
    return version


def migrate(db: sqlite3.Connection, where: str) -> int:
    """Bring a writable store (new or old) to SCHEMA_VERSION in place; returns the version found.

    Each step runs in one transaction with the version bump, so an interrupted migration leaves the
    file at the old version, to be migrated again by the next writer."""
    version = check(db, where)
    register_functions(db)
    for step in range(version, SCHEMA_VERSION):
        try:
            db.execute("BEGIN IMMEDIATE")
            MIGRATIONS[step](db)
            db.execute(f"PRAGMA user_version={step + 1}")
            db.execute("COMMIT")
        except sqlite3.Error as e:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise StoreError(f"cannot migrate {where} from schema version {step} to {step + 1}: {e}") from None
    return version


def ensure_index_schema(db: sqlite3.Connection) -> None:
    """Create the index tables; the first time, fill the FTS table from the existing chunks."""
    register_functions(db)
    db.executescript(VECTOR_SCHEMA)
    fresh = not has_table(db, "chunks_fts")
    db.executescript(FTS_SCHEMA)
    if fresh:
        db.execute(_FTS_FILL)


def get_index_meta(db: sqlite3.Connection) -> dict[str, str]:
    if not has_table(db, "index_meta"):
        return {}
    return {str(k): str(v) for k, v in db.execute("SELECT key, value FROM index_meta")}


def set_index_meta(db: sqlite3.Connection, **values: object) -> None:
    db.executemany("INSERT INTO index_meta(key, value) VALUES (?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                   [(k, str(v)) for k, v in values.items()])

"""The writing half of the store contract (store.base): PageSink (crawl), recrawl, ChunkSource (index)."""
from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..records import embedding_text
from .changelog import ChangeLog, LogRow
from .core import guard, info_row

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..records import Block, Chunk, PageInfo
    from .frontier import SqlFrontier

_SITE_COLUMNS = ("site", "version", "model", "learned_at", "pages", "fallbacks")


class StoreWrites(ChangeLog):
    """What the crawl and `index` call, SQL written once for both backends. The writes of pages
    and chunks record what they changed in the change log (store.changelog), uncommitted as they are."""

    # ------------------------------------------------------------------ PageSink (crawl)
    @guard
    def save_page(self, url: str, blocks: list[Block], chunks: list[Chunk], *, final_url: str | None = None,
                  status: int = 200, content_type: str | None = None, title: str = "",
                  content_hash: str | None = None, markdown: str | None = None, etag: str | None = None,
                  last_modified: str | None = None, body_hash: str | None = None,
                  info: PageInfo | None = None) -> int:
        """Insert or replace a page (by URL) with its blocks and chunks; returns the page id. No commit.
        markdown: the page's main content as Markdown (export --format markdown), if made.
        etag, last_modified: the answer's validators, sent back by `crawl --recrawl`; body_hash: the
        body's hash, by which a recrawl tells an unchanged page from a server without validators.
        info: the page's text, kind, summary, metadata and cluster (schema 5; NULL when None).
        The upsert locks that one pages row until commit (PostgreSQL: writers of other pages go on).
        Logged as added, changed (its chunks or its content hash differ) or unchanged."""
        db = self._writable()
        old = self._exec(db, f"SELECT content_hash, text FROM pages WHERE url=?{self.FOR_UPDATE}", (url,)).fetchone()
        row = self._exec(db,
            "INSERT INTO pages(url, final_url, status, content_type, title, content_hash, fetched_at, markdown, etag, "
            "last_modified, body_hash, text, kind, kind_score, summary, meta, cluster) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(url) DO UPDATE SET "
            "final_url=excluded.final_url, status=excluded.status, content_type=excluded.content_type, "
            "title=excluded.title, content_hash=excluded.content_hash, fetched_at=excluded.fetched_at, "
            "markdown=excluded.markdown, etag=excluded.etag, last_modified=excluded.last_modified, "
            "body_hash=excluded.body_hash, text=excluded.text, kind=excluded.kind, kind_score=excluded.kind_score, "
            "summary=excluded.summary, meta=excluded.meta, cluster=excluded.cluster RETURNING id",
            (url, final_url or url, status, content_type, title, content_hash, time.time(), markdown or None, etag,
             last_modified, body_hash, *info_row(info))).fetchone()
        page_id = int(row[0])
        ops = self._put_content(db, page_id, url, blocks, chunks)
        if old is None:
            op = "added"
        else:
            op = "changed" if ops or old[0] != content_hash else "unchanged"
        self._log(db, [("page", op, url, None, None, old[1] if op == "changed" else None), *ops])
        return page_id

    @guard
    def replace_content(self, url: str, blocks: list[Block], chunks: list[Chunk], *, markdown: str | None = None,
                        content_hash: str | None = None, info: PageInfo | None = None) -> int | None:
        """Replace a stored page's blocks, chunks, Markdown, content hash and info (site learning:
        the page re-extracted with the model learned after it was stored), keeping what the fetch
        gave (status, validators, fetch time, title). Returns the page id, or None when no page
        is stored at url (not stored: noindex, canonical elsewhere). No commit."""
        db = self._writable()
        before = self._exec(db, "SELECT text FROM pages WHERE url=?", (url,)).fetchone()
        row = self._exec(db,
            "UPDATE pages SET markdown=?, content_hash=coalesce(?, content_hash), text=?, kind=?, kind_score=?, "
            "summary=?, meta=?, cluster=? WHERE url=? RETURNING id",
            (markdown or None, content_hash, *info_row(info), url)).fetchone()
        if row is None:
            return None
        page_id = int(row[0])
        ops = self._put_content(db, page_id, url, blocks, chunks)
        if ops:
            self._log(db, [("page", "changed", url, None, "revised", before[0] if before else None), *ops])
        return page_id

    def _put_content(self, db: Any, page_id: int, url: str, blocks: list[Block], chunks: list[Chunk]) -> list[LogRow]:
        """The page's blocks replaced; its chunks replaced but for those stored already with the same
        text, heading path, context and block: they keep their ids (and vectors), moved to their new
        place if it changed. Returns the chunk ops for the change log (added, removed, moved)."""
        self._exec(db, "DELETE FROM blocks WHERE page_id=?", (page_id,))
        paths: dict[tuple[str, ...], str] = {}  # a block's chunks share its heading path: encode it once

        def path_json(hp: tuple[str, ...]) -> str:
            js = paths.get(hp)
            if js is None:
                js = paths[hp] = json.dumps(list(hp), ensure_ascii=False)
            return js
        self._many(db, "INSERT INTO blocks(page_id, position, kind, heading_path, tag_path, text, hash) "
                       "VALUES (?,?,?,?,?,?,?)",
                   [(page_id, b.position, b.kind, path_json(tuple(b.heading_path)), b.tag_path, b.text, b.hash)
                    for b in blocks])
        cols = ("page_id", "block_position", "chunk_index", "url", "heading_path", "text", "block_hash", "n_tokens",
                "context", *self.CHUNK_EXTRA)
        stored: dict[tuple[str, str, str, str], list[tuple[int, int, int, str, int]]] = {}
        for cid, pos, idx, curl, hp, text, bh, ntok, ctx in self._exec(
                db, "SELECT id, block_position, chunk_index, url, heading_path, text, block_hash, n_tokens, context "
                    "FROM chunks WHERE page_id=? ORDER BY id", (page_id,)):
            stored.setdefault((str(text), str(hp), str(ctx), str(bh)), []).append(
                (int(cid), int(pos), int(idx), str(curl), int(ntok)))
        rows, moved, kept = [], [], set()
        for c in chunks:
            hp = path_json(tuple(c.heading_path))
            same = stored.get((c.text, hp, c.context, c.block_hash))
            if same:
                cid, pos, idx, curl, ntok = same.pop(0)
                kept.add(cid)
                if (pos, idx, curl, ntok) != (c.block_position, c.chunk_index, c.url or url, c.n_tokens):
                    moved.append((c.block_position, c.chunk_index, c.url or url, c.n_tokens, cid))
                continue
            rows.append((page_id, c.block_position, c.chunk_index, c.url or url, hp, c.text, c.block_hash,
                         c.n_tokens, c.context, *self._chunk_extra(c.text, hp, c.context)))
        gone = [r[0] for left in stored.values() for r in left]
        if gone:
            self._drop_mappings(db, page_id, gone)
            self._many(db, "DELETE FROM chunks WHERE id=?", [(cid,) for cid in gone])
        self._many(db, "UPDATE chunks SET block_position=?, chunk_index=?, url=?, n_tokens=? WHERE id=?", moved)
        self._many(db, f"INSERT INTO chunks({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})", rows)
        added = []
        if rows:
            added = [int(r[0]) for r in self._exec(db, "SELECT id FROM chunks WHERE page_id=? ORDER BY id", (page_id,))
                     if int(r[0]) not in kept]
        out: list[LogRow] = [("chunk", "removed", url, cid, None, None) for cid in gone]
        out += [("chunk", "moved", url, int(m[-1]), None, None) for m in moved]
        return out + [("chunk", "added", url, cid, None, None) for cid in added]

    # ------------------------------------------------------------------ site models (crawl --algorithm site)
    @guard
    def save_site_model(self, site: str, model: str, *, version: int, pages: int, fallbacks: int) -> None:
        """Store (or replace) the site's learned model, JSON as the pipeline gave it. No commit.
        Saving the same version again (the crawl updates the counts after each page of the site)
        keeps its learned_at."""
        self._exec(self._writable(),
            "INSERT INTO site_models(site, version, model, learned_at, pages, fallbacks) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(site) DO UPDATE SET version=excluded.version, model=excluded.model, "
            "learned_at=CASE WHEN coalesce(site_models.version, -1) = coalesce(excluded.version, -1) "
            "THEN site_models.learned_at ELSE excluded.learned_at END, pages=excluded.pages, fallbacks=excluded.fallbacks",
            (site, version, model, time.time(), pages, fallbacks))

    @guard
    def site_models(self) -> list[dict[str, object]]:
        """Every stored site model (site, version, model, learned_at, pages, fallbacks), by site;
        [] for a store from before schema 5."""
        with self._reading() as db:
            if not self._has_table(db, "site_models"):
                return []
            return [dict(zip(_SITE_COLUMNS, r)) for r in self._exec(
                db, f"SELECT {', '.join(_SITE_COLUMNS)} FROM site_models ORDER BY site{self.BYTE_ORDER}")]

    @guard
    def block_hashes(self, url_prefix: str | None = None) -> list[tuple[str, str]]:
        """(text, hash) of stored blocks in page order: reloads a site's dedup state on resume.
        With url_prefix, only blocks of pages whose URL starts with it (one site)."""
        if url_prefix is None:
            rows = self._exec(self._db, "SELECT text, hash FROM blocks ORDER BY page_id, position").fetchall()
        else:
            where, args = self._prefix("p.url", url_prefix)
            rows = self._exec(self._db, "SELECT b.text, b.hash FROM blocks b JOIN pages p ON p.id = b.page_id "
                                        f"WHERE {where} ORDER BY b.page_id, b.position", args).fetchall()
        return [(str(t), str(h)) for t, h in rows]

    # ------------------------------------------------------------------ recrawl (crawl --recrawl)
    @guard
    def recrawl_pages(self) -> list[tuple[str, str, float, str | None, str | None, str | None]]:
        """(url, final_url, fetched_at, etag, last_modified, body_hash) of every stored page, oldest
        fetch first: what an incremental recrawl revisits."""
        return [(str(u), str(f or u), float(t or 0.0), e, m, h) for u, f, t, e, m, h in self._exec(
            self._writable(),
            "SELECT url, final_url, fetched_at, etag, last_modified, body_hash FROM pages ORDER BY fetched_at, id")]

    @guard
    def touch_page(self, url: str, *, etag: str | None = None, last_modified: str | None = None) -> None:
        """The page was confirmed unchanged (304, or the same text): its fetch time is now; new
        validators, if the answer carried any, replace the old. No commit."""
        cur = self._exec(self._writable(),
                         "UPDATE pages SET fetched_at=?, etag=coalesce(?, etag), last_modified=coalesce(?, last_modified) "
                         "WHERE url=?", (time.time(), etag, last_modified, url))
        if cur.rowcount:
            self._log(self._db, [("page", "unchanged", url, None, None, None)])

    @guard
    def delete_page(self, url: str, reason: str | None = None) -> bool:
        """Remove a page that is gone (404/410) with its blocks and chunks; the chunks' keyword-index
        rows and vector mappings go with them, so search never returns it again. Returns whether
        there was such a page. reason: the change log's ("gone 404", "noindex"...). No commit."""
        db = self._writable()
        row = self._exec(db, f"SELECT id, text FROM pages WHERE url=?{self.FOR_UPDATE}", (url,)).fetchone()
        if row is None:
            return False
        ids = [int(r[0]) for r in self._exec(db, "SELECT id FROM chunks WHERE page_id=? ORDER BY id", (row[0],))]
        self._log(db, [("page", "removed", url, None, reason, row[1]),
                       *[("chunk", "removed", url, cid, None, None) for cid in ids]])
        self._drop_mappings(db, int(row[0]))
        for table, col in (("chunks", "page_id"), ("blocks", "page_id"), ("pages", "id")):
            self._exec(db, f"DELETE FROM {table} WHERE {col}=?", (row[0],))
        return True

    @guard
    def frontier(self) -> SqlFrontier:
        """The crawl's own frontier and log, on the writer connection (committed with the pages).
        One crawl at a time uses it: workers that share a frontier elsewhere (--frontier redis://)
        call crawl_log() instead and write pages side by side."""
        from .frontier import SqlFrontier

        fr = SqlFrontier(self)
        self._lock_frontier()
        return fr

    @guard
    def crawl_log(self) -> SqlFrontier:
        """Where a worker of a shared frontier (crawl --frontier redis://) writes its crawl log: the
        frontier object without its one-crawl lock, of which the worker only calls `log`."""
        from .frontier import SqlFrontier

        return SqlFrontier(self)

    # ------------------------------------------------------------------ ChunkSource (index)
    @guard
    def begin_index(self, model: str, dim: int) -> dict[str, str]:
        db = self._writable()
        self._prepare_index(db)
        meta = self._index_meta(db)
        if meta.get("model") not in (None, model) or meta.get("dim") not in (None, str(dim)):
            # another model: its vectors live in another space, start over
            self._exec(db, "DELETE FROM chunk_vectors")
            self._exec(db, "DELETE FROM embeddings")
        self._set_meta(db, model=model, dim=dim)
        db.commit()
        return meta

    @guard
    def chunks_to_embed(self, after: int = 0) -> list[tuple[int, str]]:
        """Chunks of heading-only blocks ("Europe Countries:") get no vector: alone they are close to
        every query about their topic yet hold nothing to read; keyword search still finds them.
        The text embedded is the chunk's context (title > outer headings) and its text.
        after: only chunk ids above it (the live indexer reads each new chunk once, not the whole
        backlog on every look: that was quadratic in the crawl's chunks)."""
        return [(int(c), embedding_text(str(x), str(t))) for c, x, t in self._exec(self._db,
            "SELECT c.id, c.context, c.text FROM chunks c LEFT JOIN chunk_vectors v ON v.chunk_id = c.id "
            "LEFT JOIN blocks b ON b.page_id = c.page_id AND b.position = c.block_position "
            "WHERE v.chunk_id IS NULL AND coalesce(b.kind, 'text') <> 'heading' AND c.id > ? ORDER BY c.id",
            (after,))]

    @guard
    def vector_keys(self) -> set[bytes]:
        return {bytes(k) for (k,) in self._exec(self._db, "SELECT key FROM embeddings")}

    @guard
    def map_vectors(self, pairs: Iterable[tuple[int, bytes]]) -> None:
        self._many(self._writable(), "INSERT INTO chunk_vectors(chunk_id, key) VALUES (?,?) "
                                     "ON CONFLICT(chunk_id) DO UPDATE SET key=excluded.key", list(pairs))

    @guard
    def save_vectors(self, keys: Sequence[bytes], vectors: npt.NDArray[np.float32],
                     chunk_ids: Sequence[Sequence[int]]) -> None:
        import numpy as np

        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        self._many(self._writable(), "INSERT INTO embeddings(key, vec) VALUES (?,?) "
                                     "ON CONFLICT(key) DO UPDATE SET vec=excluded.vec",
                   [(bytes(k), vecs[i].tobytes()) for i, k in enumerate(keys)])
        self.map_vectors([(cid, bytes(k)) for k, ids in zip(keys, chunk_ids) for cid in ids])

    @guard
    def repair_vectors(self, dim: int) -> int:
        """Delete stored vectors that are not dim finite float32 values (store.vecblob) and the chunk
        mappings left pointing at no vector, so the chunks are embedded again; returns how many
        chunks lost their vector. No commit."""
        from .vecblob import damaged_keys

        db = self._writable()
        with self._stream(db, "SELECT key, vec FROM embeddings") as rows:
            bad = damaged_keys(((bytes(k), bytes(v)) for k, v in rows), dim)
        if bad:
            self._many(db, "DELETE FROM embeddings WHERE key = ?", [(k,) for k in bad])
        return int(self._exec(db, "DELETE FROM chunk_vectors "
                              "WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.key = chunk_vectors.key)").rowcount)

    @guard
    def clear_vectors(self) -> None:
        """Forget every vector (index --rebuild). No commit."""
        db = self._writable()
        self._exec(db, "DELETE FROM chunk_vectors")
        self._exec(db, "DELETE FROM embeddings")

    @guard
    def drop_unused_vectors(self) -> int:
        return int(self._exec(self._writable(), "DELETE FROM embeddings "
                              "WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.key = embeddings.key)").rowcount)

    @guard
    def finish_index(self, generation: int, indexed_at: float) -> None:
        self._set_meta(self._writable(), generation=generation, indexed_at=indexed_at)
        self._db.commit()

    @guard
    def count_chunks(self) -> int:
        with self._reading() as db:
            return int(self._exec(db, "SELECT count(*) FROM chunks").fetchone()[0])


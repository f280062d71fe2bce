"""The reading half of the store contract (store.base): SearchStore (search, serve), RecordSource (export)."""
from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from ..errors import NotIndexed, StoreError
from ..frontier_item import STATE_NAMES
from .core import SqlCore, _hosts, _hosts_lock, guard, hostport, strip_port, vectors_from
from .protocols import RECORD_KINDS, StoredChunk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

BATCH = 500  # ids per IN (...) list: SQLite allows 32,766 variables, PostgreSQL 65,535

_EXPORTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "pages": (("SELECT p.id, p.url, p.final_url, p.status, p.content_type, p.title, p.content_hash, p.fetched_at, "
              "(SELECT count(*) FROM blocks b WHERE b.page_id = p.id), "
              "(SELECT count(*) FROM chunks c WHERE c.page_id = p.id), "
              "p.text, p.kind, p.kind_score, p.summary, p.cluster, p.meta FROM pages p ORDER BY p.id"),
              ("id", "url", "final_url", "status", "content_type", "title", "content_hash", "fetched_at",
               "n_blocks", "n_chunks", "text", "kind", "kind_score", "summary", "cluster", "meta")),
    "blocks": (("SELECT b.id, p.url, b.position, b.kind, b.heading_path, b.tag_path, b.text, b.hash "
               "FROM blocks b JOIN pages p ON p.id = b.page_id ORDER BY b.page_id, b.position"),
               ("id", "url", "position", "kind", "heading_path", "tag_path", "text", "hash")),
    "chunks": (("SELECT id, url, block_position, chunk_index, heading_path, text, block_hash, n_tokens "
               "FROM chunks ORDER BY id"),
               ("id", "url", "block_position", "chunk_index", "heading_path", "text", "block_hash", "n_tokens")),
    "frontier": ("SELECT url, depth, kind, state, attempts, status, error, via FROM frontier ORDER BY id",
                 ("url", "depth", "kind", "state", "attempts", "status", "error", "via")),
}
assert set(_EXPORTS) == set(RECORD_KINDS)
# schema 5's page-info columns: a reader of an older SQLite store (never migrated) reads them as NULL
_INFO_COLUMNS = ("text", "kind", "kind_score", "summary", "cluster", "meta")


class StoreReads(SqlCore):
    """What search, serve and export call, SQL written once for both backends."""

    # ------------------------------------------------------------------ SearchStore (search, serve)
    @guard
    def index_meta(self) -> dict[str, str]:
        """model, dim, generation, indexed_at; {} when the store was never indexed; NotIndexed
        (one line) while its first index run is going on."""
        with self._reading() as db:
            meta = self._index_meta(db) if self._has_index(db) else {}
            if "generation" not in meta and "model" in meta and (who := self._indexer(db)) is not None:
                # the first index run has begun (its model is recorded) and not finished: a search
                # now would say "never indexed", against the lock message's promise
                raise NotIndexed(f"{self.location} is being indexed for the first time by {who}: "
                                 "search works once that run finishes")
            return meta

    @guard
    def load_vectors(self, dim: int | None = None) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(chunk ids ascending, float32 matrix of shape (n, dim)): see vectors_from. A store that
        was indexed but lost its vector tables is NotIndexed, saying so (not "no hits")."""
        with self._reading() as db:
            has = self._has_table(db, "chunk_vectors") and self._has_table(db, "embeddings")
            meta = self._index_meta(db) if self._has_table(db, "index_meta") else {}
            if not has and "generation" in meta:
                raise NotIndexed(f"store {self.location}: its vector tables are missing (was the store edited?); "
                                 f"run 'blockcrawl index --rebuild --store {self.location}'")
            if not has:
                return vectors_from([], [], dim)
            if not dim:
                dim = int(meta.get("dim", "0") or 0)
            rows = self._exec(db, "SELECT chunk_id, key FROM chunk_vectors ORDER BY chunk_id").fetchall()
            with self._stream(db, "SELECT key, vec FROM embeddings") as blobs:
                return vectors_from(rows, blobs, dim, self.location)

    @guard
    def keyword_ranked(self, query: str, n: int, pages: Sequence[int] | None = None) -> list[tuple[int, float]]:
        with self._reading() as db:
            return self._keyword(db, query, n, pages)

    @guard
    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        out: dict[int, StoredChunk] = {}
        with self._reading() as db:
            for i in range(0, len(ids), BATCH):
                part = [int(x) for x in ids[i:i + BATCH]]
                # the block's kind by its hash (one seek in blocks_hash; blocks of equal text are of
                # one kind): a join on (page_id, position) scans the page's blocks in SQLite, whose
                # index is on page_id alone (+0.6 ms for 200 chunks of wtq-dev at 15 blocks a page,
                # growing with the page; by hash +0.2 ms)
                q = ("SELECT c.id, c.url, c.heading_path, c.text, p.title, c.page_id, c.block_position, "
                     "c.chunk_index, (SELECT b.kind FROM blocks b WHERE b.hash = c.block_hash LIMIT 1) "
                     "FROM chunks c LEFT JOIN pages p ON p.id = c.page_id "
                     f"WHERE c.id IN ({','.join('?' * len(part))})")
                for cid, url, hp, text, title, page_id, pos, idx, kind in self._exec(db, q, part):
                    out[int(cid)] = StoredChunk(int(cid), str(url), tuple(json.loads(hp)), str(text), title or "",
                                                int(page_id), int(pos), int(idx), kind or "")
        return out

    @guard
    def pages_matching(self, site: str | None = None, url_prefix: str | None = None, kind: str | None = None,
                       lang: str | None = None, since: str | None = None) -> list[int]:
        """Ids (ascending) of the pages whose URL is on host `site` or one of its subdomains (a port
        in `site` must match too) and starts with `url_prefix`; with kind, lang, since, only pages
        whose stored info (schema 5) says so: kind equal ("article"), language equal or a subtag of
        it (lang "en" takes "en" and "en-gb"), published on or after since (ISO 8601 strings compare
        as dates do; a page without a date is left out). The host comes from a per-store table
        host[:port] -> page ids, built once and again only when pages were added or removed: cutting
        the host out of every URL in SQL took 15-40 ms a query for 5,000 pages (load 8), the table's
        look-up well under 1 ms. A store from before schema 5 has no page info: no page matches."""
        ids: set[int] | None = None
        if site is not None:
            ids = set()
            with_port = ":" in site.lstrip("[").split("]")[-1]
            for hp, pages in self._page_hosts().items():
                host = hp if with_port else strip_port(hp)
                if host == site or host.endswith("." + site):
                    ids.update(pages)
        where: list[str] = []
        args: list[object] = []
        if url_prefix is not None:  # a range on the pages.url index in SQLite
            sql, more = self._prefix("url", url_prefix)
            where.append(sql)
            args += more
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        if lang is not None:
            language = f"lower({self._json_text('meta', 'language')})"
            sql, more = self._prefix(language, lang.lower() + "-")
            where.append(f"({language} = ? OR ({sql}))")
            args += [lang.lower(), *more]
        if since is not None:
            published = self._json_text("meta", "published") + self.BYTE_ORDER
            where.append(f"{published} >= ? AND {published} <> ''")
            args.append(since)
        with self._reading() as db:
            if where:
                if any(x is not None for x in (kind, lang, since)) and "kind" not in self._columns(db, "pages"):
                    return []
                found = {int(r[0]) for r in self._exec(db, f"SELECT id FROM pages WHERE {' AND '.join(where)}", args)}
                ids = found if ids is None else ids & found
            if ids is None:
                return [int(r[0]) for r in self._exec(db, "SELECT id FROM pages ORDER BY id")]
        return sorted(ids)

    def _page_hosts(self) -> dict[str, list[int]]:
        """host[:port] (lower case, no user info) -> ids of its pages, kept per store. A page's URL never
        changes (save_page updates a page in place by URL), so the table is valid while the store
        (_file_id), the pages' count and highest id are."""
        with self._reading() as db:
            key = (*self._file_id(), *self._exec(db, "SELECT count(*), max(id) FROM pages").fetchone())
            with _hosts_lock:
                cached = _hosts.get(self.cache_key)
            if cached is not None and cached[0] == key:
                return cached[1]
            table: dict[str, list[int]] = {}
            for pid, url in self._exec(db, "SELECT id, url FROM pages"):
                table.setdefault(hostport(str(url)), []).append(int(pid))
        with _hosts_lock:
            _hosts[self.cache_key] = (key, table)
        return table

    @guard
    def chunk_pages(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(chunk ids ascending, their page ids) of every chunk: lets search restrict the vector
        matrix to some pages without a query per search (~40 ms at 100k chunks, once per index
        generation)."""
        import numpy as np

        with self._reading() as db:
            rows = self._exec(db, "SELECT id, page_id FROM chunks ORDER BY id").fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0].copy(), arr[:, 1].copy()

    @guard
    def has_blocks(self) -> bool:
        with self._reading() as db:
            return self._exec(db, "SELECT 1 FROM blocks LIMIT 1").fetchone() is not None

    @guard
    def block_texts(self, keys: Sequence[tuple[int, int]]) -> dict[tuple[int, int], str]:
        """Text of the blocks at (page id, position), those that exist: one query per page."""
        by_page: dict[int, list[int]] = {}
        for page_id, pos in dict.fromkeys(keys):
            by_page.setdefault(int(page_id), []).append(int(pos))
        out: dict[tuple[int, int], str] = {}
        with self._reading() as db:
            for page_id, positions in by_page.items():
                for i in range(0, len(positions), BATCH):
                    part = positions[i:i + BATCH]
                    for pos, text in self._exec(db, "SELECT position, text FROM blocks WHERE page_id = ? AND "
                                                    f"position IN ({','.join('?' * len(part))})", [page_id, *part]):
                        out[page_id, int(pos)] = str(text)
        return out

    @guard
    def page_by_url(self, url: str) -> tuple[str, str, str] | None:
        """(url, title, text) of the page stored under url, or whose final URL it is; the text is
        its Markdown, else its main text, else its chunks in reading order. None: no such page."""
        with self._reading() as db:
            cols = self._columns(db, "pages")
            md = "markdown" if "markdown" in cols else "NULL"
            plain = "text" if "text" in cols else "NULL"
            row = None
            for col in ("url", "final_url"):
                row = self._exec(db, f"SELECT id, url, title, {md}, {plain} FROM pages WHERE {col} = ? LIMIT 1",
                                 (url,)).fetchone()
                if row is not None:
                    break
        if row is None:
            return None
        pid, found, title, markdown, text = row
        body = markdown or text or "\n\n".join(t for _, t in self.page_chunks(int(pid)))
        return str(found), str(title or ""), str(body)

    def sites(self) -> dict[str, int]:
        """host[:port] -> number of stored pages."""
        return {host: len(ids) for host, ids in self._page_hosts().items()}

    def page_chunks(self, page_id: int) -> list[tuple[int, str]]:
        """(chunk id, text) of a page's chunks in reading order (block, then chunk within it)."""
        with self._reading() as db:
            return [(int(i), str(t)) for i, t in self._exec(
                db, "SELECT id, text FROM chunks WHERE page_id = ? ORDER BY block_position, chunk_index, id", (page_id,))]

    # ------------------------------------------------------------------ RecordSource (export)
    def records(self, what: str) -> Iterator[dict[str, object]]:
        """Streamed: a million chunks never sit in memory at once."""
        if what not in _EXPORTS:
            raise StoreError(f"cannot export {what!r}: one of {', '.join(RECORD_KINDS)}")
        sql, cols = _EXPORTS[what]
        try:
            with self._reading() as db:
                if what == "pages":  # a store that may predate schema 5
                    have = self._columns(db, "pages")
                    for col in _INFO_COLUMNS:
                        if col not in have:
                            sql = sql.replace(f"p.{col},", f"{-1 if col == 'cluster' else 'NULL'},").replace(
                                f"p.{col} FROM", "NULL FROM")
                with self._stream(db, sql) as rows:
                    for row in rows:
                        rec: dict[str, object] = dict(zip(cols, row))
                        if "heading_path" in rec:
                            rec["heading_path"] = json.loads(str(rec["heading_path"]))
                        if what == "pages":  # meta as a nested object ({} when the page has no info)
                            rec["meta"] = json.loads(str(rec["meta"])) if rec["meta"] else {}
                            if rec["cluster"] is None:
                                rec["cluster"] = -1
                        if what == "frontier":
                            rec["state"] = STATE_NAMES.get(int(str(rec["state"])), rec["state"])
                        yield rec
        except Exception as e:
            err = self._fault(e)
            if err is None:
                raise
            raise err from e

    def page_markdown(self) -> Iterator[tuple[str, str, str | None, list[tuple[tuple[str, ...], str, str]]]]:
        """(url, title, markdown, blocks) of every page in crawl order, streamed. markdown is None
        for pages stored without it (before schema 2, or crawled with --no-extract); blocks
        (heading path, kind, text) are then given, for the headings-and-text fallback."""
        try:
            with self._reading() as db:
                md = "markdown" if "markdown" in self._columns(db, "pages") else "NULL"
                with self._stream(db, f"SELECT id, url, title, {md} FROM pages ORDER BY id") as rows:
                    for pid, url, title, text in rows:
                        blocks: list[tuple[tuple[str, ...], str, str]] = []
                        if text is None:
                            blocks = [(tuple(json.loads(hp)), str(kind), str(t)) for hp, kind, t in self._exec(
                                db, "SELECT heading_path, kind, text FROM blocks WHERE page_id=? ORDER BY position",
                                (pid,))]
                        yield str(url), str(title or ""), None if text is None else str(text), blocks
        except Exception as e:
            err = self._fault(e)
            if err is None:
                raise
            raise err from e

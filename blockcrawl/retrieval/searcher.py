"""Search a store (search): the vector and keyword ranked lists for the query, fused and boosted
(ranking.py), capped per page, then the page of results asked for with snippets and context.

The filters by host, URL prefix and page info apply before the top n is cut: a page-id mask over
the vector rows, a JOIN in the keyword SQL. The lists are read by tiers of depth (TIERS): the
smallest tier with n >= 3 * (offset + k), and the next one when per_page or a vanished chunk left
the list short."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import NotIndexed
from ..index.embed import Embedder, default_embedder
from ..store.protocols import SearchStore, StoredChunk
from .context import add_context
from .hit import Hit
from .options import PER_PAGE, SearchError, SearchOptions, validate
from .ranking import RANKING, Ranked, Ranking, boost, cap, fuse
from .snippets import snippet
from .terms import query_terms
from .vector_cache import _filter_rows, _Loaded, _vector_ranked, _vectors

# candidates per ranked list, by tier. Every page of results within one tier (offset + k <= 33:
# the first three pages of 10) comes from the same candidate lists, so pages neither repeat nor
# skip hits; a deeper page reads deeper lists, where RRF may order a few near-ties differently.
TIERS = (100, 300, 1000)


class _VectorSide:
    """The vector ranked lists of one query: the model checked, the vectors loaded (and the rows
    of the filtered pages found) and the query embedded once, on the first tier read."""

    def __init__(self, store: SearchStore, meta: dict[str, str], embedder: Embedder | None, query: str,
                 pages: list[int] | None) -> None:
        self.store, self.meta, self.embedder, self.query, self.pages = store, meta, embedder, query, pages
        self.loaded: _Loaded | None = None
        self.rows: np.ndarray | None = None
        self.qv: np.ndarray | None = None

    def ranked(self, n: int) -> list[tuple[int, float]]:
        if self.loaded is None:
            emb = self.embedder or default_embedder()
            if emb.name != self.meta.get("model"):
                raise NotIndexed(f"store {self.store.location} was indexed with {self.meta.get('model')}, "
                                 f"not {emb.name}: re-run index")
            self.loaded = _vectors(self.store, self.meta)
            if self.pages is not None:
                self.rows = _filter_rows(self.store, self.loaded, self.pages)
            self.qv = emb.embed([self.query])[0]
        assert self.qv is not None
        return _vector_ranked(self.loaded, self.qv, n, self.rows)


def _lists(store: SearchStore, mode: str, query: str, n: int, pages: list[int] | None,
           vectors: _VectorSide) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(vector list, keyword list) of the mode, n candidates each at most. In hybrid the keyword
    search runs on a worker thread, on its own connection, while the model embeds the query (both
    release the GIL); it is waited for before returning, also on an error, so that no thread reads
    a store the caller may close. One executor per call: a pool shared across calls would queue
    one search's keyword side behind another's under serve."""
    if mode == "keyword":
        return [], store.keyword_ranked(query, n, pages)
    if mode == "vector":
        return vectors.ranked(n), []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="blockcrawl-keyword") as pool:
        keyword = pool.submit(store.keyword_ranked, query, n, pages)
        vec = vectors.ranked(n)
    return vec, keyword.result()


def _resolve(store: SearchStore, ranked: Ranked, need: int, per_page: int | None,
             pages: set[int] | None, query: str = "", mode: str = "hybrid",
             ranking: Ranking = RANKING) -> list[tuple[Hit, StoredChunk]]:
    """Hits for the best `need` ranked chunk ids still in the store (a re-crawl may have dropped
    some), at most per_page of them from one URL (see Ranking), only on pages (when filtered: the
    vector cache's page ids date from the index run, the store's are checked here). Reads the
    candidates' rows in one query (title and headings boost them; ~1 ms for 200)."""
    rows = store.chunks_by_id([r[0] for r in ranked])
    if pages is not None:
        rows = {cid: r for cid, r in rows.items() if r.page_id in pages}
    boosted = boost(ranked, mode, query, rows, ranking)
    # the clear-top-page exemption belongs to the default limit: a per_page asked for is a hard cap
    clear = ranking.clear_margin if per_page == ranking.per_page else 0.0
    return [(Hit(cid, round(score, 6), rows[cid].url, list(rows[cid].heading_path), rows[cid].text,
                 rows[cid].title, vr, kr), rows[cid])
            for cid, score, vr, kr in cap(boosted, rows, need, per_page, clear)]


def search(store: SearchStore | str | os.PathLike[str], query: str, k: int = 10, mode: str = "hybrid",
           embedder: Embedder | None = None, *, site: str | None = None, url_prefix: str | None = None,
           offset: int = 0, per_page: int | None = PER_PAGE, context: str | int | None = None,
           kind: str | None = None, lang: str | None = None, since: str | None = None,
           context_tokens: int | None = None, options: SearchOptions | None = None) -> list[Hit]:
    """The k best chunks of the store for query, after the first `offset`, at most per_page from one URL,
    only on host `site` / under `url_prefix` / pages of that kind, lang, published since (see
    SearchOptions; `options` replaces k, mode and the keywords). A filter that matches nothing gives
    []; an offset past the end of a non-empty result list is a SearchError. Raises SearchError /
    StoreMissing / NotIndexed / StoreError. The caller opens the store (`open_store(path_or_url,
    readonly=True)`, as the CLI does) and may keep it open for many searches; a path is opened
    read-only for the one call."""
    opts = (options or SearchOptions(k, mode, site, url_prefix, offset, per_page, context, kind, lang,
                                     since, context_tokens)).checked()
    query = validate(query, opts.k, opts.mode)
    if isinstance(store, (str, os.PathLike)):
        from ..store import open_store

        with open_store(store, readonly=True) as st:
            return search(st, query, embedder=embedder, options=opts)
    meta = store.index_meta()
    if "generation" not in meta:
        raise NotIndexed(f"store {store.location} was never indexed (run 'blockcrawl index --store {store.location}')")
    if opts.context == "block" and not store.has_blocks():
        raise SearchError(f"context 'block': store {store.location} has no blocks (pages stored as plain "
                          "text); ask for neighbouring chunks instead, e.g. context 1")
    pages: list[int] | None = None
    filters = opts.page_filters()
    if opts.site is not None or opts.url_prefix is not None or filters:
        pages = store.pages_matching(opts.site, opts.url_prefix, **filters)
        if not pages:
            _page_of([], opts)  # an offset is an error: there is no page of results beyond
            return []  # nothing on those pages: no hits, no error
    need = opts.offset + opts.k
    page_set = set(pages) if pages is not None else None
    vectors = _VectorSide(store, meta, embedder, query, pages)
    found: list[tuple[Hit, StoredChunk]] = []
    for n in (t for t in TIERS if t >= 3 * need or t == TIERS[-1]):
        vec, kw = _lists(store, opts.mode, query, n, pages, vectors)
        found = _resolve(store, fuse(opts.mode, vec, kw), need, opts.per_page, page_set, query, opts.mode)
        if len(found) >= need or (len(vec) < n and len(kw) < n):  # enough, or every list exhausted
            break
    hits = _page_of(found, opts)
    _annotate(store, hits, query, opts)
    return [h for h, _ in hits]


def _page_of(found: list[tuple[Hit, StoredChunk]], opts: SearchOptions) -> list[tuple[Hit, StoredChunk]]:
    if opts.offset and opts.offset >= len(found):
        raise SearchError(f"offset {opts.offset} is past the end of the results ({len(found)} hits)")
    page = found[opts.offset:opts.offset + opts.k]
    for i, (h, _) in enumerate(page):
        h.rank = opts.offset + i + 1
    return page


def _annotate(store: SearchStore, hits: list[tuple[Hit, StoredChunk]], query: str, opts: SearchOptions) -> None:
    """Snippets for every hit; the context asked for."""
    terms = query_terms(query)
    for h, _ in hits:
        h.snippet, h.highlights = snippet(h.text, terms)
    add_context(store, hits, opts.context, opts.context_tokens)

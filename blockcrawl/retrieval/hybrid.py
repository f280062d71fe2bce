"""Search a store: exact (or ANN) vector search, FTS5 keyword search, and their reciprocal rank
fusion (RRF, k=60): score(chunk) = sum over the two rankings of 1 / (60 + rank)."""
from __future__ import annotations

import json
import re
import sqlite3
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..index.build import connect
from ..index.embed import Embedder, default_embedder
from ..errors import NotIndexed, QueryError
from ..index.schema import get_meta, has_table
from ..index.vectors import HalfScan, load_vectors

MODES = ("hybrid", "vector", "keyword")
RRF_K = 60
MAX_K = 100
MAX_QUERY_CHARS = 1000
_TERM = re.compile(r"\w+", re.UNICODE)
# Dropped from keyword queries (terms are OR-ed, so these would match nearly every chunk).
_STOP = frozenset("a an and are as at be by for from how in is it of on or that the this to was were what "
                  "when where which who why with about does do did".split())
COMMON_SHARE = 0.05  # of the chunks: a word in more of them is common (see _keyword_ranked)
COMMON_MIN_ROWS = 2000  # chunks: scoring this many costs ~2 ms, so a rarer word is never common
_BM25 = "SELECT rowid, bm25(chunks_fts, 1.0, 0.5) AS s FROM chunks_fts WHERE chunks_fts MATCH ?"


class SearchError(QueryError):
    """Bad query or arguments: shown to the user as one line (HTTP 400 in serve)."""


@dataclass(slots=True)
class Hit:
    chunk_id: int
    score: float
    url: str
    heading_path: list[str]
    text: str
    title: str = ""
    vector_rank: int | None = None  # 1-based rank in the vector list, None if not in it
    keyword_rank: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Loaded:
    generation: str  # cache token: index generation @ time of the index run
    model: str
    dim: int
    ids: np.ndarray
    scan: HalfScan
    ann: object | None = None


_cache: dict[str, _Loaded] = {}
_cache_lock = threading.Lock()


def _vectors(db: sqlite3.Connection, path: Path, meta: dict[str, str]) -> _Loaded:
    """The store's vectors, loaded once per process and index generation."""
    key = str(path.resolve())
    gen = meta.get("generation", "0")
    # generation and time of the index run: a store deleted and indexed anew under the same path
    # (generation 1 again) is not mistaken for the one cached
    token = f"{gen}@{meta.get('indexed_at', '')}"
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None or cached.generation != token:
            from ..index.ann import load_ann

            dim = int(meta.get("dim", 0))
            ann = load_ann(path, gen)
            if ann is None:
                ids, matrix = load_vectors(db, dim)
            else:  # the graph answers alone: no need for the matrix in RAM
                ids, matrix = np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
            cached = _Loaded(token, meta.get("model", ""), dim, ids, HalfScan(matrix), ann)
            _cache[key] = cached
        return cached


def keyword_terms(query: str) -> list[str]:
    """The query's distinct words as quoted FTS5 phrases (no FTS syntax from users), stop words
    dropped unless nothing else is left."""
    terms = [t.lower() for t in _TERM.findall(query)]
    kept = [t for t in terms if t not in _STOP] or terms
    return ['"' + t.replace('"', '""') + '"' for t in dict.fromkeys(kept)]


def keyword_query(query: str) -> str | None:
    """FTS5 MATCH expression: the query's words, each quoted, OR-ed."""
    return " OR ".join(keyword_terms(query)) or None


def validate(query: str, k: int, mode: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise SearchError("empty query")
    if len(query) > MAX_QUERY_CHARS:
        raise SearchError(f"query too long ({len(query)} characters, at most {MAX_QUERY_CHARS})")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise SearchError(f"k must be between 1 and {MAX_K}")
    if mode not in MODES:
        raise SearchError(f"mode must be one of {', '.join(MODES)}")
    return query.strip()


def _keyword_ranked(db: sqlite3.Connection, query: str, n: int, common_share: float = COMMON_SHARE,
                    common_min_rows: int = COMMON_MIN_ROWS) -> list[tuple[int, float]]:
    """The n best chunks for the OR of the query's words by bm25 (text counts twice the heading path),
    best first, as (chunk id, score) with score = -bm25 (higher is better).

    Common words (in more than common_share of the chunks and more than common_min_rows of them)
    score but do not select when the query has rarer words, as in Lucene's CommonTermsQuery: bm25 is
    a sum of independent per-word parts, so each chunk returned gets the very score of the plain OR
    query; left out are chunks whose only match is a common word (idf <= log(19) = 2.9, against 7.6
    for a word in 1 of 2000 chunks). The plain query ranks those below every chunk that scores more
    than sum(idf * (k1 + 1)) of the common words, so its top n is unchanged whenever n such chunks
    exist; else the list is shorter. Scoring them was the cost: bm25 of the 18k chunks of 100k that
    hold a word like "news" took ~20 ms a query.
    """
    terms = keyword_terms(query)
    if not terms:
        return []
    rare, common = terms, []
    if len(terms) > 1:
        total = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        cutoff = max(common_min_rows, common_share * total)
        # rows per term, as FTS5 tokenizes it (the same count bm25's idf uses); cheap for rare terms
        df = {t: db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (t,)).fetchone()[0]
              for t in terms}
        rare = [t for t in terms if 0 < df[t] <= cutoff]
        common = [t for t in terms if df[t] > cutoff]
        if not rare:  # only common words: nothing to select by, rank them all
            rare, common = common, []
        if not rare:
            return []
    either = " OR ".join(rare)
    if not common:
        rows = db.execute(f"{_BM25} ORDER BY s, rowid LIMIT ?", (either, n)).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]
    # every chunk holding a rare word, scored on the rare words; then the full score of those of
    # them that also hold a common word (an AND, which FTS5 answers by seeking, not scanning)
    scores = {int(r[0]): -float(r[1]) for r in db.execute(_BM25, (either,))}
    scores.update((int(r[0]), -float(r[1]))
                  for r in db.execute(_BM25, (f"({either}) AND ({' OR '.join(common)})",)))
    return sorted(scores.items(), key=lambda r: (-r[1], r[0]))[:n]


def _keyword_in_thread(path: Path, query: str, n: int, box: list) -> None:
    try:
        db = connect(path)
        try:
            box.append(_keyword_ranked(db, query, n))
        finally:
            db.close()
    except BaseException as e:  # handed to the caller's thread
        box.append(e)


def _vector_ranked(loaded: _Loaded, query_vec: np.ndarray, n: int) -> list[tuple[int, float]]:
    if loaded.ann is not None:
        ids, scores = loaded.ann.search(query_vec, n)
        return list(zip(map(int, ids), map(float, scores)))
    pos, scores = loaded.scan.top(query_vec, n)
    return list(zip(map(int, loaded.ids[pos]), map(float, scores)))


def _resolve(db: sqlite3.Connection, ranked: list[tuple[int, float, int | None, int | None]], k: int) -> list[Hit]:
    """Hits for the best k ranked chunk ids still in the store (a re-crawl may have dropped some)."""
    ids = [r[0] for r in ranked]
    rows: dict[int, tuple] = {}
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        q = ("SELECT c.id, c.url, c.heading_path, c.text, p.title FROM chunks c LEFT JOIN pages p ON p.id = c.page_id "
             f"WHERE c.id IN ({','.join('?' * len(part))})")
        rows.update({r[0]: r for r in db.execute(q, part)})
    hits = []
    for cid, score, vr, kr in ranked:
        r = rows.get(cid)
        if r is None:
            continue
        hits.append(Hit(cid, round(score, 6), r[1], json.loads(r[2]), r[3], r[4] or "", vr, kr))
        if len(hits) == k:
            break
    return hits


def search(store_path: str | Path, query: str, k: int = 10, mode: str = "hybrid",
           embedder: Embedder | None = None) -> list[Hit]:
    """The k best chunks of the store for query. Raises SearchError / StoreMissing / NotIndexed."""
    query = validate(query, k, mode)
    path = Path(store_path)
    db = connect(path)
    try:
        meta = get_meta(db)
        if "generation" not in meta or not has_table(db, "chunks_fts"):
            raise NotIndexed(f"store {path} was never indexed (run 'blockcrawl index --store {path}')")
        n = max(100, 3 * k)  # candidates per list: RRF needs depth, and some ids may be gone
        vec: list[tuple[int, float]] = []
        kw: list[tuple[int, float]] = []
        fts_thread = None
        if mode == "hybrid":
            # FTS on its own connection while the model embeds the query: both release the GIL
            box: list = []
            fts_thread = threading.Thread(target=_keyword_in_thread, args=(path, query, n, box), daemon=True)
            fts_thread.start()
        if mode in ("hybrid", "vector"):
            emb = embedder or default_embedder()
            if emb.name != meta.get("model"):
                raise NotIndexed(f"store {path} was indexed with {meta.get('model')}, not {emb.name}: re-run index")
            loaded = _vectors(db, path, meta)
            qv = emb.embed([query])[0]
            vec = _vector_ranked(loaded, qv, n)
        if fts_thread is not None:
            fts_thread.join()
            if isinstance(box[0], BaseException):
                raise box[0]
            kw = box[0]
        elif mode == "keyword":
            kw = _keyword_ranked(db, query, n)
        if mode == "vector":
            ranked = [(cid, s, i + 1, None) for i, (cid, s) in enumerate(vec)]
        elif mode == "keyword":
            ranked = [(cid, s, None, i + 1) for i, (cid, s) in enumerate(kw)]
        else:
            fused: dict[int, list] = {}
            for i, (cid, _) in enumerate(vec):
                fused.setdefault(cid, [0.0, None, None])
                fused[cid][0] += 1.0 / (RRF_K + i + 1)
                fused[cid][1] = i + 1
            for i, (cid, _) in enumerate(kw):
                fused.setdefault(cid, [0.0, None, None])
                fused[cid][0] += 1.0 / (RRF_K + i + 1)
                fused[cid][2] = i + 1
            ranked = sorted(((cid, s, vr, kr) for cid, (s, vr, kr) in fused.items()),
                            key=lambda r: (-r[1], r[0]))
        return _resolve(db, ranked, k)
    finally:
        db.close()

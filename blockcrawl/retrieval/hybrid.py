"""Search a store: exact (or ANN) vector search, FTS5 keyword search, and their reciprocal rank
fusion (RRF, k=20): score(chunk) = sum over the two rankings of weight / (20 + rank) (the vector
list's weight VECTOR_WEIGHT, the keyword list's 1), plus a boost for
the share of the query's words in the chunk's page title and headings (Ranking).

On top of the ranking, what makes a result list usable (SearchOptions): filters by host, URL prefix
and page info (kind, language, published since) applied before the top n is cut (a page-id mask over
the vector rows, a JOIN in the keyword SQL), at most per_page hits from one URL, pagination by
offset, a snippet with the query's words marked, and on request the hit's whole block or its
neighbouring chunks as context for an LLM."""
from __future__ import annotations

import math
import os
import re
import threading
import unicodedata
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np

from ..errors import NotIndexed, QueryError
from ..index.embed import Embedder, default_embedder
from ..index.vectors import HALF_MIN_ROWS, HalfScan
from ..store.protocols import SearchStore, StoredChunk

MODES = ("hybrid", "vector", "keyword")
# Fusion: chosen by the minimum over several kinds of site at once (docs, Wikipedia tables, a shop:
# bench/qa.py --grid), never one; the vector list weighted 3x the keyword list, at the middle of the
# flat top of that minimum (docs/decisions/0301-fusion-over-sets.md).
RRF_K = 20
VECTOR_WEIGHT = 3.0
MAX_K = 100
MAX_QUERY_CHARS = 1000
MAX_DEPTH = 300  # offset + k: hits reachable by paging (3x that many candidates per list at most)
# candidates per ranked list, by tier: the smallest tier with n >= 3 * (offset + k) is read, and the
# next one when per_page or a vanished chunk left the list short. Every page of results within one
# tier (offset + k <= 33: the first three pages of 10) comes from the same candidate lists, so pages
# neither repeat nor skip hits; a deeper page reads deeper lists, where RRF may order a few near-ties
# differently.
TIERS = (100, 300, 1000)
PER_PAGE = 3  # default: at most this many hits from one URL (0 or None: no limit)
MAX_PER_PAGE = 100
MAX_CONTEXT_CHUNKS = 5
SNIPPET_CHARS = 240
_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[\w]([\w.-]*[\w])?)(:[0-9]{1,5})?$")
_URL_START = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/?#]*)(.*)$", re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)


class SearchError(QueryError):
    """Bad query or arguments: shown to the user as one line (HTTP 400 in serve)."""


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """Everything but the query: one record that the CLI, serve and Python callers fill alike.

    k: hits to return (1-100). mode: hybrid | vector | keyword. site: only URLs on this host or its
    subdomains ("example.com", "docs.example.com:8080"; a port must match). url_prefix: only URLs
    starting with this ("https://example.com/docs/"; scheme and host compared lower-case). offset:
    skip this many hits (offset + k <= 300). per_page: at most this many hits from one URL (default
    3; 0 or None: no limit). context: None, "block" (the hit's whole block) or 1-5 (that many
    neighbouring chunks of the page either side), returned in Hit.context. kind, lang, since: only
    pages whose stored page info (crawl, schema 5) has that kind (records.PAGE_KINDS: a page type),
    that language or a subtag of it ("en" takes "en-gb"), a published date on or after since (an
    ISO 8601 date, "2024-03-01"; pages without a date are left out). context_tokens: bound the
    context to this many tokens (16-8000), grown from the hit outward (retrieval/context.py); alone,
    the hit's block first, then the rest of its page."""

    k: int = 10
    mode: str = "hybrid"
    site: str | None = None
    url_prefix: str | None = None
    offset: int = 0
    per_page: int | None = PER_PAGE
    context: str | int | None = None
    kind: str | None = None
    lang: str | None = None
    since: str | None = None
    context_tokens: int | None = None

    def checked(self) -> SearchOptions:
        """These options validated and normalised (host lower-case, context "2" -> 2); SearchError
        (one line) for a value that cannot be meant."""
        k, offset, per_page = self.k, self.offset, self.per_page
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise SearchError(f"k must be between 1 and {MAX_K}")
        if self.mode not in MODES:
            raise SearchError(f"mode must be one of {', '.join(MODES)}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0 or offset + k > MAX_DEPTH:
            raise SearchError(f"offset must be between 0 and {MAX_DEPTH - k} (offset + k at most {MAX_DEPTH})")
        if per_page is not None and (isinstance(per_page, bool) or not isinstance(per_page, int)
                                     or not 0 <= per_page <= MAX_PER_PAGE):
            raise SearchError(f"per_page must be between 0 (no limit) and {MAX_PER_PAGE}")
        return SearchOptions(k, self.mode, _check_site(self.site), _check_prefix(self.url_prefix), offset,
                             per_page or None, _check_context(self.context), _check_kind(self.kind),
                             _check_lang(self.lang), _check_since(self.since),
                             _check_context_tokens(self.context_tokens))

    def page_filters(self) -> dict[str, str]:
        """The page-info filters set (for the store's pages_matching), none when unset: a store
        without them still answers a plain site / url_prefix filter."""
        return {n: v for n, v in (("kind", self.kind), ("lang", self.lang), ("since", self.since)) if v is not None}


def _check_site(site: str | None) -> str | None:
    if site is None:
        return None
    host = site.strip().lower().rstrip(".")
    if "/" in host or "@" in host:
        raise SearchError(f"site must be a host name such as example.com, not {site[:100]!r} "
                          "(for a URL use url_prefix)")
    if host and not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")  # URLs are stored with punycode hosts
        except UnicodeError:
            raise SearchError(f"site {site[:100]!r} is not a valid host name") from None
    if not _HOST.match(host):
        raise SearchError(f"site {site[:100]!r} is not a valid host name (such as example.com)")
    return host


def _check_prefix(prefix: str | None) -> str | None:
    if prefix is None:
        return None
    m = _URL_START.match(prefix.strip())
    if m is None or not m.group(2):
        raise SearchError(f"url_prefix must start with a scheme and host, such as https://example.com/docs/, "
                          f"not {prefix[:100]!r}")
    return m.group(1).lower() + m.group(2).lower() + m.group(3)


_LANG = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{1,8})*$")


def _check_kind(kind: str | None) -> str | None:
    from ..records import PAGE_KINDS

    if kind is None or kind == "":
        return None
    k = kind.strip().lower()
    if k not in PAGE_KINDS:
        raise SearchError(f"kind must be one of {', '.join(PAGE_KINDS)}, not {kind[:100]!r}")
    return k


def _check_lang(lang: str | None) -> str | None:
    if lang is None or lang == "":
        return None
    tag = lang.strip().lower().replace("_", "-")
    if not _LANG.match(tag):
        raise SearchError(f"lang must be a language tag such as en or pt-br, not {lang[:100]!r}")
    return tag


def _check_since(since: str | None) -> str | None:
    """An ISO 8601 date or date-time, kept as given (stored dates are ISO strings: they compare as
    text in time order when written alike)."""
    if since is None or since == "":
        return None
    from datetime import date, datetime

    s = since.strip()
    try:
        if len(s) == 10:
            date.fromisoformat(s)
        else:
            datetime.fromisoformat(s)
    except ValueError:
        raise SearchError(f"since must be an ISO 8601 date such as 2024-03-01, not {since[:100]!r}") from None
    return s


def _check_context(context: str | int | None) -> str | int | None:
    if context is None or context == "":
        return None
    if context == "block":
        return "block"
    n = context
    if isinstance(context, str) and context.isdigit():
        n = int(context)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_CONTEXT_CHUNKS:
        raise SearchError(f"context must be 'block' or a number of neighbouring chunks, 1-{MAX_CONTEXT_CHUNKS}")
    return n


def _check_context_tokens(n: int | str | None) -> int | None:
    from .context import MAX_CONTEXT_TOKENS

    if n is None or n == "":
        return None
    if isinstance(n, str) and n.isdigit():
        n = int(n)
    if isinstance(n, bool) or not isinstance(n, int) or not 16 <= n <= MAX_CONTEXT_TOKENS:
        raise SearchError(f"context_tokens must be a number of tokens, 16-{MAX_CONTEXT_TOKENS}")
    return n


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
    rank: int = 0  # 1-based position in the whole result list (offset + position on this page)
    snippet: str = ""  # up to ~240 characters of text around the query's words
    # [start, end) of each query word in snippet, in characters (code points: Python indices; in
    # JavaScript index Array.from(snippet), not the UTF-16 string)
    highlights: list[tuple[int, int]] = field(default_factory=list)
    context: str | None = None  # with SearchOptions.context: the block, or the neighbouring chunks

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["highlights"] = [list(h) for h in self.highlights]
        return d


@dataclass
class _Loaded:
    generation: str  # cache token: index generation @ time of the index run
    model: str
    dim: int
    ids: np.ndarray
    scan: HalfScan
    ann: Any | None = None  # index.ann.HnswIndex
    page_of: np.ndarray | None = None  # page id of each row of ids (-1: chunk gone), loaded on first filter


_cache: dict[str, _Loaded] = {}  # by store.cache_key (the resolved path of an SQLite store)
_cache_lock = threading.Lock()


def _matrix(store: SearchStore, meta: dict[str, str], dim: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """(chunk ids, matrix, mapped): the flat file `index` wrote (index.vecfile), memory-mapped, when
    it matches this index run; else the vectors read from the store."""
    if store.ann_base is not None:
        from ..index import vecfile

        got = vecfile.load(store.ann_base, vecfile.token_of(meta), dim)
        if got is not None:
            return got[0], got[1], True
    ids, matrix = store.load_vectors(dim)
    return ids, matrix, False


def _scan(matrix: np.ndarray, mapped: bool) -> HalfScan:
    """The float16 scan needs torch and a float16 copy of the matrix: worth it only in a process
    that has torch loaded already (precision fp32) and holds the matrix in RAM. A memory-mapped
    matrix is scanned in float32 where it lies (one BLAS product, ~10 ms at 100k rows): no copy."""
    import sys

    use_half = not mapped and "torch" in sys.modules
    return HalfScan(matrix, min_rows=HALF_MIN_ROWS if use_half else len(matrix) + 1)


def _vectors(store: SearchStore, meta: dict[str, str]) -> _Loaded:
    """The store's vectors, loaded once per process and index generation."""
    key = store.cache_key
    gen = meta.get("generation", "0")
    # generation and time of the index run: a store deleted and indexed anew under the same path
    # (generation 1 again) is not mistaken for the one cached
    token = f"{gen}@{meta.get('indexed_at', '')}"
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None or cached.generation != token:
            from ..index.ann import load_ann

            dim = int(meta.get("dim", 0))
            ann = load_ann(store.ann_base, gen) if store.ann_base is not None else None
            if ann is None:
                ids, matrix, mapped = _matrix(store, meta, dim)
            else:  # the graph answers alone: no need for the matrix in RAM
                ids, matrix, mapped = np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32), False
            cached = _Loaded(token, meta.get("model", ""), dim, ids, _scan(matrix, mapped), ann)
            _cache[key] = cached
        return cached


def _filter_rows(store: SearchStore, loaded: _Loaded, pages: list[int]) -> np.ndarray:
    """Row positions (ascending) of the vectors whose chunk is on one of pages. The rows' page ids
    are read once per index generation; a query then costs one look-up per row.
    With an HNSW graph the matrix is loaded too, the first time a filter is used: the graph cannot
    be restricted to some rows without a Python callback per visited node."""
    with _cache_lock:
        if loaded.ann is not None and len(loaded.ids) == 0:
            meta = store.index_meta()
            ids, matrix, mapped = _matrix(store, meta, loaded.dim)
            loaded.ids, loaded.scan = ids, _scan(matrix, mapped)
        if loaded.page_of is None:
            cids, pids = store.chunk_pages()
            page_of = np.full(len(loaded.ids), -1, dtype=np.int64)
            if len(cids):
                at = np.minimum(np.searchsorted(cids, loaded.ids), len(cids) - 1)
                found = cids[at] == loaded.ids
                page_of[found] = pids[at[found]]
            loaded.page_of = page_of
        page_of = loaded.page_of
    # a boolean table indexed by page id (pages ascending: the last is the largest): one gather over
    # the rows, ~0.3 ms at 100k, where np.isin sorts them (~8 ms)
    allowed = np.zeros(max(pages[-1], int(page_of.max(initial=0))) + 2, dtype=bool)
    allowed[np.asarray(pages, dtype=np.int64)] = True  # page_of -1 (chunk gone) reads the last, False
    return np.flatnonzero(allowed[page_of])


def validate(query: str, k: int, mode: str) -> str:
    """The query stripped, or SearchError: every search path (library, CLI, its forwarding to a
    running serve, the HTTP API, MCP) passes here. A lone surrogate (a command-line byte that is not
    UTF-8, read by Python as U+DC80-U+DCFF; a JSON "\\udce9") is no text: the tokenizer raised a
    bare TypeError on it. U+FFFD is refused too: it is what the readers put for such bytes."""
    if not isinstance(query, str) or not query.strip():
        raise SearchError("empty query")
    if len(query) > MAX_QUERY_CHARS:
        raise SearchError(f"query too long ({len(query)} characters, at most {MAX_QUERY_CHARS})")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise SearchError("the query is not valid text (a byte that is not UTF-8, or a lone surrogate)") from None
    if "\ufffd" in query:  # what a reader put for such bytes (the MCP SDK, our MCP transport)
        raise SearchError("the query is not valid text (U+FFFD stands for bytes that were not UTF-8)")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise SearchError(f"k must be between 1 and {MAX_K}")
    if mode not in MODES:
        raise SearchError(f"mode must be one of {', '.join(MODES)}")
    return query.strip()


def _keyword_in_thread(store: SearchStore, query: str, n: int, pages: list[int] | None, box: list[object]) -> None:
    try:
        box.append(store.keyword_ranked(query, n, pages))
    except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, raised there
        box.append(e)


def _vector_ranked(loaded: _Loaded, query_vec: np.ndarray, n: int,
                   rows: np.ndarray | None = None) -> list[tuple[int, float]]:
    if loaded.ann is not None and rows is None:
        ids, scores = loaded.ann.search(query_vec, n)
        return list(zip(map(int, ids), map(float, scores)))
    pos, scores = loaded.scan.top(query_vec, n, rows)
    return list(zip(map(int, loaded.ids[pos]), map(float, scores)))


Ranked = list[tuple[int, float, "int | None", "int | None"]]


@dataclass(frozen=True, slots=True)
class Ranking:
    """How candidates are ordered and capped (tuned on wtq-dev, see docs/search.md, "Ranking and
    chunk shape").

    rrf_k, vector_weight, keyword_weight: hybrid's fusion, score = sum over the lists of
    weight / (rrf_k + rank). title_weight: a chunk whose page title or headings hold a share s of
    the query's words (stop words dropped) gains title_weight * s first places' worth of score
    (1 / (rrf_k + 1) in hybrid; TITLE_COSINE of cosine in vector mode), so "Who published <Title>?"
    finds the page titled so even where those words are rare in the text. text_weight: in vector
    mode, the same for the query's words in the chunk's text (TITLE_COSINE a unit, at most 0.05
    cosine at 2.0): a tie-breaker among the rows of one table, whose embeddings are near ties
    (wtq-dev vector R@5 0.614 -> 0.628 on the 100 tuning pages, 0.655 -> 0.689 on the 200 others;
    larger weights scored higher still, up to 0.677 / 0.723 at 8.0, but make vector mode a
    keyword search: left at 2.0). per_page: at most this
    many hits from one URL (0: no limit), except that with the default limit the best page is not
    capped when its best score stands clear of every other page's by clear_margin (relative): a
    question that one page answers gets that page's rows, a question many pages answer still gets
    many pages. Any other per_page a caller asks for is a hard cap (3 cannot be told from the
    default, so it keeps the rule).
    word_weight, idf_weight, block_weight: in hybrid mode, a chunk's own words (the query's words
    beyond its page title: the title's words are the same in every chunk of a page, so they pick
    the page, not the chunk) count with the same unit: word_weight x the share of them its text
    holds, idf_weight x the same with each word weighted by log((n + 1) / df) over the n
    candidates (a word few candidates hold tells them apart), and block_weight x the share held by
    any candidate chunk of its block (a table's rows vouch for each other: the header names a
    column, a sibling row names the thing). The fusion orders the page's chunks by whole-text
    similarity, where the prose about the title wins; these put the table chunk holding "octane"
    first for "what role did Mischa Barton play in Octane?". wtq-dev, all 300 pages, five folds
    by page (docs/search.md): hybrid R@5 held out 0.688 -> 0.819, R@1 0.277 -> 0.496. Plain
    200-token chunks gain from the first two too (0.548 -> 0.672); the block term is what they
    cannot share (a plain chunk's block is its whole page: the term is the same for all its
    chunks), 0.672 -> 0.669 there, 0.816 -> 0.821 for the crawl's chunks.
    name_gate: the three terms go to the page the question names: each page's are multiplied by
    (its title's share of the query's words / the best such share among the candidates) **
    name_gate (1 for all when no candidate's title holds a query word). Without it, "Who
    published The Last Observatory?" lifted every other book's "customers also bought" box and
    every category card holding "Last Observatory" (words beyond THEIR titles) over the book's own
    record, whose row says "Publisher": the fixture shop of tests/test_records.py found 2 of 50
    books in the top 5 (50 of 50 without the boost; 49 at name_gate 1, 50 at 2).
    header_weight: in hybrid mode, a table chunk's label line (its first line: the table's
    heading, caption and column names, repeated on every chunk of the table) counts its share of
    the chunk's own words with the same unit and gate: a question naming a column ("which team has
    the most championships?") goes to the table whose header says "Championships", not to the
    prose that mentions championships. Only chunks whose block is a table (StoredChunk.kind):
    plain chunks and pages stored without blocks gain nothing. wtq-dev, all 300 pages, five folds
    by page (docs/search.md, "Table label lines"): hybrid R@5 held out 0.837 -> 0.872, R@1 0.507
    -> 0.553; R@5 flat from 6 to 16 (0.871-0.873), 6 kept (the smallest of the flat top).
    vector_header_weight: the same label-line term in vector mode (TITLE_COSINE a unit: at most
    0.2 cosine at 8), gated alike: a table's rows of names and numbers embed far from a question,
    the prose about the page near it. wtq-dev, 300 pages, five folds by page: vector R@5 held out
    0.656 -> 0.759 (grid 0-8 x text_weight 0/2/4; 8 chosen in every fold), R@1 0.235 -> 0.331.
    Larger weights scored higher still (0.808 at 24, 0.6 cosine: the label line then outranks any
    similarity); 8 kept so that the embedding still orders what the words tie."""

    rrf_k: int = RRF_K
    vector_weight: float = VECTOR_WEIGHT
    keyword_weight: float = 1.0
    title_weight: float = 2.0
    text_weight: float = 2.0
    per_page: int = PER_PAGE
    clear_margin: float = 0.1
    word_weight: float = 1.0
    idf_weight: float = 2.0
    block_weight: float = 1.0
    name_gate: float = 2.0
    header_weight: float = 6.0
    vector_header_weight: float = 8.0


RANKING = Ranking()
# vector mode: a full title match is worth title_weight times this much cosine (0.05 at the default:
# more cost wtq-dev R@1, as every chunk of a page gains the same)
TITLE_COSINE = 0.025


def _fuse(mode: str, vec: list[tuple[int, float]], kw: list[tuple[int, float]],
          ranking: Ranking = RANKING) -> Ranked:
    if mode == "vector":
        return [(cid, s, i + 1, None) for i, (cid, s) in enumerate(vec)]
    if mode == "keyword":
        return [(cid, s, None, i + 1) for i, (cid, s) in enumerate(kw)]
    score: dict[int, float] = {}
    vrank: dict[int, int] = {}
    krank: dict[int, int] = {}
    k, wv, wk = ranking.rrf_k, ranking.vector_weight, ranking.keyword_weight
    for i, (cid, _) in enumerate(vec):
        score[cid] = score.get(cid, 0.0) + wv / (k + i + 1)
        vrank[cid] = i + 1
    for i, (cid, _) in enumerate(kw):
        score[cid] = score.get(cid, 0.0) + wk / (k + i + 1)
        krank[cid] = i + 1
    return sorted(((cid, s, vrank.get(cid), krank.get(cid)) for cid, s in score.items()),
                  key=lambda r: (-r[1], r[0]))


def _title_share(terms: frozenset[str], title: str, heading_path: Sequence[str], memo: dict[str, float]) -> float:
    """The share of the query's words that the page title or the headings hold."""
    key = title + "\x00" + "\x00".join(heading_path)
    got = memo.get(key)
    if got is None:
        words = {_fold(w) for w in _WORD.findall(title + " " + " ".join(heading_path))}
        got = memo[key] = len(terms & words) / len(terms) if terms else 0.0
    return got


# combining marks (the blocks NFKD puts accents in): removed to match as FTS5's remove_diacritics does
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


# a letter NFKD splits into a base and a mark (Latin-1 to Latin Extended Additional, Greek), or a mark
_ACCENTED = re.compile("[\u00c0-\u024f\u0300-\u036f\u0386-\u03ce\u0400-\u04ff\u1e00-\u1fff]")


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _words_held(terms: frozenset[str], texts: Sequence[str]) -> list[set[str]]:
    """Which of the query's words each text holds (as whole words, case and accents folded as FTS5
    matches them). The texts are joined into one string, lower-cased and folded in one call each,
    and every word is looked for with str.find, one find per text that holds it: half the time of
    splitting each text into words and folding them (42 against 84 ms a query for ~200 candidates
    of wtq-dev, alternated at load ~10; a compiled alternation per text was slower still)."""
    out: list[set[str]] = [set() for _ in texts]
    if not terms or not texts:
        return out
    big = "\x00".join(texts).lower()  # NUL: no word character, and NFKD leaves it alone
    if not big.isascii() and _ACCENTED.search(big):  # en dashes alone need no folding
        big = _COMBINING.sub("", unicodedata.normalize("NFKD", big))
    ends = []  # where each text ends in big
    at = big.find("\x00")
    while at != -1:
        ends.append(at)
        at = big.find("\x00", at + 1)
    ends.append(len(big))
    n = len(big)
    for t in terms:
        at = big.find(t)
        while at != -1:
            i = bisect_left(ends, at)
            end = at + len(t)
            if (at == 0 or not _is_word_char(big[at - 1])) and (end == n or not _is_word_char(big[end])):
                out[i].add(t)
                at = big.find(t, ends[i] + 1)  # the next text: one find per text holding t
            else:
                at = big.find(t, at + 1)
    return out


LABELLED_KINDS = frozenset({"table"})  # block kinds whose chunks begin with a label line
_NONE: frozenset[str] = frozenset()


def _boost(ranked: Ranked, mode: str, query: str, rows: Mapping[int, StoredChunk], ranking: Ranking) -> Ranked:
    """ranked with the title and heading boost, and the text boost, added, best first (only chunks
    in rows are kept). Text boost: in vector mode the share of the query's words in the chunk's
    text (text_weight); in hybrid the query's words beyond the chunk's page title (its own words)
    found in its text (word_weight), the same weighted by each word's rarity among the candidates
    (idf_weight), and found in any candidate chunk of its block (block_weight). See Ranking."""
    hybrid = mode == "hybrid"
    text_weight = ranking.text_weight if mode == "vector" else 0.0
    word_weight = ranking.word_weight if hybrid else 0.0
    idf_weight = ranking.idf_weight if hybrid else 0.0
    block_weight = ranking.block_weight if hybrid else 0.0
    header_weight = (ranking.header_weight if hybrid
                     else ranking.vector_header_weight if mode == "vector" else 0.0)
    in_text = bool(word_weight or idf_weight or block_weight)  # terms that read the whole chunk text
    if (not ranking.title_weight and not text_weight and not in_text and not header_weight) or mode == "keyword":
        return [r for r in ranked if r[0] in rows]
    terms = query_terms(query)
    unit = TITLE_COSINE if mode == "vector" else 1.0 / (ranking.rrf_k + 1)
    memo: dict[str, float] = {}
    kept = [(item, rows[item[0]]) for item in ranked if item[0] in rows]
    # the own-word terms apply (each page's own words and name gate are needed)
    scored = bool((in_text or header_weight) and terms and kept)
    found: list[set[str]] = []
    idf: dict[str, float] = {}
    block: dict[tuple[str, int], set[str]] = {}
    if scored and in_text:  # not in vector mode: its label-line term reads the first lines alone
        found = _words_held(terms, [r.text for _, r in kept])
        df: dict[str, int] = {}
        for f, (_, r) in zip(found, kept):
            for t in f:
                df[t] = df.get(t, 0) + 1
            block.setdefault((r.url, r.block_position), set()).update(f)
        idf = {t: math.log((len(kept) + 1) / n) for t, n in df.items()}
    label: dict[int, set[str]] = {}  # a table chunk's label line: its heading, caption, column names
    if scored and header_weight:
        tabled = [i for i, (_, r) in enumerate(kept) if r.kind in LABELLED_KINDS]
        label = dict(zip(tabled, _words_held(terms, [kept[i][1].text.partition("\n")[0] for i in tabled])))
    titles: dict[str, tuple[frozenset[str], float, float]] = {}
    most_named = 0.0
    if scored:
        for _, r in kept:
            if r.title not in titles:  # the query's words beyond the page title: what tells its chunks apart
                in_title = terms & {_fold(w) for w in _WORD.findall(r.title)}
                own = terms - in_title
                titles[r.title] = (own, sum(idf.get(t, 0.0) for t in own), len(in_title) / len(terms))
                most_named = max(most_named, len(in_title) / len(terms))
    out = []
    for i, ((cid, s, vr, kr), r) in enumerate(kept):
        s += ranking.title_weight * unit * _title_share(terms, r.title, r.heading_path, memo)
        if text_weight and terms:
            s += text_weight * unit * len(terms & {_fold(w) for w in _WORD.findall(r.text)}) / len(terms)
        if scored:
            own, total, named = titles[r.title]
            gate = (named / most_named) ** ranking.name_gate if most_named else 1.0
            if own and gate:
                lift = header_weight * len(label.get(i, _NONE) & own)
                if in_text:
                    hit = found[i] & own
                    lift = (word_weight * len(hit) + block_weight * len(block[(r.url, r.block_position)] & own)
                            + lift)
                s += gate * unit * lift / len(own)
                if in_text and total > 0:
                    s += gate * idf_weight * unit * sum(idf[t] for t in hit) / total
        out.append((cid, s, vr, kr))
    out.sort(key=lambda x: (-x[1], x[0]))
    return out


def _cap(ranked: Ranked, rows: Mapping[int, StoredChunk], need: int, per_page: int | None,
         clear_margin: float) -> Ranked:
    """The first `need` of ranked with at most per_page from one URL, the best page exempt when it
    stands clear (see Ranking)."""
    if not ranked:
        return []
    free: str | None = None
    if per_page and clear_margin > 0:
        top_url, top = rows[ranked[0][0]].url, ranked[0][1]
        second = next((s for cid, s, _, _ in ranked if rows[cid].url != top_url), None)
        if second is None or top - second >= clear_margin * abs(top):
            free = top_url
    out: Ranked = []
    per_url: dict[str, int] = {}
    for item in ranked:
        url = rows[item[0]].url
        if per_page and url != free:
            seen = per_url.get(url, 0)
            if seen >= per_page:
                continue
            per_url[url] = seen + 1
        out.append(item)
        if len(out) == need:
            break
    return out


def rank(ranking: Ranking, mode: str, query: str, vec: list[tuple[int, float]], kw: list[tuple[int, float]],
         rows: Mapping[int, StoredChunk], need: int, per_page: int | None = -1) -> list[int]:
    """Chunk ids of the `need` best hits (bench/ranking.py replays this over stored candidate lists;
    search() runs the same steps). per_page -1: the ranking's own."""
    pp = ranking.per_page if per_page == -1 else per_page
    ranked = _boost(_fuse(mode, vec, kw, ranking), mode, query, rows, ranking)
    return [r[0] for r in _cap(ranked, rows, need, pp, ranking.clear_margin)]


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
    boosted = _boost(ranked, mode, query, rows, ranking)
    # the clear-top-page exemption belongs to the default limit: a per_page asked for is a hard cap
    clear = ranking.clear_margin if per_page == ranking.per_page else 0.0
    return [(Hit(cid, round(score, 6), rows[cid].url, list(rows[cid].heading_path), rows[cid].text,
                 rows[cid].title, vr, kr), rows[cid])
            for cid, score, vr, kr in _cap(boosted, rows, need, per_page, clear)]


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
    qv: np.ndarray | None = None
    loaded: _Loaded | None = None
    rows: np.ndarray | None = None
    found: list[tuple[Hit, StoredChunk]] = []
    for n in (t for t in TIERS if t >= 3 * need or t == TIERS[-1]):
        vec: list[tuple[int, float]] = []
        kw: list[tuple[int, float]] = []
        fts_thread = None
        box: list[object] = []
        try:
            if opts.mode == "hybrid":
                # FTS on its own connection while the model embeds the query: both release the GIL
                fts_thread = threading.Thread(target=_keyword_in_thread, args=(store, query, n, pages, box),
                                              daemon=True)
                fts_thread.start()
            if opts.mode in ("hybrid", "vector"):
                if loaded is None:
                    emb = embedder or default_embedder()
                    if emb.name != meta.get("model"):
                        raise NotIndexed(f"store {store.location} was indexed with {meta.get('model')}, "
                                         f"not {emb.name}: re-run index")
                    loaded = _vectors(store, meta)
                    if pages is not None:
                        rows = _filter_rows(store, loaded, pages)
                    qv = emb.embed([query])[0]
                assert qv is not None
                vec = _vector_ranked(loaded, qv, n, rows)
        finally:
            if fts_thread is not None:
                fts_thread.join()  # never leave a thread reading a store the caller may close
        if fts_thread is not None:
            if isinstance(box[0], BaseException):
                raise box[0]
            kw = cast("list[tuple[int, float]]", box[0])
        elif opts.mode == "keyword":
            kw = store.keyword_ranked(query, n, pages)
        found = _resolve(store, _fuse(opts.mode, vec, kw), need, opts.per_page, page_set, query, opts.mode)
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
    from .context import add_context

    add_context(store, hits, opts.context, opts.context_tokens)


# ---- snippets -------------------------------------------------------------------------------------

def _fold(word: str) -> str:
    """A word as FTS5's unicode61 tokenizer with remove_diacritics matches it: lower case, no accents."""
    w = word.lower()
    if w.isascii():
        return w
    return "".join(c for c in unicodedata.normalize("NFKD", w) if not unicodedata.combining(c))


def query_terms(query: str) -> frozenset[str]:
    """The query's words as keyword search matches them (stop words dropped unless nothing is left)."""
    from ..store.sqlite import keyword_terms  # the one list of stop words; a pure function, no SQL

    return frozenset(_fold(t[1:-1].replace('""', '"')) for t in keyword_terms(query))


def snippet(text: str, terms: frozenset[str], width: int = SNIPPET_CHARS) -> tuple[str, list[tuple[int, int]]]:
    """About `width` characters of text around the densest run of query words, cut at spaces, with
    "…" where text was cut, and the [start, end) of every query word inside it. Linear in the text:
    one pass of the word regex, then a two-pointer sweep over the matches."""
    spans = [m.span() for m in _WORD.finditer(text) if _fold(m.group()) in terms] if terms else []
    if len(text) <= width:
        return text, spans
    if spans:
        best, best_n, j = 0, 0, 0
        for i in range(len(spans)):  # the window starting at match i that holds the most matches
            j = max(j, i)
            while j + 1 < len(spans) and spans[j + 1][1] - spans[i][0] <= width:
                j += 1
            if j - i + 1 > best_n:
                best, best_n = i, j - i + 1
        start = max(0, spans[best][0] - width // 6)
        if start > 0:  # begin at a word
            sp = text.find(" ", start, spans[best][0])
            start = sp + 1 if sp != -1 else spans[best][0]
    else:
        start = 0
    end = min(len(text), start + width)
    if end < len(text):
        sp = text.rfind(" ", start, end)
        if sp > start:
            end = sp
    lead = "…" if start > 0 else ""
    out = lead + text[start:end]
    shift = len(lead) - start
    marks = [(a + shift, b + shift) for a, b in spans if a >= start and b <= end]
    return out + ("…" if end < len(text) else ""), marks

"""How candidates are ordered and capped: pure functions of the two ranked lists and the
candidates' stored rows, so that bench/ranking.py replays exactly what search() runs (rank).

Steps: fuse the vector and keyword lists by weighted reciprocal rank fusion (RRF):
score(chunk) = sum over the lists of weight / (rrf_k + rank); add the boost terms (boost: each
term one small function, summed); cap the hits per page (cap). The weights are one frozen
Ranking; a tuning run is `replace(RANKING, ...)`."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..store.protocols import StoredChunk
from .options import PER_PAGE
from .terms import query_terms, words_held, words_of

# Fusion: chosen by the minimum over several kinds of site at once (docs, Wikipedia tables, a shop,
# product pages: bench/qa.py --grid), never one; the vector list weighted 3x the keyword list, at the
# middle of the flat top of that minimum (docs/decisions/0301-fusion-over-sets.md).
RRF_K = 20
VECTOR_WEIGHT = 3.0

Ranked = list[tuple[int, float, "int | None", "int | None"]]  # (chunk id, score, vector rank, keyword rank)


@dataclass(frozen=True, slots=True)
class Ranking:
    """How candidates are ordered and capped (the measurements behind each default:
    docs/decisions/0006, 0007, 0008).

    rrf_k, vector_weight, keyword_weight: hybrid's fusion, score = sum over the lists of
    weight / (rrf_k + rank).

    The boost terms add score in units of one first place (1 / (rrf_k + 1) in hybrid; TITLE_COSINE
    of cosine in vector mode); keyword mode is left as FTS5 ranks it.
    title_weight: a chunk whose page title or headings hold a share s of the query's words (stop
    words dropped) gains title_weight * s, so "Who published <Title>?" finds the page titled so even
    where those words are rare in its text.
    text_weight: in vector mode, the same for the query's words in the chunk's text: a tie-breaker
    among the rows of one table, whose embeddings are near ties; kept small, so that vector mode
    stays a similarity search.
    word_weight, idf_weight, block_weight: in hybrid mode, a chunk's own words (the query's words
    beyond its page title: the title's words are in every chunk of a page, so they pick the page,
    not the chunk) count: word_weight x the share of them its text holds, idf_weight x the same
    with each word weighted by log((n + 1) / df) over the n candidates (a word few candidates hold
    tells them apart), and block_weight x the share held by any candidate chunk of its block (a
    table's rows vouch for each other: the header names a column, a sibling row names the thing).
    The fusion orders a page's chunks by whole-text similarity, where the prose about the title
    wins; these put the table chunk holding "octane" first for "what role did Mischa Barton play
    in Octane?".
    name_gate: the own-word terms go to the page the question names: each page's are multiplied by
    (its title's share of the query's words / the best such share among the candidates) **
    name_gate (1 for all when no candidate's title holds a query word). Without it, "Who published
    The Last Observatory?" lifts every other book's "customers also bought" box holding "Last
    Observatory" (words beyond THEIR titles) over the book's own record.
    header_weight: in hybrid mode, a table chunk's label line (its first line: the table's heading,
    caption and column names, repeated on every chunk of the table) counts its share of the chunk's
    own words, with the same unit and gate: a question naming a column ("which team has the most
    championships?") goes to the table whose header says "Championships", not to the prose that
    mentions championships. Only chunks whose block is a table (StoredChunk.kind): plain chunks and
    pages stored without blocks gain nothing.
    vector_header_weight: the same label-line term in vector mode, gated alike: a table's rows of
    names and numbers embed far from a question, the prose about the page near it; small enough
    that the embedding still orders what the words tie.

    per_page: at most this many hits from one URL (0: no limit), except that with the default limit
    the best page is not capped when its best score stands clear of every other page's by
    clear_margin (relative): a question that one page answers gets that page's rows, a question
    many pages answer still gets many pages. Any other per_page a caller asks for is a hard cap (3
    cannot be told from the default, so it keeps the rule)."""

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
# vector mode: a full title match is worth title_weight times this much cosine (more costs R@1, as
# every chunk of a page gains the same: docs/decisions/0006)
TITLE_COSINE = 0.025
LABELLED_KINDS = frozenset({"table"})  # block kinds whose chunks begin with a label line
_NONE: frozenset[str] = frozenset()


def fuse(mode: str, vec: list[tuple[int, float]], kw: list[tuple[int, float]],
          ranking: Ranking = RANKING) -> Ranked:
    """The lists of one mode as one ranked list, best first: vector or keyword alone as they come,
    hybrid by weighted RRF (ties by chunk id)."""
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


@dataclass(frozen=True, slots=True)
class _Weights:
    """The ranking's boost weights that apply in one mode (0 for a term the mode does not use)."""

    title: float
    text: float
    word: float
    idf: float
    block: float
    header: float
    gate: float

    @staticmethod
    def of(ranking: Ranking, mode: str) -> _Weights:
        hybrid = mode == "hybrid"
        return _Weights(
            ranking.title_weight,
            ranking.text_weight if mode == "vector" else 0.0,
            ranking.word_weight if hybrid else 0.0,
            ranking.idf_weight if hybrid else 0.0,
            ranking.block_weight if hybrid else 0.0,
            ranking.header_weight if hybrid else ranking.vector_header_weight if mode == "vector" else 0.0,
            ranking.name_gate)

    @property
    def in_text(self) -> bool:
        """Some term reads the whole chunk text (hybrid's own-word terms)."""
        return bool(self.word or self.idf or self.block)


@dataclass(slots=True)
class _Candidates:
    """What the own-word terms read, worked out once over all candidates of a query."""

    found: list[set[str]]  # the query's words each candidate's text holds
    idf: dict[str, float]  # log((n + 1) / df) of each query word some candidate holds
    block: dict[tuple[str, int], set[str]]  # the query's words held by any candidate of a block
    label: dict[int, set[str]]  # the query's words in a table candidate's label line
    # per page title: (its own words, their idf sum, the title's share of the query's words)
    titles: dict[str, tuple[frozenset[str], float, float]]
    most_named: float  # the largest title share among the candidates


def _candidates(terms: frozenset[str], kept: list[StoredChunk], w: _Weights) -> _Candidates:
    found: list[set[str]] = []
    idf: dict[str, float] = {}
    block: dict[tuple[str, int], set[str]] = {}
    if w.in_text:  # not in vector mode: its label-line term reads the first lines alone
        found = words_held(terms, [r.text for r in kept])
        df: dict[str, int] = {}
        for f, r in zip(found, kept):
            for t in f:
                df[t] = df.get(t, 0) + 1
            block.setdefault((r.url, r.block_position), set()).update(f)
        idf = {t: math.log((len(kept) + 1) / n) for t, n in df.items()}
    label: dict[int, set[str]] = {}
    if w.header:
        tabled = [i for i, r in enumerate(kept) if r.kind in LABELLED_KINDS]
        label = dict(zip(tabled, words_held(terms, [kept[i].text.partition("\n")[0] for i in tabled])))
    titles: dict[str, tuple[frozenset[str], float, float]] = {}
    most_named = 0.0
    for r in kept:
        if r.title not in titles:  # the query's words beyond the page title: what tells its chunks apart
            in_title = terms & words_of(r.title)
            own = terms - in_title
            titles[r.title] = (own, sum(idf.get(t, 0.0) for t in own), len(in_title) / len(terms))
            most_named = max(most_named, len(in_title) / len(terms))
    return _Candidates(found, idf, block, label, titles, most_named)


# ---- the boost terms: each the score one chunk gains --------------------------------------------

def _title_share(terms: frozenset[str], title: str, heading_path: Sequence[str], memo: dict[str, float]) -> float:
    """The share of the query's words that the page title or the headings hold."""
    key = title + "\x00" + "\x00".join(heading_path)
    got = memo.get(key)
    if got is None:
        got = memo[key] = len(terms & words_of(title + " " + " ".join(heading_path))) / len(terms) if terms else 0.0
    return got


def _title_term(w: _Weights, unit: float, terms: frozenset[str], r: StoredChunk, memo: dict[str, float]) -> float:
    return w.title * unit * _title_share(terms, r.title, r.heading_path, memo)


def _text_term(w: _Weights, unit: float, terms: frozenset[str], r: StoredChunk) -> float:
    """Vector mode: the share of the query's words in the chunk's text."""
    return w.text * unit * len(terms & words_of(r.text)) / len(terms)


def _word_lift(w: _Weights, c: _Candidates, i: int, own: frozenset[str]) -> float:
    """The chunk's own words its text holds."""
    return w.word * len(c.found[i] & own)


def _block_lift(w: _Weights, c: _Candidates, r: StoredChunk, own: frozenset[str]) -> float:
    """The chunk's own words any candidate chunk of its block holds."""
    return w.block * len(c.block[(r.url, r.block_position)] & own)


def _header_lift(w: _Weights, c: _Candidates, i: int, own: frozenset[str]) -> float:
    """The chunk's own words its label line holds (table chunks only)."""
    return w.header * len(c.label.get(i, _NONE) & own)


def _own_word_term(w: _Weights, c: _Candidates, i: int, r: StoredChunk, gate: float, unit: float,
                   own: frozenset[str]) -> float:
    """The word, block and label-line lifts, as a share of the chunk's own words, gated."""
    lift = _header_lift(w, c, i, own)
    if w.in_text:
        lift = _word_lift(w, c, i, own) + _block_lift(w, c, r, own) + lift
    return gate * unit * lift / len(own)


def _idf_term(w: _Weights, c: _Candidates, i: int, gate: float, unit: float, own: frozenset[str],
              total: float) -> float:
    """The chunk's own words its text holds, each weighted by its rarity among the candidates."""
    return gate * w.idf * unit * sum(c.idf[t] for t in c.found[i] & own) / total


def boost(ranked: Ranked, mode: str, query: str, rows: Mapping[int, StoredChunk], ranking: Ranking) -> Ranked:
    """ranked with the boost terms added, best first (only chunks in rows are kept): the title
    and heading term; in vector mode the text term; the own-word terms, gated by the page title's
    share of the query (see Ranking)."""
    w = _Weights.of(ranking, mode)
    if (not w.title and not w.text and not w.in_text and not w.header) or mode == "keyword":
        return [r for r in ranked if r[0] in rows]
    terms = query_terms(query)
    unit = TITLE_COSINE if mode == "vector" else 1.0 / (ranking.rrf_k + 1)
    memo: dict[str, float] = {}
    kept = [(item, rows[item[0]]) for item in ranked if item[0] in rows]
    # the own-word terms apply (each page's own words and name gate are needed)
    scored = bool((w.in_text or w.header) and terms and kept)
    c = _candidates(terms, [r for _, r in kept], w) if scored else None
    out = []
    for i, ((cid, s, vr, kr), r) in enumerate(kept):
        s += _title_term(w, unit, terms, r, memo)
        if w.text and terms:
            s += _text_term(w, unit, terms, r)
        if c is not None:
            own, total, named = c.titles[r.title]
            gate = (named / c.most_named) ** w.gate if c.most_named else 1.0
            if own and gate:
                s += _own_word_term(w, c, i, r, gate, unit, own)
                if w.in_text and total > 0:
                    s += _idf_term(w, c, i, gate, unit, own, total)
        out.append((cid, s, vr, kr))
    out.sort(key=lambda x: (-x[1], x[0]))
    return out


def cap(ranked: Ranked, rows: Mapping[int, StoredChunk], need: int, per_page: int | None,
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
    ranked = boost(fuse(mode, vec, kw, ranking), mode, query, rows, ranking)
    return [r[0] for r in cap(ranked, rows, need, pp, ranking.clear_margin)]

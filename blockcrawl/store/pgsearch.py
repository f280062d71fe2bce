"""Keyword search in PostgreSQL, ranked by the very bm25 SQLite's FTS5 computes (store.sqlite.keyword_ranked).

PostgreSQL's own tools rank differently: to_tsvector's parser keeps "high-level" as three tokens
and URLs whole, and ts_rank / ts_rank_cd know no idf, so on a term that is common in one page and
rare in the store they disagree with bm25 most where it matters. So the index holds FTS5's view:

- tokens: FTS5's unicode61 tokenizer with remove_diacritics 2, redone in Python (tokens()): runs of
  letters and digits, lower case, Latin diacritics dropped ("Zürich" -> "zurich"); "_" separates.
  On the 9,030 chunks of wtq-dev (300 Wikipedia pages, many scripts) every chunk gets the very
  tokens FTS5 gives it (82 differ without the script and mark rules below, copied from FTS5);
- chunks.tsv: those tokens as a tsvector built here (not by to_tsvector), each position weighted by
  its column as FTS5's bm25(chunks_fts, 1.0, 0.5, 0.5) weights them: A text (1.0), B heading path
  (0.5, the same JSON text SQLite indexes), C context (0.5); a GIN index selects the matches;
- chunks.n_tok: the chunk's length in tokens over the three columns (FTS5's |D|).

A query computes FTS5's bm25 from those (k1 1.2, b 0.75; idf ln((N - n + 0.5) / (n + 0.5)),
1e-6 when not positive; N and avgdl over all chunks, n = chunks holding the word), with
keyword_ranked's common-terms rule. Measured agreement with SQLite on the same pages: see
docs/notes/postgres.md and tests/store/test_postgres.py.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .cjk import is_cjk_char, split_cjk
from .sqlite import COMMON_MIN_ROWS, COMMON_SHARE, SELECT_MAX_ROWS, keyword_terms, probe_limit, split_common

if TYPE_CHECKING:
    import psycopg

K1, B = 1.2, 0.75
WEIGHTS = {"A": 1.0, "B": 0.5, "C": 0.5}  # text, heading path, context (store.sqlite's bm25 weights)


# The combining marks unicode61 (remove_diacritics 2) keeps inside a word and then drops, found by
# asking FTS5 for "a" + mark + "b" over U+0300-U+036F: "drim\u0303ba" is one token "drimba"; any
# other mark (U+0361, Devanagari vowel signs) separates, as Python's \\w does.
_DIACRITICS = "\u0300-\u0304\u0306-\u030c\u030f\u0311\u031b\u0323-\u0328\u032d-\u032e\u0330-\u0331"
_DROP = re.compile(f"[{_DIACRITICS}]")
_TOKEN = re.compile(f"(?:[^\\W_]|[{_DIACRITICS}])+")
MAX_LEXEME = 2046  # bytes: PostgreSQL refuses longer lexemes; FTS5 has no limit (such tokens are not searchable)
MAX_POS = 16383  # tsvector positions: beyond, PostgreSQL clamps (a term's later hits would be lost)


def _fold_char(c: str) -> str:
    """One character as unicode61 folds it: lower case (per character: "Σ" is "σ" even at a word's
    end), and a Latin letter's diacritics removed ("é" -> "e"); other scripts keep theirs (Cyrillic
    "й", Hangul syllables, kana with dakuten stay as they are, as in FTS5)."""
    low = c.lower()
    base = unicodedata.normalize("NFD", low)
    if len(base) > 1 and base[0] <= "\u024f" and base[0].isalpha() and all(unicodedata.combining(x) for x in base[1:]):
        return base[0]
    return low


def _fold(tok: str) -> str:
    if tok.isascii():
        return tok.lower()
    # per character (no final-sigma rule: FTS5 folds "ς" to "σ" too), micro sign as Greek mu
    return "".join(_fold_char(c) for c in _DROP.sub("", tok)).replace("ς", "σ").replace("µ", "μ")


def tokens(text: str) -> list[str]:
    """FTS5 unicode61 (remove_diacritics 2) tokens of text as SQLite's index holds it (schema 6: CJK
    runs as bigrams, store.cjk), near enough: see the module docstring."""
    return [t for t in (_fold(m) for m in _TOKEN.findall(split_cjk(text))) if t]


def tsvector(text: str, heading_json: str, context: str) -> tuple[str, int]:
    """(tsvector literal, token count) of a chunk's three keyword columns."""
    where: dict[str, list[str]] = {}
    pos = 0
    for col, weight in ((text, "A"), (heading_json, "B"), (context, "C")):
        for tok in tokens(col):
            pos += 1
            if pos <= MAX_POS and len(tok.encode()) <= MAX_LEXEME:
                where.setdefault(tok, []).append(f"{pos}{weight}")
    # tokens are letters and digits only: no quote or backslash to escape
    return " ".join(f"'{t}':{','.join(p[:256])}" for t, p in where.items()), pos


def query_tokens(query: str) -> list[str]:
    """The query's search terms: keyword_terms' words (stop words dropped as for SQLite), each
    tokenized as FTS5 tokenizes its phrase. A word with CJK characters stays one phrase, its tokens
    joined by spaces ("東京都" -> "東京 京都", adjacent as in SQLite's phrase query); a word FTS5
    splits otherwise ("foo_bar") becomes two terms here where FTS5 searches the phrase: the one
    known difference."""
    out: list[str] = []
    for phrase in keyword_terms(query):
        word = phrase[1:-1].replace('""', '"')
        toks = tokens(word)
        if len(toks) > 1 and split_cjk(word) != word:
            out.append(" ".join(toks))
        else:
            out.extend(toks)
    return list(dict.fromkeys(out))


def _lit(term: str) -> str:
    """A term as a tsquery: a lone CJK character as a prefix of the bigrams, a CJK word as the
    phrase of its bigrams (store.cjk)."""
    if " " in term:
        return "(" + " <-> ".join(f"'{t}'" for t in term.split()) + ")"
    return f"'{term}':*" if is_cjk_char(term) else f"'{term}'"


def _tsquery(terms: Sequence[str]) -> str:
    return " | ".join(_lit(t) for t in terms)


# ts_rank_cd of a one-word query, normalization 0, is the sum of the weights of the word's positions
# (each occurrence is a cover of length 1 worth its weight): FTS5's weighted term frequency. The
# weights array is {D, C, B, A}; D is never written (0 is not allowed: ts_rank_cd divides by it).
# Measured on 9,030 chunks: 100 ms a query by unnest(tsv) and a GROUP BY, ~10 ms this way.
_RANK_WEIGHTS = [0.1, WEIGHTS["C"], WEIGHTS["B"], WEIGHTS["A"]]


def _score_sql(n_terms: int, pages: bool) -> str:
    tfs = ", ".join(f"ts_rank_cd(%(w)s::float4[], c.tsv, %(q{i})s::tsquery, 0)::float8 AS t{i}" for i in range(n_terms))
    norm = "(%(k1)s * (%(omb)s + %(b)s * n_tok / %(avgdl)s))"
    score = " + ".join(f"%(idf{i})s * t{i} * %(k1p1)s / (t{i} + {norm})" for i in range(n_terms))
    where = "AND c.page_id = ANY(%(pages)s)" if pages else ""
    return (f"SELECT id, {score} AS s FROM (SELECT c.id, c.n_tok, {tfs} FROM chunks c "
            f"WHERE c.tsv @@ %(match)s::tsquery {where}) x ORDER BY s DESC, id LIMIT %(n)s")


def keyword_ranked(db: psycopg.Connection[tuple[Any, ...]], query: str, n: int,
                   pages: Sequence[int] | None = None, common_share: float = COMMON_SHARE,
                   common_min_rows: int = COMMON_MIN_ROWS,
                   select_max_rows: int = SELECT_MAX_ROWS) -> list[tuple[int, float]]:
    """store.sqlite.keyword_ranked for PostgreSQL: the n best chunks for the OR of the query's
    words, best first, as (chunk id, bm25 score); common words score but do not select when the
    query has rarer ones. Three statements: N and the token total (one scan of chunks: ~10 ms at
    100k chunks, where FTS5 keeps both in its index), each word's chunk count (GIN), the scoring."""
    import math

    terms = query_tokens(query)
    if not terms:
        return []
    row = db.execute("SELECT count(*), coalesce(sum(n_tok), 0) FROM chunks").fetchone()
    total, ntok = (int(row[0]), int(row[1])) if row else (0, 0)
    if total == 0:
        return []
    df = {}
    for t in terms:
        r = db.execute("SELECT count(*) FROM chunks WHERE tsv @@ %s::tsquery", (_lit(t),)).fetchone()
        df[t] = int(r[0]) if r else 0
    rare, common = [t for t in terms if df[t] > 0], list[str]()
    if len(terms) > 1:
        # split as SQLite does, from the counts it sees (exact up to its probe limit)
        limit = probe_limit(total, common_share, common_min_rows, select_max_rows)
        rare, common = split_common(terms, {t: min(c, limit) for t, c in df.items()}, total, common_share,
                                    common_min_rows, select_max_rows)
    if not rare:
        return []
    scored = rare + common
    idfs = []
    for t in scored:
        idf = math.log((total - df[t] + 0.5) / (df[t] + 0.5))
        idfs.append(idf if idf > 0 else 1e-6)
    params: dict[str, object] = {
        "k1p1": K1 + 1.0, "k1": K1, "omb": 1.0 - B, "b": B, "avgdl": max(ntok / total, 1e-9),
        "w": _RANK_WEIGHTS, "match": _tsquery(rare), "n": n}
    for i, (t, idf) in enumerate(zip(scored, idfs)):
        params[f"q{i}"], params[f"idf{i}"] = _lit(t), idf
    if pages is not None:
        params["pages"] = list(pages)
    sql = _score_sql(len(scored), pages is not None)
    # the planner reads the whole table for an OR of several words (40 ms at 9,030 chunks) where the
    # GIN index answers in ~5 ms: steer it, for this statement only
    db.execute("SET enable_seqscan = off")
    try:
        return [(int(i), float(s)) for i, s in db.execute(sql, params)]
    finally:
        db.execute("RESET enable_seqscan")

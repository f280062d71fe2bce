"""Tuning search's ranking on wtq-dev: fusion constants, per-page limit, title
and heading boost, chosen with leave-some-pages-out and reported on the pages held out.

Builds the `main` row of bench/tables.py (the crawl's default chunks) for the first --pages pages,
embeds it through tables.CachedEmbedder, then reads once per question the vector and keyword
candidate lists search() fuses (top 100 each, its first tier at k 10) and replays blockcrawl.retrieval.ranking.rank over
them for every setting of a grid: a setting costs Python over the lists, not a search.
Folds: the pages in --folds groups by id; a setting is chosen on the other groups' questions (best
strict R@5, ties to the simpler setting) and scored on the group's own. Reads
/work/shared/bench/data/wtq-dev (override with --data or BLOCKCRAWL_BENCH_DATA).

--grid features: the hybrid text boosts (word, idf, block weights) at the shipped fusion; --grid
gate: the boost's name gate (how much a page the question names less than another is boosted); --grid
header: the label-line term (a table chunk's first line) x the block term (vector mode: its own
weight, vector_header_weight, x the text boost);
--row plain replays the same grid over plain 200-token chunks (what the block term cannot lift).

Run: PYTHONPATH=. python bench/ranking.py --pages 100 [--folds 5] [--grid features] [--row plain]
"""
from __future__ import annotations

import argparse
import itertools
import json
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import WTQ_DEV  # noqa: E402 - first: it puts the repository on sys.path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tables  # noqa: E402

from blockcrawl.retrieval.ranking import Ranking, rank  # noqa: E402

N = 100  # candidates per list, as search's first tier (k 10)


def candidate_lists(path: Path, qtexts: list[str], embedder: Any) -> tuple[list[Any], dict[int, Any]]:
    """Per query text (text, vector list, keyword list) of N each, and the rows of every candidate:
    what search() ranks, read once so that any Ranking can be replayed over it."""
    from blockcrawl.retrieval.vector_cache import _vector_ranked, _vectors
    from blockcrawl.store import Store

    lists = []
    with Store(path, readonly=True) as st:
        loaded = _vectors(st, st.index_meta())
        ids: set[int] = set()
        for text, v in zip(qtexts, embedder.embed(qtexts)):
            vec = _vector_ranked(loaded, v, N)
            kw = st.keyword_ranked(text, N)
            lists.append((text, vec, kw))
            ids.update(c for c, _ in vec)
            ids.update(c for c, _ in kw)
        info = st.chunks_by_id(sorted(ids))
    return lists, info


def candidates(path: Path, queries: list[dict[str, Any]], embedder: Any) -> tuple[list[Any], dict[int, Any]]:
    """candidate_lists of wtq-dev's questions, each asked with its page's title."""
    return candidate_lists(path, [q["title"] + ": " + q["query"] for q in queries], embedder)


def score(ranking: Ranking, mode: str, qs: list[dict[str, Any]], lists: list[Any], info: dict[int, Any],
          url_of: dict[str, str], ntok: dict[int, int]) -> dict[str, float]:
    r1 = r5 = rb = 0
    for q, (text, vec, kw) in zip(qs, lists):
        hits = rank(ranking, mode, text, vec[:N], kw[:N], info, 10)
        a = tables.norm(q["answer"])
        good = [info[c].url == url_of[q["page"]] and a in tables.norm(info[c].text) for c in hits]
        r1 += any(good[:1])
        r5 += any(good[:5])
        used = 0
        for g, c in zip(good, hits):
            used += ntok[c]
            if used > tables.BUDGET:
                break
            if g:
                rb += 1
                break
    n = max(1, len(qs))
    return {"R@1": r1 / n, "R@5": r5 / n, "R@budget": rb / n}


def feature_grid(mode: str) -> list[Ranking]:
    """The hybrid text boosts crossed at the shipped fusion, title boost and per-page rule: the
    query's words beyond the title in the chunk (plain, by rarity) and in its block."""
    out = []
    words = (0.0, 1.0, 2.0) if mode == "hybrid" else (0.0,)
    blocks = (0.0, 1.0, 2.0) if mode == "hybrid" else (0.0,)
    for ww, iw, bw in itertools.product(words, words, blocks):
        out.append(Ranking(word_weight=ww, idf_weight=iw, block_weight=bw))
    return out


def gate_grid(mode: str) -> list[Ranking]:
    """The hybrid text boost's name gate (Ranking.name_gate; 0: every page's chunks boosted alike)."""
    return [Ranking(name_gate=g) for g in ((0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 32.0) if mode == "hybrid" else (2.0,))]


def header_grid(mode: str) -> list[Ranking]:
    """The label-line term (Ranking.header_weight: the query's own words in a table chunk's first
    line, its heading, caption and column names) crossed with the block term."""
    if mode == "vector":  # the same term in vector mode (TITLE_COSINE a unit) x the text boost
        return [Ranking(vector_header_weight=h, text_weight=t) for h in (0.0, 1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0)
                for t in (0.0, 2.0, 4.0)]
    if mode != "hybrid":
        return [Ranking()]
    return [Ranking(header_weight=h, block_weight=b) for h in (0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)
            for b in (0.0, 1.0, 2.0)]


def grid(mode: str) -> list[Ranking]:
    out = []
    fusion = ([(60, 1.0), (60, 2.0), (60, 0.5)] + [(k, w) for k in (10, 20, 30) for w in (0.75, 1.0, 1.5)]
              if mode == "hybrid" else [(60, 1.0)])
    titles = (0.0, 1.0, 2.0) if mode == "hybrid" else (0.0, 1.0, 2.0, 4.0)
    for (k, wv), tw, pp, clear in itertools.product(fusion, titles, (3, 5, 0), (0.0, 0.1, 0.2)):
        if pp == 0 and clear:
            continue
        out.append(Ranking(rrf_k=k, vector_weight=wv, title_weight=tw, per_page=pp, clear_margin=clear))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=WTQ_DEV)
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--modes", default="vector,hybrid")
    ap.add_argument("--reuse", action="store_true", help="reuse the last run's candidate lists for these pages")
    ap.add_argument("--row", default="main", help="the bench/tables.py row whose chunks are ranked (main, plain)")
    ap.add_argument("--grid", default="fusion", choices=("fusion", "features", "gate", "header"),
                    help="fusion: RRF k x weights x title x per_page; features: the boosts at the shipped "
                    "fusion; gate: the boost's name gate; header: the label-line term x the block term")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "blockcrawl-bench-emb.sqlite")
    args = ap.parse_args()
    from blockcrawl.chunk.tokenize import default_tokenizer

    pages, queries = tables.load(args.data, args.pages)
    url_of = {pid: url for pid, url, _ in pages}
    emb = tables.CachedEmbedder(args.cache)
    saved = Path(tempfile.gettempdir()) / f"blockcrawl-bench-candidates-{args.row}-{args.pages}.pickle"
    if args.reuse and saved.exists():  # the lists of the last run (same code, same pages)
        res, lists, info = pickle.loads(saved.read_bytes())
        t = time.perf_counter()
    else:
        with tempfile.TemporaryDirectory() as tmp:
            res = tables.evaluate(args.row, tables.available_rows()[args.row], pages, queries, [], Path(tmp), emb,
                                  keep_store=True)
            path = Path(res.pop("store"))
            t = time.perf_counter()
            lists, info = candidates(path, queries, emb)
        saved.write_bytes(pickle.dumps((res, lists, info)))
    print(json.dumps(res), f"candidates {time.perf_counter() - t:.1f}s", file=sys.stderr)
    ids = sorted(info)
    ntok = dict(zip(ids, default_tokenizer().count([info[c].text for c in ids])))
    order = sorted(url_of)
    fold_of = {pid: i * args.folds // len(order) for i, pid in enumerate(order)}
    for mode in [m for m in args.modes.split(",") if m]:
        settings = {"fusion": grid, "features": feature_grid, "gate": gate_grid, "header": header_grid}[args.grid](mode)
        if Ranking() not in settings:
            settings.append(Ranking())
        table = {s: [score(s, mode, [q for q in queries if fold_of[q["page"]] == f],
                           [x for q, x in zip(queries, lists) if fold_of[q["page"]] == f], info, url_of, ntok)
                     for f in range(args.folds)] for s in settings}
        counts = [sum(1 for q in queries if fold_of[q["page"]] == f) for f in range(args.folds)]

        def pooled(s: Ranking, folds: list[int], key: str = "R@5", table: dict[Ranking, Any] = table,
                   counts: list[int] = counts) -> float:
            return sum(table[s][f][key] * counts[f] for f in folds) / max(1, sum(counts[f] for f in folds))

        held: dict[str, float] = {"R@1": 0.0, "R@5": 0.0, "R@budget": 0.0}
        chosen = []
        for f in range(args.folds):
            rest = [g for g in range(args.folds) if g != f]
            best = max(settings, key=lambda s: (round(pooled(s, rest), 4), -settings.index(s)))
            chosen.append(best)
            for key in held:
                held[key] += table[best][f][key] * counts[f] / len(queries)
        allf = list(range(args.folds))
        best_all = max(settings, key=lambda s: (round(pooled(s, allf), 4), -settings.index(s)))
        default = Ranking()
        print(f"{mode}: held-out " + ", ".join(f"{k} {v:.3f}" for k, v in held.items()))
        for name, s in (("best on all", best_all), ("default", default)):
            print(f"  {name}: {s} -> " + ", ".join(f"{k} {pooled(s, allf, k):.3f}" for k in held))
        for s in chosen:
            print(f"  chosen: {s}")
        top = sorted(settings, key=lambda s: -pooled(s, allf))[:15]
        for s in top:
            print(f"  top: {s} -> " + ", ".join(f"{k} {pooled(s, allf, k):.3f}" for k in held))


if __name__ == "__main__":
    main()

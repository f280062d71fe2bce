"""Index and search with the real all-MiniLM-L6-v2 model on a small store of hand-made pages."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from blockcrawl.index import Embedder, MiniLMEmbedder, NotIndexed, StoreMissing, build_index, default_embedder
from blockcrawl.index.ann import ann_paths
from blockcrawl.index.ann import available as ann_available
from blockcrawl.retrieval import Hit, SearchError, search
from blockcrawl.retrieval.ranking import RANKING, RRF_K, VECTOR_WEIGHT
from blockcrawl.store import Store

from ..support.search_pages import COOKING, PAGE1, PAGES, fill, indexed

ROOT = Path(__file__).resolve().parents[2]


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return indexed(tmp_path_factory.mktemp("search") / "site.db")


@pytest.fixture(scope="module")
def reader(store):
    """The store as search and serve open it: read-only, shared by every search."""
    with Store(store, readonly=True) as st:
        yield st


def top(hits: list[Hit]) -> list[str]:
    return hits[0].heading_path


@pytest.mark.slow
def test_embedder_contract():
    emb = default_embedder()
    assert isinstance(emb, Embedder) and isinstance(emb, MiniLMEmbedder)
    m = emb.embed(["Germany lies in central Europe.", "A recipe for bread."])
    assert m.dtype == np.float32 and m.shape == (2, emb.dim)
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    assert emb.embed([]).shape == (0, emb.dim)


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_meaning_finds_the_right_section(reader, mode):
    hits = search(reader, "mountains and lowlands of the German landscape", 3, mode)
    assert top(hits) == ["Europe Countries", "Germany"]
    assert hits[0].url == "http://site.test/europe"
    assert hits[0].text.startswith("Germany:")
    # paraphrases without the section's words
    assert top(search(reader, "how do I bake a loaf at home", 3, mode)) == ["Recipes", "Bread"]
    assert top(search(reader, "a database stored in a single file", 3, mode)) == ["Languages", "SQLite"]
    # (not "the nation with the most inhabitants": India and China tie there within 0.02 in both
    # precisions, and a package upgrade flipped the int8 order)
    query = "Asian nation larger than any other on the continent" if mode == "vector" else "largest population in Asia"
    assert top(search(reader, query, 3, mode)) == ["Asia Countries", "China"]


def test_keyword_mode_and_diacritics(reader):
    hits = search(reader, "Deutschland", 5, "keyword")
    assert [h.heading_path for h in hits] == [["Europe Countries", "Germany"]]
    assert hits[0].keyword_rank == 1 and hits[0].vector_rank is None
    # remove_diacritics: "creme brulee" finds "Crème brûlée"; FTS syntax in a query is just text
    assert top(search(reader, 'creme brulee "AND* (', 3, "keyword")) == ["Recipes", "Crème brûlée"]
    assert search(reader, "zzzyqx", 5, "keyword") == []


def test_hybrid_fuses_ranks(reader):
    hits = search(reader, "New Delhi capital", 5, "hybrid")
    assert top(hits) == ["Asia Countries", "India"]
    h = hits[0]
    assert h.vector_rank == 1 and h.keyword_rank == 1
    # RRF, first in both lists, no title word; plus the text boost for the query's words in the chunk
    rrf = (VECTOR_WEIGHT + 1) / (RRF_K + 1)
    r = RANKING
    assert rrf < h.score <= rrf + (r.word_weight + r.idf_weight + r.block_weight) / (RRF_K + 1) + 1e-6
    assert [x.score for x in hits] == sorted((x.score for x in hits), reverse=True)
    assert len(search(reader, "country", 2, "hybrid")) == 2


def test_heading_only_blocks_get_no_vector(reader):
    for h in search(reader, "Europe Countries", 10, "vector"):
        assert h.text != "Europe Countries:"
    # the lone heading is no chunk of its own (its subsections follow): keyword search finds them
    # by the heading in their path
    hits = search(reader, "Europe Countries", 10, "keyword")
    assert any(h.heading_path[:1] == ["Europe Countries"] for h in hits)


def plain_or(db, words: list[str], n: int) -> list[tuple[int, float]]:
    """The keyword ranking without common-word pruning: every chunk holding any word, by bm25."""
    expr = " OR ".join(f'"{w}"' for w in words)
    return [(r[0], -r[1]) for r in db.execute(
        "SELECT rowid, bm25(chunks_fts, 1.0, 0.5, 0.5) AS s FROM chunks_fts WHERE chunks_fts MATCH ? "
        "ORDER BY s, rowid LIMIT ?", (expr, n))]


def same_ranking(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> bool:
    """Equal ids and scores; equal scores may differ in the last bit (other summation order)."""
    def norm(x):
        return sorted(((cid, round(s, 9)) for cid, s in x), key=lambda r: (-r[1], r[0]))
    return norm(a) == norm(b)


def test_common_words_score_but_do_not_select(store):
    import sqlite3

    from blockcrawl.store.sqlite import keyword_ranked as _keyword_ranked

    db = sqlite3.connect(store)
    # "countries" is in 5 of the 10 chunks (common at a 45% share); "republic" in 4 (Germany, France, China)
    pruned = _keyword_ranked(db, "Republic countries", 20, common_share=0.45, common_min_rows=0)
    full = plain_or(db, ["republic", "countries"], 20)
    with_republic = {r[0] for r in db.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'republic'")}
    assert len(with_republic) == 4 and len(full) > len(pruned)
    # the chunks holding the rare word, in the plain query's order with its scores (so "countries"
    # still adds to them); the chunk holding only "countries" (in its context line) is left out
    assert same_ranking(pruned, [r for r in full if r[0] in with_republic])
    only_common = {r[0] for r in full} - with_republic
    assert only_common and not only_common & {r[0] for r in pruned}
    # only common words: nothing to select by, all of them ranked
    assert same_ranking(_keyword_ranked(db, "countries", 20, common_share=0.3, common_min_rows=0),
                        plain_or(db, ["countries"], 20))
    # under the default thresholds a store this small is never pruned
    assert same_ranking(_keyword_ranked(db, "Republic countries", 20), full)
    db.close()


def test_common_word_pruning_keeps_the_top_n(tmp_path):
    import sqlite3

    from blockcrawl.store.schema import ensure_index_schema as ensure_schema
    from blockcrawl.store.sqlite import keyword_ranked as _keyword_ranked

    db = sqlite3.connect(tmp_path / "many.db")
    db.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, text TEXT, heading_path TEXT, context TEXT DEFAULT '')")
    rows = []
    for i in range(1, 5001):  # alpha in 40% of the chunks, omega in 5%, tf and length vary
        words = [f"w{i % 97}", f"v{i % 89}"] * (1 + i % 4)
        if i % 5 < 2:
            words += ["alpha"] * (1 + i % 3)
        if i % 20 == 0:
            words += ["omega"] * (1 + i % 7 // 3)
        rows.append((i, " ".join(words), "[]"))
    db.executemany("INSERT INTO chunks(id, text, heading_path) VALUES (?,?,?)", rows)
    ensure_schema(db)
    for query in ("omega alpha", "alpha omega"):
        full = plain_or(db, query.split(), 400)
        # 250 chunks hold omega, all scoring above alpha's bound: the top 100 is the plain query's
        assert same_ranking(_keyword_ranked(db, query, 100, common_min_rows=500), full[:100])
        # deeper than that, the pruned list stops after the omega chunks; the plain one goes on with
        # chunks holding alpha alone, every one of them below every omega chunk
        deep = _keyword_ranked(db, query, 400, common_min_rows=500)
        assert len(deep) == 250 and same_ranking(deep, full[:250])
        assert min(s for _, s in deep) > max(s for _, s in full[250:])
        # 2000 chunks hold alpha: not more than the default minimum, so it is not common
        assert same_ranking(_keyword_ranked(db, query, 400), full)
    db.close()


def test_select_budget_keeps_the_rarest_words_selecting(tmp_path):
    """Past select_max_rows the rarer words select and the others only score: each chunk returned
    holds a selecting word and has the plain OR query's score; without a budget nothing changes."""
    import sqlite3

    from blockcrawl.store.schema import ensure_index_schema as ensure_schema
    from blockcrawl.store.sqlite import keyword_ranked as _keyword_ranked

    db = sqlite3.connect(tmp_path / "budget.db")
    db.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, text TEXT, heading_path TEXT, context TEXT DEFAULT '')")
    rows = []
    for i in range(1, 3001):  # rare in 30 chunks, mid in 300, often in 900 (none common by share)
        words = [f"w{i % 97}"] * (1 + i % 3)
        words += ["rare"] * (i % 100 == 0) + ["mid"] * (1 + i % 2) * (i % 10 == 3) + ["often"] * (i % 10 < 3)
        rows.append((i, " ".join(words), "[]"))
    db.executemany("INSERT INTO chunks(id, text, heading_path) VALUES (?,?,?)", rows)
    ensure_schema(db)
    holding = {w: {r[0] for r in db.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (w,))}
               for w in ("rare", "mid", "often")}
    assert [len(holding[w]) for w in ("rare", "mid", "often")] == [30, 300, 900]
    full = plain_or(db, ["often", "mid", "rare"], 3000)
    assert same_ranking(_keyword_ranked(db, "often mid rare", 3000, common_share=0.5, common_min_rows=10), full)  # 1230 rows fit
    for budget, selecting in ((400, {"rare", "mid"}), (100, {"rare"})):
        got = _keyword_ranked(db, "often mid rare", 3000, common_share=0.5, common_min_rows=10,
                              select_max_rows=budget)
        chosen = set().union(*(holding[w] for w in selecting))
        assert {c for c, _ in got} == chosen
        assert same_ranking(got, [r for r in full if r[0] in chosen])  # the common words still score
        top = _keyword_ranked(db, "often mid rare", 20, common_share=0.5, common_min_rows=10,
                              select_max_rows=budget)
        assert same_ranking(top, [r for r in full if r[0] in chosen][:20])  # cut to n in SQL, same order
    # a budget below every word's count: words are counted only up to it, so they tie and one of them
    # (the first in the query) selects alone
    got = {c for c, _ in _keyword_ranked(db, "often mid rare", 3000, common_share=0.5, common_min_rows=10,
                                         select_max_rows=10)}
    assert got == holding["often"]
    db.close()


def test_overlapping_single_thread_sections_restore_torch_threads():
    """A query's embedding and the vector scan run torch on one thread; torch's setting is
    process-wide, so two searches overlapping in serve's threads (A enters, B enters, A leaves,
    B leaves) must leave it as it was, not at B's saved 1."""
    import threading

    import torch

    from blockcrawl.index.threads import torch_single_thread

    torch.set_num_threads(2)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[int] = []

    def a() -> None:
        with torch_single_thread():
            a_in.set()
            b_in.wait(5)
            seen.append(torch.get_num_threads())
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with torch_single_thread():
            b_in.set()
            a_out.wait(5)
            seen.append(torch.get_num_threads())  # A has left: B still runs on one thread
    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert seen == [1, 1] and torch.get_num_threads() == 2


def test_load_vectors_joins_shared_and_missing_keys():
    import sqlite3

    import numpy as np

    from blockcrawl.store.schema import VECTOR_SCHEMA
    from blockcrawl.store.sqlite import load_vectors

    db = sqlite3.connect(":memory:")
    db.executescript("CREATE TABLE chunks(id INTEGER PRIMARY KEY, text TEXT);" + VECTOR_SCHEMA)
    a, b = np.arange(4, dtype=np.float32), -np.arange(4, dtype=np.float32)
    db.executemany("INSERT INTO embeddings(key, vec) VALUES (?,?)", [(b"ka", a.tobytes()), (b"kb", b.tobytes()),
                                                                   (b"unused", a.tobytes())])
    # chunks 3 and 7 have the same text (one vector); chunk 5's vector is missing
    db.executemany("INSERT INTO chunk_vectors(chunk_id, key) VALUES (?,?)",
                   [(7, b"ka"), (3, b"ka"), (4, b"kb"), (5, b"gone")])
    ids, m = load_vectors(db)
    assert ids.tolist() == [3, 4, 7] and np.array_equal(m, np.stack([a, b, a]))
    empty_ids, empty = load_vectors(sqlite3.connect(":memory:").executescript(
        "CREATE TABLE chunks(id INTEGER PRIMARY KEY);" + VECTOR_SCHEMA), 384)
    assert len(empty_ids) == 0 and empty.shape == (0, 384)


def test_half_scan_is_exact():
    from blockcrawl.index.vectors import HALF_EPS, HalfScan, _half_scores, exact_top

    rng = np.random.default_rng(3)
    centers = rng.standard_normal((40, 384)).astype(np.float32)
    m = centers[rng.integers(0, 40, 30000)] + 0.3 * rng.standard_normal((30000, 384)).astype(np.float32)
    m[100:150] = m[99]  # equal rows: ties at the top
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    hs = HalfScan(m)
    assert hs.half is not None  # 30k rows: the float16 path runs
    queries = np.vstack([m[[0, 99, 5000]] + 0.01, rng.standard_normal((3, 384)), centers[:3]]).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    for q in queries:
        # the eps the exactness rests on holds with a wide margin (a float16 accumulator would not)
        assert np.abs(_half_scores(hs.half, q) - m @ q).max() < HALF_EPS / 4
        for n in (1, 10, 100):
            pos, scores = hs.top(q, n)
            ref_pos, ref_scores = exact_top(m, q, n)
            # float32 scores, best first (summed in another order: equal to the last bits)
            assert np.allclose(scores, ref_scores, rtol=0, atol=1e-6)
            assert np.allclose(np.sort(m[pos] @ q), np.sort(m[ref_pos] @ q), rtol=0, atol=1e-6)
            assert len(set(pos.tolist())) == n
    # 3000 rows whose scores for q lie 1e-6 apart, far below float16's resolution (2.4e-4 at 0.3):
    # hundreds share the n-th float16 score, so rescoring just the float16 top n would miss rows
    q = queries[3]
    ortho = rng.standard_normal((3000, 384)).astype(np.float32)
    ortho -= np.outer(ortho @ q, q)
    ortho /= np.linalg.norm(ortho, axis=1, keepdims=True)
    cos = (0.3 + 1e-6 * rng.permutation(3000)).astype(np.float32)[:, None]
    band = np.vstack([cos * q + np.sqrt(1 - cos ** 2) * ortho, m[:27000]]).astype(np.float32)
    assert set(HalfScan(band).top(q, 100)[0].tolist()) == set(exact_top(band, q, 100)[0].tolist())
    # all rows alike: every row is a candidate, too many to rescore, one float32 scan answers
    flat = HalfScan(np.tile(m[:1], (25000, 1)))
    pos, scores = flat.top(queries[0], 5)
    assert len(pos) == 5 and np.allclose(scores, m[0] @ queries[0])
    assert HalfScan(m[:1000]).half is None  # small matrices: float32 only


@pytest.mark.parametrize("query,k,mode,msg", [
    ("", 5, "hybrid", "empty query"), ("   ", 5, "vector", "empty query"),
    ("x" * 1001, 5, "hybrid", "too long"), ("germany", 0, "hybrid", "k must"),
    ("germany", 101, "hybrid", "k must"), ("germany", 5, "fuzzy", "mode must"),
    ("x \udce9", 5, "hybrid", "not valid text"), ("caf\udce9", 5, "keyword", "not valid text"),
    ("caf\ufffd", 5, "vector", "not valid text"), ("\ud800\udc00", 5, "hybrid", "not valid text"),
])
def test_input_validation(store, query, k, mode, msg):
    with pytest.raises(SearchError, match=msg):
        search(store, query, k, mode)


def test_missing_and_unindexed_store(tmp_path):
    with pytest.raises(StoreMissing, match="no store"):
        Store(tmp_path / "nope.db", readonly=True)
    with pytest.raises(StoreMissing, match="no store"):
        search(tmp_path / "nope.db", "x")  # a path is opened for the call
    assert not (tmp_path / "nope.db").exists()  # a typo leaves no empty store behind
    fill(tmp_path / "raw.db", {"http://a.test/": PAGE1})
    with pytest.raises(NotIndexed, match="never indexed"), Store(tmp_path / "raw.db", readonly=True) as st:
        search(st, "x")
    with pytest.raises(StoreMissing):
        build_index(tmp_path / "nope.db")


def test_incremental_reindex(tmp_path):
    path = tmp_path / "inc.db"
    fill(path, PAGES)
    counter = CountingEmbedder(default_embedder())
    with Store(path, create=False) as st:  # as the CLI opens it: a writer, never creating
        first = build_index(st, embedder=counter)
    n_embedded = len(counter.texts)
    assert first.embedded == n_embedded > 0
    with Store(path) as st:
        n_heading = st.db.execute("SELECT count(*) FROM chunks c JOIN blocks b ON b.page_id = c.page_id "
                                  "AND b.position = c.block_position WHERE b.kind = 'heading'").fetchone()[0]
        n_chunks = st.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert n_embedded == n_chunks - n_heading

    # nothing changed: no model call at all
    counter.texts.clear()
    assert build_index(path, embedder=counter).embedded == 0 and counter.texts == []

    # re-crawl with one section changed: save_page keeps the other chunks (ids and vector mappings)
    changed = COOKING.replace("let it rise\nfor two hours", "let it rise overnight in the fridge")
    fill(path, {**PAGES, "http://site.test/cooking": changed})
    counter.texts.clear()
    st = build_index(path, embedder=counter)
    assert len(counter.texts) == st.embedded == 1 and "overnight" in counter.texts[0]
    assert st.reused == 0 and st.removed == 1  # nothing to map again: the kept chunks kept their vectors
    # every chunk's vector still belongs to its own text
    assert top(search(path, "mountains and lowlands of the German landscape", 1, "vector")) == \
        ["Europe Countries", "Germany"]
    assert "overnight" in search(path, "leave the dough to rise overnight", 1, "vector")[0].text
    assert top(search(path, "overnight fridge", 1, "keyword")) == ["Recipes", "Bread"]


def test_store_recreated_at_same_path(tmp_path):
    path = tmp_path / "again.db"
    fill(path, {"http://a.test/": PAGE1})
    build_index(path)
    assert search(path, "German landscape", 1, "vector")[0].heading_path[-1] == "Germany"  # cached now
    for f in tmp_path.glob("again.db*"):
        f.unlink()
    fill(path, {"http://b.test/": COOKING})  # same path, generation 1 again, other chunks
    build_index(path)
    hit = search(path, "bake bread", 1, "vector")[0]
    assert hit.url == "http://b.test/" and hit.heading_path == ["Recipes", "Bread"]


def test_other_model_reembeds(tmp_path):
    class Other(CountingEmbedder):
        pass

    path = tmp_path / "m.db"
    fill(path, {"http://a.test/": PAGE1})
    build_index(path, embedder=default_embedder())
    other = Other(default_embedder())
    other.name = "other-model"
    assert build_index(path, embedder=other).embedded == len(other.texts) > 0
    with pytest.raises(NotIndexed, match="other-model"):
        search(path, "Germany", 1, "vector")  # the default model's vectors are gone
    assert search(path, "Germany", 1, "vector", embedder=other)[0].heading_path[-1] == "Germany"


@pytest.mark.skipif(not ann_available(), reason="hnswlib not installed (pip install 'blockcrawl[ann]')")
def test_ann_index(tmp_path):
    from blockcrawl.retrieval import vector_cache

    path = tmp_path / "ann.db"
    fill(path, PAGES)
    build_index(path, ann=True)
    assert ann_paths(path)[0].is_file()
    queries = ("mountains and lowlands of the German landscape", "a database stored in a single file")
    by_ann = [[(h.heading_path, h.text) for h in search(path, q, 4, "vector")] for q in queries]
    assert vector_cache._cache[str(path.resolve())].ann is not None  # the graph answered
    assert by_ann[0][0][0] == ["Europe Countries", "Germany"] and by_ann[1][0][0] == ["Languages", "SQLite"]
    # a later index run keeps the graph up to date (incrementally: the re-crawled page's new chunk
    # ids are added, its old ones marked deleted), and it agrees with exact search
    fill(path, {**PAGES, "http://site.test/cooking": COOKING.replace("ten minutes", "twelve minutes")})
    build_index(path)
    assert json.loads(ann_paths(path)[1].read_text())["generation"] == "2"
    updated = [[(h.heading_path, h.text) for h in search(path, q, 4, "vector")] for q in queries]
    assert vector_cache._cache[str(path.resolve())].ann is not None
    bread = search(path, "how do I bake a loaf at home", 1, "vector")[0]
    assert "twelve minutes" in bread.text  # the new chunk, not the deleted one
    # --no-ann: the graph goes stale and search falls back to exact search, which agrees with it
    build_index(path, ann=False)
    exact = [[(h.heading_path, h.text) for h in search(path, q, 4, "vector")] for q in queries]
    assert vector_cache._cache[str(path.resolve())].ann is None
    assert exact == updated == by_ann


# ---- command line ---------------------------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.slow
def test_cli_errors_are_one_line(store, tmp_path):
    cases = [
        (["search", "--store", str(tmp_path / "none.db"), "x"], "no store at"),
        (["search", "--store", str(store), ""], "empty query"),
        (["search", "--store", str(store), "x", "-k", "500"], "k must be between 1 and 100"),
        (["index", "--store", str(tmp_path / "none.db")], "no store at"),
        (["serve", "--store", str(tmp_path / "none.db"), "--port", "0"], "no store at"),
    ]
    fill(tmp_path / "raw.db", {"http://a.test/": PAGE1})
    cases.append((["search", "--store", str(tmp_path / "raw.db"), "x"], "never indexed"))
    for args, msg in cases:
        r = cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and msg in lines[0], (args, r.stderr)


@pytest.mark.slow
def test_cli_index_and_search(tmp_path):
    path = tmp_path / "cli.db"
    fill(path, PAGES)
    r = cli("index", "--store", str(path), "--batch-size", "3")
    assert r.returncode == 0, r.stderr
    assert "embedded" in r.stderr and "chunk" in r.stderr  # the summary (tqdm draws on stderr too)
    r = cli("search", "--store", str(path), "how do I bake a loaf at home", "-k", "2", "--json")
    assert r.returncode == 0, r.stderr
    hits = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(hits) == 2 and hits[0]["heading_path"] == ["Recipes", "Bread"]
    r = cli("search", "--store", str(path), "Deutschland", "--mode", "keyword")
    assert r.returncode == 0 and "Europe Countries > Germany" in r.stdout and "http://site.test/europe" in r.stdout


def test_help_does_not_import_torch():
    code = ("import sys\nfrom blockcrawl.cli import main\nfor c in ('index','search','serve'):\n"
            "    try:\n        main([c, '--help'])\n    except SystemExit:\n        pass\n"
            "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "False False"


class _Slow:
    """A store whose keyword side is slow, or fails, or whose vector side fails: the rest delegated."""

    def __init__(self, inner, keyword_error=None, vector_error=None) -> None:
        self.inner, self.keyword_error, self.vector_error = inner, keyword_error, vector_error
        self.keyword_done = threading.Event()

    def keyword_ranked(self, *args, **kw):
        time.sleep(0.2)  # still running when the vector side fails
        try:
            if self.keyword_error:
                raise self.keyword_error
            return self.inner.keyword_ranked(*args, **kw)
        finally:
            self.keyword_done.set()

    def index_meta(self):
        meta = self.inner.index_meta()
        return {**meta, "model": "other"} if self.vector_error else meta

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_hybrid_keyword_side_runs_beside_the_vector_side_and_is_waited_for(reader):
    slow = _Slow(reader)
    assert [h.chunk_id for h in search(slow, "New Delhi capital", 5, "hybrid")] == \
        [h.chunk_id for h in search(reader, "New Delhi capital", 5, "hybrid")]
    # the keyword side's error reaches the caller, as it was raised
    with pytest.raises(KeyError, match="fts gone"):
        search(_Slow(reader, keyword_error=KeyError("fts gone")), "New Delhi capital", 5, "hybrid")
    # the vector side fails first (another model): the keyword side has finished before search returns
    failing = _Slow(reader, vector_error=True)
    with pytest.raises(NotIndexed, match="re-run index"):
        search(failing, "New Delhi capital", 5, "hybrid")
    assert failing.keyword_done.is_set()
    assert not [t for t in threading.enumerate() if t.name.startswith("blockcrawl-keyword")]

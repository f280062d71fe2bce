"""Search results users can act on: filters applied before the top-k cut, at most N hits per URL,
pagination, snippets, context. A hashing embedder (tests/retrieval/test_serve.py) keeps these fast: they check
what is returned, not how well the model ranks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from blockcrawl.index import build_index
from blockcrawl.records import Block, Chunk
from blockcrawl.retrieval import SearchError, SearchOptions, search
from blockcrawl.retrieval.format import format_hits
from blockcrawl.retrieval.snippets import snippet
from blockcrawl.retrieval.terms import query_terms
from blockcrawl.store import Store

from .test_serve import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
EMB = HashEmbedder()
FILLER = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
          "et dolore magna aliqua ut enim ad minim veniam quis nostrud exercitation ullamco laboris")


def page(st: Store, url: str, texts: list[str], title: str = "", blocks: bool = True) -> None:
    """One page, one block per text, one chunk per block (or no blocks at all: a plain-text page)."""
    bl = [Block(t, t, ("H",), "html/body/p", i, url, f"h{url}{i}") for i, t in enumerate(texts)]
    ch = [Chunk(t, url, ("H",), i, 0, f"h{url}{i}", len(t.split())) for i, t in enumerate(texts)]
    st.save_page(url, bl if blocks else [], ch, title=title)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("filters") / "site.db"
    with Store(path) as st:
        # 60 pages x 6 short chunks all about alpha: they fill any unfiltered top 300 of "alpha"
        for i in range(60):
            page(st, f"http://a.test/p{i:02d}", [f"alpha alpha alpha beta{i} n{j}" for j in range(6)])
        # one mention of alpha in a long chunk: ranked below all 360 of a.test
        page(st, "http://b.test/deep/x", [f"{FILLER} gamma alpha {FILLER} delta"], title="B deep")
        page(st, "http://www.b.test/y", [f"{FILLER} epsilon alpha {FILLER}"])
        page(st, "http://b.test:8080/z", [f"{FILLER} zeta alpha {FILLER}"])
        page(st, "http://notb.test/w", [f"{FILLER} eta alpha {FILLER}"])
        # a page with a long block cut into three chunks: context and snippets
        long = [f"first part {FILLER}", f"middle part with the crème brûlée {FILLER}", f"last part {FILLER}"]
        bl = [Block(" ".join(long), " ".join(long), ("Dessert",), "html/body/p", 0, "http://c.test/", "hc")]
        ch = [Chunk(t, "http://c.test/", ("Dessert",), 0, j, "hc", 40) for j, t in enumerate(long)]
        st.save_page("http://c.test/", bl, ch)
    build_index(path, embedder=EMB)
    return path


@pytest.fixture(scope="module")
def reader(store):
    with Store(store, readonly=True) as st:
        yield st


def urls(hits) -> list[str]:
    return [h.url for h in hits]


B_HOSTS = {"http://b.test/deep/x", "http://www.b.test/y", "http://b.test:8080/z"}


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_filters_apply_before_the_top_k_cut(reader, mode):
    # unfiltered, even 100 hits and no per-page limit hold nothing of b.test (a post-filter would find none)
    assert not {u for u in urls(search(reader, "alpha", 100, mode, EMB, per_page=None)) if "b.test" in u}
    hits = search(reader, "alpha", 10, mode, EMB, site="b.test")
    assert set(urls(hits)) == B_HOSTS  # subdomains in, notb.test out
    assert urls(search(reader, "alpha", 10, mode, EMB, site="B.Test:8080")) == ["http://b.test:8080/z"]
    assert urls(search(reader, "alpha", 10, mode, EMB, site="www.b.test")) == ["http://www.b.test/y"]
    assert urls(search(reader, "alpha", 10, mode, EMB, url_prefix="HTTP://B.test/deep/")) == ["http://b.test/deep/x"]
    both = search(reader, "alpha", 10, mode, EMB, site="b.test", url_prefix="http://b.test/")
    assert urls(both) == ["http://b.test/deep/x"]  # http://b.test:8080/z does not start with http://b.test/


def test_filters_that_match_nothing_give_no_hits(reader):
    for kw in ({"site": "nowhere.test"}, {"url_prefix": "http://a.test/zzz"}, {"site": "a.test", "url_prefix": "http://b.test/"}):
        for mode in ("keyword", "hybrid"):
            assert search(reader, "alpha", 5, mode, EMB, **kw) == []
    assert search(reader, "nosuchwordanywhere", 5, "keyword", EMB, site="b.test") == []


def test_per_page_still_returns_k_hits(reader):
    hits = search(reader, "alpha", 20, "keyword", EMB)  # default: at most 3 per URL
    assert len(hits) == 20 and max(urls(hits).count(u) for u in urls(hits)) == 3
    # 55 distinct URLs: the first 300 candidates (tier 2) hold only 50 pages, so deeper lists are read
    hits = search(reader, "alpha", 55, "keyword", EMB, per_page=1)
    assert len(hits) == 55 and len(set(urls(hits))) == 55
    hits = search(reader, "alpha", 55, "hybrid", EMB, per_page=1)
    assert len(hits) == 55 and len(set(urls(hits))) == 55
    assert len(set(urls(search(reader, "alpha", 12, "keyword", EMB, per_page=0)))) == 2  # no limit: 6 a page


def test_offset_pages_through_the_same_list(reader):
    whole = search(reader, "alpha", 30, "hybrid", EMB)
    pages = [search(reader, "alpha", 10, "hybrid", EMB, offset=o) for o in (0, 10, 20)]
    assert [h.chunk_id for p in pages for h in p] == [h.chunk_id for h in whole]
    assert [h.rank for h in pages[1]] == list(range(11, 21))
    # the last page may be short; past the end is an error, an empty filter result is not
    assert len(search(reader, "gamma", 5, "keyword", EMB)) == 1
    with pytest.raises(SearchError, match="offset 5 is past the end of the results \\(1 hits\\)"):
        search(reader, "gamma", 5, "keyword", EMB, offset=5)
    assert search(reader, "gamma", 5, "keyword", EMB, offset=0, site="nowhere.test") == []


@pytest.mark.parametrize("kw,msg", [
    ({"site": "https://b.test/"}, "host name"), ({"site": "b test"}, "not a valid host"), ({"site": ""}, "valid host"),
    ({"url_prefix": "b.test/deep"}, "scheme and host"), ({"url_prefix": "http:///x"}, "scheme and host"),
    ({"offset": -1}, "offset must"), ({"offset": 295}, "offset must"), ({"per_page": -1}, "per_page"),
    ({"context": "paragraph"}, "context must"), ({"context": 9}, "context must"), ({"context": "0"}, "context must"),
])
def test_unknown_filter_values_are_one_line_errors(reader, kw, msg):
    with pytest.raises(SearchError, match=msg):
        search(reader, "alpha", 10, "keyword", EMB, **kw)


def test_context_block_and_neighbours(reader):
    hit = search(reader, "crème", 1, "keyword", EMB, context="block")[0]
    assert hit.url == "http://c.test/" and hit.text.startswith("middle part")
    assert hit.context.startswith("first part") and "last part" in hit.context  # the whole block
    hit = search(reader, "creme", 1, "keyword", EMB, context=1)[0]
    parts = hit.context.split("\n\n")
    assert [p.split()[0] for p in parts] == ["first", "middle", "last"]
    hit = search(reader, "gamma", 1, "keyword", EMB, context=2)[0]
    assert hit.context == hit.text  # a one-chunk page: nothing around it
    assert search(reader, "gamma", 1, "keyword", EMB)[0].context is None


def test_context_block_on_a_store_without_blocks(tmp_path):
    path = tmp_path / "plain.db"
    with Store(path) as st:
        page(st, "http://p.test/", ["one plain alpha text", "two plain texts"], blocks=False)
    build_index(path, embedder=EMB)
    with pytest.raises(SearchError, match="has no blocks"):
        search(path, "alpha", 3, "keyword", EMB, context="block")
    assert search(path, "alpha", 3, "keyword", EMB, context=1)[0].context == "one plain alpha text\n\ntwo plain texts"


def test_snippet_marks_the_query_words(reader):
    hit = search(reader, "the creme brulee", 1, "keyword", EMB)[0]
    marked = [hit.snippet[a:b] for a, b in hit.highlights]
    assert marked == ["crème", "brûlée"]  # accents folded as FTS5 folds them; "the" is a stop word
    text = " ".join(["filler"] * 100) + " the needle is here " + " ".join(["more"] * 100)
    snip, hl = snippet(text, query_terms("needle"))
    assert snip.startswith("…") and snip.endswith("…") and len(snip) <= 242
    assert [snip[a:b] for a, b in hl] == ["needle"]
    assert snippet("short text", frozenset()) == ("short text", [])
    # the densest run of matches wins over the first one
    text = "x1 " + "pad " * 100 + "a b a b a b " + "pad " * 100
    snip, hl = snippet(text, frozenset({"a", "b", "x1"}))
    assert len(hl) == 6
    listing = format_hits([hit])
    assert "«crème» «brûlée»" in listing and "http://c.test/" in listing


def test_options_record_and_json(reader):
    opts = SearchOptions(k=2, mode="keyword", site="b.test", per_page=1, context="block")
    hits = search(reader, "alpha", options=opts)
    assert len(hits) == 2 and {h.url for h in hits} <= B_HOSTS
    d = hits[0].to_dict()
    assert d["rank"] == 1 and d["context"] == d["text"] and isinstance(d["highlights"], list)
    json.dumps(d)
    assert opts.checked().site == "b.test" and SearchOptions(context="3").checked().context == 3
    with pytest.raises(AttributeError):
        opts.k = 3  # frozen


def test_half_scan_restricted_to_rows():
    from blockcrawl.index.vectors import HalfScan, exact_top

    rng = np.random.default_rng(1)
    m = rng.standard_normal((30000, 64)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    hs = HalfScan(m)
    assert hs.half is not None
    q = m[7] + 0.1 * rng.standard_normal(64).astype(np.float32)
    for rows in (np.arange(0, 30000, 2), np.arange(100, 600), np.array([5, 9, 29999])):
        pos, scores = hs.top(q, 20, rows)
        ref, ref_scores = exact_top(m[rows], q, 20)
        assert pos.tolist() == rows[ref].tolist() and np.allclose(scores, ref_scores, atol=1e-6)
    assert len(hs.top(q, 5, np.zeros(0, dtype=np.int64))[0]) == 0


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], capture_output=True, text=True,
                          env=env, timeout=300, cwd=ROOT)


@pytest.mark.slow
def test_cli_options(tmp_path):
    from blockcrawl.index import default_embedder

    from ..support.search_pages import PAGES
    from .test_search import fill

    path = tmp_path / "cli.db"
    fill(path, PAGES)
    fill(path, {"http://other.test/europe": PAGES["http://site.test/europe"]})  # another pipeline: no dedup
    build_index(path, embedder=default_embedder())
    r = cli("search", "--store", str(path), "Germany Berlin", "--site", "other.test", "--json", "--context", "block")
    assert r.returncode == 0, r.stderr
    hits = [json.loads(line) for line in r.stdout.splitlines()]
    assert hits and {h["url"] for h in hits} == {"http://other.test/europe"} and len(hits) <= 3
    assert all(h["context"] for h in hits)
    r = cli("search", "--store", str(path), "Deutschland", "--mode", "keyword", "--url-prefix", "http://site.test/")
    assert r.returncode == 0 and "«Deutschland»" in r.stdout and "other.test" not in r.stdout
    r = cli("search", "--store", str(path), "Deutschland", "--mode", "keyword", "--per-page", "1", "--offset", "1")
    assert r.returncode == 0 and r.stdout.lstrip().startswith("2.")
    for args, msg in ((["--site", "http://x.test/"], "site must be a host name"),
                      (["--offset", "40", "--mode", "keyword"], "past the end"),
                      (["--context", "all"], "context must be")):
        r = cli("search", "--store", str(path), "Deutschland", *args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and msg in lines[0], (args, r.stderr)


def test_site_table_follows_new_pages(tmp_path):
    from blockcrawl.store.sqlite import _hostport, _strip_port

    assert _hostport("HTTP://u:p@B.Test:81/x?y") == "b.test:81" and _hostport("http://b.test?q#f") == "b.test"
    assert _strip_port("[::1]:8000") == "[::1]" and _strip_port("b.test:81") == "b.test"
    path = tmp_path / "grow.db"
    with Store(path) as st:
        page(st, "http://old.test/", ["alpha one"])
    build_index(path, embedder=EMB)
    with Store(path, readonly=True) as reader:
        assert search(reader, "alpha", 5, "keyword", EMB, site="new.test") == []
        with Store(path) as st:  # a crawl adds a page while the reader stays open (FTS triggers index it)
            page(st, "http://new.test/", ["alpha two"])
        assert urls(search(reader, "alpha", 5, "keyword", EMB, site="new.test")) == ["http://new.test/"]
        assert urls(search(reader, "alpha", 5, "keyword", EMB, site="[::1]")) == []
        for f in tmp_path.glob("grow.db*"):
            f.unlink()
    with Store(path) as st:  # another store at the same path, as many pages: its own host table
        page(st, "http://other.test/", ["alpha three"])
        page(st, "http://new.test/x", ["beta"])
    build_index(path, embedder=EMB)
    assert urls(search(path, "alpha", 5, "keyword", EMB, site="other.test")) == ["http://other.test/"]
    assert search(path, "alpha", 5, "keyword", EMB, site="new.test") == []

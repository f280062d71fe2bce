"""Context for answers bounded by tokens (SearchOptions.context_tokens, retrieval/context.py): the
rows around a table row, the rest of a paragraph around a piece of it, never over the budget.
Pages go through the real pipeline (extraction, chunking with the model's tokenizer); a hashing
embedder keeps the index fast (these tests check what comes back, not the ranking)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from blockcrawl.chunk.tokenize import default_tokenizer
from blockcrawl.index import build_index
from blockcrawl.pipeline import SitePipeline
from blockcrawl.retrieval import SearchError, search
from blockcrawl.retrieval.context import join_neighbours
from blockcrawl.store import Store

from .test_serve import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
EMB = HashEmbedder()
TOK = default_tokenizer()
ROWS = "".join(f"<tr><td>{1900 + i}</td><td>Player{i} Surname{i}</td><td>Club{i % 7}</td></tr>" for i in range(40))
PARA = " ".join(f"Sentence number {i} talks about the river valley and its mill{i}." for i in range(60))
HTML = ("<html><head><title>Champions</title></head><body><h1>Champions</h1><h2>Winners</h2>"
        "<table class=wikitable><tr><th>Year</th><th>Winner</th><th>Club</th></tr>" + ROWS + "</table>"
        "<h2>History</h2><p>" + PARA + "</p><h2>Other</h2><p>Short closing words about the league.</p></body></html>")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("context") / "site.db"
    pipe = SitePipeline(chunk_size=48, overlap=12)  # a few rows a chunk; the paragraph in many pieces
    with Store(path) as st:
        r = pipe.process(HTML, "http://t.test/")
        st.save_page("http://t.test/", r.blocks, r.chunks, title=r.title)
    build_index(path, embedder=EMB)
    return path


def tokens(text: str) -> int:
    return TOK.count([text])[0]


def test_rows_around_a_row_within_the_budget(store):
    hit = search(store, "Player20", 1, "keyword", EMB)[0]
    assert "Player20 Surname20" in hit.text and hit.context is None
    for budget in (60, 150, 400):
        ctx = search(store, "Player20", 1, "keyword", EMB, context_tokens=budget)[0].context
        assert ctx is not None and "Player20 Surname20" in ctx
        assert tokens(ctx) <= budget or ctx == hit.text, (budget, tokens(ctx))
        players = [int(n) for n in re.findall(r"Player(\d+) ", ctx)]
        assert players == sorted(players) and players == list(range(players[0], players[-1] + 1))  # reading order
        assert ctx.count("Winners: ") == 1  # the table's heading prefix once, not once per chunk
    small = search(store, "Player20", 1, "keyword", EMB, context_tokens=150)[0].context
    large = search(store, "Player20", 1, "keyword", EMB, context_tokens=400)[0].context
    assert len(re.findall("Player", small)) > len(re.findall("Player", hit.text))  # grew
    assert len(re.findall("Player", large)) > len(re.findall("Player", small))
    rows_small = [int(n) for n in re.findall(r"Player(\d+) ", small)]
    assert rows_small[0] < 20 < rows_small[-1]  # rows on both sides of the hit
    assert "History" not in large and "Sentence number" not in large  # another block waits for the block's rows


def test_paragraph_around_a_piece_without_repeats(store):
    hit = search(store, "mill30", 1, "keyword", EMB)[0]
    ctx = search(store, "mill30", 1, "keyword", EMB, context_tokens=300)[0].context
    assert ctx is not None and tokens(ctx) <= 300 and "mill30." in ctx and len(ctx) > len(hit.text)
    sentences = re.findall(r"Sentence number (\d+) ", ctx)
    # the pieces' overlap is dropped: every sentence once, in order, none missing between first and last
    assert [int(s) for s in sentences] == list(range(int(sentences[0]), int(sentences[-1]) + 1))
    assert ctx.count("History: ") <= 1
    # context block with a budget: the whole block when it fits, else grown inside the block only
    whole = search(store, "mill30", 1, "keyword", EMB, context="block")[0].context
    assert whole is not None and whole.startswith("History: Sentence number 0 ") and "mill59." in whole
    assert search(store, "mill30", 1, "keyword", EMB, context="block", context_tokens=8000)[0].context == whole
    part = search(store, "mill30", 1, "keyword", EMB, context="block", context_tokens=200)[0].context
    assert part is not None and tokens(part) <= 200 and "mill30." in part and "Player" not in part


def test_budget_grows_across_blocks_after_the_block(store):
    ctx = search(store, "closing words league", 1, "keyword", EMB, context_tokens=200)[0].context
    assert ctx is not None and ctx.endswith("Short closing words about the league.")
    assert "\n\nOther: Short closing" in ctx and "mill59." in ctx and tokens(ctx) <= 200  # the block before it


def test_neighbour_count_and_budget_together(store):
    one = search(store, "Player20", 1, "keyword", EMB, context=1)[0]
    bounded = search(store, "Player20", 1, "keyword", EMB, context=1, context_tokens=8000)[0]
    # at most one chunk either side whatever the budget; the bounded form drops the repeated prefix
    assert bounded.context is not None and one.context is not None
    assert set(re.findall(r"Player\d+ ", bounded.context)) == set(re.findall(r"Player\d+ ", one.context))
    assert len(bounded.context) < len(one.context)


def test_join_neighbours_keeps_other_blocks_apart():
    got = join_neighbours([(1, "H: alpha beta gamma delta"), (1, "H: gamma delta epsilon"), (2, "K: x")],
                          [("H",), ("H",), ("K",)])
    assert got == "H: alpha beta gamma delta epsilon\n\nK: x"
    # a caption in the prefix; a text that does not start with its heading is kept whole
    got = join_neighbours([(0, "T > Cap: r1: 1"), (0, "T > Cap: r2: 2"), (0, "other text")], [("T",)] * 3)
    assert got == "T > Cap: r1: 1 r2: 2 other text"


@pytest.mark.parametrize("value", [0, 15, 8001, "many", True])
def test_bad_budgets_are_one_line_errors(store, value):
    with pytest.raises(SearchError, match="context_tokens must"):
        search(store, "Player20", 1, "keyword", EMB, context_tokens=value)


def test_cli_context_tokens(store):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    # the hashing embedder is not the default model: keyword mode needs none
    r = subprocess.run([sys.executable, "-m", "blockcrawl", "search", "--store", str(store), "Player20", "-k", "1",
                        "--mode", "keyword", "--context-tokens", "150", "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    hit = json.loads(r.stdout.splitlines()[0])
    assert "Player20 Surname20" in hit["context"] and tokens(hit["context"]) <= 150
    r = subprocess.run([sys.executable, "-m", "blockcrawl", "search", "--store", str(store), "x", "--mode", "keyword",
                        "--context-tokens", "3"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == "blockcrawl search: context_tokens must be a number of tokens, 16-8000"

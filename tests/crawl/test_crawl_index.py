"""`crawl --index`: the live indexer embeds beside the crawl, politeness holds at the
server, and the crawl ends with the store searchable without a separate `index` run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from blockcrawl.retrieval import search
from blockcrawl.store import Store

from ..support.crawlsite import Route, Site, page

ROOT = Path(__file__).resolve().parents[2]
TOPICS = ["bread baking with sourdough", "the geography of Norway", "installing Python packages",
          "the rules of chess openings", "orbital mechanics of satellites", "growing tomatoes in pots"]


def topic_site(n: int) -> dict[str, Route]:
    routes = {"/robots.txt": Route("User-agent: *\n", ctype="text/plain")}
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        text = (f"Page {i} is about {topic}. " + f"Notes on {topic}, part {i}, with details and examples. " * 6)
        links = [f"/p{j}.html" for j in (i + 1, i + 2) if j < n]
        routes[f"/p{i}.html"] = Route(page(f"{topic.title()} {i}", links, text), delay=0.02)
    return routes


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)


def test_crawl_index_ends_searchable_and_polite(tmp_path):
    site = Site(topic_site(24)).start()
    store = tmp_path / "live.db"
    try:
        r = cli("crawl", site.origin + "/p0.html", "--store", str(store), "--index", "--delay", "0.1",
                "--no-progress", "--no-sitemaps")
    finally:
        site.stop()
    assert r.returncode == 0, r.stderr
    assert "indexed" in r.stderr and "embedded during the crawl" in r.stderr, r.stderr
    times = sorted(h.t for h in site.hits)
    assert len([h for h in site.hits if h.path.startswith("/p")]) == 24
    assert min(b - a for a, b in zip(times, times[1:])) >= 0.1  # --delay held at the server
    with Store(store, readonly=True) as st:
        meta = st.index_meta()
        ids, _ = st.load_vectors()
        assert "generation" in meta and len(ids) > 0
        hits = search(st, "sourdough bread", k=3, mode="vector")
    assert hits and "Sourdough" in hits[0].title
    r = cli("search", "--store", str(store), "Norway geography", "--json", "-k", "1")
    assert r.returncode == 0 and "Norway" in json.loads(r.stdout.splitlines()[0])["title"], r.stderr
    r = cli("index", "--store", str(store), "--quiet")  # nothing left for a separate run
    assert r.returncode == 0 and " 0 embedded" in r.stderr, r.stderr


def test_crawl_index_refuses_no_extract(tmp_path):
    r = cli("crawl", "http://127.0.0.1:9/", "--store", str(tmp_path / "x.db"), "--index", "--no-extract")
    assert r.returncode == 2 and "--index needs chunks" in r.stderr

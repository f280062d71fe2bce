"""Keeping a vector database in sync (docs/sync.md): a loopback site of N pages is crawled, indexed and
loaded into embedded Qdrant (examples/sync_qdrant.py); then 10% of its pages change, 5% go (404),
5% are added, and the site is recrawled and indexed. Timed: applying the changes feed to the
collection (`blockcrawl.changes(since=cursor, vectors=True)`) against reloading it from a full
`export --what chunks --vectors`, alone and with the recrawl + index both need; the two collections
are checked equal to the export.

    PYTHONPATH=. python bench/sync.py [N_PAGES]          (needs qdrant-client: pip install 'blockcrawl[sync]')

The embedder is a hashed bag of words of 384 dimensions (the default model's size), so the times are
the sync's, not the model's; the index step embeds only the new chunks either way.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from blockcrawl.crawl import CrawlConfig, crawl  # noqa: E402
from blockcrawl.feed import changes, export_vectors  # noqa: E402
from blockcrawl.index import build_index  # noqa: E402
from blockcrawl.pipeline import PipelineConfig  # noqa: E402
from blockcrawl.store import Store  # noqa: E402
from tests.support.syncsite import SyncSite  # noqa: E402


class HashEmbedder:
    name, dim = "hashed-words-384", 384

    def embed(self, texts: list[str]) -> np.ndarray:
        m = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                m[i, int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "big") % self.dim] += 1.0
        m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-9)
        return m


def example():
    spec = importlib.util.spec_from_file_location("sync_qdrant", ROOT / "examples" / "sync_qdrant.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    ex = example()
    spec, emb = PipelineConfig(tokenizer="words"), HashEmbedder()
    site = SyncSite(n)
    with tempfile.TemporaryDirectory() as d:
        db, qd, full = Path(d) / "site.db", Path(d) / "qdrant", Path(d) / "qdrant-full"
        try:
            with Store(db) as st:
                t = time.perf_counter()
                crawl(st, CrawlConfig(seeds=[site.origin + "/p0"], progress=False, workers=2), spec)
                build_index(st, embedder=emb)
                t_first = time.perf_counter() - t
            t = time.perf_counter()
            load = ex.sync(str(db), qd)
            t_load = time.perf_counter() - t
            rng = np.random.default_rng(7)
            pages = rng.permutation(n)
            changed, removed = pages[: n // 10], pages[n // 10: n // 10 + n // 20]
            for i in changed:
                site.edit(int(i), int(rng.integers(3)))
            site.status.update({int(i): 404 for i in removed})
            added = [f"{site.origin}/p{j}" for j in range(n, n + n // 20)]
            site.n = n + n // 20
            with Store(db) as st:
                t = time.perf_counter()
                stats = crawl(st, CrawlConfig(seeds=added, recrawl=True, progress=False, workers=2, max_depth=0), spec)
                build_index(st, embedder=emb)
                t_recrawl = time.perf_counter() - t
        finally:
            site.stop()
        with Store(db, readonly=True) as st:  # blockcrawl's side alone: reading the feed, reading the export
            t = time.perf_counter()
            feed = list(changes(st, since=load["cursor"], vectors=True))
            t_feed = time.perf_counter() - t
            t = time.perf_counter()
            want = {int(r["id"]): r for r in export_vectors(st)}
            t_export = time.perf_counter() - t
        t = time.perf_counter()
        delta = ex.sync(str(db), qd)
        t_delta = time.perf_counter() - t
        t = time.perf_counter()
        reload = ex.sync(str(db), full)  # a new collection from the full export: what a reload costs
        t_full = time.perf_counter() - t
        got, got_full = ex.dump(qd), ex.dump(full)
        same = got == want and got_full == got
    print(json.dumps({
        "pages": n, "changed": len(changed), "removed": len(removed), "added": len(added),
        "recrawl": {"unchanged": stats.unchanged, "changed": stats.changed, "gone": stats.gone, "new": stats.new},
        "chunks": len(want), "first_crawl_index_s": round(t_first, 2), "first_load_s": round(t_load, 2),
        "first_load_ops": load["operations"],
        "recrawl_index_s": round(t_recrawl, 2), "changes_sync_s": round(t_delta, 2), "changes_ops": delta["operations"],
        "full_reload_s": round(t_full, 2), "full_reload_ops": reload["operations"],
        "feed_read_s": round(t_feed, 3), "feed_records": len(feed), "export_read_s": round(t_export, 3),
        "feed_vs_export": round(t_feed / t_export, 3),
        "sync_vs_reload": round(t_delta / t_full, 3),
        "with_recrawl": round((t_recrawl + t_delta) / (t_recrawl + t_full), 3),
        "collections_equal_export": same}, indent=1))


if __name__ == "__main__":
    main()

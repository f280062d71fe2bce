"""Benchmark: `blockcrawl index` of this tree against an older checkout on the same crawled site
(fewer chunks and faster embedding together).

"Before" is an older checkout (--old, default /tmp/old; e.g.
`git worktree add --detach /tmp/old 2165af1`: the tree before the token chunker and the int8 embedder), run with
PYTHONPATH pointing at it; "now" is this tree. The same site (bench/crawl_index.py's wiki site:
wtq-dev's Wikipedia pages from /work/shared/bench/data/wtq-dev, and/or its docs fixture) is served
on 127.0.0.1 and crawled once by each tree (each with its own chunker), then each store is copied
and indexed by its own tree, old and new alternating for --rounds rounds. Prints chunks, embedded
texts, `index` wall seconds (best of the rounds), chunks/s and the ratio old / new.

Run: PYTHONPATH=. python bench/index_speed.py [--old /tmp/old] [--sites wiki,docs] [--pages 40]
     [--docs-pages 150] [--rounds 2]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, WTQ_DEV  # noqa: E402 - first: it puts the repository on sys.path
from crawl_index import serve, wiki_site  # noqa: E402
from docsfixture import docs_site  # noqa: E402


def run(tree: Path, cmd: list[str]) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "blockcrawl", *cmd], capture_output=True, text=True, env=env,
                       timeout=7200, cwd=str(tree))
    if r.returncode != 0:
        raise RuntimeError(f"{tree}: {r.stderr[-2000:]}")
    return time.perf_counter() - t, r.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", type=Path, default=Path("/tmp/old"))
    ap.add_argument("--data", type=Path, default=WTQ_DEV)
    ap.add_argument("--sites", default="wiki,docs")
    ap.add_argument("--pages", type=int, default=40, help="wtq-dev pages (wiki site)")
    ap.add_argument("--docs-pages", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if not (args.old / "blockcrawl").is_dir():
        print(f"no old tree at {args.old}: git worktree add --detach {args.old} 2165af1", file=sys.stderr)
        return 2
    trees = {"before": args.old.resolve(), "now": ROOT}
    lines = ["| site | tree | chunks | embedded | `index` s | chunks/s | before / now |", "|---|---|---:|---:|---:|---:|---:|"]
    for site in args.sites.split(","):
        pages = wiki_site(args.data, args.pages) if site == "wiki" else docs_site(args.docs_pages)
        srv, _ = serve(pages)
        base = f"http://127.0.0.1:{srv.server_address[1]}/"
        with tempfile.TemporaryDirectory() as d:
            crawled: dict[str, Path] = {}
            for name, tree in trees.items():
                crawled[name] = Path(d) / f"{site}-{name.replace(' ', '').replace('#', '')}.db"
                run(tree, ["crawl", base, "--store", str(crawled[name]), "--no-progress", "--no-sitemaps"])
            srv.shutdown()
            best: dict[str, tuple[float, int, int]] = {}
            for r in range(args.rounds):
                for name, tree in (trees.items() if r % 2 == 0 else reversed(list(trees.items()))):
                    store = Path(d) / f"run-{r}.db"
                    shutil.copy(crawled[name], store)
                    wall, err = run(tree, ["index", "--store", str(store), "--quiet"])
                    m = re.search(r"(\d+) chunks, (\d+) embedded", err)
                    chunks, embedded = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
                    print(f"  {site} round {r} {name}: {wall:.1f} s, {chunks} chunks, {embedded} embedded "
                          f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr)
                    if name not in best or wall < best[name][0]:
                        best[name] = (wall, chunks, embedded)
                    store.unlink()
        old_wall = best["before"][0]
        for name in trees:
            wall, chunks, embedded = best[name]
            lines.append(f"| {site} ({len(pages) - 1} pages) | {name} | {chunks} | {embedded} | {wall:.1f} | "
                         f"{embedded / wall:.1f} | {old_wall / wall:.2f} |")
    print(f"\nbest of {args.rounds} alternated rounds, load {os.getloadavg()[0]:.1f} at the end\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

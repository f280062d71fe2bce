"""`blockcrawl search`: the best chunks of an indexed store for a query."""
from __future__ import annotations

import argparse
import json
import sys

MODES = ("hybrid", "vector", "keyword")  # repeated here: importing the search package costs numpy

EXAMPLES = """examples:
  blockcrawl search --store site.db "geography of Germany"
  blockcrawl search --store site.db "Bundesrepublik" --mode keyword -k 3
  blockcrawl search --store site.db "largest population" --json | jq .url

modes: hybrid (default) fuses the vector and keyword rankings by reciprocal rank fusion (k=60);
vector ranks by cosine similarity of all-MiniLM-L6-v2 embeddings; keyword by FTS5 bm25.
JSON Lines fields: score, url, heading_path, text, title, chunk_id, vector_rank, keyword_rank.
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("search", help="search an indexed store by meaning and keywords",
                       description="Print the chunks of an indexed store that best answer a query.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", help="what to look for (1-1000 characters)")
    p.add_argument("--store", required=True, metavar="PATH", help="a store indexed by 'blockcrawl index'")
    p.add_argument("-k", type=int, default=10, metavar="K", help="number of hits, 1-100 (default 10)")
    p.add_argument("--mode", choices=MODES, default="hybrid", help="ranking (default hybrid)")
    p.add_argument("--json", action="store_true", help="JSON Lines, one hit per line")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import BlockcrawlError
    from ..retrieval import format_hits, search
    from ..store import Store

    try:
        with Store(args.store, readonly=True) as store:  # read-only: works during a crawl, on a 0444 file
            hits = search(store, args.query, args.k, args.mode)
    except BlockcrawlError as e:
        print(f"blockcrawl search: {e}", file=sys.stderr)
        return 2
    out = sys.stdout
    if args.json:
        for h in hits:
            out.write(json.dumps(h.to_dict(), ensure_ascii=False) + "\n")
        return 0
    if not hits:
        print("no hits", file=sys.stderr)
        return 0
    out.write(format_hits(hits))
    return 0

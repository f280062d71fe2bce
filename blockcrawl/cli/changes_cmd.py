"""`blockcrawl changes`: what crawls changed since a point, as JSON Lines another index applies
(blockcrawl.feed; docs/sync.md)."""
from __future__ import annotations

import argparse
import json
import sys
import time


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .crawl_cmd import _duration

    p = sub.add_parser("changes", help="what crawls changed since a crawl, a time or a cursor, as JSON Lines",
                       description="The chunk operations (upsert/delete, in order) that bring an index made from "
                                   "an earlier state of the store up to now; applying them twice is harmless. "
                                   "With --what pages, one line per page touched: added, changed, unchanged or "
                                   "removed (with the reason).",
                       epilog="examples:\n"
                              "  blockcrawl changes --store site.db --since last          (what the newest crawl did)\n"
                              "  blockcrawl changes --store site.db --since 3 --vectors  (since crawl 3, with vectors)\n"
                              "  blockcrawl changes --store site.db --since 2026-12-01T00:00Z --what pages --diff\n"
                              "  blockcrawl changes --store site.db --crawls             (the crawl runs, JSON Lines)\n"
                              "  blockcrawl changes --store site.db --compact 30d        (drop older changes)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, metavar="PATH|URL",
                   help="store written by 'blockcrawl crawl': an SQLite file or a postgresql:// URL")
    p.add_argument("--since", default="last", metavar="WHEN",
                   help="'last' (the newest crawl's changes, default), a crawl id (what later crawls changed; 0: "
                        "everything), cursor:N (after a record's seq), or an ISO 8601 date/date-time (UTC)")
    p.add_argument("--what", choices=("chunks", "pages"), default="chunks",
                   help="chunk operations (default) or a summary per page")
    p.add_argument("--vectors", action="store_true",
                   help="chunks: each upsert with its vector (float32) and model name; the store must be indexed")
    p.add_argument("--diff", action="store_true", help="pages: a unified diff of each page's main text")
    p.add_argument("--crawls", action="store_true", help="list the crawl runs (id, started, ended, finished)")
    p.add_argument("--compact", type=_duration, metavar="DURATION",
                   help="drop the changes of crawls that ended longer ago than this (e.g. 30d), never the newest's")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..feed import changes
    from ..store import open_store

    if args.diff and args.what != "pages":
        raise ConfigError("--diff is for --what pages")
    if args.vectors and args.what != "chunks":
        raise ConfigError("--vectors is for --what chunks")
    if args.compact is not None:
        with open_store(args.store, create=False, who="blockcrawl changes --compact") as store:
            n = store.compact_changes(time.time() - args.compact)
        print(f"blockcrawl changes: {n} changes compacted", file=sys.stderr)
        return 0
    with open_store(args.store, readonly=True) as store:
        out = sys.stdout
        if args.crawls:
            for c in store.crawls():
                out.write(json.dumps(c) + "\n")
            return 0
        for rec in changes(store, args.since, what=args.what, vectors=args.vectors, diff=args.diff):
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return 0

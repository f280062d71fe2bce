"""`blockcrawl export`: the store's pages, blocks or chunks as JSON Lines on standard output."""
from __future__ import annotations

import argparse
import json
import sys

WHAT = ("chunks", "pages", "blocks", "frontier")  # store.protocols.RECORD_KINDS, without importing the store


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("export", help="write the store's pages, blocks or chunks as JSON Lines",
                       description="Export what a crawl stored, one JSON object per line.",
                       epilog="examples:\n  blockcrawl export --store site.db > chunks.jsonl\n"
                              "  blockcrawl export --store site.db --what pages | jq -r .url\n"
                              "  blockcrawl export --store site.db --what frontier   (state/error per URL)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, metavar="PATH", help="SQLite store written by 'blockcrawl crawl'")
    p.add_argument("--format", choices=("jsonl",), default="jsonl", help="output format (default jsonl)")
    p.add_argument("--what", choices=WHAT, default="chunks", help="what to export (default chunks)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..store import Store

    # read-only, no lock: exports during a crawl (its last commit) and from a read-only store;
    # a missing, foreign or damaged file is a StoreError: one line, exit 2
    with Store(args.store, readonly=True) as store:
        out = sys.stdout
        for rec in store.records(args.what):
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return 0

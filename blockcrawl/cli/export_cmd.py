"""`blockcrawl export`: the store's pages, blocks or chunks as JSON Lines on standard output."""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

QUERIES = {
    "pages": ("SELECT p.id, p.url, p.final_url, p.status, p.content_type, p.title, p.content_hash, p.fetched_at, "
              "(SELECT count(*) FROM blocks b WHERE b.page_id = p.id), "
              "(SELECT count(*) FROM chunks c WHERE c.page_id = p.id) FROM pages p ORDER BY p.id",
              ("id", "url", "final_url", "status", "content_type", "title", "content_hash", "fetched_at",
               "n_blocks", "n_chunks")),
    "blocks": ("SELECT b.id, p.url, b.position, b.kind, b.heading_path, b.tag_path, b.text, b.hash "
               "FROM blocks b JOIN pages p ON p.id = b.page_id ORDER BY b.page_id, b.position",
               ("id", "url", "position", "kind", "heading_path", "tag_path", "text", "hash")),
    "chunks": ("SELECT id, url, block_position, chunk_index, heading_path, text, block_hash, n_tokens "
               "FROM chunks ORDER BY id",
               ("id", "url", "block_position", "chunk_index", "heading_path", "text", "block_hash", "n_tokens")),
    "frontier": ("SELECT url, depth, kind, state, attempts, status, error, via FROM frontier ORDER BY id",
                 ("url", "depth", "kind", "state", "attempts", "status", "error", "via")),
}
STATES = {0: "queued", 1: "in_flight", 2: "done", 3: "failed", 4: "skipped"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write the store's pages, blocks or chunks as JSON Lines",
                       description="Export what a crawl stored, one JSON object per line.",
                       epilog="examples:\n  blockcrawl export --store site.db > chunks.jsonl\n"
                              "  blockcrawl export --store site.db --what pages | jq -r .url\n"
                              "  blockcrawl export --store site.db --what frontier   (state/error per URL)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, metavar="PATH", help="SQLite store written by 'blockcrawl crawl'")
    p.add_argument("--format", choices=("jsonl",), default="jsonl", help="output format (default jsonl)")
    p.add_argument("--what", choices=tuple(QUERIES), default="chunks", help="what to export (default chunks)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.store)
    if not path.is_file():
        print(f"blockcrawl export: no store at {path}", file=sys.stderr)
        return 2
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        sql, cols = QUERIES[args.what]
        rows = db.execute(sql)
    except sqlite3.Error as e:
        print(f"blockcrawl export: cannot read {path}: {e}", file=sys.stderr)
        return 2
    out = sys.stdout
    for row in rows:
        rec = dict(zip(cols, row))
        if "heading_path" in rec:
            rec["heading_path"] = json.loads(rec["heading_path"])
        if args.what == "frontier":
            rec["state"] = STATES.get(rec["state"], rec["state"])
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return 0

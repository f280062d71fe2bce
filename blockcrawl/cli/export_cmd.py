"""`blockcrawl export`: the store's pages, blocks or chunks as JSON Lines on standard output."""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from ..store import AnyStore

WHAT = ("chunks", "pages", "blocks", "frontier")  # store.protocols.RECORD_KINDS, without importing the store


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("export", help="write the store's pages, blocks or chunks as JSON Lines",
                       description="Export what a crawl stored, one JSON object per line.",
                       epilog="examples:\n  blockcrawl export --store site.db > chunks.jsonl\n"
                              "  blockcrawl export --store site.db --what pages | jq -r .url\n"
                              "  blockcrawl export --store site.db --what frontier   (state/error per URL)\n"
                              "  blockcrawl export --store site.db --what pages --format markdown > site.md\n"
                              "  blockcrawl export --store site.db --vectors > chunks-with-vectors.jsonl\n"
                              "  blockcrawl export --store site.db --what pages --format llms.txt > llms.txt",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, metavar="PATH|URL",
                   help="store written by 'blockcrawl crawl': an SQLite file or a postgresql:// URL")
    p.add_argument("--format", choices=("jsonl", "markdown", "llms.txt"), default="jsonl",
                   help="output format (default jsonl); markdown (with --what pages): each page's main "
                        "content as the crawl stored it, links, lists and tables kept; llms.txt (with --what "
                        "pages): an llms.txt of the site (title, summary, a section per page kind)")
    p.add_argument("--what", choices=WHAT, default="chunks", help="what to export (default chunks)")
    p.add_argument("--vectors", action="store_true",
                   help="chunks: each with its vector (float32) and the model's name (the store must be indexed): "
                        "a first load of another index, kept up to date by 'blockcrawl changes --vectors'")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..store import open_store

    if args.format in ("markdown", "llms.txt") and args.what != "pages":
        raise ConfigError(f"--format {args.format} exports pages: use --what pages")
    if args.vectors and (args.what != "chunks" or args.format != "jsonl"):
        raise ConfigError("--vectors exports chunks: use --what chunks (JSON Lines)")
    # read-only, no lock: exports during a crawl (its last commit) and from a read-only store;
    # a missing, foreign or damaged file is a StoreError: one line, exit 2
    with open_store(args.store, readonly=True) as store:
        out = sys.stdout
        if args.format == "markdown":
            _markdown(store, out)
            return 0
        if args.format == "llms.txt":
            _llms(store, out)
            return 0
        pages = args.what == "pages"
        if args.vectors:
            from ..feed import export_vectors
        for rec in export_vectors(store) if args.vectors else store.records(args.what):
            if pages:  # the page type (records.PAGE_KINDS) by its name; "other" when not typed
                rec["page_type"] = rec.get("kind") or "other"
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return 0


def _llms(store: AnyStore, out: TextIO) -> None:
    """An llms.txt of the crawl (blockcrawl.llms): pages with their section headings."""
    from ..llms import build

    pages = list(store.records("pages"))
    titles = {str(p["url"]): str(p.get("title") or "") for p in pages}
    headings: dict[str, list[str]] = {}
    for b in store.records("blocks"):
        url = str(b["url"])
        if b["kind"] == "heading" and str(b["text"]) != titles.get(url) and len(headings.get(url, ())) < 5:
            headings.setdefault(url, []).append(str(b["text"]))
    out.write(build(pages, headings))


def _markdown(store: AnyStore, out: TextIO) -> None:
    """Each page as its stored Markdown; a page stored without it (an older store, --no-extract)
    is rebuilt from its blocks, headings and text only, and stderr says how many were."""
    from ..extraction.markdown import blocks_markdown
    from ..plaintext import plain

    rebuilt = total = 0
    for url, title, md, blocks in store.page_markdown():
        total += 1
        if md is None:
            rebuilt += 1
            md = blocks_markdown(blocks)
        # no terminal control characters from the pages (plaintext.plain)
        out.write(plain(f"<!-- {url} -->\n" + (md or (f"# {title}\n" if title else "")) + "\n"))
    if rebuilt:
        print(f"blockcrawl export: {rebuilt} of {total} pages had no stored Markdown (stored before "
              "schema 2 or with --no-extract): written from their blocks, headings and text only",
              file=sys.stderr)

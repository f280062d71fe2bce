"""`blockcrawl search`: the best chunks of an indexed store for a query."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..records import PAGE_KINDS

MODES = ("hybrid", "vector", "keyword")  # repeated here: importing the search package costs numpy

EXAMPLES = """examples:
  blockcrawl search --store site.db "geography of Germany"
  blockcrawl search --store site.db "Bundesrepublik" --mode keyword -k 3
  blockcrawl search --store site.db "largest population" --json | jq .url
  blockcrawl search --store site.db "install" --site docs.example.com --per-page 1
  blockcrawl search --store site.db "install" --url-prefix https://example.com/guide/ --offset 10
  blockcrawl search --store site.db "rate limits" -k 3 --context block --json   # for an LLM prompt
  blockcrawl search --store site.db "who won in 1961" -k 5 --context-tokens 300  # rows around each row
  blockcrawl search --store news.db "election" --kind article --lang en --since 2024-03-01

modes: hybrid (default) fuses the vector and keyword rankings by reciprocal rank fusion (k=60);
vector ranks by cosine similarity of all-MiniLM-L6-v2 embeddings; keyword by FTS5 bm25.
Filters apply before the best k are picked. The listing shows a snippet with the query's words
marked «so» (bold on a terminal); JSON has the whole text.
JSON Lines fields: score, url, heading_path, text, title, chunk_id, vector_rank, keyword_rank, rank,
snippet, highlights ([start, end) character offsets into snippet), context.
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("search", help="search an indexed store by meaning and keywords",
                       description="Print the chunks of an indexed store that best answer a query.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", help="what to look for (1-1000 characters)")
    p.add_argument("--store", required=True, metavar="PATH|URL",
                   help="a store indexed by 'blockcrawl index': an SQLite file or a postgresql:// URL")
    p.add_argument("-k", type=int, default=10, metavar="K", help="number of hits, 1-100 (default 10)")
    p.add_argument("--mode", choices=MODES, default="hybrid", help="ranking (default hybrid)")
    p.add_argument("--site", metavar="HOST", help="only pages on HOST or its subdomains (a port must match)")
    p.add_argument("--url-prefix", metavar="URL", help="only pages whose URL starts with URL")
    p.add_argument("--kind", choices=PAGE_KINDS,
                   help="only pages of this type (the crawl's page info: article, documentation, service, "
                        "forum, collection, listing, product; stores crawled before typed pages "
                        "article, listing or other)")
    p.add_argument("--lang", metavar="TAG", help="only pages in this language (en also takes en-gb)")
    p.add_argument("--since", metavar="DATE", help="only pages published on or after DATE (ISO 8601: 2024-03-01)")
    p.add_argument("--offset", type=int, default=0, metavar="N",
                   help="skip the first N hits: the next page of results (offset + k at most 300)")
    p.add_argument("--per-page", type=int, default=3, metavar="N",
                   help="at most N hits from one web page (default 3, except for a best page that stands "
                        "clear of the rest; 0 = no limit)")
    p.add_argument("--context", metavar="block|N",
                   help="also print the hit's whole block, or N (1-5) neighbouring chunks either side")
    p.add_argument("--context-tokens", type=int, metavar="N",
                   help="bound the context to N tokens (16-8000), grown from the hit outward: its block's "
                        "rows or paragraph first, then the rest of its page (with --context, within that)")
    p.add_argument("--json", action="store_true", help="JSON Lines, one hit per line")
    p.add_argument("--local", action="store_true",
                   help="search in this process even when a 'blockcrawl serve' for the store is running "
                        "(by default search asks it: the same hits, without loading the model)")
    p.set_defaults(func=run)


def _from_serve(args: argparse.Namespace) -> list[dict[str, Any]] | str | None:
    """The hits (as the API's dicts) from a running serve for the store, its error message for bad
    input, or None: no usable serve (retrieval.running says when), search here."""
    from ..retrieval import running

    rec = running.find(args.store)
    if rec is None:
        return None
    ans = running.ask(rec, args.query, {
        "k": args.k, "mode": args.mode, "site": args.site, "url_prefix": args.url_prefix, "offset": args.offset,
        "per_page": args.per_page, "context": args.context, "kind": args.kind, "lang": args.lang,
        "since": args.since, "context_tokens": args.context_tokens})
    if ans is None:
        return None
    return ans.error if ans.status == 400 else ans.hits


def run(args: argparse.Namespace) -> int:
    from ..errors import BlockcrawlError
    from ..retrieval.options import SearchError, validate

    try:  # before asking a serve too: the one check every search path shares
        validate(args.query, 1, args.mode)
    except SearchError as e:
        print(f"blockcrawl search: {e}", file=sys.stderr)
        return 2
    remote = None if args.local else _from_serve(args)
    if isinstance(remote, str):
        print(f"blockcrawl search: {remote}", file=sys.stderr)
        return 2
    from ..retrieval import Hit, SearchOptions, format_hits, search

    if remote is not None:
        fields = set(Hit.__dataclass_fields__)
        hits = [Hit(**{k: v for k, v in d.items() if k in fields}) for d in remote]
        for h in hits:
            h.highlights = [(int(a), int(b)) for a, b in h.highlights]
    else:
        from ..store import open_store

        opts = SearchOptions(args.k, args.mode, args.site, args.url_prefix, args.offset, args.per_page,
                             args.context, args.kind, args.lang, args.since, args.context_tokens)
        try:
            with open_store(args.store, readonly=True) as store:  # read-only: works during a crawl, on a 0444 file
                hits = search(store, args.query, options=opts)
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
    bold = out.isatty()
    out.write(format_hits(hits, marks=("\033[1m", "\033[0m") if bold else ("«", "»")))
    return 0

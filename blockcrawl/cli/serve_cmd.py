"""`blockcrawl serve`: JSON search API and a small web page over an indexed store."""
from __future__ import annotations

import argparse
import sys

EXAMPLES = """examples:
  blockcrawl serve --store site.db                  then open http://127.0.0.1:8000/
  blockcrawl serve --store site.db --port 0         any free port (printed on stderr)
  curl 'http://127.0.0.1:8000/api/search?q=geography+of+Germany&k=3&mode=hybrid'

API: GET /api/search?q=TEXT&k=1..100&mode=hybrid|vector|keyword -> {"hits": [{score, url,
heading_path, text, title, chunk_id, vector_rank, keyword_rank}]}; bad input -> 400 {"error": ...}.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve a search page and JSON API over an indexed store",
                       description="Serve GET /api/search and a search page at / for a store indexed "
                                   "by 'blockcrawl index'.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, metavar="PATH", help="an indexed store")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free port)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print("blockcrawl serve: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    from ..errors import BlockcrawlError
    from ..retrieval.serve import make_server

    try:
        server = make_server(args.store, args.host, args.port)
    except BlockcrawlError as e:
        print(f"blockcrawl serve: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"blockcrawl serve: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    print(f"blockcrawl serve: http://{host}:{port}/ (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0

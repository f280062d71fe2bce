"""`blockcrawl serve`: JSON search API and a small web page over an indexed store."""
from __future__ import annotations

import argparse
import signal
import sys

EXAMPLES = """examples:
  blockcrawl serve --store site.db                  then open http://127.0.0.1:8000/
  blockcrawl serve --store site.db --port 0         any free port (printed on stderr)
  curl 'http://127.0.0.1:8000/api/search?q=geography+of+Germany&k=3&mode=hybrid'
  blockcrawl serve --store site.db --host 0.0.0.0 --allowed-host search.lan   on the network (no authentication)

API: GET /api/search?q=TEXT&k=1..100&mode=hybrid|vector|keyword (and site, url_prefix, kind, lang,
since, offset, per_page, context, context_tokens as in 'blockcrawl search') -> {"hits": [{score, url,
heading_path, text, title, chunk_id, rank, snippet, highlights, context, ...}]}; bad input -> 400
{"error": ...}; busy (more than --threads searches running and 64 waiting) -> 503 with Retry-After.
The page at / has the same filters, paging, and the query's words highlighted.
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="serve a search page and JSON API over an indexed store",
                       description="Serve GET /api/search and a search page at / for a store indexed "
                                   "by 'blockcrawl index'.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, metavar="PATH|URL", help="an indexed store: an SQLite file or a postgresql:// URL")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free port)")
    p.add_argument("--threads", type=int, default=4, metavar="N",
                   help="searches run at once (default 4; they are CPU bound, so about 2x the cores)")
    p.add_argument("--max-connections", type=int, default=1000, metavar="N",
                   help="open connections + running requests before new requests get 503 (default 1000)")
    p.add_argument("--keep-alive", type=float, default=5.0, metavar="SECONDS",
                   help="close a keep-alive connection idle this long (default 5)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="also answer requests whose Host header is NAME (repeatable; '*': any name). "
                        "By default only localhost, 127.0.0.1, [::1] and the --host address are answered, "
                        "others get 421: a web page cannot read the store by pointing its own name at "
                        "this machine (DNS rebinding)")
    p.add_argument("--quiet", action="store_true", help="no access log line per request on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print("blockcrawl serve: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    for name, value in (("--threads", args.threads), ("--max-connections", args.max_connections),
                        ("--keep-alive", args.keep_alive)):
        if not value > 0:
            print(f"blockcrawl serve: {name} must be positive", file=sys.stderr)
            return 2
    from ..errors import BlockcrawlError
    from ..retrieval import running
    from ..retrieval.serve import Limits, make_server

    limits = Limits(search_threads=args.threads, max_connections=args.max_connections, keep_alive=args.keep_alive)
    token = running.new_token()
    try:
        server = make_server(args.store, args.host, args.port, limits=limits, access_log=not args.quiet,
                             ident=token, allowed_hosts=tuple(args.allowed_host))
    except BlockcrawlError as e:
        print(f"blockcrawl serve: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"blockcrawl serve: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    # `blockcrawl search --store` on this machine asks this serve while it runs (retrieval.running)
    record = running.publish(args.store, host, port, token)
    if not _loopback(host):
        print(f"blockcrawl serve: warning: listening on {host}, not loopback, without authentication: "
              "anyone who can reach this port can read the whole store", file=sys.stderr)
    print(f"blockcrawl serve: http://{host}:{port}/ (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        signal.signal(signal.SIGTERM, _terminated)  # `kill PID`: the record is removed too
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if record is not None:
            running.withdraw(record, token)
        server.server_close()
    return 0


def _loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt

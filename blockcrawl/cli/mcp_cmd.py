"""`blockcrawl mcp`: an indexed store as search tools for LLM agents (Model Context Protocol)."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server import MCPServer

EXAMPLES = """examples:
  blockcrawl mcp --store site.db                    stdio: the agent starts this command itself
  blockcrawl mcp --store site.db --http --port 8765 streamable HTTP at http://127.0.0.1:8765/mcp

  An MCP client's configuration (Claude Desktop, Cursor, ...):
    {"mcpServers": {"site": {"command": "blockcrawl", "args": ["mcp", "--store", "/path/to/site.db"]}}}

tools:
  search(query, k=5, mode, site, url_prefix, kind, lang, since, per_page=3, context_tokens)
      -> {"query", "hits": [{rank, score, url, title, heading_path, text, context}]}
  fetch_page(url, start=0, max_chars=20000) -> {url, title, text, start, total_chars, truncated}
  list_sites(limit=100) -> {"sites": [{site, pages}], "total_sites"}
  crawl(url, max_pages=20)  only with --allow-crawl: crawl that site into the store, then index it

Read-only: the store is opened read-only (a crawl may write to it meanwhile). Over HTTP the SDK
checks Host and Origin against loopback names when --host is a loopback address; there is no
authentication: do not listen on a public address. Needs the mcp package: pip install 'blockcrawl[mcp]'.
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="serve an indexed store as search tools for LLM agents (MCP)",
                       description="Serve the Model Context Protocol over stdio (default) or streamable HTTP: "
                                   "tools search, fetch_page and list_sites over a store indexed by 'blockcrawl index'.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, metavar="PATH|URL", help="an indexed store: an SQLite file or a postgresql:// URL")
    p.add_argument("--http", action="store_true", help="streamable HTTP at /mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="with --http: address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="with --http: port (default 8765; 0 = any free port)")
    p.add_argument("--allow-crawl", action="store_true",
                   help="add a crawl tool: the agent may crawl sites of its choosing into the store (off by default)")
    p.add_argument("--crawl-max-pages", type=int, default=50, metavar="N",
                   help="with --allow-crawl: at most N pages a crawl call (default 50)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print("blockcrawl mcp: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    if args.crawl_max_pages < 1:
        print("blockcrawl mcp: --crawl-max-pages must be positive", file=sys.stderr)
        return 2
    try:
        import mcp.server  # noqa: F401
    except ImportError:
        print("blockcrawl mcp: needs the mcp package (pip install 'blockcrawl[mcp]')", file=sys.stderr)
        return 2
    from ..errors import BlockcrawlError
    from ..retrieval.mcp_server import build_server, clean_stdin, open_for_mcp, stdout_to_stderr
    from ..retrieval.serve import hide_location

    try:
        with stdout_to_stderr():  # over stdio, stdout is the wire: nothing else may reach it
            store, embedder = open_for_mcp(args.store)
    except BlockcrawlError as e:
        print(f"blockcrawl mcp: {e}", file=sys.stderr)
        return 2
    try:
        public = None if not args.http else (lambda m: hide_location(m, store.location))
        server = build_server(store, embedder, public=public, allow_crawl=args.allow_crawl,
                              crawl_max_pages=args.crawl_max_pages, location=str(args.store))
        if not args.http:
            clean_stdin()
            server.run("stdio")
            return 0
        return _serve_http(args, server)
    except KeyboardInterrupt:
        return 0
    finally:
        store.close()


def _serve_http(args: argparse.Namespace, server: MCPServer) -> int:
    import uvicorn

    from ..retrieval.serve import _listen

    try:
        sock = _listen(args.host, args.port, 128)
    except OSError as e:
        print(f"blockcrawl mcp: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    app = server.streamable_http_app(host=args.host)  # the SDK's DNS-rebinding guard for a loopback host
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"blockcrawl mcp: http://{shown}:{port}/mcp (Ctrl-C to stop)", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, lifespan="on", log_config=None, access_log=False, server_header=False,
                            proxy_headers=False, loop="asyncio", ws="none", timeout_graceful_shutdown=5)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0

"""`blockcrawl serve`: a JSON search API and a one-file web page, on the standard library's
ThreadingHTTPServer (a search is a few ms of numpy + SQLite; no framework needed).

GET /                       the search page (page.html, self-contained)
GET /api/search?q=&k=&mode= {"query", "mode", "k", "hits": [{score, url, heading_path, text, title, chunk_id, ...}]}
Bad input -> 400 {"error": "..."}; unknown path -> 404; store not indexed -> 503.
"""
from __future__ import annotations

import json
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..index.embed import Embedder, default_embedder
from ..errors import BlockcrawlError, NotIndexed, StoreMissing
from .hybrid import MAX_K, MODES, SearchError, search

MAX_URL = 8192


def _page() -> bytes:
    return resources.files(__package__).joinpath("page.html").read_bytes()


class SearchServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr: tuple[str, int], store: Path, embedder: Embedder) -> None:
        self.store, self.embedder, self.page = store, embedder, _page()
        super().__init__(addr, Handler)


class Handler(BaseHTTPRequestHandler):
    server: SearchServer
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: object) -> None:  # one short line per request on stderr
        sys.stderr.write(f"serve: {self.address_string()} {fmt % args}\n")

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: object) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode(), "application/json; charset=utf-8")

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        if len(self.path) > MAX_URL:
            return self._json(HTTPStatus.REQUEST_URI_TOO_LONG, {"error": "request URL too long"})
        url = urlsplit(self.path)
        if url.path in ("/", "/index.html"):
            return self._send(200, self.server.page, "text/html; charset=utf-8")
        if url.path != "/api/search":
            return self._json(404, {"error": f"no such path: {url.path}"})
        try:
            params = parse_qs(url.query, keep_blank_values=True, strict_parsing=False, errors="strict")
        except (ValueError, UnicodeDecodeError):
            return self._json(400, {"error": "malformed query string"})
        q = params.get("q", [""])[-1]
        mode = params.get("mode", ["hybrid"])[-1] or "hybrid"
        k_raw = params.get("k", ["10"])[-1] or "10"
        try:
            k = int(k_raw)
        except ValueError:
            return self._json(400, {"error": f"k must be an integer between 1 and {MAX_K}"})
        try:
            hits = search(self.server.store, q, k, mode, self.server.embedder)
        except SearchError as e:
            return self._json(400, {"error": str(e)})
        except (NotIndexed, StoreMissing) as e:
            return self._json(503, {"error": str(e)})
        except BlockcrawlError as e:
            return self._json(500, {"error": str(e)})
        self._json(200, {"query": q, "mode": mode, "k": k, "hits": [h.to_dict() for h in hits]})

    def do_POST(self) -> None:
        self._json(405, {"error": "use GET"})


def make_server(store: str | Path, host: str = "127.0.0.1", port: int = 8000,
                embedder: Embedder | None = None, warm: bool = True) -> SearchServer:
    """A bound server (port 0 picks a free one: see server.server_address). Checks the store first
    and, with warm, loads the model and vectors so the first query is as fast as the next."""
    store = Path(store)
    emb = embedder or default_embedder()
    if warm:
        search(store, "warm up", 1, "hybrid", emb)  # raises StoreMissing / NotIndexed early
    return SearchServer((host, port), store, emb)


def serve_in_thread(server: SearchServer) -> threading.Thread:
    t = threading.Thread(target=server.serve_forever, name="blockcrawl-serve", daemon=True)
    t.start()
    return t


__all__ = ["MODES", "SearchServer", "make_server", "serve_in_thread"]

"""`blockcrawl serve`: a JSON search API and a one-file web page, on Starlette and uvicorn.

GET /                       the search page (page.html, self-contained, under a strict CSP)
GET /api/search?q=&k=&mode=&site=&url_prefix=&offset=&per_page=&context=&kind=&lang=&since=
                            {"query", "mode", "k", "offset", "per_page", "site", "url_prefix", "context",
                             "kind", "lang", "since",
                             "hits": [{score, url, heading_path, text, title, chunk_id, rank, snippet,
                                       highlights, context, ...}]}
GET /api/changes?since=&limit=&vectors=   the changes feed, paged (retrieval.changes_api)
Bad input -> 400 {"error": "..."}; unknown path -> 404; other methods -> 405; URL over 8 KiB -> 414;
store not indexed -> 503; too many searches queued -> 503 with Retry-After; anything else -> 500.

Why not the standard library's ThreadingHTTPServer any more (measured on it, 2 cores): an unread POST
body was parsed as the next request (request smuggling); keep-alive requests took 44 ms against 2.5 ms
on a new connection (headers and body left in two segments: Nagle against delayed ACK); its listen
backlog of 5 overflowed 59 times under 20 connections; 500 idle connections held 500 threads for good;
and the Server header told the Python version. Here one event loop holds the connections (an idle one
costs a few KiB, no thread), searches run on a small fixed pool of threads (they are CPU bound: numpy,
SQLite and the model; more threads than cores only make every search slower), and the limits below
bound what a client can hold.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..errors import BlockcrawlError, NotIndexed, StoreMissing
from ..index.embed import Embedder, default_embedder
from .options import MAX_K, MODES, PER_PAGE, SearchError, SearchOptions
from .running import TOKEN_HEADER
from .searcher import search

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_URL = 8192  # request target (path + query); the page caps q at 1,000 characters, so 8 KiB is ample


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client may hold. Defaults sized for a search box on a small machine."""

    keep_alive: float = 5.0  # s an idle keep-alive connection stays open (uvicorn's timer)
    head_timeout: float = 10.0  # s from connect, or from a request's first byte, to the end of its head
    max_head: int = 32 * 1024  # bytes of request line + headers (browsers send ~1 KiB); over -> 431
    max_connections: int = 1000  # open connections + running requests; beyond, requests get 503
    search_threads: int = 4  # searches at once (2 cores: 4 keeps both busy while one waits on SQLite)
    max_queued: int = 64  # searches waiting for a thread; one more gets 503 at once instead of a long wait
    backlog: int = 2048  # listen queue (a queue of 5 overflows under 20 connections)


# ---- the page and its headers ---------------------------------------------------------------------

def _page() -> bytes:
    return resources.files(__package__).joinpath("page.html").read_bytes()


def _csp_hashes(page: bytes, tag: str) -> list[str]:
    """'sha256-...' of every inline <tag> element's text, so the CSP allows exactly the page's own
    script and style and nothing injected beside them (no 'unsafe-inline'). page.html is a static
    file, never templated with data, so hashing it at start-up hashes only our own code."""
    found = re.findall(rb"<" + tag.encode() + rb">(.*?)</" + tag.encode() + rb">", page, re.DOTALL)
    return [f"'sha256-{base64.b64encode(hashlib.sha256(body).digest()).decode()}'" for body in found]


def page_csp(page: bytes) -> str:
    scripts, styles = _csp_hashes(page, "script"), _csp_hashes(page, "style")
    return "; ".join([
        "default-src 'none'",
        "script-src " + (" ".join(scripts) or "'none'"),
        "style-src " + (" ".join(styles) or "'none'"),
        "connect-src 'self'",  # the page's fetch("/api/search")
        "form-action 'self'", "base-uri 'none'", "frame-ancestors 'none'",
        # DOM sinks that parse strings as markup or code (innerHTML, eval, ...) throw: the page only uses
        # textContent, so this costs nothing and turns a future innerHTML slip into an error, not an XSS
        "require-trusted-types-for 'script'", "trusted-types 'none'",
    ])


API_CSP = "default-src 'none'; frame-ancestors 'none'"  # JSON is never a document


def _headers(csp: str) -> dict[str, str]:
    return {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": csp,
            "Referrer-Policy": "no-referrer", "Cross-Origin-Opener-Policy": "same-origin",
            "Cross-Origin-Resource-Policy": "same-origin", "X-Frame-Options": "DENY"}


API_HEADERS = _headers(API_CSP)


def _json(status: int, obj: object, extra: dict[str, str] | None = None) -> Response:
    body = json.dumps(obj, ensure_ascii=False).encode()
    return Response(body, status, {**API_HEADERS, **(extra or {})}, "application/json; charset=utf-8")


def hide_location(message: str, location: str) -> str:
    """message with the store's location cut to its last part: an error body must not tell a client
    where the store lives on the server ("/srv/data/site.db: ..." -> "site.db: ...")."""
    name = Path(location).name or "the store"
    fulls = {location} if "://" in location else {location, str(Path(location).resolve())}
    for full in sorted(fulls, key=len, reverse=True):
        if full and full != name:
            message = message.replace(full, name)
    return message


# ---- searching: the one call into the search stage -------------------------------------------------

class Searcher:
    """Runs searches on a fixed pool of threads, with a bounded queue in front of it.

    The only place serve calls search(): make_server's warm-up and every request go through run()."""

    def __init__(self, store: str | Path, embedder: Embedder, threads: int, max_queued: int) -> None:
        from ..store import open_store

        # opened once, read-only: each search thread borrows its own pooled connection
        # (an open store answers a keyword query in ~0.1 ms; by path, opening costs ~2.5 ms)
        self.store = open_store(store, readonly=True)
        self.embedder = embedder
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="blockcrawl-search")
        self.limit = threads + max_queued  # running + waiting; the event loop alone counts it: no lock
        self.pending = 0

    def public(self, message: str) -> str:
        return hide_location(message, self.store.location)

    def run(self, q: str, opts: SearchOptions) -> list[dict[str, Any]]:
        return [h.to_dict() for h in search(self.store, q, embedder=self.embedder, options=opts)]

    def busy(self) -> bool:
        return self.pending >= self.limit

    async def submit(self, q: str, opts: SearchOptions) -> list[dict[str, Any]]:
        self.pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, self.run, q, opts)
        finally:
            self.pending -= 1

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.store.close()


# ---- the application -------------------------------------------------------------------------------

def build_app(searcher: Searcher, page: bytes) -> Starlette:
    page_headers = _headers(page_csp(page))

    async def show_page(request: Request) -> Response:
        return Response(page, 200, page_headers, "text/html; charset=utf-8")

    async def api_search(request: Request) -> Response:
        try:
            params = dict(parse_qsl(request.scope["query_string"].decode("utf-8"), keep_blank_values=True,
                                    errors="strict"))  # the last value of a repeated name wins
        except (ValueError, UnicodeDecodeError):
            return _json(400, {"error": "malformed query string"})
        q = params.get("q", "")
        mode = params.get("mode", "") or "hybrid"
        ints: dict[str, int] = {}
        for name, default, what in (("k", 10, f"an integer between 1 and {MAX_K}"),
                                    ("offset", 0, "an integer >= 0"),
                                    ("per_page", PER_PAGE, "an integer >= 0 (0: no limit)")):
            raw = params.get(name, "")
            if raw and not (raw.isascii() and raw.isdigit()):  # int() also takes "1_0", "+5", " 5", "٥"
                return _json(400, {"error": f"{name} must be {what}"})
            ints[name] = int(raw) if raw else default
        # an empty parameter is an absent one (a form's blank field)
        site, prefix, context, kind, lang, since = (params.get(n) or None for n in (
            "site", "url_prefix", "context", "kind", "lang", "since"))
        raw_tokens = params.get("context_tokens", "")
        if raw_tokens and not (raw_tokens.isascii() and raw_tokens.isdigit()):
            return _json(400, {"error": "context_tokens must be a number of tokens"})
        opts = SearchOptions(ints["k"], mode, site, prefix, ints["offset"], ints["per_page"], context, kind, lang,
                             since, int(raw_tokens) if raw_tokens else None)
        try:
            opts = opts.checked()  # bad values answered here, without taking a search thread
        except SearchError as e:
            return _json(400, {"error": str(e)})
        if searcher.busy():
            return _json(503, {"error": "too many searches waiting, retry shortly"}, {"Retry-After": "1"})
        try:
            hits = await searcher.submit(q, opts)
        except SearchError as e:
            return _json(400, {"error": str(e)})
        except (NotIndexed, StoreMissing) as e:
            return _json(503, {"error": searcher.public(str(e))})
        except BlockcrawlError as e:  # a damaged store: the whole message to the log, its gist to the client
            sys.stderr.write(f"serve: search failed: {e}\n")
            return _json(500, {"error": "the store could not answer this search: " + searcher.public(str(e))})
        return _json(200, {"query": q, "mode": mode, "k": opts.k, "offset": opts.offset,
                           "per_page": opts.per_page or 0, "site": opts.site, "url_prefix": opts.url_prefix,
                           "context": opts.context, "context_tokens": opts.context_tokens, "kind": opts.kind,
                           "lang": opts.lang, "since": opts.since, "hits": hits})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return _json(404, {"error": f"no such path: {request.scope['path'][:200]}"})
        return _json(exc.status_code, {"error": exc.detail}, dict(exc.headers or {}))

    async def internal_error(request: Request, exc: Exception) -> Response:
        return _json(500, {"error": "internal error"})

    from .changes_api import changes_endpoint  # GET /api/changes: the changes feed, paged by a cursor

    routes = [Route("/", show_page), Route("/index.html", show_page), Route("/api/search", api_search),
              Route("/api/changes", changes_endpoint(searcher, _json))]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: internal_error})
    # Starlette answers /api/search/ with a 307 to the path without the slash, the absolute URL built
    # from the request's Host header: a forged Host got a redirect to any host, and the redirect went
    # out without the headers above. Unknown paths are 404, slash or not.
    app.router.redirect_slashes = False
    return app


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def host_name(header: bytes) -> str:
    """The name in a Host header, lower case, without port, brackets or a trailing dot
    ("[::1]:8000" -> "::1", "LocalHost.:80" -> "localhost")."""
    h = header.decode("latin-1").strip().lower()
    if h.count(":") > 1 and not h.startswith("["):  # a bare IPv6 address (a --host or --allowed-host value)
        return h
    if h.startswith("["):
        h = h[1:h.find("]")] if "]" in h else h[1:]
    else:
        name, sep, port = h.rpartition(":")
        if sep and (port.isdigit() or not port):
            h = name
    return h.rstrip(".")


def allowed_hosts(bound: str, extra: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The Host names serve answers: loopback names, the address it is bound to, and extra ("*" in
    extra: any Host, returned as None)."""
    if "*" in extra:
        return None
    return LOOPBACK_NAMES | {host_name(bound.encode("latin-1"))} | {host_name(e.encode("latin-1")) for e in extra}


def host_allowed(headers: list[tuple[bytes, bytes]], allowed: frozenset[str] | None) -> bool:
    """Whether a request's Host header names this server. A web page can point its own name at
    127.0.0.1 (DNS rebinding) and then read this server as same-origin; its requests carry that
    name as Host, so a name not in allowed is refused. No Host at all (HTTP/1.0 tools) is not a
    browser's request and passes; two Host headers are refused."""
    if allowed is None:
        return True
    hosts = [v for n, v in headers if n == b"host"]
    if not hosts:
        return True
    return len(hosts) == 1 and host_name(hosts[0]) in allowed


class Guard:
    """ASGI wrapper in front of the routes: the Host header checked (421 for a name this server
    does not answer to), GET/HEAD only, a cap on the URL, one access-log line.

    A request that carries a body (nothing here reads one) is answered with Connection: close. uvicorn
    frames bodies correctly, so the body is never parsed as a request; closing is defence in depth for
    when a proxy in front frames it differently (the desync behind real smuggling attacks)."""

    def __init__(self, app: Starlette, access_log: bool, ident: str | None = None,
                 hosts: frozenset[str] | None = LOOPBACK_NAMES) -> None:
        self.app, self.access_log, self.hosts = app, access_log, hosts
        # sent back on every answer: `blockcrawl search` checks it against the serve's record
        # (retrieval.running) before it takes hits from this port
        self.ident = [(TOKEN_HEADER.lower().encode(), ident.encode())] if ident else []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan is off and websockets are disabled: nothing else comes
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        has_body = any(n == b"transfer-encoding" or (n == b"content-length" and v.strip() != b"0")
                       for n, v in headers)
        status = 0

        async def send_(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if self.ident:
                    message["headers"] = [*message.get("headers", []), *self.ident]
                if has_body:
                    message["headers"] = [*message.get("headers", []), (b"connection", b"close")]
            await send(message)

        target_len = len(scope["raw_path"]) + len(scope["query_string"])
        if not host_allowed(headers, self.hosts):
            await _json(421, {"error": "this server does not answer to that Host name "
                                       "(blockcrawl serve --allowed-host NAME adds one)"})(scope, receive, send_)
        elif scope["method"] not in ("GET", "HEAD"):
            response = _json(405, {"error": "use GET"}, {"Allow": "GET, HEAD"})
            await response(scope, receive, send_)
        elif target_len > MAX_URL:
            await _json(414, {"error": "request URL too long"})(scope, receive, send_)
        else:
            await self.app(scope, receive, send_)
        if self.access_log:
            client = scope.get("client") or ("-", 0)
            qs = scope["query_string"].decode("latin-1")
            target = scope["raw_path"].decode("latin-1") + ("?" + qs if qs else "")
            sys.stderr.write(f"serve: {client[0]} \"{scope['method']} {target[:300]}\" {status}\n")


# ---- the connection: uvicorn's httptools protocol with the limits it lacks --------------------------

class Protocol(HttpToolsProtocol):
    """uvicorn's protocol plus what it lacks: a deadline for the request head (uvicorn arms no timer on
    a new connection, and its keep-alive timer is cancelled by the first byte, so a client that sends
    nothing, or trickles a header a byte a second, would hold its connection for ever: slowloris), a cap on
    the head's size (llhttp has none: httptools buffers one header line however long), and TCP_NODELAY
    set explicitly (asyncio sets it too; with Nagle's algorithm on, a keep-alive request waits 44 ms).

    The size is counted per socket read, so a head can overrun max_head by one read before it is
    refused; memory stays bounded all the same.

    What it relies on in uvicorn is not public (the parser callbacks on_message_begin and
    on_headers_complete, self.cycle.response_complete, self.loop, self.transport): ASGI middleware
    only sees a request once its head is complete, too late for both limits. pyproject pins uvicorn
    to the tested range and tests/retrieval/test_serve.py::test_uvicorn_is_in_the_range_the_protocol_was_tested_on
    checks the names (docs/decisions/0100-serve-uvicorn-protocol.md)."""

    limits = Limits()  # a subclass per server sets its own

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._head_bytes = 0
        self._in_head = True
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.limits.head_timeout, self._head_expired)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self._reply_and_close(408, b"request head not received in time")

    def _reply_and_close(self, status: int, msg: bytes) -> None:
        """Answer and close; or only close while an earlier pipelined request is still being answered
        (a reply now would arrive before that answer and be taken for it)."""
        if self.cycle is not None and not self.cycle.response_complete:
            self.transport.close()
            return
        reason = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}[status]
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
                             b"connection: close\r\n\r\n%s" % (status, reason, len(msg), msg))
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_head:
                self._disarm_head_timer()
                self._reply_and_close(431, b"request head too large")
                return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._head_bytes = True, 0
        self._arm_head_timer()  # kept if already armed: the first byte buys no extra time

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm_head_timer()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)


# ---- the server ------------------------------------------------------------------------------------

class SearchServer:
    """A bound, listening server. serve_forever() runs uvicorn on the calling thread until shutdown()
    is called from another thread (or Ctrl-C, on the main thread); server_close() frees the socket and
    the search threads. The same four names as the standard library's servers, so callers need not care."""

    def __init__(self, sock: socket.socket, searcher: Searcher, limits: Limits, access_log: bool,
                 ident: str | None = None, hosts: tuple[str, ...] = ()) -> None:
        self.socket, self.searcher, self.limits = sock, searcher, limits
        self.server_address: tuple[str, int] = sock.getsockname()[:2]
        self.hosts = allowed_hosts(self.server_address[0], hosts)
        self.app = build_app(searcher, _page())
        protocol = type("Protocol", (Protocol,), {"limits": limits})
        config = uvicorn.Config(
            Guard(self.app, access_log, ident, self.hosts), http=protocol, ws="none", lifespan="off", loop="asyncio",
            log_config=None, access_log=False, server_header=False, proxy_headers=False,
            limit_concurrency=limits.max_connections, backlog=limits.backlog,
            timeout_keep_alive=limits.keep_alive,  # type: ignore[arg-type]  # a float works: call_later
            timeout_graceful_shutdown=5)
        self._server = uvicorn.Server(config)
        self._done = threading.Event()

    def serve_forever(self) -> None:
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self._done.set()

    def shutdown(self, timeout: float = 30) -> None:
        self._server.should_exit = True
        self._done.wait(timeout)

    def server_close(self) -> None:
        self.socket.close()
        self.searcher.close()


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def make_server(store: str | Path, host: str = "127.0.0.1", port: int = 8000,
                embedder: Embedder | None = None, warm: bool = True, limits: Limits | None = None,
                access_log: bool = True, ident: str | None = None,
                allowed_hosts: tuple[str, ...] = ()) -> SearchServer:
    """A bound server (port 0 picks a free one: see server.server_address). Checks the store first
    and, with warm, loads the model and vectors so the first query is as fast as the next.
    ident: a token sent in the X-Blockcrawl-Serve header of every answer (retrieval.running).
    allowed_hosts: Host names answered besides loopback names and the bound address ("*": any);
    a request with another Host is answered 421 (DNS rebinding)."""
    limits = limits or Limits()
    searcher = Searcher(store, embedder or default_embedder(), limits.search_threads, limits.max_queued)
    try:  # StoreMissing / StoreError above (opening), NotIndexed here
        if warm:
            searcher.run("warm up", SearchOptions(1))  # raises StoreMissing / NotIndexed early
        sock = _listen(host, port, limits.backlog)
    except BaseException:
        searcher.close()
        raise
    return SearchServer(sock, searcher, limits, access_log, ident, allowed_hosts)


def serve_in_thread(server: SearchServer) -> threading.Thread:
    """Run server on a daemon thread; returns once it accepts connections."""
    t = threading.Thread(target=server.serve_forever, name="blockcrawl-serve", daemon=True)
    t.start()
    while not server._server.started and t.is_alive():
        server._done.wait(0.01)
    return t


__all__ = ["MODES", "Limits", "SearchServer", "make_server", "serve_in_thread"]

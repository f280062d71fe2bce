"""A real HTTP/1.1 server on 127.0.0.1 serving a small fixture site for the crawler tests.

Routes are a dict path -> Route (status, headers, body, delay); every request is logged with its
arrival time, so politeness is checked from the server's side. Run standalone (used by the
kill -9 test): python tests/support/crawlsite.py PORT LOGFILE N_PAGES
"""
from __future__ import annotations

import gzip
import json
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Route:
    body: bytes | str = b""
    status: int = 200
    ctype: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # called with the number of earlier requests to this path; returns a Route to use instead
    dynamic: object = None


@dataclass
class Hit:
    t: float
    path: str
    ua: str
    inflight: int
    status: int


# Linux: the kernel stamps each received packet (SO_TIMESTAMPNS, 35 on every Linux architecture
# but sparc/parisc; Python has no constant for it). The handler thread of a request may start
# late on a loaded machine (15-20 ms measured at load 10 on 2 cores), which made two requests'
# recorded gap shorter than their real one; the packet's kernel time is when it reached the server.
SO_TIMESTAMPNS = 35


def arrival_stamp(conn: socket.socket) -> float | None:
    """time.monotonic() of the moment the next request's first byte reached this host's kernel
    (MSG_PEEK: the bytes stay for the request parser); None where the platform does not say."""
    try:
        _, anc, _, _ = conn.recvmsg(1, socket.CMSG_SPACE(16), socket.MSG_PEEK)
    except OSError:
        return None
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return time.monotonic() - (time.time() - (sec + nsec / 1e9))
    return None


class Site:
    def __init__(self, routes: dict[str, Route] | None = None, log_path: str | None = None) -> None:
        self.routes: dict[str, Route] = routes or {}
        self.hits: list[Hit] = []
        self.lock = threading.Lock()
        self.inflight = 0
        self.max_inflight = 0
        self.counts: dict[str, int] = {}
        self.log_path = log_path
        self.server: ThreadingHTTPServer | None = None

    # -- lifecycle
    def start(self, port: int = 0) -> Site:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def setup(self):
                super().setup()
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                except OSError:
                    pass

            def handle_one_request(self):
                self.arrived = arrival_stamp(self.connection)
                super().handle_one_request()

            def do_GET(self):  # noqa: N802
                site._serve(self)

        class Server(ThreadingHTTPServer):
            def server_bind(self):  # accepted sockets inherit it: a connection's first request too
                try:
                    self.socket.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                except OSError:
                    pass
                super().server_bind()

            def handle_error(self, request, client_address):  # a client hanging up is not news
                pass

        self.server = Server(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.server_address[1]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- serving
    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        t = getattr(h, "arrived", None) or time.monotonic()
        path = h.path
        with self.lock:
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
            n = self.counts.get(path, 0)
            self.counts[path] = n + 1
            inflight = self.inflight
        route = self.routes.get(path)
        if route is not None and route.dynamic is not None:
            route = route.dynamic(n)  # type: ignore[operator]
        if route is None:
            route = Route(b"<html><body>not found</body></html>", status=404)
        try:
            if route.delay:
                time.sleep(route.delay)
            body = route.body.encode("utf-8") if isinstance(route.body, str) else route.body
            h.send_response(route.status)
            h.send_header("Content-Type", route.ctype)
            h.send_header("Content-Length", str(len(body)))
            for k, v in route.headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with self.lock:
                self.inflight -= 1
                hit = Hit(t, path, h.headers.get("User-Agent", ""), inflight, route.status)
                self.hits.append(hit)
                if self.log_path:
                    with open(self.log_path, "a") as f:
                        f.write(json.dumps(hit.__dict__) + "\n")

    def settle(self, timeout: float = 5.0) -> None:
        """Wait until no request is being answered: a hit is recorded once its answer is written,
        and a client that hangs up early (a decompression bomb cut at the cap) can finish before
        the server thread does."""
        end = time.monotonic() + timeout
        while self.inflight and time.monotonic() < end:
            time.sleep(0.01)

    def paths(self) -> list[str]:
        self.settle()
        return [x.path for x in self.hits]


def page(title: str, links: list[str], text: str = "", extra_head: str = "") -> str:
    body = "".join(f'<li><a href="{h}">link {i}</a></li>' for i, h in enumerate(links))
    text = text or f"This is the page called {title}, with enough words to make a block of its own here."
    return (f"<!DOCTYPE html><html><head><title>{title}</title>{extra_head}</head><body>"
            f"<h1>{title}</h1><p>{text}</p><ul>{body}</ul></body></html>")


def chain_site(n: int, latency: float = 0.0) -> dict[str, Route]:
    """n pages /p0.html ... each linking the next three and the home page (for the resume test)."""
    routes = {"/robots.txt": Route("User-agent: *\nDisallow: /nope/\n", ctype="text/plain")}
    for i in range(n):
        links = [f"/p{j}.html" for j in (i + 1, i + 2, i * 2 + 1) if j < n] + ["/p0.html", "/nope/x.html"]
        routes[f"/p{i}.html"] = Route(page(f"Page {i}", links, f"Unique text number {i} " * 5), delay=latency)
    return routes


def gzip_bomb(size: int) -> bytes:
    return gzip.compress(b"\0" * size, 9)


if __name__ == "__main__":
    port, log, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    s = Site(chain_site(n, latency=0.02), log_path=log).start(port)
    print(f"READY {s.port}", flush=True)
    while True:
        time.sleep(3600)

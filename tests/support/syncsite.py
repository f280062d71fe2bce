"""A site that changes between crawls, on a real loopback server: pages /p0../p{n-1} of three
sections each (heading and paragraph), ETag validators, and knobs to edit a section, remove a page
(404/410), mark it noindex, add pages, serve /llms.txt, and slow every answer down. For the change
log, the changes feed, the webhook and the sync example's tests (tests/store/test_changelog.py,
tests/store/test_feed.py, tests/crawl/test_webhook.py, tests/test_sync_example.py)."""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORDS = ("amber basil cedar delta ember fjord garnet harbor indigo juniper kelp lagoon meadow nectar opal "
         "prairie quartz river saffron tundra umber violet willow xenon yarrow zephyr").split()


def words(i: int, j: int, v: int) -> str:
    """Unique text of page i, section j, version v (no two sections share a sentence); long enough
    (40 words) that each section is a chunk of its own, so editing one leaves the others' ids."""
    w = [WORDS[(i * 7 + j * 3 + k * (v + 1)) % len(WORDS)] for k in range(40)]
    return f"Page {i} section {j} version {v}: " + " ".join(w) + f" {i}-{j}-{v}."


class SyncSite:
    def __init__(self, n: int, delay: float = 0.0) -> None:
        self.n, self.delay = n, delay
        self.version: dict[tuple[int, int], int] = {}  # (page, section) -> version (default 1)
        self.status: dict[int, int] = {}  # page -> 404 / 410
        self.noindex: set[int] = set()
        self.llms: str | None = None
        self.requests = 0
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                site.requests += 1
                if site.delay:
                    time.sleep(site.delay)
                status, body, ctype, etag = site.answer(self.path)
                if etag and self.headers.get("If-None-Match") == etag:
                    status, body = 304, b""
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                if etag:
                    self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def page_html(self, i: int) -> str:
        links = "".join(f'<a href="/p{j}">page {j}</a> ' for j in (i + 1, i + 2, 2 * i + 1) if j < self.n)
        secs = "".join(f"<h2>Part {j} of {i}</h2><p>{words(i, j, self.version.get((i, j), 1))}</p>" for j in range(3))
        robots = '<meta name="robots" content="noindex">' if i in self.noindex else ""
        return (f"<html><head><title>Page {i}</title>{robots}</head><body><main><h1>Page {i}</h1>{secs}"
                f"</main><nav>{links}</nav></body></html>")

    def answer(self, path: str) -> tuple[int, bytes, str, str | None]:
        if path == "/robots.txt":
            return 200, b"User-agent: *\nAllow: /\n", "text/plain", None
        if path == "/llms.txt" and self.llms is not None:
            return 200, self.llms.encode(), "text/plain; charset=utf-8", None
        if path == "/":
            return 200, b'<html><body><a href="/p0">start</a></body></html>', "text/html", None
        if not path.startswith("/p") or not path[2:].isdigit() or int(path[2:]) >= self.n:
            return 404, b"not found", "text/plain", None
        i = int(path[2:])
        if i in self.status:
            return self.status[i], b"gone", "text/plain", None
        body = self.page_html(i).encode()
        tag = f'"{i}-' + "-".join(str(self.version.get((i, j), 1)) for j in range(3)) + f'-{i in self.noindex}"'
        return 200, body, "text/html; charset=utf-8", tag

    def edit(self, i: int, section: int = 1) -> None:
        self.version[i, section] = self.version.get((i, section), 1) + 1

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

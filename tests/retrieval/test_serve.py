"""`blockcrawl serve` over HTTP: the API and page (real model), and the server's limits (a hashing
embedder, microseconds a query, so latency and load measure the server and not the model)."""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from blockcrawl.index import NotIndexed, build_index, default_embedder
from blockcrawl.index.embed import normalize
from blockcrawl.retrieval.serve import Limits, SearchServer, make_server, serve_in_thread

from ..support.search_pages import PAGE1, PAGES, fill, indexed

ROOT = Path(__file__).resolve().parents[2]


class HashEmbedder:
    """Hashed bag of words, 64 dimensions: no model, so a hybrid search costs what the server and
    the store cost. Ranks poorly; the tests here check serving, not ranking."""

    name = "test-hashed-words-64"
    dim = 64

    def embed(self, texts: list[str]) -> np.ndarray:
        m = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                m[i, zlib.crc32(w.encode()) % self.dim] += 1.0
        return normalize(m)


# Page text an attacker controls: title, headings, text and even the URL stored with it.
HOSTILE_URL = "javascript:document.title='owned-by-url'"
HOSTILE = """<html><head><title><script>document.title='owned-by-title'</script></title></head><body>
<h1><img src=x onerror="document.title='owned-by-h1'">Hostile</h1>
<div><h2>Zanzibar <svg onload="document.title='owned-by-h2'"></svg></h2><p>Zanzibar spice markets sell
cloves &lt;script&gt;document.title='owned-by-text'&lt;/script&gt; and nutmeg to traders every morning.</p></div>
</body></html>"""


# ---- fixtures ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return indexed(tmp_path_factory.mktemp("serve") / "site.db")


@pytest.fixture(scope="module")
def hashed_store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("serve-hashed") / "site.db"
    fill(path, {**PAGES, HOSTILE_URL: HOSTILE})
    build_index(path, embedder=HashEmbedder())
    return path


def start(store: Path, **kw) -> tuple[SearchServer, str]:
    srv = make_server(store, "127.0.0.1", 0, **kw)
    serve_in_thread(srv)
    return srv, "http://{}:{}".format(*srv.server_address)


def stop(srv: SearchServer) -> None:
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def server(store) -> Iterator[str]:
    srv, base = start(store, embedder=default_embedder())
    yield base
    stop(srv)


@pytest.fixture(scope="module")
def fast(hashed_store) -> Iterator[SearchServer]:
    srv, _ = start(hashed_store, embedder=HashEmbedder(), access_log=False)
    yield srv
    stop(srv)


def get(url: str) -> tuple[int, dict | str, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            body, status, ctype = r.read().decode(), r.status, r.headers["Content-Type"]
    except urllib.error.HTTPError as e:
        body, status, ctype = e.read().decode(), e.code, e.headers["Content-Type"]
    return status, (json.loads(body) if ctype.startswith("application/json") else body), ctype


def api(base: str, **params) -> tuple[int, dict]:
    status, body, _ = get(base + "/api/search?" + urllib.parse.urlencode(params))
    return status, body


def raw(srv: SearchServer, data: bytes, timeout: float = 10) -> bytes:
    """Send bytes on one connection and read until the server closes it."""
    with socket.create_connection(srv.server_address, timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


# ---- the API and the page (real model) -------------------------------------------------------------

def test_http_search(server):
    status, body = api(server, q="mountains and lowlands of the German landscape", k=2, mode="hybrid")
    assert status == 200 and len(body["hits"]) == 2
    hit = body["hits"][0]
    assert hit["heading_path"] == ["Europe Countries", "Germany"] and hit["url"] == "http://site.test/europe"
    assert set(hit) >= {"score", "url", "heading_path", "text", "chunk_id"}
    status, body = api(server, q="Deutschland", mode="keyword")
    assert status == 200 and [h["heading_path"][-1] for h in body["hits"]] == ["Germany"]
    # concurrent requests from several threads
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(api(server, q="bread recipe", k=1)[0]))
               for _ in range(6)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert results == [200] * 6


@pytest.mark.parametrize("params,msg", [
    ({}, "empty query"), ({"q": ""}, "empty query"), ({"q": "x" * 1001}, "too long"),
    ({"q": "x", "k": "0"}, "k must"), ({"q": "x", "k": "101"}, "k must"), ({"q": "x", "k": "ten"}, "k must"),
    ({"q": "x", "mode": "fuzzy"}, "mode must"),
])
def test_http_validation(server, params, msg):
    status, body = api(server, **params)
    assert status == 400 and msg in body["error"]


def test_http_filters_paging_and_context(fast):
    base = "http://{}:{}".format(*fast.server_address)
    status, body = api(base, q="bread water salt flour", mode="keyword", site="SITE.test", per_page=1, k=5)
    assert status == 200 and body["site"] == "site.test" and body["per_page"] == 1 and body["offset"] == 0
    got = [h["url"] for h in body["hits"]]
    assert got and all(u.startswith("http://site.test/") for u in got) and len(set(got)) == len(got)
    hit = body["hits"][0]
    assert hit["rank"] == 1 and any(hit["snippet"][a:b].lower() == "bread" for a, b in hit["highlights"])
    status, body = api(base, q="bread", mode="keyword", url_prefix="http://site.test/cooking", context="block")
    assert status == 200 and {h["url"] for h in body["hits"]} == {"http://site.test/cooking"}
    assert all(h["context"] for h in body["hits"]) and body["context"] == "block"
    status, body = api(base, q="bread", mode="keyword", context_tokens="300", k=1)
    assert status == 200 and body["context_tokens"] == 300 and "Bread" in body["hits"][0]["context"]
    for bad in ("3", "lots", "-5", "9999"):
        status, body = api(base, q="bread", mode="keyword", context_tokens=bad)
        assert status == 400 and body["error"].startswith("context_tokens must be a number of tokens"), (bad, body)
    status, body = api(base, q="bread", mode="hybrid", site="nowhere.test")
    assert status == 200 and body["hits"] == []  # a filter that matches nothing: no hits, no error
    status, whole = api(base, q="country", mode="keyword", k=4, per_page=0)
    status, second = api(base, q="country", mode="keyword", k=2, per_page=0, offset=2)
    assert [h["chunk_id"] for h in second["hits"]] == [h["chunk_id"] for h in whole["hits"][2:]]
    for params, msg in (({"offset": "200"}, "past the end"), ({"offset": "x"}, "offset must"),
                        ({"per_page": "many"}, "per_page must"), ({"site": "http://site.test/"}, "host name"),
                        ({"url_prefix": "site.test"}, "scheme and host"), ({"context": "page"}, "context must")):
        status, body = api(base, q="bread", mode="keyword", **params)
        assert status == 400 and msg in body["error"], (params, body)


def test_http_page_and_404(server):
    status, body, ctype = get(server + "/")
    assert status == 200 and ctype.startswith("text/html")
    assert "/api/search" in body and 'id="q"' in body
    status, body, _ = get(server + "/nope")
    assert status == 404 and "error" in body


def test_serve_refuses_unindexed_store(tmp_path):
    fill(tmp_path / "raw.db", {"http://a.test/": PAGE1})
    with pytest.raises(NotIndexed):
        make_server(tmp_path / "raw.db", port=0)


CHROMIUM = "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no /usr/bin/chromium (Debian package chromium)")


def dump_dom(url: str) -> str:
    """The page's DOM after its scripts ran (headless Chromium waits for the fetch to finish)."""
    r = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--no-first-run", "--virtual-time-budget=15000", "--dump-dom", url],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.mark.slow
@needs_chromium
def test_page_in_browser(server):
    # the page runs under its strict CSP (hashed script and style, Trusted Types): it must still work
    dom = dump_dom(server + "/?" + urllib.parse.urlencode({"q": "how do I bake a loaf at home", "k": 3}))
    first = dom.index('class="group"')
    group = dom[first:dom.index('class="hit"', dom.index('class="hit"', first) + 1)]  # title and first hit
    assert "<span>Recipes</span><span>Bread</span>" in group  # heading path as breadcrumb
    assert 'href="http://site.test/cooking"' in group and "Kitchen notes" in group  # link to the source
    assert "<cite>http://site.test/cooking</cite>" in group  # and its address, shown
    assert dom.count('class="hit"') == 3 and "3 hits" in dom
    # page text is shown as text, never run as markup
    dom = dump_dom(server + "/?" + urllib.parse.urlencode({"q": "show a tag as plain text with entities", "k": 1}))
    assert "&lt;img src=x onerror=" in dom and "<img" not in dom and "<title>blockcrawl search</title>" in dom
    # the API's 400 message reaches the user
    dom = dump_dom(server + "/?" + urllib.parse.urlencode({"q": "bread", "k": 500}))
    assert "Error: k must be between 1 and 100" in dom


@pytest.mark.slow
@needs_chromium
def test_stored_xss_in_browser(fast):
    """Markup in every stored field (title, headings, text, a javascript: URL) comes out as text."""
    base = "http://{}:{}".format(*fast.server_address)
    status, body = api(base, q="Zanzibar cloves", k=1, mode="keyword")
    hit = body["hits"][0]
    assert status == 200 and hit["url"] == HOSTILE_URL and "<script>" in hit["title"] + hit["text"]
    dom = dump_dom(base + "/?" + urllib.parse.urlencode({"q": "Zanzibar cloves", "k": 1, "mode": "keyword"}))
    assert "1 hit" in dom and "owned" not in dom.split("<body>")[0]  # the title is still ours
    assert "<title>blockcrawl search</title>" in dom
    assert "<img" not in dom and "<svg" not in dom and dom.count("<script") == 1  # only the page's own
    assert "javascript:" not in re.findall(r'href="([^"]*)"', dom).__str__()  # no javascript: link
    assert "&lt;script&gt;document.title='owned-by-text'&lt;/script&gt;" in dom  # shown, as text


@pytest.mark.slow
def test_cli_serve(store):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "blockcrawl", "serve", "--store", str(store), "--port", "0"],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stderr.readline()  # "blockcrawl serve: http://127.0.0.1:PORT/ (Ctrl-C to stop)"
        m = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert m, line
        status, body = api(m.group(0), q="SQLite database file", k=1)
        assert status == 200 and body["hits"][0]["heading_path"] == ["Languages", "SQLite"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_cli_serve_limits_are_checked(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args, msg in ((["--threads", "0"], "--threads must be positive"),
                      (["--keep-alive", "-1"], "--keep-alive must be positive"),
                      (["--max-connections", "0"], "--max-connections must be positive")):
        r = subprocess.run([sys.executable, "-m", "blockcrawl", "serve", "--store", str(tmp_path / "x.db"), *args],
                           capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 2 and r.stderr.strip() == f"blockcrawl serve: {msg}", r.stderr


# ---- headers ----------------------------------------------------------------------------------------

def test_security_headers(fast):
    conn = http.client.HTTPConnection(*fast.server_address, timeout=10)
    conn.request("GET", "/")
    r = conn.getresponse()
    page = r.read()
    assert r.status == 200 and r.getheader("Server") is None  # was "BaseHTTP/0.6 Python/3.x"
    assert not any("python" in v.lower() or "uvicorn" in v.lower() for _, v in r.getheaders())
    csp = r.getheader("Content-Security-Policy")
    assert csp and "default-src 'none'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp and "require-trusted-types-for 'script'" in csp
    # the one inline script and style are allowed by hash, and only they
    for tag in ("script", "style"):
        bodies = re.findall(rb"<%s>(.*?)</%s>" % (tag.encode(), tag.encode()), page, re.DOTALL)
        assert len(bodies) == 1
        digest = base64.b64encode(hashlib.sha256(bodies[0]).digest()).decode()
        assert re.search(rf"{tag}-src 'sha256-{re.escape(digest)}'(;|$)", csp), csp
    assert not re.search(rb"\son\w+\s*=", re.sub(rb"<script>.*?</script>", b"", page, flags=re.DOTALL))  # no onclick=
    assert r.getheader("X-Content-Type-Options") == "nosniff"
    conn.request("GET", "/api/search?q=bread&mode=keyword")
    r = conn.getresponse()
    r.read()
    assert r.status == 200 and r.getheader("Server") is None and r.getheader("X-Content-Type-Options") == "nosniff"
    assert r.getheader("Content-Security-Policy") == "default-src 'none'; frame-ancestors 'none'"
    assert r.getheader("Content-Type") == "application/json; charset=utf-8"
    conn.close()


def test_methods_and_long_urls(fast):
    conn = http.client.HTTPConnection(*fast.server_address, timeout=10)
    conn.request("HEAD", "/api/search?q=bread&mode=keyword")
    r = conn.getresponse()
    assert r.status == 200 and r.read() == b""
    conn.request("DELETE", "/api/search")
    r = conn.getresponse()
    assert r.status == 405 and json.loads(r.read()) == {"error": "use GET"}
    conn.close()
    conn = http.client.HTTPConnection(*fast.server_address, timeout=10)
    conn.request("GET", "/api/search?q=" + "x" * 9000)
    r = conn.getresponse()
    assert r.status == 414 and "too long" in json.loads(r.read())["error"]
    conn.close()


# ---- framing, timeouts, limits ----------------------------------------------------------------------

SMUGGLED = b"GET /smuggled-request HTTP/1.1\r\nHost: localhost\r\n\r\n"


def test_unread_body_is_not_a_request(fast):
    """The old server never read a POST body, so its bytes were parsed as the next request."""
    post = b"POST /api/search HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n%s" % (len(SMUGGLED), SMUGGLED)
    after = b"GET /after HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    out = raw(fast, post + after)
    assert out.startswith(b"HTTP/1.1 405 ") and out.count(b"HTTP/1.1 ") == 1  # then closed
    assert b"smuggled" not in out
    # the same with a GET: answered, the connection closed, the body never run
    get_ = b"GET /api/search?q=bread&mode=keyword HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n%s" % (
        len(SMUGGLED), SMUGGLED)
    out = raw(fast, get_ + after)
    assert out.startswith(b"HTTP/1.1 200 ") and out.count(b"HTTP/1.1 ") == 1 and b"smuggled" not in out
    # both Content-Length and Transfer-Encoding: refused outright
    both = (b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"0\r\n\r\n" + SMUGGLED)
    out = raw(fast, both)
    assert out.startswith(b"HTTP/1.1 400 ") and b"smuggled" not in out
    # plain pipelining still works: two GETs, two answers, in order
    out = raw(fast, b"GET /api/search?q=bread&mode=keyword HTTP/1.1\r\nHost: localhost\r\n\r\n" + after)
    assert out.count(b"HTTP/1.1 200 ") == 1 and out.count(b"HTTP/1.1 404 ") == 1
    assert out.index(b"200 ") < out.index(b"404 ") and b"no such path: /after" in out


def test_keep_alive_is_fast(fast):
    """Sequential requests on one connection against the same requests each on a new connection,
    interleaved: the old server took 44 ms a request on a kept-alive connection (Nagle against
    delayed ACK), against 2.5 ms on a new one. Now the kept-alive one is no slower (a ratio of
    two measurements in the same run, not a number of milliseconds: tests/support/scaling.py)."""
    conn = http.client.HTTPConnection(*fast.server_address, timeout=10)
    kept, fresh = [], []
    for i in range(100):
        for times, c in ((kept, conn), (fresh, http.client.HTTPConnection(*fast.server_address, timeout=10))):
            t0 = time.perf_counter()
            c.request("GET", f"/api/search?q=bread+{i}&k=3&mode=keyword")
            r = c.getresponse()
            r.read()
            times.append(time.perf_counter() - t0)
            assert r.status == 200 and not r.will_close
            if c is not conn:
                c.close()
    conn.close()
    assert np.percentile(kept, 50) < 2 * np.percentile(fresh, 50), (np.percentile(kept, [50, 90]),
                                                                    np.percentile(fresh, [50, 90]))


def count_threads() -> int:
    return len(os.listdir(f"/proc/{os.getpid()}/task"))


def test_idle_connections_hold_no_threads(fast):
    before = count_threads()
    socks = [socket.create_connection(fast.server_address, timeout=10) for _ in range(500)]
    try:
        time.sleep(0.5)
        assert count_threads() - before < 10  # the old server: one thread each, for good
        status, _ = api("http://{}:{}".format(*fast.server_address), q="bread", mode="keyword")
        assert status == 200  # and requests are still served
    finally:
        for s in socks:
            s.close()


def test_listen_backlog(fast):
    port = fast.server_address[1]
    r = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        pytest.skip("no ss")
    assert int(r.stdout.split()[2]) >= 1024  # Send-Q of a listening socket: its backlog (socketserver's default is 5)


def test_slow_and_large_heads(hashed_store):
    srv, _ = start(hashed_store, embedder=HashEmbedder(), access_log=False,
                   limits=Limits(head_timeout=0.5, keep_alive=0.3))
    try:
        # (no upper bounds in seconds: a 408 comes from the head timer only; the client's 10 s
        # socket timeout is a guard against a hang, the default head_timeout being 10 s)
        t0 = time.perf_counter()
        assert raw(srv, b"").startswith(b"HTTP/1.1 408 ")  # connects, says nothing
        assert time.perf_counter() - t0 >= 0.45  # not before its time (less a timer tick)
        with socket.create_connection(srv.server_address, timeout=10) as s:  # slowloris
            s.sendall(b"GET / HTTP/1.1\r\n")
            with pytest.raises((BrokenPipeError, ConnectionResetError)):
                for _ in range(100):  # a header line every 50 ms or more: cut well before the 100th
                    s.sendall(b"X-a: b\r\n")
                    time.sleep(0.05)
        # an idle keep-alive connection is closed after keep_alive (recv gives b"": the server closed it)
        with socket.create_connection(srv.server_address, timeout=10) as s:
            s.sendall(b"GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n")
            t0 = time.perf_counter()
            out = b""
            while chunk := s.recv(65536):
                out += chunk
            assert out.startswith(b"HTTP/1.1 404 ") and time.perf_counter() - t0 >= 0.25
        out = raw(srv, b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n")
        assert out.startswith(b"HTTP/1.1 431 ")
    finally:
        stop(srv)


def test_busy_server_answers_503(hashed_store):
    gate = threading.Event()

    class Slow(HashEmbedder):
        def embed(self, texts: list[str]) -> np.ndarray:
            gate.wait(10)
            return super().embed(texts)

    srv, base = start(hashed_store, embedder=Slow(), access_log=False, warm=False,
                      limits=Limits(search_threads=1, max_queued=1))
    try:
        results: list[int] = []
        threads = [threading.Thread(target=lambda: results.append(api(base, q="bread")[0])) for _ in range(2)]
        [t.start() for t in threads]
        time.sleep(0.5)
        status, body = api(base, q="bread")  # one running, one waiting: the third is refused at once
        assert status == 503 and "retry" in body["error"]
        gate.set()
        [t.join() for t in threads]
        assert results == [200, 200]
    finally:
        gate.set()
        stop(srv)


SERVE_HASHED = """
import sys
from pathlib import Path
from blockcrawl.retrieval.serve import make_server
from tests.retrieval.test_serve import HashEmbedder
srv = make_server(Path(sys.argv[1]), "127.0.0.1", 0, embedder=HashEmbedder(), access_log=False)
print("http://%s:%d" % srv.server_address, flush=True)
srv.serve_forever()
"""


@pytest.mark.slow
def test_load(hashed_store):
    """2,000 hybrid requests over 20 keep-alive connections: no errors, p99 under 4x p50. Server and
    load client each run in their own process, as deployed (in pytest's process the server would
    share the GIL and the garbage collector with everything the other tests loaded)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", SERVE_HASHED, str(hashed_store)], stdout=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        r = subprocess.run([sys.executable, str(ROOT / "bench" / "serve_load.py"), "--url", url,
                            "--requests", "2000", "--connections", "20", "--json"],
                           capture_output=True, text=True, timeout=120)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    stats = json.loads(r.stdout)
    assert stats["errors"] == 0 and stats["ok"] == 2000, stats
    assert stats["p99_ms"] < 4 * stats["p50_ms"], stats


# ---- what the server must not tell ---------------------------------------------------------------

def test_no_redirect_from_a_forged_host(hashed_store):
    """/api/search/ was a 307 to http://<the request's Host>/api/search, without the security headers.
    (A server answering any Host name, so that the forged one reaches the routes.)"""
    srv, _ = start(hashed_store, embedder=HashEmbedder(), access_log=False, allowed_hosts=("*",))
    try:
        _no_redirect_from_a_forged_host(srv)
    finally:
        stop(srv)


def _no_redirect_from_a_forged_host(fast: SearchServer) -> None:
    for path in ("/api/search/?q=bread&mode=keyword", "/index.html/", "/nope/", "//evil.example/"):
        conn = http.client.HTTPConnection(*fast.server_address, timeout=10)
        conn.request("GET", path, headers={"Host": "evil.example"})
        r = conn.getresponse()
        body = r.read()
        conn.close()
        assert r.status == 404 and r.getheader("Location") is None, (path, r.status, r.getheaders())
        assert b"evil.example" not in body or path.startswith("//")  # the path is echoed, never the Host
        assert r.getheader("X-Content-Type-Options") == "nosniff" and r.getheader("Content-Security-Policy")


def test_errors_do_not_tell_where_the_store_lives(tmp_path):
    path = tmp_path / "private-dir" / "site.db"
    path.parent.mkdir()
    fill(path, PAGES)
    build_index(path, embedder=HashEmbedder())
    srv, base = start(path, embedder=HashEmbedder(), access_log=False)
    try:
        with sqlite3.connect(path) as db:  # the keyword index damaged under the running server
            db.execute("DROP TABLE chunks_fts_data")
        status, body = api(base, q="bread", mode="keyword")
        assert status == 500 and "site.db" in body["error"], body  # says which store, not where
        assert str(tmp_path) not in json.dumps(body) and "private-dir" not in json.dumps(body)
        with sqlite3.connect(path) as db:  # and the index's record gone: 503, no path either
            db.execute("DELETE FROM index_meta")
        status, body = api(base, q="bread", mode="keyword")
        assert status == 503 and "never indexed" in body["error"] and "private-dir" not in json.dumps(body), body
    finally:
        stop(srv)


# ---- DNS rebinding: the Host header ---------------------------------------------------------------

def status_for(srv: SearchServer, host: bytes | None) -> int:
    head = b"GET /api/search?q=bread&mode=keyword HTTP/1.1\r\n" + (b"Host: " + host + b"\r\n" if host else b"")
    out = raw(srv, head + b"Connection: close\r\n\r\n")
    return int(out.split(b" ", 2)[1])


def test_a_foreign_host_name_is_refused_with_421(fast):
    """A web page can point its own name at 127.0.0.1 and then read the server as same-origin; its
    requests carry its name as Host. Loopback names and the bound address are answered, others 421."""
    port = str(fast.server_address[1]).encode()
    for host in (b"localhost", b"localhost:" + port, b"LOCALHOST.", b"127.0.0.1", b"127.0.0.1:" + port,
                 b"[::1]", b"[::1]:" + port, None):
        assert status_for(fast, host) == 200, host
    for host in (b"evil.example", b"evil.example:" + port, b"127.0.0.1.evil.example", b"localhost.evil.example",
                 b"[::2]:" + port, b"x"):
        assert status_for(fast, host) == 421, host
    out = raw(fast, b"GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
    assert b"421" in out.split(b"\r\n", 1)[0] and b"--allowed-host" in out and b"Zanzibar" not in out
    two = raw(fast, b"GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
    assert b" 421 " in two.split(b"\r\n", 1)[0]


def test_allowed_host_names_are_answered(hashed_store):
    srv, _ = start(hashed_store, embedder=HashEmbedder(), access_log=False, allowed_hosts=("search.lan",))
    try:
        assert status_for(srv, b"search.lan:8000") == 200 and status_for(srv, b"Search.LAN") == 200
        assert status_for(srv, b"other.lan") == 421 and status_for(srv, b"localhost") == 200
    finally:
        stop(srv)
    srv, _ = start(hashed_store, embedder=HashEmbedder(), access_log=False, allowed_hosts=("*",))
    try:
        assert status_for(srv, b"anything.example") == 200
    finally:
        stop(srv)


@pytest.mark.slow
def test_cli_serve_off_loopback_warns_and_checks_the_host(store):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "blockcrawl", "serve", "--store", str(store), "--port", "0",
                             "--host", "0.0.0.0", "--allowed-host", "search.lan", "--quiet"],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        warning, line = proc.stderr.readline(), proc.stderr.readline()
        assert warning.startswith("blockcrawl serve: warning: listening on 0.0.0.0, not loopback, without "
                                  "authentication"), warning
        port = int(re.search(r":(\d+)/", line).group(1))

        def status(host: str) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/api/search?q=SQLite&k=1", headers={"Host": host})
            r = conn.getresponse()
            r.read()
            conn.close()
            return r.status

        assert status("search.lan") == 200 and status("0.0.0.0") == 200 and status("evil.example") == 421
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_integers_are_plain_digits(fast):
    """int() reads "1_0" as 10, "+5" as 5, " 5" and "٥" (Arabic-Indic five) as 5: the API took them."""
    base = "http://{}:{}".format(*fast.server_address)
    for name in ("k", "offset", "per_page"):
        for raw in ("1_0", "+5", " 5", "5 ", "\u0665", "-1", "0x5", "5.0"):
            status, body = api(base, q="bread", mode="keyword", **{name: raw})
            assert status == 400 and body["error"].startswith(f"{name} must be"), (name, raw, body)
    status, body = api(base, q="bread", mode="keyword", k="2", offset="0", per_page="0")
    assert status == 200 and body["k"] == 2


def test_host_names_read_from_headers_and_options():
    from blockcrawl.retrieval.serve import allowed_hosts, host_name

    assert host_name(b"[::1]:8000") == "::1" == host_name(b"::1") and host_name(b"Example.ORG.:80") == "example.org"
    assert host_name(b"search.lan") == "search.lan" and host_name(b"[fe80::1]") == "fe80::1"
    assert "::1" in allowed_hosts("::1") and "::" in allowed_hosts("::") and "10.0.0.5" in allowed_hosts("10.0.0.5")
    assert allowed_hosts("0.0.0.0", ("search.lan:8000", "[fd00::5]")) >= {"search.lan", "fd00::5", "0.0.0.0", "localhost"}
    assert allowed_hosts("127.0.0.1", ("*",)) is None


def test_uvicorn_is_in_the_range_the_protocol_was_tested_on():
    """serve.Protocol relies on uvicorn internals (docs/decisions/0100-serve-uvicorn-protocol.md): the
    installed uvicorn must be inside pyproject's pin, and what the subclass uses must be there."""
    import asyncio

    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from blockcrawl.retrieval.serve import Protocol

    pin = re.search(r'"(uvicorn>=([\d.]+),<([\d.]+))"', (ROOT / "pyproject.toml").read_text())
    assert pin, "pyproject.toml: uvicorn pinned to a range"
    low, high = pin.group(2), pin.group(3)

    def version(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v)[:3])

    assert version(low) <= version(uvicorn.__version__) < version(high), (uvicorn.__version__, pin.group(1))
    overridden = {"connection_made", "data_received", "on_message_begin", "on_headers_complete", "connection_lost"}
    assert overridden <= {n for n in vars(Protocol) if not n.startswith("__")} | overridden
    for name in overridden:
        assert callable(getattr(HttpToolsProtocol, name, None)), name
    config = uvicorn.Config(lambda scope, receive, send: None, http=Protocol, lifespan="off")
    config.load()
    loop = asyncio.new_event_loop()
    try:
        proto = Protocol(config=config, server_state=uvicorn.server.ServerState(), app_state={}, _loop=loop)
        assert proto.loop is loop and hasattr(proto, "cycle") and hasattr(proto, "transport")
    finally:
        loop.close()

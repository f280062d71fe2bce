"""The crawler on the real web's terms, against real servers on 127.0.0.0/8: extra headers,
cookies (a cookies.txt and Set-Cookie), per-host basic and bearer credentials, proxies (given and
from the environment); secrets never written to the store or the logs."""
from __future__ import annotations

import base64
import http.client
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from blockcrawl.crawl import CrawlConfig, crawl
from blockcrawl.crawl.net.credentials import Credentials, parse_auth, parse_bearer, parse_header, redact
from blockcrawl.errors import ConfigError
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import Store
from blockcrawl.store.schema import SCHEMA_VERSION

from ..support.scaling import growth

SPEC = PipelineConfig(tokenizer="words")


@dataclass
class Answer:
    body: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    ctype: str = "text/html; charset=utf-8"


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


class Server:
    """A threaded HTTP/1.1 server whose answers are a function of (path, request headers); every
    request is recorded with its headers (lower-cased names)."""

    def __init__(self, answer: Callable[[str, dict[str, str]], Answer], host: str = "127.0.0.1") -> None:
        self.answer, self.seen, self.lock = answer, [], threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                with srv.lock:
                    srv.seen.append(Seen(self.path, hdrs))
                a = srv.answer(self.path, hdrs)
                body = a.body.encode()
                self.send_response(a.status)
                self.send_header("Content-Type", a.ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in a.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def origin(self) -> str:
        h, p = self.httpd.server_address[:2]
        return f"http://{h}:{p}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def requests(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]


def html(title: str, links: list[str]) -> str:
    lis = "".join(f'<li><a href="{h}">{h}</a></li>' for h in links)
    return (f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>Some text of the page {title} long enough to be a block of its own.</p><ul>{lis}</ul></body></html>")


def basic(user: str, pw: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()


PASSWORD = "pa55-Very-Secret-A1"
TOKEN = "tok-Very-Secret-B2"
FILE_COOKIE = "cookie-Very-Secret-C3"
SET_COOKIE = "session-Very-Secret-D4"
HEADER_VALUE = "hdr-Very-Secret-E5"
PROXY_PASSWORD = "proxy-Very-Secret-F6"
SECRETS = [PASSWORD, TOKEN, FILE_COOKIE, SET_COOKIE, HEADER_VALUE, PROXY_PASSWORD,
           basic("alice", PASSWORD).split()[1], basic("pu", PROXY_PASSWORD).split()[1]]


@pytest.fixture
def two_hosts():
    """Host A (127.0.0.1) wants basic auth, a cookie from the file and then its session cookie;
    host B (127.0.0.2) wants a bearer token. Each links to the other."""
    servers: list[Server] = []

    def a(path: str, h: dict[str, str]) -> Answer:
        b = servers[1].origin
        if path == "/robots.txt":
            return Answer("User-agent: *\nAllow: /\n", ctype="text/plain")
        if h.get("authorization") != basic("alice", PASSWORD):
            return Answer("no", 401, {"WWW-Authenticate": 'Basic realm="x"'})
        if path == "/":
            return Answer(html("A home", ["/login", f"{b}/"]))
        if path == "/login":
            return Answer(html("A login", ["/members"]), headers={"Set-Cookie": f"sess={SET_COOKIE}; Path=/"})
        if path == "/members":
            ok = f"sess={SET_COOKIE}" in h.get("cookie", "") and f"pref={FILE_COOKIE}" in h.get("cookie", "")
            return Answer(html("A members", ["/deep"])) if ok else Answer("no cookie", 403)
        if path == "/deep":
            return Answer(html("A deep", []))
        return Answer("nf", 404)

    def b(path: str, h: dict[str, str]) -> Answer:
        if path == "/robots.txt":
            return Answer("", 404)
        if h.get("authorization") != "Bearer " + TOKEN:
            return Answer("no", 401)
        if path == "/":
            return Answer(html("B home", [servers[0].origin + "/deep", "/b2"]))
        if path == "/b2":
            return Answer(html("B two", []))
        return Answer("nf", 404)

    servers.append(Server(a, "127.0.0.1"))
    servers.append(Server(b, "127.0.0.2"))
    yield servers
    for s in servers:
        s.stop()


def cookies_txt(tmp_path: Path, domain: str) -> str:
    p = tmp_path / "cookies.txt"
    p.write_text("# Netscape HTTP Cookie File\n"
                 f"{domain}\tFALSE\t/\tFALSE\t0\tpref\t{FILE_COOKIE}\n"
                 f"other.example\tFALSE\t/\tFALSE\t0\tforeign\tnot-for-us\n"
                 f"{domain}\tFALSE\t/\tFALSE\t1000\told\texpired-long-ago\n")
    return str(p)


def store_bytes(path: Path) -> bytes:
    out = b""
    for suffix in ("", "-wal", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            out += p.read_bytes()
    return out


def test_headers_cookies_auth_bearer_per_host_and_no_secret_written(two_hosts, tmp_path, caplog):
    a, b = two_hosts
    host_a = a.origin.split("//")[1]
    host_b = b.origin.split("//")[1]
    cred = Credentials(headers=(parse_header(f"X-Test: {HEADER_VALUE}"),), cookies=cookies_txt(tmp_path, "127.0.0.1"),
                       auth=(parse_auth(f"{host_a}=alice:{PASSWORD}"),), bearer=(parse_bearer(f"{host_b}={TOKEN}"),))
    db = tmp_path / "c.db"
    caplog.set_level(logging.DEBUG)
    with Store(db) as store:
        cfg = CrawlConfig(seeds=[a.origin + "/"], scope="any", allow_private=True, progress=False, per_host=1,
                          credentials=cred, retries=0)
        assert PASSWORD not in repr(cfg) and TOKEN not in repr(cfg)
        stats = crawl(store, cfg, SPEC)
        titles = {t for (t,) in store.db.execute("SELECT title FROM pages")}
    # every page of both hosts was reachable only with the right credentials and cookies
    assert titles == {"A home", "A login", "A members", "A deep", "B home", "B two"}, stats.summary()
    # credentials went to their own host only
    assert all(s.headers.get("authorization") == basic("alice", PASSWORD) for s in a.seen if s.path != "/robots.txt")
    assert all(s.headers.get("authorization") == "Bearer " + TOKEN for s in b.seen if s.path != "/robots.txt")
    assert not any("Bearer" in s.headers.get("authorization", "") for s in a.seen)
    assert not any("Basic" in s.headers.get("authorization", "") for s in b.seen)
    # the header went everywhere; cookies only to their host; the expired and foreign ones nowhere
    assert all(s.headers.get("x-test") == HEADER_VALUE for s in a.seen + b.seen)
    assert all(FILE_COOKIE in s.headers.get("cookie", "") for s in a.seen)
    assert not any("cookie" in s.headers for s in b.seen)
    assert not any("not-for-us" in s.headers.get("cookie", "") or "expired" in s.headers.get("cookie", "")
                   for s in a.seen)
    # nothing secret in the store or the logs
    raw = store_bytes(db)
    logs = caplog.text
    for secret in SECRETS:
        assert secret.encode() not in raw, secret
        assert secret not in logs, secret


def test_without_credentials_pages_fail_and_nothing_leaks(two_hosts, tmp_path):
    """Control: the same site without the credentials gives 401s (the test above is not vacuous)."""
    a, _ = two_hosts
    with Store(tmp_path / "c.db") as store:
        stats = crawl(store, CrawlConfig(seeds=[a.origin + "/"], scope="any", progress=False, retries=0), SPEC)
    assert stats.pages == 0 and stats.error_kinds["http"] == 1


class Proxy:
    """A forward HTTP proxy (absolute-URI GETs) that records what it was asked and the
    Proxy-Authorization it got, and fetches from the origin with http.client."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        px = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                px.seen.append((self.path, self.headers.get("Proxy-Authorization")))
                u = http.client.urlsplit(self.path)
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
                hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-authorization", "connection")}
                c.request("GET", u.path + (f"?{u.query}" if u.query else ""), headers=hdrs)
                r = c.getresponse()
                body = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                c.close()

        self.httpd = ThreadingHTTPServer(("127.0.0.3", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def simple_site():
    def a(path: str, h: dict[str, str]) -> Answer:
        if path == "/robots.txt":
            return Answer("", 404)
        if path == "/":
            return Answer(html("home", ["/one", "/two"]))
        if path in ("/one", "/two"):
            return Answer(html(path, []))
        return Answer("nf", 404)
    s = Server(a)
    p = Proxy()
    yield s, p
    s.stop()
    p.stop()


def test_proxy_option_with_credentials(simple_site, tmp_path, caplog):
    site, proxy = simple_site
    caplog.set_level(logging.DEBUG)
    cred = Credentials(proxy=f"http://pu:{PROXY_PASSWORD}@127.0.0.3:{proxy.port}")
    db = tmp_path / "c.db"
    with Store(db) as store:
        stats = crawl(store, CrawlConfig(seeds=[site.origin + "/"], progress=False, credentials=cred), SPEC)
    assert stats.pages == 3
    asked = {p for p, _ in proxy.seen}
    assert asked == {site.origin + p for p in ("/robots.txt", "/sitemap.xml", "/", "/one", "/two")}
    assert all(auth == basic("pu", PROXY_PASSWORD) for _, auth in proxy.seen)
    assert len(site.seen) == len(proxy.seen)  # every request came through the proxy
    raw = store_bytes(db)
    for secret in SECRETS:
        assert secret.encode() not in raw and secret not in caplog.text


def test_proxy_from_environment_and_no_proxy(simple_site, tmp_path, monkeypatch):
    site, proxy = simple_site
    monkeypatch.setenv("http_proxy", f"http://127.0.0.3:{proxy.port}")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    with Store(tmp_path / "a.db") as store:
        assert crawl(store, CrawlConfig(seeds=[site.origin + "/"], progress=False), SPEC).pages == 3
    assert len(proxy.seen) == 5  # robots.txt, the /sitemap.xml probe, 3 pages
    # no_proxy bypasses it; --no-proxy-env (proxy_env=False) ignores it
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    with Store(tmp_path / "b.db") as store:
        assert crawl(store, CrawlConfig(seeds=[site.origin + "/"], progress=False), SPEC).pages == 3
    monkeypatch.delenv("no_proxy")
    with Store(tmp_path / "c.db") as store:
        cfg = CrawlConfig(seeds=[site.origin + "/"], progress=False, credentials=Credentials(proxy_env=False))
        assert crawl(store, cfg, SPEC).pages == 3
    assert len(proxy.seen) == 5


def test_failed_proxy_error_text_is_redacted(simple_site, tmp_path):
    site, proxy = simple_site
    proxy.stop()  # nobody listens there now
    db = tmp_path / "c.db"
    cred = Credentials(proxy=f"http://pu:{PROXY_PASSWORD}@127.0.0.3:{proxy.port}")
    with Store(db) as store:
        stats = crawl(store, CrawlConfig(seeds=[site.origin + "/"], progress=False, retries=0, credentials=cred), SPEC)
        details = [d for (d,) in store.db.execute("SELECT detail FROM crawl_log")]
    assert stats.pages == 0 and details
    assert PROXY_PASSWORD.encode() not in store_bytes(db)


def test_option_parsing_and_redaction():
    assert parse_header("X-A:  b c ") == ("X-A", "b c")
    for bad in ("no colon", ": v", "X\nY: v", "X-A: v\r\nInjected: 1"):
        with pytest.raises(ConfigError):
            parse_header(bad)
    assert parse_auth("Example.org:8080=u:p:q") == ("example.org:8080", "u", "p:q")
    for bad in ("example.org:u:p-secret", "example.org=nocolon", "http://x/=u:p-secret", "=u:p-secret"):
        with pytest.raises(ConfigError) as e:
            parse_auth(bad)
        assert "secret" not in str(e.value)
    with pytest.raises(ConfigError):
        parse_bearer("h=a b")
    c = Credentials(auth=(("h", "u", "pw-123456"),), bearer=(("h:8080", "tok-123456"),))
    assert c.authorization("h", 80, 80) == basic("u", "pw-123456")
    assert c.authorization("h", 8080, 80) == "Bearer tok-123456"
    assert c.authorization("h", 8081, 80) is None and c.authorization("other", 80, 80) is None
    assert redact("bad pw-123456 and tok-123456", c.secrets()) == "bad *** and ***"
    with pytest.raises(ConfigError, match="cookies"):
        CrawlConfig(seeds=["http://x/"], credentials=Credentials(cookies="/nonexistent/cookies.txt"))
    with pytest.raises(ConfigError, match="proxy"):
        CrawlConfig(seeds=["http://x/"], credentials=Credentials(proxy="ftp://x"))


# ---------------------------------------------------------------- discovery and robots hygiene
def discovery_site(robots: str) -> Callable[[str, dict[str, str]], Answer]:
    head = ('<link rel="alternate" type="application/rss+xml" href="/feed.xml">'
            '<link rel="alternate" type="application/atom+xml" href="/atom.xml">')

    def page(title: str, links: list[str], extra_head: str = "", nofollow: list[str] = ()) -> str:
        lis = "".join(f'<li><a href="{h}">{h}</a></li>' for h in links)
        lis += "".join(f'<li><a rel="nofollow noopener" href="{h}">{h}</a></li>' for h in nofollow)
        return (f"<html><head><title>{title}</title>{extra_head}</head><body><h1>{title}</h1>"
                f"<p>The text of the page called {title}, long enough to be a block of its own.</p>"
                f"<ul>{lis}</ul></body></html>")

    routes = {
        "/": Answer(page("home", ["/a", "/noindex-meta", "/noindex-hdr", "/nofollow-meta", "/dup?x=1",
                                  "/orphan-canon", "/loop-a", "/loop-b"], head, nofollow=["/nf"])),
        "/a": Answer(page("a", [])),
        "/nf": Answer(page("nf", [])),
        "/noindex-meta": Answer(page("noindex-meta", ["/via-meta"], '<meta name="ROBOTS" content="NOINDEX, follow">')),
        "/via-meta": Answer(page("via-meta", [])),
        "/noindex-hdr": Answer(page("noindex-hdr", ["/via-hdr"]), headers={"X-Robots-Tag": "noindex"}),
        "/via-hdr": Answer(page("via-hdr", [])),
        "/nofollow-meta": Answer(page("nofollow-meta", ["/never"], '<meta name="robots" content="nofollow">')),
        "/never": Answer(page("never", [])),
        "/dup?x=1": Answer(page("a", [], '<link rel="canonical" href="/a">')),
        "/orphan-canon": Answer(page("orphan", [], '<link rel="canonical" href="/canon-target">')),
        "/canon-target": Answer(page("canon-target", [])),
        "/loop-a": Answer(page("loop-a", [], '<link rel="canonical" href="/loop-b">')),
        "/loop-b": Answer(page("loop-b", [], '<link rel="canonical" href="/loop-a">')),
        "/from-rss": Answer(page("from-rss", [])),
        "/from-atom": Answer(page("from-atom", [])),
        "/from-sitemap": Answer(page("from-sitemap", [])),
        "/private/x": Answer(page("private", [])),
    }

    def answer(path: str, h: dict[str, str]) -> Answer:
        host = "http://" + h["host"]
        if path == "/robots.txt":
            return Answer(robots.replace("HOST", host), ctype="text/plain")
        if path == "/feed.xml":
            return Answer(f"<?xml version='1.0'?><rss version='2.0'><channel><title>t</title><link>{host}/</link>"
                          f"<item><title>x</title><link>{host}/from-rss</link></item>"
                          f"<item><link>{host}/private/x</link></item></channel></rss>", ctype="application/rss+xml")
        if path == "/atom.xml":
            return Answer(f"<?xml version='1.0'?><feed xmlns='http://www.w3.org/2005/Atom'>"
                          f"<link rel='self' href='{host}/atom.xml'/><entry><title>y</title>"
                          f"<link href='{host}/from-atom'/></entry></feed>", ctype="application/atom+xml")
        if path in ("/sitemap.xml", "/list.txt") and path in robots + "/sitemap.xml":
            return Answer(f"{host}/from-sitemap\n", ctype="text/plain")
        return routes.get(path, Answer("nf", 404))
    return answer


def stored(store: Store) -> dict[str, str]:
    return {u.split("/", 3)[3].rstrip("/"): t for u, t in store.db.execute("SELECT url, title FROM pages")}


def test_discovery_and_robots_hygiene(tmp_path):
    s = Server(discovery_site("User-agent: *\nDisallow: /private/\n"))
    try:
        with Store(tmp_path / "c.db") as store:
            stats = crawl(store, CrawlConfig(seeds=[s.origin + "/"], progress=False), SPEC)
            pages = stored(store)
            rows = store.db.execute("SELECT url, event, detail FROM crawl_log").fetchall()
            log = {(u.split("/", 3)[3].rstrip("/"), e, d) for u, e, d in rows}
    finally:
        s.stop()
    asked = [x.path for x in s.seen]
    # /sitemap.xml probed (robots.txt names none); a TXT sitemap; feeds of the home page read
    assert "/sitemap.xml" in asked and "from-sitemap" in pages
    assert "/feed.xml" in asked and "/atom.xml" in asked and "from-rss" in pages and "from-atom" in pages
    assert "/private/x" not in asked  # a feed's URL obeys robots.txt
    # rel=nofollow not followed; a nofollow page's links not followed
    assert "/nf" not in asked and "/never" not in asked
    # noindex: fetched, not stored, links followed
    assert "/noindex-meta" in asked and "/noindex-hdr" in asked
    assert "noindex-meta" not in pages and "noindex-hdr" not in pages
    assert "via-meta" in pages and "via-hdr" in pages and "nofollow-meta" in pages
    # canonical: the duplicate is not stored; an unknown canonical target is fetched and stored
    assert pages["a"] == "a" and "dup?x=1" not in pages
    assert "canon-target" in pages and "orphan-canon" not in pages
    assert ("loop-a" in pages) != ("loop-b" in pages)  # a canonical loop keeps exactly one
    assert ("dup/?x=1", "fetched", "not stored: canonical " + s.origin + "/a") in log
    assert stats.noindex == 2 and stats.canonical == 3 and stats.nofollow == 2 and stats.feeds == 2
    assert stats.errors == 0, stats.summary()
    assert "2 noindex, 3 canonical elsewhere" in stats.summary()


def test_follow_nofollow_txt_sitemap_and_no_probe_404(tmp_path):
    s = Server(discovery_site("User-agent: *\nSitemap: HOST/list.txt\n"))
    try:
        with Store(tmp_path / "c.db") as store:
            stats = crawl(store, CrawlConfig(seeds=[s.origin + "/"], progress=False, follow_nofollow=True,
                                             feeds=False), SPEC)
            pages = stored(store)
    finally:
        s.stop()
    asked = [x.path for x in s.seen]
    assert "/list.txt" in asked and "/sitemap.xml" not in asked and "from-sitemap" in pages
    assert "nf" in pages and "/feed.xml" not in asked
    assert stats.errors == 0
    # a probe that finds nothing is no error
    s = Server(lambda p, h: Answer("", 404) if p != "/" else Answer(html("home", [])))
    try:
        with Store(tmp_path / "d.db") as store:
            stats = crawl(store, CrawlConfig(seeds=[s.origin + "/"], progress=False), SPEC)
    finally:
        s.stop()
    assert [x.path for x in s.seen].count("/sitemap.xml") == 1 and stats.errors == 0 and stats.pages == 1


def test_feed_parser_formats_and_linear_time():
    from blockcrawl.crawl.sources.feeds import is_feed, parse_feed
    from blockcrawl.crawl.sources.links import robots_directives, x_robots_tag
    rss = (b"<rss><channel><link>https://s.example/</link><item><link> https://s.example/p?a=1&amp;b=2 </link>"
           b"</item></channel></rss>")
    assert is_feed(rss) and parse_feed(rss).urls == ("https://s.example/", "https://s.example/p?a=1&b=2")
    atom = (b"<feed><link rel='self' href='https://s.example/atom'/><entry><link rel=\"alternate\" "
            b"href=\"https://s.example/e1\"/></entry><entry><link href='https://s.example/e2'/></entry></feed>")
    assert parse_feed(atom).urls == ("https://s.example/e1", "https://s.example/e2")
    jf = b'{"version": "https://jsonfeed.org/version/1.1", "items": [{"url": "https://s.example/j"}, {"id": 1}]}'
    assert parse_feed(jf).urls == ("https://s.example/j",)
    assert parse_feed(rss, max_urls=1).truncated
    for head, unit in ((b"<feed>", b"<link "), (b"<rss>", b"<link>")):
        evil = head + unit * 1_000_000
        assert parse_feed(evil).urls == ()
        ratio = growth(parse_feed, head + unit * 250_000, evil)  # linear 4x, quadratic 16x (tests/support/scaling.py)
        assert ratio < 8, (head, ratio)
    assert robots_directives("NONE") == (True, True)
    assert x_robots_tag(["otherbot: noindex", "blockcrawl: nofollow"], "blockcrawl") == (False, True)
    assert x_robots_tag(["noindex", "unavailable_after: 25 Jun 2010 15:00:00 PST"], "blockcrawl") == (True, False)


# ---------------------------------------------------------------- incremental recrawl
class Versioned:
    """n pages /p0 ... /p{n-1}, each linking the next two and home, with ETag + Last-Modified and
    real conditional answers (304); pages can be changed, removed (404/410) or served without
    validators."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.version = dict.fromkeys(range(n), 1)
        self.extra: dict[int, list[str]] = {}
        self.status: dict[int, int] = {}
        self.plain: set[int] = set()  # served without validators
        self.words: dict[int, str] = {}
        self.new_pages: set[str] = set()

    def __call__(self, path: str, h: dict[str, str]) -> Answer:
        if path == "/robots.txt":
            return Answer("User-agent: *\nAllow: /\n", ctype="text/plain")
        if path in self.new_pages:
            return Answer(html("new page " + path, []))
        if not path.startswith("/p") or not path[2:].isdigit() or int(path[2:]) >= self.n:
            return Answer("nf", 404)
        i = int(path[2:])
        if i in self.status:
            return Answer("gone", self.status[i])
        if i in self.plain:
            hdrs = {}
        else:
            hdrs = {"ETag": f'"v{self.version[i]}-{i}"', "Last-Modified": "Tue, 01 Dec 2026 10:00:00 GMT"}
            if h.get("if-none-match") == hdrs["ETag"]:
                return Answer("", 304, hdrs)
        links = [f"/p{j}" for j in (i + 1, i + 2) if j < self.n] + ["/p0"] + self.extra.get(i, [])
        text = f"Page {i} version {self.version[i]} {self.words.get(i, 'plain')} words"
        body = (f"<html><head><title>P{i}</title></head><body><h1>P{i}</h1><p>{text} for page {i}, "
                f"long enough to be one block.</p>{''.join(f'<a href={u}>{u}</a>' for u in links)}</body></html>")
        return Answer(body, headers=hdrs)


def test_recrawl_conditional_requests_changes_removals_and_new_pages(tmp_path):
    from blockcrawl.index import build_index
    from blockcrawl.retrieval import search

    from ..store.test_store import WordEmbedder

    class Counting(WordEmbedder):
        texts: ClassVar[list[str]] = []

        def embed(self, texts):
            self.texts.extend(texts)
            return super().embed(texts)

    site = Versioned(20)
    site.words = {3: "aardvark", 5: "quokka", 7: "wombat"}
    s = Server(site)
    db = tmp_path / "r.db"
    try:
        with Store(db) as store:
            first = crawl(store, CrawlConfig(seeds=[s.origin + "/p0"], progress=False), SPEC)
            assert first.pages == 20 and not first.recrawl
            emb = Counting()
            build_index(store, embedder=emb)
            assert search(store, "quokka", 3, "keyword")[0].url.endswith("/p5")
        site.version[3] += 1
        site.words[3] = "zebrafish"
        site.extra[3] = ["/fresh.html"]
        site.new_pages.add("/fresh.html")
        site.status.update({5: 404, 7: 410})
        site.plain.add(9)  # no validators now, same body: unchanged by its hash
        s.seen.clear()
        with Store(db) as store:
            stats = crawl(store, CrawlConfig(seeds=[], progress=False, recrawl=True), SPEC)
            pages = stored(store)
            emb.texts.clear()
            build_index(store, embedder=emb)
            gone_hits = [h.url for h in search(store, "quokka wombat", 5, "keyword")]
            changed = search(store, "zebrafish", 3, "keyword")
            old = search(store, "aardvark", 3, "keyword")
            vec = {h.url for h in search(store, "quokka page 5", 20, "vector", embedder=WordEmbedder())}
    finally:
        s.stop()
    # 16 answered 304, p9 (no validators any more) by its unchanged body
    assert (stats.unchanged, stats.changed, stats.gone, stats.new) == (17, 1, 2, 1), stats.summary()
    assert "recrawl: 17 unchanged, 1 changed, 2 gone, 1 new" in stats.summary()
    assert sum(1 for x in s.seen if x.path.startswith("/p")) == 20  # each stored page once, nothing more
    conditional = [x for x in s.seen if x.path.startswith("/p") and "if-none-match" in x.headers]
    assert len(conditional) == 20
    assert all(x.headers["if-modified-since"] == "Tue, 01 Dec 2026 10:00:00 GMT" for x in conditional)
    assert "p5" not in pages and "p7" not in pages and "fresh.html" in pages and len(pages) == 19
    assert gone_hits == [] and changed and changed[0].url.endswith("/p3") and old == []
    assert not any(u.endswith(("/p5", "/p7")) for u in vec)
    # the index embedded only the new texts: p3's changed chunk and the new page's
    assert 1 <= len(emb.texts) <= 4 and any("zebrafish" in t for t in emb.texts)


def test_recrawl_max_age_and_schema_migration(tmp_path):
    site = Versioned(6)
    s = Server(site)
    db = tmp_path / "m.db"
    try:
        with Store(db) as store:
            crawl(store, CrawlConfig(seeds=[s.origin + "/p0"], progress=False), SPEC)
            store.db.execute("UPDATE pages SET fetched_at = fetched_at - 7200 WHERE url LIKE '%/p1/'")
            store.commit()
        s.seen.clear()
        with Store(db) as store:
            stats = crawl(store, CrawlConfig(seeds=[], progress=False, recrawl=True, max_age=3600), SPEC)
        assert [x.path for x in s.seen if x.path.startswith("/p")] == ["/p1"] and stats.unchanged == 1
    finally:
        s.stop()
    # a version-2 store (no validator columns) is migrated by the first writer
    import sqlite3
    v1 = tmp_path / "v2.db"
    Store(v1).close()
    con = sqlite3.connect(v1)
    for col in ("etag", "last_modified", "body_hash"):
        con.execute(f"ALTER TABLE pages DROP COLUMN {col}")
    con.execute("PRAGMA user_version=2")
    con.commit()
    con.close()
    with Store(v1) as st:
        assert st.schema_version == SCHEMA_VERSION
        assert {"etag", "last_modified", "body_hash"} <= {r[1] for r in st.db.execute("PRAGMA table_info(pages)")}
    with pytest.raises(ConfigError):
        CrawlConfig(seeds=[], max_age=10)


class Socks5:
    """A minimal SOCKS5 proxy (RFC 1928 CONNECT, RFC 1929 username/password) that records the
    destinations and credentials it was given and relays bytes both ways."""

    def __init__(self) -> None:
        import socket
        self.seen: list[tuple[str, int, str, str]] = []
        self.sock = socket.create_server(("127.0.0.4", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _read(c, n: int) -> bytes:
        b = b""
        while len(b) < n:
            x = c.recv(n - len(b))
            if not x:
                raise OSError("closed")
            b += x
        return b

    def _serve(self, c) -> None:
        import socket
        import struct
        try:
            r = self._read
            _, nmeth = r(c, 2)
            r(c, nmeth)
            c.sendall(b"\x05\x02")  # username/password
            _, ulen = r(c, 2)
            user = r(c, ulen).decode()
            (plen,) = r(c, 1)
            pw = r(c, plen).decode()
            c.sendall(b"\x01\x00")
            _, _, _, atyp = r(c, 4)
            if atyp == 1:
                host = socket.inet_ntoa(r(c, 4))
            else:
                (n,) = r(c, 1)
                host = r(c, n).decode()
            (port,) = struct.unpack("!H", r(c, 2))
            self.seen.append((host, port, user, pw))
            up = socket.create_connection((host, port), timeout=5)
            c.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", port))
        except OSError:
            c.close()
            return

        def pump(a, b) -> None:
            try:
                while True:
                    x = a.recv(65536)
                    if not x:
                        break
                    b.sendall(x)
            except OSError:
                pass
            finally:
                for s in (a, b):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
        threading.Thread(target=pump, args=(c, up), daemon=True).start()
        pump(up, c)

    def stop(self) -> None:
        self.sock.close()


def test_socks5_proxy(simple_site, tmp_path, caplog):
    pytest.importorskip("aiohttp_socks")
    site, _ = simple_site
    px = Socks5()
    caplog.set_level(logging.DEBUG)
    try:
        cred = Credentials(proxy=f"socks5://pu:{PROXY_PASSWORD}@127.0.0.4:{px.port}")
        db = tmp_path / "c.db"
        with Store(db) as store:
            stats = crawl(store, CrawlConfig(seeds=[site.origin + "/"], progress=False, credentials=cred,
                                             per_host=1), SPEC)
    finally:
        px.stop()
    assert stats.pages == 3, stats.summary()
    port = int(site.origin.rsplit(":", 1)[1])
    assert px.seen and all(x == ("127.0.0.1", port, "pu", PROXY_PASSWORD) for x in px.seen)
    assert len(site.seen) == 5  # robots.txt, /sitemap.xml, 3 pages: all through the proxy
    assert PROXY_PASSWORD.encode() not in store_bytes(db) and PROXY_PASSWORD not in caplog.text


class Proxy407:
    """A proxy that answers every request, CONNECT included, with 407 Proxy Authentication Required."""

    def __init__(self) -> None:
        import socket

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with c:
                data = b""
                while b"\r\n\r\n" not in data and (part := c.recv(4096)):
                    data += part
                self.seen += 1
                c.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=x\r\n"
                          b"Content-Length: 0\r\nConnection: close\r\n\r\n")

    def stop(self) -> None:
        self.sock.close()


def test_a_proxy_password_from_the_environment_reaches_no_store_log_or_export(tmp_path):
    """https_proxy=http://user:SECRET@host/ and a proxy answering 407: aiohttp's error names the proxy
    URL with its password, and crawl_log.detail held it. Every variable the README names, any case."""
    import os
    import subprocess
    import sys

    proxy = Proxy407()
    secret = "Env-Proxy-Secret-77"
    url = f"http://envuser:{secret}@127.0.0.1:{proxy.port}/"
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    root = str(Path(__file__).resolve().parents[2])
    env.update(PYTHONPATH=root, https_proxy=url, HTTP_PROXY=url, ALL_PROXY=url, NO_PROXY="")
    db = tmp_path / "c.db"
    try:
        crawled = subprocess.run([sys.executable, "-m", "blockcrawl", "crawl", "https://127.0.0.1:9/", "http://127.0.0.2:9/",
                                  "--store", str(db), "--retries", "0", "--workers", "0", "--no-progress", "-vv"],
                                 capture_output=True, text=True, env=env, timeout=120, cwd=root)
    finally:
        proxy.stop()
    assert proxy.seen >= 2, crawled.stderr  # the proxy was asked (CONNECT for https, GET for http)
    with Store(db) as store:
        details = [d for (d,) in store.db.execute("SELECT detail FROM crawl_log") if d]
    assert any("407" in d and "***@127.0.0.1" in d for d in details), details
    out = crawled.stdout + crawled.stderr
    for what in ("frontier", "pages", "chunks"):
        out += subprocess.run([sys.executable, "-m", "blockcrawl", "export", "--store", str(db), "--what", what],
                              capture_output=True, text=True, env=env, timeout=120, cwd=root).stdout
    assert secret not in out and secret.encode() not in store_bytes(db)
    assert "Traceback" not in crawled.stderr


def test_redact_takes_the_userinfo_of_any_url_and_env_proxy_passwords(monkeypatch):
    assert redact("ClientHttpProxyError: 407, url='http://u:p4ss@127.0.0.1:3128/'", []) == \
        "ClientHttpProxyError: 407, url='http://***@127.0.0.1:3128/'"
    assert redact("see https://example.org/a@b and mailto:x@y", []) == "see https://example.org/a@b and mailto:x@y"
    monkeypatch.setenv("https_proxy", "http://eu:Env-Secret-9@proxy.example:3128")
    assert "Env-Secret-9" in Credentials().secrets()
    assert "Env-Secret-9" not in Credentials(proxy_env=False).secrets()

"""`blockcrawl extract` as a user runs it: a subprocess over files, folders and standard input."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..chunk.test_sections_dedup_chunks import PAGE1, PAGE2

ROOT = Path(__file__).resolve().parents[2]


def run(*args, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "blockcrawl", *args], cwd=ROOT, input=stdin,
                          capture_output=True, timeout=120)


def test_extract_jsonl_over_a_folder(tmp_path):
    (tmp_path / "a.html").write_text(PAGE1, encoding="utf-8")
    (tmp_path / "b.html").write_text(PAGE2, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not html", encoding="utf-8")
    r = run("extract", str(tmp_path), "--chunk-size", "100", "--overlap", "20")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert {"url", "text", "heading_path", "chunk_index", "block_hash"} <= set(rows[0])
    assert sum("Britannica contains" in row["text"] for row in rows) == 1
    germany = [row for row in rows if row["heading_path"] == ["Europe Countries", "Germany"]]
    assert len(germany) == 1 and germany[0]["url"].endswith("a.html")
    china = [row for row in rows if row["heading_path"][-1:] == ["China"]]
    assert [row["chunk_index"] for row in china] == list(range(len(china))) and len(china) >= 2


def test_extract_text_mode_from_stdin():
    r = run("extract", "-", "--mode", "text", "--format", "text",
            stdin=b"<h1>Header</h1> Some text <div><script>x()</script><p>Paragraph.</p></div>")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().strip() == "Header Some text Paragraph."


@pytest.mark.slow
def test_extract_markdown_and_full_path(tmp_path):
    page = tmp_path / "p.html"
    page.write_text(PAGE1, encoding="utf-8")
    md = run("extract", str(page), "--format", "markdown").stdout.decode()
    assert "# Europe Countries" in md and "## Germany" in md
    assert md.index("## Germany") < md.index("Germany, officially") < md.index("## France")
    rows = [json.loads(x) for x in run("extract", str(page), "--full-path").stdout.decode().splitlines()]
    assert any(row["text"].startswith("Europe Countries > France: France, officially") for row in rows)


@pytest.mark.slow
def test_missing_file_and_bad_options_give_one_line_errors(tmp_path):
    (tmp_path / "ok.html").write_text("<p>fine</p>", encoding="utf-8")
    r = run("extract", str(tmp_path / "missing.html"), str(tmp_path / "ok.html"), "--mode", "text")
    assert r.returncode == 1
    assert b"fine" in r.stdout  # the good file is still processed
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "missing.html" in err[0] and "Traceback" not in r.stderr.decode()
    r = run("extract", str(tmp_path / "ok.html"), "--chunk-size", "10", "--overlap", "10")
    assert r.returncode == 2 and b"overlap" in r.stderr


def _site_page(topic: str, body: str) -> str:
    return (f"<html><body><div id='top'><a href='/'>Home</a> <a href='/news'>News</a> <a href='/about'>About us</a>"
            f"<p>Subscribe to the weekly letter of the Springfield Gazette today.</p></div>"
            f"<div id='content'><h1>{topic}</h1><p>{body}</p></div>"
            f"<div id='bottom'><p>Copyright Springfield Gazette, all rights reserved worldwide.</p></div></body></html>")


def test_template_algorithm_sees_the_pages_as_one_site(tmp_path):
    bodies = {"rain": "Heavy rain flooded the lower town on Monday and the river rose two metres overnight.",
              "fair": "The county fair opens on Friday with a parade, a cattle show and fireworks at ten.",
              "road": "Road works on the main street will close the bridge for three weeks from June."}
    for name, body in bodies.items():
        (tmp_path / f"{name}.html").write_text(_site_page(name.title(), body), encoding="utf-8")
    r = run("extract", str(tmp_path), "--mode", "main", "--algorithm", "template", "--format", "text",
            "--no-dedup")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    for body in bodies.values():
        assert body in out
    # the parts the three pages share are template, removed on every page
    assert "Subscribe to the weekly letter" not in out and "Copyright Springfield" not in out


# --------------------------------------------------------------------------- faults: one line each
def _gz(path: Path, data: bytes) -> Path:
    import gzip

    path.write_bytes(gzip.compress(data, 9))
    return path


@pytest.mark.slow
def test_gzip_bomb_is_bounded_by_max_bytes(tmp_path):
    """A 2 MB .html.gz used to inflate without limit (2.18 GB); now --max-bytes (10 MiB) caps it."""
    bomb = _gz(tmp_path / "bomb.html.gz", b"<p>" + b"a" * 30_000_000)  # 30 MB from ~30 KB
    (tmp_path / "ok.html").write_text("<p>fine</p>", encoding="utf-8")
    r = run("extract", str(bomb), str(tmp_path / "ok.html"), "--mode", "text", "--format", "text")
    assert r.returncode == 1 and b"fine" in r.stdout
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "bomb.html.gz" in err[0] and "--max-bytes" in err[0]
    small = _gz(tmp_path / "small.html.gz", b"<p>" + b"b" * 5000 + b"</p>")
    assert run("extract", str(small), "--mode", "text", "--max-bytes", "4000").returncode == 1
    r = run("extract", str(small), "--mode", "text", "--format", "text", "--max-bytes", "6000")
    assert r.returncode == 0 and r.stdout.decode().strip() == "b" * 5000


def test_truncated_gzip_is_one_line_and_the_other_files_still_run(tmp_path):
    whole = _gz(tmp_path / "a.html.gz", PAGE1.encode())
    cut = tmp_path / "b.html.gz"
    cut.write_bytes(whole.read_bytes()[: len(whole.read_bytes()) // 2])
    (tmp_path / "junk.html.gz").write_bytes(b"not gzip at all")
    r = run("extract", str(tmp_path), "--mode", "text", "--format", "text")
    assert r.returncode == 1 and "Traceback" not in r.stderr.decode()
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 2 and "b.html.gz" in err[0] and "truncated" in err[0] and "junk.html.gz" in err[1]
    assert b"Germany" in r.stdout  # a.html.gz


@pytest.mark.slow
def test_bad_tokenizer_and_options_exit_2_in_one_line(tmp_path):
    (tmp_path / "ok.html").write_text("<p>fine</p>", encoding="utf-8")
    bad_json = tmp_path / "tok.json"
    bad_json.write_text("{not a tokenizer", encoding="utf-8")
    for args, word in ((["--tokenizer", "nope"], "tokenizer"), (["--tokenizer", str(bad_json)], "tokenizer"),
                       (["--timeout", "0"], "timeout"), (["--max-bytes", "0"], "max_bytes"),
                       (["--mode", "main", "--algorithm", "nope"], "unknown algorithm")):
        r = run("extract", str(tmp_path / "ok.html"), *args)
        err = r.stderr.decode()
        assert r.returncode == 2 and word in err and "Traceback" not in err, (args, err)
        assert len(err.strip().splitlines()) == 1 and not r.stdout


def test_empty_folder_says_so_and_exits_2(tmp_path):
    (tmp_path / "notes.txt").write_text("not html", encoding="utf-8")
    r = run("extract", str(tmp_path))
    assert r.returncode == 2 and not r.stdout
    assert str(tmp_path) in r.stderr.decode() and "no" in r.stderr.decode()


class _RawServer:
    """A TCP server on 127.0.0.1 answering every connection with handler(socket)."""

    def __init__(self, handler) -> None:
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.handler, self.stop = handler, threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        import threading

        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn) -> None:
        try:
            conn.recv(65536)
            self.handler(conn, self.stop)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def test_bad_status_line_is_one_line():
    srv = _RawServer(lambda c, stop: c.sendall(b"HELLO THERE\r\n\r\n<p>x</p>"))
    try:
        r = run("extract", f"http://127.0.0.1:{srv.port}/", "--mode", "text")
    finally:
        srv.close()
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"127.0.0.1:{srv.port}" in err


@pytest.mark.slow
def test_url_fetch_has_a_total_timeout():
    """A server trickling a byte every 0.1 s was read for as long as it liked (61 s, exit 0). The
    server trickles until the command has ended, so "timed out" can only be --timeout's doing."""
    def trickle(c, stop):
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n<p>")
        while not stop.wait(0.1):
            c.sendall(b"a")

    def trickle_headers(c, stop):
        c.sendall(b"HTTP/1.1 200 OK\r\n")
        while not stop.wait(0.1):
            c.sendall(b"X-Slow: 1\r\n")

    for handler in (trickle, trickle_headers):
        srv = _RawServer(handler)
        try:
            r = run("extract", f"http://127.0.0.1:{srv.port}/", "--mode", "text", "--timeout", "1.5")
        finally:
            srv.close()
        err = r.stderr.decode()
        assert r.returncode == 1 and "timed out" in err and len(err.strip().splitlines()) == 1, err



# ---- redirects obey crawl's address policy ---------------------------------------------------------

SECRET_PAGE = "<html><body><h1>Internal</h1><p>The intranet secret page text.</p></body></html>"


def _redirecting_site(targets: dict[str, str]):
    from ..support.crawlsite import Route, Site

    routes = {f"/{name}": Route(b"", 302, headers={"Location": loc}) for name, loc in targets.items()}
    routes["/secret"] = Route(SECRET_PAGE)
    routes["/page"] = Route("<html><body><h1>Public</h1><p>A public page about spice markets.</p></body></html>")
    return Site(routes).start()


def test_extract_refuses_redirects_out_of_the_urls_block_as_crawl_does():
    """A URL on 127.0.0.1 allows loopback (its own block, as a crawl seed does) and nothing else:
    redirects to 0.0.0.0 (which reaches this machine), its decimal and IPv4-mapped spellings and the
    cloud metadata address are refused before connecting; --allow-private follows them."""
    from ..support.crawlsite import Route, Site

    site: Site = _redirecting_site({})
    port = site.port
    for name, loc in {"to-zero": f"http://0.0.0.0:{port}/secret", "to-decimal": f"http://0:{port}/secret",
                      "to-mapped": f"http://[::ffff:0.0.0.0]:{port}/secret",
                      "to-metadata": "http://169.254.169.254/latest/meta-data/",
                      "to-metadata-decimal": "http://2852039166/latest/meta-data/"}.items():
        site.routes[f"/{name}"] = Route(b"", 302, headers={"Location": loc})
    try:
        for name in ("to-zero", "to-decimal", "to-mapped", "to-metadata", "to-metadata-decimal"):
            r = run("extract", f"http://127.0.0.1:{port}/{name}", "--mode", "text", "--format", "text",
                    "--timeout", "5")
            err = r.stderr.decode()
            assert r.returncode == 1 and b"secret page" not in r.stdout, (name, r.stdout, err)
            assert "not fetched; --allow-private fetches it" in err and len(err.strip().splitlines()) == 1, (name, err)
        assert "/secret" not in site.counts
        r = run("extract", f"http://127.0.0.1:{port}/to-zero", "--mode", "text", "--format", "text", "--allow-private")
        assert r.returncode == 0 and b"secret page" in r.stdout, r.stderr
    finally:
        site.stop()


def test_extract_judges_every_hop_after_dns_and_never_prints_userinfo():
    """A public URL (its name looked up by a table; the public address it gives is routed to the
    loopback server here, the rest of the network is real) redirecting to loopback in any spelling,
    or to a name that resolves to loopback, is refused; a Location's user:password@ is dropped."""
    import socket

    from blockcrawl.cli.extract_cmd import InputError, Network, fetch

    from ..support.crawlsite import Route

    site = _redirecting_site({})
    port = site.port
    public = "93.184.216.34"
    table = {"public.example": public, "rebind.example": "127.0.0.1"}

    def getaddrinfo(host: str, p: int) -> list[tuple]:
        if host in table:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (table[host], p))]
        return socket.getaddrinfo(host, p, type=socket.SOCK_STREAM)

    def connect(address: tuple[str, int], timeout: float | None) -> socket.socket:
        return socket.create_connection(("127.0.0.1", port) if address[0] == public else address, timeout)

    net = Network(getaddrinfo, connect)
    for name, loc in {"to-loopback": f"http://127.0.0.1:{port}/secret", "to-decimal": f"http://2130706433:{port}/secret",
                      "to-hex": f"http://0x7f.1:{port}/secret", "to-v6": f"http://[::1]:{port}/secret",
                      "to-rebind": f"http://rebind.example:{port}/secret", "to-localhost": f"http://localhost:{port}/secret",
                      "to-userinfo": f"http://user:Location-Secret@public.example:{port}/page"}.items():
        site.routes[f"/{name}"] = Route(b"", 302, headers={"Location": loc})
    try:
        body, url, _ = fetch(f"http://public.example:{port}/page", 10**6, 10, net=net)
        assert b"spice markets" in body and url == f"http://public.example:{port}/page"
        for name in ("to-loopback", "to-decimal", "to-hex", "to-v6", "to-rebind", "to-localhost"):
            with pytest.raises(InputError, match="non-public|not fetched"):
                fetch(f"http://public.example:{port}/{name}", 10**6, 10, net=net)
        assert "/secret" not in site.counts
        body, url, _ = fetch(f"http://public.example:{port}/to-userinfo", 10**6, 10, net=net)
        assert b"spice markets" in body and url == f"http://public.example:{port}/page", url
        body, _, _ = fetch(f"http://public.example:{port}/to-loopback", 10**6, 10, allow_private=True, net=net)
        assert b"secret page" in body
    finally:
        site.stop()


def test_an_unknown_encoding_is_an_error(tmp_path):
    page = tmp_path / "p.html"
    page.write_bytes("<p>caf\u00e9 au lait</p>".encode("latin-1"))
    r = run("extract", str(page), "--encoding", "nope", "--mode", "text")
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b"", err
    assert err.strip() == "blockcrawl extract: --encoding: unknown character set 'nope'", err
    r = run("extract", str(page), "--encoding", "latin-1", "--mode", "text", "--format", "text")
    assert r.returncode == 0 and "caf\u00e9" in r.stdout.decode(), r.stderr


def test_through_a_proxy_its_block_is_not_a_redirect_target():
    """Through a proxy (from http_proxy) on loopback, the proxy's block is allowed to connect to, as
    crawl allows --proxy's, but not as a redirect target: a page at 0.0.0.0 (the URL's own block,
    "unspecified") redirecting to 127.0.0.1 is refused; the page itself comes through the proxy."""
    import os

    from ..crawl.test_crawl_credentials_proxies_recrawl import Proxy
    from ..support.crawlsite import Route

    site = _redirecting_site({})
    port = site.port
    site.routes["/to-loopback"] = Route(b"", 302, headers={"Location": f"http://127.0.0.1:{port}/secret"})
    proxy = Proxy()
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(http_proxy=f"http://127.0.0.3:{proxy.port}", PYTHONPATH=str(ROOT))
    try:
        def extract(path: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "blockcrawl", "extract", f"http://0.0.0.0:{port}{path}",
                                   "--mode", "text", "--format", "text"], cwd=ROOT, capture_output=True, timeout=120,
                                  env=env)
        r = extract("/page")
        assert r.returncode == 0 and b"spice markets" in r.stdout, r.stderr
        r = extract("/to-loopback")
        assert r.returncode == 1 and b"secret page" not in r.stdout and b"not fetched" in r.stderr, (r.stdout, r.stderr)
        assert [p for p, _ in proxy.seen] == [f"http://0.0.0.0:{port}/page", f"http://0.0.0.0:{port}/to-loopback"]
    finally:
        site.stop()
        proxy.stop()

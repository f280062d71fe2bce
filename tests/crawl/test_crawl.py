"""The crawler against real HTTP servers on 127.0.0.1 (tests/support/crawlsite.py), into real SQLite stores."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from blockcrawl.crawl import CrawlConfig, crawl
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import Store

from ..support.crawlsite import Route, Site, chain_site, gzip_bomb, page

ROOT = Path(__file__).resolve().parents[2]
SPEC = PipelineConfig(tokenizer="words")


def run(site_or_urls, tmp_path: Path, name: str = "c.db", **kw):
    seeds = [site_or_urls.origin + "/"] if isinstance(site_or_urls, Site) else site_or_urls
    kw.setdefault("progress", False)
    kw.setdefault("backoff", 0.05)
    kw.setdefault("timeout", 5.0)
    store = Store(tmp_path / name)
    stats = crawl(store, CrawlConfig(seeds=seeds, **kw), SPEC)
    store.commit()
    return stats, store


def frontier(store: Store) -> dict[str, tuple]:
    return {u: (st, status, err) for u, st, status, err in
            store.db.execute("SELECT url, state, status, error FROM frontier")}


@pytest.fixture
def site():
    s = Site()
    yield s
    s.stop()


def test_full_site_behaviour(site, tmp_path):
    """One crawl of a site with every kind of link, redirect, error and trap the crawler must handle."""
    o = None  # filled after start (absolute links need the port)
    r = site.routes
    site.start()
    o = site.origin
    r["/robots.txt"] = Route(f"User-agent: *\nAllow: /private/open/\nDisallow: /private/\n"
                             f"Sitemap: {o}/sitemap.xml\n", ctype="text/plain")
    r["/sitemap.xml"] = Route(f'<?xml version="1.0"?><urlset><url><loc>{o}/orphan.html</loc></url>'
                              f'<url><loc>{o}/</loc></url></urlset>', ctype="application/xml")
    r["/orphan.html"] = Route(page("Orphan", []))
    variants = ["/a.html", f"{o}/a.html", f"//127.0.0.1:{site.port}/a.html", "a.html", "./a.html",
                "/a.html#frag", "/a.html?utm_source=news&utm_medium=mail", "/x/../a.html", "/%61.html",
                f"HTTP://127.0.0.1:{site.port}/a.html", "  /a.html\n", "/sec", "/sec/"]
    invalid = ["#top", "", "javascript:void(0)", "mailto:a@b.c", "tel:+15550100", "data:text/html,x",
               "http://127.0.0.1:notaport/"]
    r["/"] = Route(page("Home", variants + invalid + [
        "/private/secret.html", "/private/open/note.html", "/r/chain", "/r/loop-a", "/missing.html",
        "/flaky.html", "/big.html", "/bomb.html", "/doc", "/deep.html", "/legacy.html", "/file.pdf",
        "/deep2/", "https://elsewhere.example/x.html"]))
    r["/a.html"] = Route(page("A", ["/"]))
    r["/sec/"] = Route(page("Section", ["/a.html"]))
    r["/private/secret.html"] = Route(page("Secret", []))
    r["/private/open/note.html"] = Route(page("Open note", []))
    r["/r/chain"] = Route(status=301, headers={"Location": "/r/chain2"})
    r["/r/chain2"] = Route(status=302, headers={"Location": f"{o}/landing.html"})
    r["/landing.html"] = Route(page("Landing", []))
    r["/r/loop-a"] = Route(status=302, headers={"Location": "/r/loop-b"})
    r["/r/loop-b"] = Route(status=302, headers={"Location": "/r/loop-a"})
    t_flaky: list[float] = []

    def flaky(n: int) -> Route:
        t_flaky.append(time.monotonic())
        if n == 0:
            return Route(page("busy", []), status=503, headers={"Retry-After": "1"})
        return Route(page("Flaky finally", ["/flaky-tail.html"]))
    r["/flaky.html"] = Route(dynamic=flaky)
    r["/flaky-tail.html"] = Route(page("Flaky tail", []))
    r["/big.html"] = Route(page("Big", ["/never.html"], "word " * 40000))
    r["/bomb.html"] = Route(gzip_bomb(5_000_000), headers={"Content-Encoding": "gzip"})
    r["/doc"] = Route(b"%PDF-1.4 not html", ctype="application/pdf")
    r["/file.pdf"] = Route(b"%PDF-1.4", ctype="application/pdf")
    r["/deep.html"] = Route("<html><body>" + "<div>" * 10000 + '<a href="/deep-tail.html">t</a>'
                            + "</div>" * 10000 + "</body></html>")
    r["/deep-tail.html"] = Route(page("Deep tail", []))
    r["/legacy.html"] = Route(('<html><head><meta charset="windows-1251"></head><body><p>Привет мир</p>'
                               '<a href="/статья.html">статья</a></body></html>').encode("cp1251"),
                              ctype="text/html")
    r["/%D1%81%D1%82%D0%B0%D1%82%D1%8C%D1%8F.html"] = Route(page("Article", []))
    r["/deep2/"] = Route(page("Depth 1", ["/depth2.html"]))
    r["/depth2.html"] = Route(page("Depth 2", ["/depth3.html"]))
    r["/depth3.html"] = Route(page("Depth 3", []))

    stats, store = run(site, tmp_path, max_bytes=150_000, retries=2)
    paths = site.paths()
    # robots.txt first; nothing disallowed requested; the allowed exception fetched
    assert paths[0] == "/robots.txt"
    assert "/private/secret.html" not in paths and "/private/open/note.html" in paths
    assert stats.robots_blocked >= 1
    # every variant of /a.html fetched once; /sec and /sec/ merged
    assert paths.count("/a.html") == 1 and "/%61.html" not in paths
    assert paths.count("/sec/") + paths.count("/sec") == 1
    # invalid links skipped and counted
    assert stats.invalid["fragment"] >= 1 and stats.invalid["scheme"] >= 4 and stats.invalid["malformed"] >= 1
    # sitemap seeds, redirect chain, non-ASCII href, deep link, out-of-site link not followed
    for p in ("/orphan.html", "/landing.html", "/%D1%81%D1%82%D0%B0%D1%82%D1%8C%D1%8F.html", "/deep-tail.html",
              "/depth3.html"):
        assert p in paths, p
    assert stats.filtered["scope"] >= 1 and stats.filtered["extension"] >= 1 and "/file.pdf" not in paths
    f = frontier(store)
    # redirect loop: recorded, each hop requested once
    assert paths.count("/r/loop-a") == 1 and paths.count("/r/loop-b") == 1
    assert f[o + "/r/loop-b/"][2] == "redirect loop"
    # 404 recorded, not retried
    assert paths.count("/missing.html") == 1 and f[o + "/missing.html"][1:] == (404, "http 404")
    # 503 Retry-After: 1 honoured, then the page and its link
    assert len(t_flaky) == 2 and t_flaky[1] - t_flaky[0] >= 0.95 and "/flaky-tail.html" in paths
    # size cap and decompression bomb: recorded, links of the big page not followed
    assert f[o + "/big.html"][2] == "too_large" and "/never.html" not in paths
    assert f[o + "/bomb.html"][2] == "bomb"
    assert f[o + "/doc/"][2] == "content_type"
    # the store holds pages, blocks and chunks; the log has every URL's outcome
    n_pages = store.db.execute("SELECT count(*) FROM pages").fetchone()[0]
    assert n_pages == stats.pages and n_pages >= 12
    assert store.db.execute("SELECT count(*) FROM chunks WHERE url=?", (o + "/orphan.html",)).fetchone()[0] >= 1
    ua = {h.ua for h in site.hits}
    assert len(ua) == 1 and ua.pop().startswith("blockcrawl/")
    failed = {u for u, (st, _, _) in f.items() if st == 3}
    logged = {u for (u,) in store.db.execute("SELECT url FROM crawl_log WHERE event='failed'")}
    assert failed == logged


def test_depth_include_exclude_and_max_pages(site, tmp_path):
    site.routes.update(chain_site(30))
    site.start()
    _, store = run([site.origin + "/p0.html"], tmp_path, "d.db", max_depth=1)
    # (robots.txt names no sitemap: /sitemap.xml is probed)
    assert set(site.paths()) - {"/robots.txt", "/sitemap.xml"} == {"/p0.html", "/p1.html", "/p2.html"}
    site.hits.clear()
    run([site.origin + "/p0.html"], tmp_path, "e.db", include=[r"/p\d\.html"], exclude=[r"/p7"])
    assert set(site.paths()) - {"/robots.txt", "/sitemap.xml"} == {f"/p{i}.html" for i in range(10) if i != 7}
    site.hits.clear()
    stats, _ = run([site.origin + "/p0.html"], tmp_path, "f.db", max_pages=5, concurrency=2)
    assert len(set(site.paths()) - {"/robots.txt", "/sitemap.xml"}) == 5 and stats.pages == 5


def gaps(hits) -> list[float]:
    ts = sorted(h.t for h in hits)
    return [b - a for a, b in zip(ts, ts[1:])]


def test_politeness_delay_per_host_not_across_hosts(tmp_path):
    """--delay spaces requests to one host (measured by the server), hosts do not wait for each
    other, a robots.txt Crawl-delay larger than --delay wins, per-host concurrency is capped."""
    a, b = Site(chain_site(8, latency=0.01)), Site(chain_site(8, latency=0.01))
    b.routes["/robots.txt"] = Route("User-agent: *\nDisallow: /nope/\nCrawl-delay: 0.4\n", ctype="text/plain")
    a.start(), b.start()
    try:
        run([a.origin + "/p0.html", b.origin + "/p0.html"], tmp_path, delay=0.2, per_host=4, concurrency=8,
            sitemaps=False)  # no /sitemap.xml probe among the hits counted
        assert len(a.hits) == 9 and len(b.hits) == 9
        assert min(gaps(a.hits)) >= 0.2
        assert min(gaps(b.hits)) >= 0.4
        # the two hosts were crawled side by side: their requests interleave (one after the
        # other would switch hosts once; side by side ~9 times: a's 9 fit in b's first 5)
        merged = [s for _, s in sorted([(h.t, "a") for h in a.hits] + [(h.t, "b") for h in b.hits])]
        assert sum(x != y for x, y in zip(merged, merged[1:])) >= 4, merged
    finally:
        a.stop(), b.stop()


def test_per_host_concurrency_cap(site, tmp_path):
    site.routes.update(chain_site(40, latency=0.05))
    site.routes["/hub.html"] = Route(page("Hub", [f"/p{i}.html" for i in range(40)]))
    site.start()
    run([site.origin + "/hub.html"], tmp_path, per_host=3, concurrency=16)
    assert site.max_inflight == 3


def test_429_pushes_back_and_retries_give_up(site, tmp_path):
    times: list[float] = []

    def limited(n: int) -> Route:
        times.append(time.monotonic())
        return Route(page("Rate", []), status=429 if n == 0 else 200, headers={"Retry-After": "1"} if n == 0 else {})
    site.routes.update({"/": Route(page("Home", ["/rate.html", "/err.html", "/slow.html"])),
                        "/rate.html": Route(dynamic=limited), "/err.html": Route(status=500),
                        "/slow.html": Route(page("Slow", []), delay=1.5)})
    site.start()
    stats, store = run(site, tmp_path, retries=2, timeout=0.5)
    assert len(times) == 2 and times[1] - times[0] >= 0.95
    f = frontier(store)
    assert site.paths().count("/err.html") == 3 and f[site.origin + "/err.html"][2] == "http 500"
    # a timeout is retried once whatever --retries says
    assert site.counts["/slow.html"] == 2 and f[site.origin + "/slow.html"][2] == "timeout"
    assert stats.retries == 4 and stats.errors == 2


def test_unreachable_hosts_are_recorded_not_fatal(tmp_path):
    s = Site().start()
    port = s.port
    s.stop()  # nothing listens there any more: connection refused
    stats, store = run([f"http://127.0.0.1:{port}/", "http://nonexistent.invalid/"], tmp_path, retries=1,
                       scope="any")
    f = frontier(store)
    assert f[f"http://127.0.0.1:{port}/"][2] == "connect"
    assert f["http://nonexistent.invalid/"][2] == "dns"
    assert stats.errors == 2


def _cli(*args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "blockcrawl", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _requests(log: Path) -> list[dict]:
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.exists() else []


@pytest.mark.slow
def test_kill_9_then_resume_loses_nothing_and_refetches_only_interrupted(tmp_path):
    n = 150
    log = tmp_path / "access.jsonl"
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "crawlsite.py"), "0", str(log), str(n)],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        origin = f"http://127.0.0.1:{port}"
        db = tmp_path / "k.db"
        args = ["crawl", origin + "/p0.html", "--store", str(db), "--no-progress", "--tokenizer", "words",
                "--concurrency", "8", "--per-host", "4", "--workers", "1"]
        p = _cli(*args)
        deadline = time.time() + 60
        while sum(1 for r in _requests(log) if r["path"] != "/robots.txt") < 40 and time.time() < deadline:
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        before = _requests(log)
        con = sqlite3.connect(db)
        done_at_kill = {u for (u,) in con.execute("SELECT url FROM frontier WHERE state=2")}
        con.close()
        assert 0 < len(done_at_kill) < n
        p = _cli(*args[:1], "--resume", *args[2:])
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        after = _requests(log)[len(before):]
        pages = [r["path"] for r in before + after if r["path"] not in ("/robots.txt", "/sitemap.xml")]
        # none lost: every page of the site fetched and stored
        assert set(pages) == {f"/p{i}.html" for i in range(n)}
        con = sqlite3.connect(db)
        assert con.execute("SELECT count(*) FROM pages").fetchone()[0] == n
        # fetched twice only if its result was not committed when the process died
        twice = {x for x in set(pages) if pages.count(x) > 1}
        assert all(origin + x not in done_at_kill for x in twice)
        assert len(twice) <= 8 + 8  # bounded by what was in flight / being committed
        assert all(pages.count(x) <= 2 for x in twice)
        # blocks of pages stored before the kill are not stored again (dedup state restored)
        dup = con.execute("SELECT count(*) - count(DISTINCT hash) FROM blocks").fetchone()[0]
        assert dup == 0
    finally:
        server.kill()


@pytest.mark.slow
def test_sigint_stops_gracefully_then_resume_and_export(tmp_path):
    site = Site(chain_site(60, latency=0.05)).start()
    try:
        db = tmp_path / "s.db"
        args = ["crawl", site.origin + "/p0.html", "--store", str(db), "--no-progress", "--tokenizer", "words",
                "--concurrency", "4", "--workers", "0"]
        p = _cli(*args)
        deadline = time.time() + 60
        while len(site.hits) < 15 and time.time() < deadline:
            time.sleep(0.02)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        assert p.returncode == 130 and "Traceback" not in err and "stopped: interrupted" in err
        con = sqlite3.connect(db)
        assert con.execute("SELECT count(*) FROM frontier WHERE state=1").fetchone()[0] == 0  # in-flight finished
        n1 = con.execute("SELECT count(*) FROM pages").fetchone()[0]
        con.close()
        assert 0 < n1 < 60
        p = _cli("crawl", "--resume", *args[2:])
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        paths = [h.path for h in site.hits if h.path not in ("/robots.txt", "/sitemap.xml")]
        assert sorted(set(paths)) == sorted(f"/p{i}.html" for i in range(60)) and len(paths) == 60
        for what, n in (("pages", 60), ("chunks", None), ("blocks", None)):
            p = _cli("export", "--store", str(db), "--format", "jsonl", "--what", what)
            out, err = p.communicate(timeout=30)
            recs = [json.loads(x) for x in out.splitlines()]
            assert p.returncode == 0 and recs and all("url" in r and r["url"].startswith(site.origin) for r in recs)
            if n:
                assert len(recs) == n
    finally:
        site.stop()


@pytest.mark.slow
def test_cli_errors_are_one_line(tmp_path):
    for args, msg in ((["crawl", "ftp://x.org/", "--store", str(tmp_path / "a.db")], "not an http(s) URL"),
                      (["crawl", "http://x.org/", "--store", str(tmp_path / "a.db"), "--include", "("], "bad regular"),
                      (["crawl", "http://x.org/", "--store", str(tmp_path / "a.db"), "--algorithm", "nope"], "unknown algorithm"),
                      (["export", "--store", str(tmp_path / "none.db")], "no store"),
                      (["crawl", "http://x.org/", "--store", str(tmp_path / "a.db"), "--content-types", ""],
                       "--content-types is empty"),
                      (["crawl", "http://x.org/", "--store", str(tmp_path / "a.db"), "--timeout", "0"],
                       "--timeout must be more than 0"),
                      (["crawl", "http://x.org/", "--store", str(tmp_path / "a.db"), "--delay", "nan"],
                       "--delay must be a finite number")):
        p = _cli(*args)
        out, err = p.communicate(timeout=30)
        assert p.returncode == 2 and msg in err and "Traceback" not in err


def test_worker_processes_store_the_same_as_inline(site, tmp_path):
    site.routes.update(chain_site(25))
    site.start()
    out = []
    for workers in (0, 2):
        _, store = run([site.origin + "/p0.html"], tmp_path, f"w{workers}.db", workers=workers)
        out.append((sorted(store.db.execute("SELECT url, title FROM pages")),
                    sorted(store.db.execute("SELECT url, text FROM chunks"))))
    assert len(out[0][0]) == 25 and out[0][1]
    assert out[0] == out[1]


def test_no_extract_stores_pages_without_blocks(site, tmp_path):
    site.routes.update(chain_site(10))
    site.start()
    store = Store(tmp_path / "n.db")
    crawl(store, CrawlConfig(seeds=[site.origin + "/p0.html"], progress=False), PipelineConfig(extract=False))
    assert store.db.execute("SELECT count(*) FROM pages WHERE title LIKE 'Page %'").fetchone()[0] == 10
    assert store.db.execute("SELECT count(*) FROM blocks").fetchone()[0] == 0


def test_redirect_chain_limit_max_time_user_agent(site, tmp_path):
    r = site.routes
    r["/"] = Route(page("Home", ["/hop0.html", "/slow0.html"]))
    for i in range(6):
        r[f"/hop{i}.html"] = Route(status=301, headers={"Location": f"/hop{i + 1}.html"})
    r["/hop6.html"] = Route(page("End of chain", []))
    r["/slow0.html"] = Route(page("Slow 0", [f"/slow{i}.html" for i in range(1, 40)]))
    for i in range(1, 40):
        r[f"/slow{i}.html"] = Route(page(f"Slow {i}", []), delay=0.3)
    site.start()
    _, store = run([site.origin + "/hop0.html"], tmp_path, "r.db", max_redirects=3)
    assert frontier(store)[site.origin + "/hop3.html"][2] == "too many redirects"
    assert "/hop4.html" not in site.paths() and "/hop3.html" in site.paths()
    site.hits.clear()
    stats, store = run(site, tmp_path, max_time=1.0, concurrency=2, per_host=2,
                       user_agent="testbot/2.0 (+mailto:ops@example.org)")
    assert stats.stopped == "stopped: time limit"
    # 39 pages of 0.3 s two at a time need 5.9 s: the limit ended the crawl, not the last page
    # (the seconds themselves are tested on the fake clock: test_engine.py::test_max_time_on_the_fake_clock)
    assert sum(p.startswith("/slow") for p in site.paths()) < 39
    f = frontier(store)
    assert "testbot/2.0 (+mailto:ops@example.org)" in {h.ua for h in site.hits}
    # interrupted by the time limit: the rest is still queued for --resume, nothing in flight
    states = Counter(st for st, _, _ in f.values())
    assert states[0] > 0 and states[1] == 0


def test_scope_host_versus_site(tmp_path):
    a, b = Site(chain_site(3)), Site(chain_site(3))
    a.start(), b.start()
    try:
        a.routes["/p0.html"] = Route(page("A0", ["/p1.html", b.origin + "/p0.html"]))
        run([a.origin + "/p0.html"], tmp_path, "h.db", scope="host")
        assert not b.hits  # another port is another host
        run([a.origin + "/p0.html"], tmp_path, "s.db", scope="site")
        assert "/p0.html" in b.paths()  # same site (127.0.0.1)
    finally:
        a.stop(), b.stop()


def calendar_site() -> dict[str, Route]:
    """A home page linking an event calendar (2022-2025: each month links the previous and next month and
    its days 01-02, days link back), a dated blog post, and a path that repeats itself."""
    routes = {"/robots.txt": Route("User-agent: *\n", ctype="text/plain"),
              "/": Route(page("Home", ["/calendar/2024/01/", "/2019/03/old-post.html", "/a/b/b/b/x.html"])),
              "/2019/03/old-post.html": Route(page("Old post", ["/"])),
              "/a/b/b/b/x.html": Route(page("Loop", ["/"]))}
    months = [(y, m) for y in range(2022, 2026) for m in range(1, 13)]
    for i, (y, m) in enumerate(months):
        near = [f"/calendar/{yy}/{mm:02d}/" for yy, mm in months[max(0, i - 1):i + 2] if (yy, mm) != (y, m)]
        days = [f"/calendar/{y}/{m:02d}/{d:02d}/" for d in (1, 2)]
        routes[f"/calendar/{y}/{m:02d}/"] = Route(page(f"Events {y}-{m:02d}", near + days + ["/"]))
        for d in days:
            routes[d] = Route(page(f"Day {d}", [f"/calendar/{y}/{m:02d}/"]))
    return routes


def test_calendar_trap_followed_two_dated_hops_by_default(site, tmp_path):
    site.routes.update(calendar_site())
    site.start()
    stats, _ = run(site, tmp_path, "cal.db")
    got = {p for p in site.paths() if p.startswith("/calendar/")}
    # the entry month (trail 0), its neighbours and days (1), theirs (2): nothing beyond
    want = {"/calendar/2023/11/", "/calendar/2023/12/", "/calendar/2024/01/", "/calendar/2024/02/", "/calendar/2024/03/"}
    want |= {f"/calendar/{ym}/{d:02d}/" for ym in ("2023/12", "2024/01", "2024/02") for d in (1, 2)}
    assert got == want
    assert "/2019/03/old-post.html" in site.paths()  # a dated page linked from an undated one is no trap
    assert "/a/b/b/b/x.html" not in site.paths() and stats.filtered["trap"] == 1
    assert stats.filtered["date-trap"] > 0 and len(site.paths()) == len(set(site.paths()))
    site.hits.clear()
    run(site, tmp_path, "cal-all.db", date_hops=None)
    assert len({p for p in site.paths() if p.startswith("/calendar/")}) == 48 * 3  # no limit: all of it


def test_sitemap_listed_pages_take_turns_with_pages_found_by_links(site, tmp_path):
    """A sitemap listing a whole site must not push the pages found by links (here /special.html,
    which the sitemap forgot) to the end of the crawl."""
    listed = [f"/l{i}.html" for i in range(40)]
    site.start()
    o = site.origin
    site.routes.update({
        "/robots.txt": Route(f"User-agent: *\nSitemap: {o}/sitemap.xml\n", ctype="text/plain"),
        "/": Route(page("Home", ["/about.html"])), "/about.html": Route(page("About", ["/special.html"])),
        "/special.html": Route(page("Special", [])),
        "/sitemap.xml": Route("<?xml version='1.0'?><urlset>" + "".join(f"<url><loc>{o}{p}</loc></url>" for p in listed)
                              + "</urlset>", ctype="application/xml")})
    for p in listed:
        site.routes[p] = Route(page(p, []))
    run(site, tmp_path, "sm.db", per_host=1, concurrency=1)
    paths = site.paths()
    assert set(listed) <= set(paths) and len(paths) == len(set(paths))
    assert paths.index("/special.html") < 10  # not behind the 40 listed pages


# ---------------------------------------------------------------- robots.txt bodies that fail
def test_robots_over_the_size_cap_is_parsed_up_to_the_cap(site, tmp_path):
    """A 700 KB robots.txt with --max-bytes 150000 used to be refused (too_large) and taken as allowing
    everything; it is read up to 512 KiB (RFC 9309: at least 500 KiB) and obeyed."""
    site.routes.update({
        "/robots.txt": Route("User-agent: *\nDisallow: /private/\n" + "# padding line\n" * 45_000, ctype="text/plain"),
        "/": Route(page("Home", ["/private/x.html", "/pub.html"])), "/pub.html": Route(page("Pub", [])),
        "/private/x.html": Route(page("Private", []))})
    site.start()
    stats, _ = run(site, tmp_path, max_bytes=150_000)
    assert "/pub.html" in site.paths() and "/private/x.html" not in site.paths()
    assert stats.robots_blocked == 1


def test_robots_bomb_means_disallow_with_retry(site, tmp_path):
    """A robots.txt that is a decompression bomb used to be taken as allow-all; an unreadable body
    is "unreachable" (RFC 9309): asked again once, then nothing is fetched from the host."""
    site.routes.update({"/robots.txt": Route(gzip_bomb(5_000_000), ctype="text/plain",
                                             headers={"Content-Encoding": "gzip"}),
                        "/": Route(page("Home", ["/a.html"]))})
    site.start()
    stats, store = run(site, tmp_path)
    assert site.paths() == ["/robots.txt", "/robots.txt"]
    assert frontier(store)[site.origin + "/"] == (4, None, "robots") and stats.robots_blocked == 1


class _StallingRobots(BaseHTTPRequestHandler):
    """robots.txt: a 200 with the first bytes of its body, then nothing until the client gives up."""

    protocol_version = "HTTP/1.1"
    paths: ClassVar[list[str]] = []

    def log_message(self, *a):  # quiet
        pass

    def do_GET(self):
        self.paths.append(self.path)
        body = b"User-agent: *\n" if self.path == "/robots.txt" else page("Home", []).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain" if self.path == "/robots.txt" else "text/html")
        self.send_header("Content-Length", str(len(body) + (10_000 if self.path == "/robots.txt" else 0)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if self.path == "/robots.txt":
            time.sleep(2.0)


def test_robots_body_stalled_until_timeout_means_disallow(tmp_path):
    _StallingRobots.paths = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StallingRobots)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        origin = f"http://127.0.0.1:{server.server_address[1]}"
        _, store = run([origin + "/"], tmp_path, timeout=0.5)
        assert _StallingRobots.paths == ["/robots.txt", "/robots.txt"]  # asked again, page never fetched
        assert frontier(store)[origin + "/"] == (4, None, "robots")
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------- sitemap bounds
def _index_chain(site: Site, n: int) -> None:
    """robots.txt names /idx0.xml, an index whose only entry is /idx1.xml, an index ... (n of them)."""
    o = site.origin
    site.routes["/robots.txt"] = Route(f"User-agent: *\nSitemap: {o}/idx0.xml\n", ctype="text/plain")
    site.routes["/"] = Route(page("Home", []))
    for i in range(n):
        site.routes[f"/idx{i}.xml"] = Route(f"<?xml version='1.0'?><sitemapindex><sitemap><loc>{o}/idx{i + 1}.xml</loc>"
                                            "</sitemap></sitemapindex>", ctype="application/xml")


def test_sitemap_index_chain_is_bounded(site, tmp_path):
    """An index linking a new index on each fetch made 17,963 requests in 30 s despite --max-depth 1:
    nesting stops at 3 levels, the files at --max-sitemaps, and they count in --max-pages."""
    site.start()
    _index_chain(site, 300)
    stats, _ = run(site, tmp_path, "a.db", max_depth=1)
    assert [p for p in site.paths() if p.startswith("/idx")] == ["/idx0.xml", "/idx1.xml", "/idx2.xml"]
    assert stats.filtered["sitemap-depth"] == 1
    site.hits.clear()
    run(site, tmp_path, "b.db", max_sitemaps=2, max_sitemap_depth=100)
    assert [p for p in site.paths() if p.startswith("/idx")] == ["/idx0.xml", "/idx1.xml"]
    site.hits.clear()
    stats, _ = run(site, tmp_path, "c.db", max_pages=4, max_sitemap_depth=100)
    assert len([p for p in site.paths() if p != "/robots.txt"]) == 4 and stats.stopped == "stopped: page limit"

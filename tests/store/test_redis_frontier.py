"""crawl --frontier redis://: worker processes sharing one crawl through a real redis-server
(tests/support/servers.py) over a multi-host site (several servers of tests/support/crawlsite.py on 127.0.0.1,
one port each: the host key is scheme://host:port, so each is its own politeness unit).

Each worker writes its own SQLite store (one writer per file: store/lock.py); the union of their
pages must equal a single-process crawl of the same site (the lead adds the shared-store variant
with PostgreSQL)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from blockcrawl.cli import main
from blockcrawl.crawl import CrawlConfig, crawl
from blockcrawl.crawl.frontier import Item
from blockcrawl.errors import ConfigError, StoreError
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import Store

from ..support.crawlsite import Route, Site
from ..support.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
# seconds of arrival-time noise allowed within one worker: none, since tests/support/crawlsite.py stamps
# arrivals with the kernel's packet time (the handler thread's clock lagged up to 17 ms under load)
JITTER = 0.0
SPEC = PipelineConfig(tokenizer="words")


def multi_site(n_hosts: int, n_pages: int, latency: float = 0.0, crawl_delay: float = 0.0) -> list[Site]:
    """n_hosts servers of n_pages each. Every block of every page is unique (titles, text, link
    texts), so blocks per page do not depend on the order pages were crawled in (block dedup is
    per site and keeps a block's first sighting). Page j links j+1, 2j+1, 2j+2 of its host and,
    every third page, page j of the next host: most hosts are found through another worker's page."""
    sites = [Site().start() for _ in range(n_hosts)]
    for i, s in enumerate(sites):
        nxt = sites[(i + 1) % n_hosts]
        s.routes["/robots.txt"] = Route("User-agent: *\nDisallow: /nope/\n"
                                        + (f"Crawl-delay: {crawl_delay}\n" if crawl_delay else ""), ctype="text/plain")
        for j in range(n_pages):
            links = [f"/p{k}.html" for k in (j + 1, 2 * j + 1, 2 * j + 2) if k < n_pages] + ["/nope/x.html"]
            if j % 3 == 0:
                links.append(f"{nxt.origin}/p{j}.html")
            items = "".join(f'<li><a href="{h}">from h{i}p{j} to {h.rsplit("/", 1)[-1]} number {n}</a></li>'
                            for n, h in enumerate(links))
            s.routes[f"/p{j}.html"] = Route(
                f"<!DOCTYPE html><html><head><title>Host {i} page {j}</title></head><body><h1>Host {i} page {j}</h1>"
                f"<p>Words written for host {i} and its page {j} alone, long enough to be a block of its own.</p>"
                f"<ul>{items}</ul></body></html>", delay=latency)
    return sites


def stored(*dbs: Path) -> dict[str, tuple[int, int]]:
    """url -> (blocks, chunks) over the stores (a page stored by two workers must agree)."""
    out: dict[str, tuple[int, int]] = {}
    for db in dbs:
        if not db.exists():
            continue
        con = sqlite3.connect(db)
        for url, b, c in con.execute("SELECT url, (SELECT count(*) FROM blocks WHERE page_id=p.id), "
                                     "(SELECT count(*) FROM chunks WHERE page_id=p.id) FROM pages p"):
            assert out.setdefault(url, (b, c)) == (b, c), url
        con.close()
    return out


def gap_violations(hits: list[tuple[float, str, str]], delay: float
                   ) -> tuple[list[tuple[str, str, float]], list[tuple[str, str, float]]]:
    """(handovers, close) of one host's (arrival time, path, user agent) hits: consecutive
    requests of two different workers (a takeover, or a lease given back and taken again) closer
    than the delay, and of one worker closer than the delay less JITTER."""
    ts = sorted(hits)
    pairs = list(zip(ts, ts[1:]))
    handover = [(q[1], p[1], round(q[0] - p[0], 3)) for p, q in pairs if p[2] != q[2] and q[0] - p[0] < delay]
    close = [(q[1], p[1], round(q[0] - p[0], 3)) for p, q in pairs if p[2] == q[2] and q[0] - p[0] < delay - JITTER]
    return handover, close


def kill_when_working(client, worker: str, proc: subprocess.Popen[str], pages: int = 5) -> list[str]:
    """kill -9 the worker process once it owns hosts and has fetched `pages` pages (its heartbeat
    in Redis says so, within 60 s); returns the hosts it owned."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        beat = client.hget("bc:workers", worker)
        if beat and json.loads(beat)["hosts"] and json.loads(beat)["pages"] >= pages:
            break
        time.sleep(0.05)
    hosts = json.loads(client.hget("bc:workers", worker))["hosts"]
    assert hosts
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    return list(hosts)


def gaps(times: list[float]) -> list[float]:
    ts = sorted(times)
    return [b - a for a, b in zip(ts, ts[1:])]


def reference(sites: list[Site], tmp_path: Path, **kw) -> dict[str, tuple[int, int]]:
    store = Store(tmp_path / "single.db")
    crawl(store, CrawlConfig(seeds=[sites[0].origin + "/p0.html"], progress=False, backoff=0.05, **kw), SPEC)
    store.close()
    return stored(tmp_path / "single.db")


def _cli(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "blockcrawl", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# ---------------------------------------------------------------------- in one process


def test_one_worker_on_redis_equals_plain_crawl(redis_server, tmp_path, capsys):
    sites = multi_site(3, 12)
    try:
        ref = reference(sites, tmp_path)
        for s in sites:
            s.hits.clear()
        store = Store(tmp_path / "w.db")
        cfg = CrawlConfig(seeds=[sites[0].origin + "/p0.html"], progress=False, backoff=0.05,
                          frontier=redis_server.url(), worker_id="w1", lease_seconds=2)
        stats = crawl(store, cfg, SPEC)
        store.close()
        got = stored(tmp_path / "w.db")
        assert len(ref) == 36 and got == ref
        assert stats.pages == 36
        for s in sites:  # each page once, robots.txt once per host
            paths = s.paths()
            assert sorted(paths) == sorted(set(paths)), paths
        r = redis_server.client
        assert r.scard("bc:active") == 0
        assert sum(r.scard(f"bc:seen:{{{s.origin}}}") for s in sites) == 36 + 3  # + the /nope/ URLs
        beat = json.loads(r.hget("bc:workers", "w1"))
        assert beat["alive"] is False and beat["pages"] == 36 and beat["hosts"] == []
        # blockcrawl workers: one JSON line per worker, then the summary; --table for people
        assert main(["workers", "--frontier", redis_server.url()]) == 0
        out = capsys.readouterr().out
        lines = [json.loads(x) for x in out.splitlines()]
        assert lines[0]["worker"] == "w1" and lines[0]["state"] == "stopped" and lines[0]["pages"] == 36
        summary = lines[-1]["summary"]
        assert summary["finished"] and summary["urls_seen"] == 39 and summary["urls_to_fetch"] == 0
        assert main(["workers", "--frontier", redis_server.url(), "--table"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("worker ") and "finished" in out, out
        # the same crawl again on the finished frontier: nothing to do, nothing fetched
        for s in sites:
            s.hits.clear()
        store = Store(tmp_path / "w2.db")
        stats = crawl(store, cfg, SPEC)
        store.close()
        assert stats.pages == 0 and not any(s.hits for s in sites)
    finally:
        for s in sites:
            s.stop()


def test_refusals(redis_server, tmp_path, capsys):
    url = redis_server.url(1)
    store = Store(tmp_path / "a.db")
    try:
        with pytest.raises(ConfigError, match="frontier must be a redis"):
            CrawlConfig(seeds=["http://127.0.0.1:9/"], frontier="http://127.0.0.1:6379/0")
        with pytest.raises(ConfigError, match="recrawl"):
            CrawlConfig(seeds=["http://127.0.0.1:9/"], frontier=url, recrawl=True)
        # unreachable at start: one error, before anything is fetched
        with pytest.raises(StoreError, match="cannot reach the frontier"):
            crawl(store, CrawlConfig(seeds=["http://127.0.0.1:9/"], frontier=f"redis://127.0.0.1:{free_port()}/0",
                                     progress=False))
        # a different crawl (other seeds or scope options) on the same database
        r = redis_server.client
        r.execute_command("SELECT", 1)
        r.hset("bc:meta", mapping={"version": "0.1.0", "crawl": "0123456789abcdef", "seeds": "[]", "options": "{}"})
        with pytest.raises(ConfigError, match="holds another crawl"):
            crawl(store, CrawlConfig(seeds=["http://127.0.0.1:9/"], frontier=url, progress=False))
        # a worker of another blockcrawl version
        r.hset("bc:meta", "version", "0.0.9")
        with pytest.raises(ConfigError, match="blockcrawl 0.0.9"):
            crawl(store, CrawlConfig(seeds=["http://127.0.0.1:9/"], frontier=url, progress=False))
        # --resume with no seeds on an empty database
        with pytest.raises(ConfigError, match="no crawl to resume"):
            crawl(store, CrawlConfig(seeds=[], frontier=redis_server.url(2), progress=False, resume=True))
    finally:
        store.close()
    capsys.readouterr()
    for argv in (["crawl", "http://127.0.0.1:9/", "--store", str(tmp_path / "b.db"), "--no-progress"], ["workers"]):
        assert main([*argv, "--frontier", f"redis://127.0.0.1:{free_port()}/0"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "cannot reach the frontier" in err, err


def test_item_encoding_round_trip_and_size():
    from blockcrawl.store.redis_layout import decode, encode
    for it in (Item("http://a.example/x", "http://a.example", 3),
               Item("http://a.example/x", "http://a.example", 1, "sitemap", 2, 1, "http://a.example/r", 12.5,
                    "http://a.example/x?b=1", 4)):
        assert decode(it.url, encode(it)) == it
    assert len(encode(Item("http://a.example/x", "http://a.example", 3))) == 8


# ---------------------------------------------------------------------- worker processes


def _requests(sites: list[Site]) -> dict[str, list[tuple[float, str]]]:
    for s in sites:
        s.settle()
    return {s.origin: [(h.t, h.path, h.ua) for h in s.hits] for s in sites}


@pytest.mark.slow
def test_two_workers_kill_one_the_other_takes_over(redis_server, tmp_path):
    """Two worker processes; one is killed -9 mid-crawl; the other takes its hosts over once their
    leases expire. The union of the stores equals a single-process crawl, no page is fetched twice
    but those in flight on the dead worker (and counted), and no host ever saw two requests closer
    than --delay, across both workers."""
    delay = 0.1
    sites = multi_site(4, 30, latency=0.02)
    try:
        args = [sites[0].origin + "/p0.html", "--no-progress", "--tokenizer", "words", "--workers", "0",
                "--delay", str(delay)]
        p = _cli("crawl", *args, "--store", str(tmp_path / "single.db"))  # the reference: one plain process
        assert p.wait(timeout=120) == 0
        ref = stored(tmp_path / "single.db")
        for s in sites:
            s.hits.clear()
        args += ["--frontier", redis_server.url(), "--lease-seconds", "2"]
        a = _cli("crawl", *args, "--store", str(tmp_path / "a.db"), "--worker-id", "a", "--user-agent", "test-a")
        b = _cli("crawl", *args, "--store", str(tmp_path / "b.db"), "--worker-id", "b", "--user-agent", "test-b")
        r = redis_server.client
        victim_hosts = kill_when_working(r, "a", a)
        a.communicate()
        out, err = b.communicate(timeout=120)
        assert b.returncode == 0, err
        got = stored(tmp_path / "a.db", tmp_path / "b.db")
        assert got == ref and len(ref) == 120
        refetched = int(r.hget("bc:stats", "refetched") or 0)
        # the survivor fetched pages of the victim's hosts (taken over once their leases expired)
        assert any(u.startswith(tuple(victim_hosts)) for u in stored(tmp_path / "b.db"))
        reqs = _requests(sites)
        dups = 0
        for origin, hits in reqs.items():
            ts = sorted(hits)
            t0 = ts[0][0]
            trace = [(round(t - t0, 3), p, ua) for t, p, ua in ts]
            paths = [p for _, p, _ in hits if p != "/robots.txt"]
            extra = len(paths) - len(set(paths))
            if extra:  # only on hosts the victim held (by the survivor after the takeover)
                assert {ua for _, _, ua in hits} == {"test-a", "test-b"}, trace
            dups += extra
            handover, close = gap_violations(hits, delay)
            if close or handover:
                print("TRACE", origin, json.dumps(trace))
            assert not close and not handover, (origin, close, handover, err[-3000:])
        assert dups <= refetched
        print(f"victim hosts {len(victim_hosts)}, refetched {refetched}, duplicate requests {dups}")
    finally:
        for s in sites:
            s.stop()


@pytest.mark.slow
def test_redis_lost_during_crawl_pauses_and_loses_nothing(redis_server, tmp_path):
    """Redis stops for a second mid-crawl (saved, restarted on its port): the worker pauses,
    says so once, retries with back-off and goes on; every page is stored, none fetched twice."""
    sites = multi_site(2, 20, latency=0.05)
    try:
        p = _cli("crawl", sites[0].origin + "/p0.html", "--no-progress", "--tokenizer", "words", "--workers", "0",
                 "--store", str(tmp_path / "w.db"), "--frontier", redis_server.url(), "--worker-id", "w")
        r = redis_server.client
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            beat = r.hget("bc:workers", "w")
            if beat and json.loads(beat)["pages"] >= 5:
                break
            time.sleep(0.05)
        redis_server.restart(down=1.0)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert err.count("lost (") == 1 and err.count(" back after ") == 1, err
        assert len(stored(tmp_path / "w.db")) == 40, err[-3000:]
        for origin, hits in _requests(sites).items():
            paths = [x for _, x, _ in hits]
            assert sorted(paths) == sorted(set(paths)), (origin, paths)
    finally:
        for s in sites:
            s.stop()


@pytest.mark.slow
def test_late_worker_gets_a_fair_share(redis_server, tmp_path):
    """A worker that joins when the first one holds every host gets hosts given back to it: both
    end with pages, none is fetched twice (a host's new owner reads robots.txt again, nothing
    else), and where a host changed workers its requests keep the delay: robots.txt's Crawl-delay,
    larger than --delay."""
    delay, crawl_delay, n = 0.05, 0.2, 20
    sites = multi_site(4, n, latency=0.02, crawl_delay=crawl_delay)
    try:
        args = [sites[0].origin + "/p0.html", "--no-progress", "--tokenizer", "words", "--workers", "0",
                "--delay", str(delay), "--frontier", redis_server.url(), "--lease-seconds", "5"]
        a = _cli("crawl", *args, "--store", str(tmp_path / "a.db"), "--worker-id", "a", "--user-agent", "test-a")
        r = redis_server.client
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the first worker holds every host
            beat = r.hget("bc:workers", "a")
            if beat and len(json.loads(beat)["hosts"]) == 4:
                break
            time.sleep(0.05)
        assert len(json.loads(r.hget("bc:workers", "a"))["hosts"]) == 4
        b = _cli("crawl", *args, "--store", str(tmp_path / "b.db"), "--worker-id", "b", "--user-agent", "test-b")
        out_b, err_b = b.communicate(timeout=120)
        out_a, err_a = a.communicate(timeout=120)
        assert a.returncode == 0 and b.returncode == 0, err_a + err_b
        in_a, in_b = stored(tmp_path / "a.db"), stored(tmp_path / "b.db")
        assert in_b  # b got hosts: a held all four, alive, until it gave some back
        assert set(in_a) | set(in_b) == {f"{s.origin}/p{j}.html" for s in sites for j in range(n)}
        assert not set(in_a) & set(in_b)
        reqs = _requests(sites)
        assert any({ua for _, _, ua in hits} == {"test-a", "test-b"} for hits in reqs.values())  # handed over
        for origin, hits in reqs.items():
            paths = [p for _, p, _ in hits if p != "/robots.txt"]
            assert sorted(paths) == sorted(set(paths)), origin
            handover, _ = gap_violations(hits, crawl_delay)
            assert not handover, (origin, handover)
    finally:
        for s in sites:
            s.stop()

#!/usr/bin/env python3
"""Scale-out benchmark: 1, 2 and 4 worker processes on a Redis frontier (crawl --frontier) beside
the plain single process, crawl-only (--no-extract) and full pipeline, in one run.

Needs /usr/bin/redis-server and the shared benchmark tools (../shared/bench/{websim.py,politeness.py},
override with --shared or $BLOCKCRAWL_SHARED_BENCH). Each run gets a fresh websim (--hosts hosts,
--pages articles per host, --latency-ms, a one-month calendar trap, no Crawl-delay, its slow page
answering after 1 s instead of 35 s (else one timeout tail is most of the wall time), access log)
and a fresh redis-server on 127.0.0.1. Every worker gets the same arguments (its own SQLite store:
one writer per file), --concurrency N each: the per-process limit that more workers lift. Seeds:
every host's home page.

Scored from websim's access log with politeness.py: pages/s = 200 responses / wall time (first
worker started to last one done), recall of the manifest, duplicate 200s (a URL fetched twice,
over all workers; robots.txt apart: a host's new owner reads it again), robots violations, gaps
between arrivals at one host below --delay (all of them, and those between requests of two
different workers, told apart by the workers' crawl logs). Redis
memory: bytes per queued URL = MEMORY USAGE of the todo hashes and inboxes / URLs in them,
sampled every 0.5 s (the largest queue seen); bytes per seen URL = MEMORY USAGE of the seen sets
/ their size at the end; used_memory growth over the run.

    python bench/scale.py                                  # 8 hosts x 100 pages, latency 50 ms
    python bench/scale.py --pages 30 --workers 1 2 --modes crawl-only     # quick
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, SHARED  # noqa: E402 - first: it puts the repository on sys.path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(d: Path) -> tuple[subprocess.Popen[bytes], int]:
    import redis
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                          "--dir", str(d)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(500):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.02)
    return p, port


def sample_queue(r: object) -> tuple[int, int]:
    """(bytes, URLs) of the todo hashes and inboxes now."""
    keys = [k for k in r.scan_iter(match="bc:todo:*", count=1000)] + [k for k in r.scan_iter(match="bc:inbox:*", count=1000)]  # type: ignore[attr-defined]
    if not keys:
        return 0, 0
    pipe = r.pipeline(transaction=False)  # type: ignore[attr-defined]
    for k in keys:
        pipe.memory_usage(k, samples=0)
    for k in keys:
        if k.startswith(b"bc:todo:"):
            pipe.hlen(k)
    res = pipe.execute()
    return sum(x or 0 for x in res[:len(keys)]), sum(res[len(keys):])


def fetch_audit(d: Path, n_workers: int, delay: float) -> tuple[int, int, int]:
    """From websim's access log and each worker's crawl log: (pages answered 200 more than once,
    robots.txt answered more than once per host: a new owner reads it again, gaps below the
    delay between requests of two different workers at one host)."""
    import sqlite3
    from collections import Counter, defaultdict
    recs = [json.loads(x) for x in (d / "access.jsonl").read_text().splitlines() if x.strip()]
    ok = Counter((r["host"], r["path"]) for r in recs if r["status"] == 200)
    page_dups = sum(v - 1 for (_, p), v in ok.items() if p != "/robots.txt")
    robots_dups = sum(v - 1 for (_, p), v in ok.items() if p == "/robots.txt")
    who: dict[tuple[str, str], set[int]] = defaultdict(set)
    for i in range(max(n_workers, 1)):
        con = sqlite3.connect(d / f"w{i}.db")
        for (url,) in con.execute("SELECT url FROM crawl_log"):
            rest = url.split("//", 1)[1]
            hostport, _, path = rest.partition("/")
            who[(hostport.split(":")[0], "/" + path)].add(i)
        con.close()
    by: dict[str, list[dict[str, object]]] = defaultdict(list)
    for r in recs:
        by[str(r["host"])].append(r)
    cross = 0
    for host, rs in by.items():
        rs.sort(key=lambda r: float(str(r["t"])))
        for a, b in zip(rs, rs[1:]):
            if float(str(b["t"])) - float(str(a["t"])) < delay:
                wa, wb = who.get((host, str(a["path"]))), who.get((host, str(b["path"])))
                if wa and wb and wa.isdisjoint(wb):
                    cross += 1
    return page_dups, robots_dups, cross


def run_one(a: argparse.Namespace, name: str, workers: int, extract: bool) -> dict[str, object]:
    d = Path(a.out) / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    ws_err = open(d / "websim.err", "w")
    ws = subprocess.Popen([sys.executable, str(Path(a.shared) / "websim.py"), "--hosts", str(a.hosts),
                           "--pages", str(a.pages), "--port", str(a.port), "--latency-ms", str(a.latency_ms),
                           "--seed", "1", "--trap-months", "1", "--crawl-delay", "0", "--slow-s", "1", "--prerender",
                           "--log", str(d / "access.jsonl"), "--max-seconds", "1800"], stderr=ws_err)
    for _ in range(6000):
        if "READY" in (d / "websim.err").read_text():
            break
        time.sleep(0.05)
    seeds = [f"http://127.0.0.{2 + h}:{a.port}/" for h in range(a.hosts)]
    base = [sys.executable, "-m", "blockcrawl", "crawl", *seeds, "--no-progress", "--concurrency", str(a.concurrency),
            "--per-host", str(a.per_host), "--delay", str(a.delay), "--timeout", "10", "--workers", "0"]
    if not extract:
        base.append("--no-extract")
    rd = None
    r = None
    used0 = 0
    if workers:
        (d / "redis").mkdir()
        rd, rport = start_redis(d / "redis")
        import redis
        r = redis.Redis(port=rport)
        used0 = int(r.info("memory")["used_memory"])
        base += ["--frontier", f"redis://127.0.0.1:{rport}/0"]
    t0 = time.monotonic()
    procs = [subprocess.Popen(base + ["--store", str(d / f"w{i}.db")] + (["--worker-id", f"w{i}"] if workers else []),
                              stdout=subprocess.DEVNULL, stderr=open(d / f"w{i}.err", "w"))
             for i in range(max(workers, 1))]
    q_bytes, q_urls = 0, 0
    while any(p.poll() is None for p in procs):
        if r is not None:
            b, n = sample_queue(r)
            if n > q_urls:
                q_bytes, q_urls = b, n
        time.sleep(0.5)
    wall = time.monotonic() - t0
    seen_bytes = seen_n = used = 0
    refetched = 0
    if r is not None:
        seen = list(r.scan_iter(match="bc:seen:*", count=1000))
        pipe = r.pipeline(transaction=False)
        for k in seen:
            pipe.memory_usage(k, samples=0)
            pipe.scard(k)
        res = pipe.execute()
        seen_bytes, seen_n = sum(res[0::2]), sum(res[1::2])
        used = int(r.info("memory")["used_memory"]) - used0
        refetched = int(r.hget("bc:stats", "refetched") or 0)
        assert rd is not None
        rd.kill()
        rd.wait()
    ws.terminate()
    ws.wait()
    sys.path.insert(0, a.shared)
    import politeness  # noqa: E402  (shared/bench)
    man = json.loads(manifest(a).read_text())
    res_p = politeness.analyse(politeness.load(str(d / "access.jsonl")), man)
    T = res_p["total"]
    gaps = [x for x in (H.get("min_gap_ms") for H in res_p["hosts"].values()) if x is not None]
    page_dups, robots_dups, cross = fetch_audit(d, workers, a.delay)
    row: dict[str, object] = {
        "run": name, "workers": workers or "plain", "pipeline": "full" if extract else "crawl only",
        "wall s": round(wall, 1), "200s": T["ok200"], "pages/s": round(T["ok200"] / wall, 1),
        "recall": T.get("recall"), "pages fetched twice": page_dups, "robots.txt again": robots_dups,
        "refetched (dead worker)": refetched, "robots viol.": T["robots_violations"],
        "min gap ms": min(gaps) if gaps else None, "hosts gap < delay": sum(1 for g in gaps if g < a.delay * 1000),
        "cross-worker gaps < delay": cross,
        "B/queued URL": round(q_bytes / q_urls) if q_urls else "-",
        "B/seen URL": round(seen_bytes / seen_n) if seen_n else "-",
        "Redis MB": round(used / 1e6, 2) if workers else "-",
        "rc": ",".join(str(p.returncode) for p in procs)}
    print(f"[{time.strftime('%H:%M:%S')}] {json.dumps(row)}", file=sys.stderr, flush=True)
    return row


def manifest(a: argparse.Namespace) -> Path:
    m = Path(a.out) / f"manifest-{a.hosts}x{a.pages}.json"
    if not m.exists():
        subprocess.run([sys.executable, str(Path(a.shared) / "websim.py"), "--hosts", str(a.hosts), "--pages", str(a.pages),
                        "--port", str(a.port), "--seed", "1", "--trap-months", "1", "--crawl-delay", "0",
                        "--manifest", str(m), "--manifest-only"], check=True, stderr=subprocess.DEVNULL)
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=str(SHARED), help="folder with websim.py and politeness.py")
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--pages", type=int, default=100, help="articles per host")
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--port", type=int, default=8850)
    ap.add_argument("--concurrency", type=int, default=2, help="requests in flight per worker process")
    ap.add_argument("--per-host", type=int, default=2)
    ap.add_argument("--delay", type=float, default=0.02, help="--delay of every worker (gaps below it are counted)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker counts on Redis")
    ap.add_argument("--modes", nargs="+", default=["crawl-only", "full"], choices=("crawl-only", "full"))
    ap.add_argument("--out", default="/tmp/blockcrawl-scale")
    a = ap.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("bench/scale.py: redis-server is not installed (Debian: apt-get install redis-server)")
    Path(a.out).mkdir(parents=True, exist_ok=True)
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    rows = []
    for mode in a.modes:
        extract = mode == "full"
        rows.append(run_one(a, f"{mode}-plain", 0, extract))
        for n in a.workers:
            rows.append(run_one(a, f"{mode}-redis{n}", n, extract))
    cols = [c for c in rows[0] if c != "run"]
    print(f"\nwebsim {a.hosts} hosts x {a.pages} articles, latency {a.latency_ms} ms; each worker --concurrency "
          f"{a.concurrency} --per-host {a.per_host} --delay {a.delay} --workers 0")
    print("| " + " | ".join(cols) + " | vs 1 worker |")
    print("|" + "---|" * (len(cols) + 1))
    for r in rows:
        one = next((x for x in rows if x["pipeline"] == r["pipeline"] and x["workers"] == 1), None)
        ratio = f"{float(str(r['pages/s'])) / max(float(str(one['pages/s'])), 1e-9):.2f}x" if one else "-"
        print("| " + " | ".join(str(r[c]) for c in cols) + f" | {ratio} |")


if __name__ == "__main__":
    main()

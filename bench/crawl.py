#!/usr/bin/env python3
"""Crawler benchmark: blockcrawl beside Scrapy on websim, in one run.

Needs the shared benchmark tools: ../shared/bench/{websim.py,politeness.py,anchors/scrapy_bench.py}
relative to the repository (override with --shared or $BLOCKCRAWL_SHARED_BENCH). Each crawler gets
a fresh websim (4 hosts x --pages, --latency-ms, --trap-months 24, --prerender, access log) and,
when `unshare --net` works (root), its own network namespace with only loopback, as the anchors
(anchors/CRAWL_ANCHORS.md) were measured; otherwise it runs on the host's loopback (websim only
listens on 127.0.0.2-5, nothing else is contacted). Scrapy runs as the anchors ran it
(CrawlSpider, ROBOTSTXT_OBEY, CONCURRENT_REQUESTS 64, PER_DOMAIN 8, delay 0).

Scored from websim's own access log with politeness.py: pages/s = 200 responses / crawler wall
time, recall of the manifest, duplicate 200s, robots violations, min gap per host, max in flight.
CPU s and peak RSS are the crawler's (wait4 rusage; CPU includes its worker processes).

Run A (throughput) uses websim --crawl-delay 0: with the default Crawl-delay 1 on host 127.0.0.3
a polite crawler needs > 45 min for that host alone (Scrapy ignores Crawl-delay). Run B
(--polite-pages, 0 to skip) checks Crawl-delay on a small site with websim's default Crawl-delay 1.

    python bench/crawl.py                      # full: 4 x 2,500 pages, latency 20 ms
    python bench/crawl.py --pages 500 --polite-pages 0 --skip scrapy   # quick development run
    python bench/crawl.py --pages 300 --skip scrapy --skip crawl-only --delay 0.05   # politeness on every host
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, SHARED  # noqa: E402 - first: it puts the repository on sys.path


def inner(a: argparse.Namespace) -> None:
    """One run (inside the namespace if any): websim + one crawler; writes run.json."""
    d = Path(a.dir)
    if a.netns:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    ws_err = open(d / "websim.err", "w")
    ws = subprocess.Popen([sys.executable, str(Path(a.shared) / "websim.py"), "--hosts", str(a.hosts),
                           "--pages", str(a.pages), "--port", str(a.port), "--latency-ms", str(a.latency_ms),
                           "--seed", "1", "--trap-months", str(a.trap_months), "--crawl-delay", str(a.crawl_delay),
                           "--prerender", "--log", str(d / "access.jsonl"), "--max-seconds", "1500"],
                          stderr=ws_err)
    for _ in range(6000):
        if "READY" in (d / "websim.err").read_text():
            break
        time.sleep(0.05)
    cmd = json.loads(a.cmd)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=d, stdout=open(d / "crawler.out", "w"), stderr=open(d / "crawler.err", "w"))
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    ws.terminate()
    ws.wait()
    (d / "run.json").write_text(json.dumps({"wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
                                            "maxrss_mb": ru.ru_maxrss / 1024, "rc": os.waitstatus_to_exitcode(status)}))


def run_one(a: argparse.Namespace, name: str, cmd: list[str], pages: int, crawl_delay: float, netns: bool) -> dict:
    d = Path(a.out) / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    args = [sys.executable, __file__, "--inner", "--dir", str(d), "--cmd", json.dumps(cmd), "--shared", a.shared,
            "--hosts", str(a.hosts), "--pages", str(pages), "--port", str(a.port), "--latency-ms", str(a.latency_ms),
            "--trap-months", str(a.trap_months), "--crawl-delay", str(crawl_delay)]
    if netns:
        args = ["unshare", "--net", *args, "--netns"]
    print(f"[{time.strftime('%H:%M:%S')}] {name}: running ...", file=sys.stderr, flush=True)
    subprocess.run(args, check=True)
    run = json.loads((d / "run.json").read_text())
    sys.path.insert(0, a.shared)
    import politeness  # noqa: E402  (shared/bench)
    man = json.loads(manifest(a, pages, crawl_delay).read_text())
    res = politeness.analyse(politeness.load(str(d / "access.jsonl")), man)
    (d / "summary.json").write_text(json.dumps(res, indent=1))
    T = res["total"]
    hosts = res["hosts"]
    delays = {h: H.get("crawl_delay") for h, H in hosts.items() if H.get("crawl_delay")}
    row = {"crawler": name, "wall s": round(run["wall"], 1), "200s": T["ok200"],
           "pages/s": round(T["ok200"] / run["wall"], 1), "CPU s": round(run["cpu"], 1),
           "peak RSS MB": round(run["maxrss_mb"]), "recall": T.get("recall"), "dup 200s": T.get("dup200"),
           "repeats": T.get("repeats"), "robots viol.": T["robots_violations"],
           "min gap ms": T.get("min_gap_ms"), "max in flight/host": T.get("max_inflight_per_host"),
           "crawl-delay host min gap ms": ", ".join(f"{hosts[h]['min_gap_ms']} (delay {v}s)" for h, v in delays.items()) or "-",
           "trap (beyond ok)": f"{T.get('trap')} ({T.get('trap_beyond')})", "rc": run["rc"]}
    if a.send_log:  # the crawler's own send times: websim's stamps run late when its process waits for a CPU
        from sendlog import min_gaps  # noqa: E402  (bench/)
        client = min_gaps(str(d / "sends.log")) if (d / "sends.log").exists() else {}
        res["client_min_gap_ms"] = client
        (d / "summary.json").write_text(json.dumps(res, indent=1))
        plain = [v for h, v in client.items() if h not in delays]
        row["client min gap ms"] = (f"{min(plain) if plain else '-'}"
                                    + "".join(f", {h}: {client[h]}" for h in delays if h in client)) if client else "-"
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {json.dumps(row)}", file=sys.stderr, flush=True)
    return row


def manifest(a: argparse.Namespace, pages: int, crawl_delay: float) -> Path:
    m = Path(a.out) / f"manifest-{a.hosts}x{pages}-t{a.trap_months}-cd{crawl_delay}.json"
    if not m.exists():
        subprocess.run([sys.executable, str(Path(a.shared) / "websim.py"), "--hosts", str(a.hosts), "--pages", str(pages),
                        "--port", str(a.port), "--seed", "1", "--trap-months", str(a.trap_months),
                        "--crawl-delay", str(crawl_delay), "--manifest", str(m), "--manifest-only"],
                       check=True, stderr=subprocess.DEVNULL)
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=str(SHARED), help="folder with websim.py, politeness.py, anchors/")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--pages", type=int, default=2500)
    ap.add_argument("--polite-pages", type=int, default=40, help="pages/host of the Crawl-delay run (0: skip)")
    ap.add_argument("--polite-trap-months", type=int, default=1, help="calendar trap size of the Crawl-delay run")
    ap.add_argument("--latency-ms", type=float, default=20)
    ap.add_argument("--trap-months", type=int, default=24)
    ap.add_argument("--port", type=int, default=8800)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--per-host", type=int, default=8)
    ap.add_argument("--workers", type=int, default=None, help="blockcrawl --workers (default: its own default)")
    ap.add_argument("--send-log", action="store_true",
                    help="log blockcrawl's own send times (bench/sendlog.py) and report its min gap beside websim's")
    ap.add_argument("--delay", type=float, default=None,
                    help="blockcrawl --delay (default: its own, 0): min gaps are then checked on every host")
    ap.add_argument("--skip", action="append", default=[], choices=("scrapy", "blockcrawl", "crawl-only"))
    ap.add_argument("--out", default="/tmp/blockcrawl-bench")
    ap.add_argument("--no-netns", action="store_true", help="do not use unshare --net")
    # internal: one run inside the namespace
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--netns", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--cmd", help=argparse.SUPPRESS)
    ap.add_argument("--crawl-delay", type=float, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.inner:
        return inner(a)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    netns = not a.no_netns and os.geteuid() == 0 and subprocess.run(
        ["unshare", "--net", "true"], capture_output=True).returncode == 0
    seeds = [f"http://127.0.0.{2 + h}:{a.port}/" for h in range(a.hosts)]
    runner = [str(ROOT / "bench" / "sendlog.py"), "sends.log"] if a.send_log else ["-m", "blockcrawl"]
    bc = [sys.executable, *runner, "crawl", *seeds, "--store", "crawl.db", "--no-progress",
          "--concurrency", str(a.concurrency), "--per-host", str(a.per_host), "--timeout", "10"]
    if a.workers is not None:
        bc += ["--workers", str(a.workers)]
    if a.delay is not None:
        bc += ["--delay", str(a.delay)]
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    scrapy = [sys.executable, str(Path(a.shared) / "anchors" / "scrapy_bench.py"), "--hosts", str(a.hosts),
              "--port", str(a.port), "--delay", "0"]
    rows = []
    print(f"websim {a.hosts} hosts x {a.pages} pages, latency {a.latency_ms} ms, trap {a.trap_months} months, "
          f"network namespace: {'yes' if netns else 'no (loopback)'}", file=sys.stderr)
    if "blockcrawl" not in a.skip:
        rows.append(run_one(a, "blockcrawl", bc, a.pages, 0, netns))
    if "scrapy" not in a.skip:
        rows.append(run_one(a, "scrapy", scrapy, a.pages, 0, netns))
    if "crawl-only" not in a.skip and "blockcrawl" not in a.skip:
        r = run_one(a, "blockcrawl-no-extract", bc + ["--no-extract"], a.pages, 0, netns)
        r["crawler"] = "blockcrawl --no-extract (crawl only, like Scrapy here)"
        rows.append(r)
    if a.polite_pages and "blockcrawl" not in a.skip:
        a.trap_months = a.polite_trap_months
        r = run_one(a, "blockcrawl-crawldelay1", bc, a.polite_pages, 1.0, netns)
        r["crawler"] = f"blockcrawl, {a.hosts}x{a.polite_pages} pages, Crawl-delay 1 on 127.0.0.3"
        rows.append(r)
    cols = list(rows[0])
    print(f"\nwebsim {a.hosts} hosts x {a.pages} pages/host, latency {a.latency_ms} ms, concurrency {a.concurrency}, "
          f"per host {a.per_host}, {'private network namespace' if netns else 'loopback'}")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    sc = [r for r in rows if r["crawler"] == "scrapy"]
    for r in rows:
        if sc and r is not sc[0] and "Crawl-delay" not in r["crawler"]:
            print(f"{r['crawler']} / Scrapy pages/s: {r['pages/s'] / max(sc[0]['pages/s'], 1e-9):.2f}x")


if __name__ == "__main__":
    main()

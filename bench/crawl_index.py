"""Benchmark: `crawl --index` against the crawl alone (issue #24.3), and `index` after the crawl.

Serves the first --pages wtq-dev pages (real Wikipedia pages, /work/shared/bench/data/wtq-dev,
override with --data) on 127.0.0.1 with a home page linking them all, then, alternating, crawls
them into a fresh store three ways: crawl alone; crawl alone then `blockcrawl index` (today's way
to a searchable store); `crawl --index`. Prints wall time, the crawl's own pages/s (from its
summary line) and the ratio to the crawl alone, and checks the minimum gap between request
arrivals against --delay at the server.

Run: PYTHONPATH=. python bench/crawl_index.py [--pages 300] [--rounds 1] [--delay 0.02]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tables import DEFAULT_DATA, load  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def serve(pages: dict[str, bytes]) -> tuple[ThreadingHTTPServer, list[float]]:
    arrivals: list[float] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            with lock:
                arrivals.append(time.monotonic())
            body = pages.get(self.path.split("?")[0])
            if self.path == "/robots.txt":
                body, ctype = b"User-agent: *\n", "text/plain"
            else:
                ctype = "text/html; charset=utf-8"
            if body is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, arrivals


def run(cmd: list[str]) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "blockcrawl", *cmd], capture_output=True, text=True, env=env,
                       timeout=7200)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return time.perf_counter() - t, r.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--delay", type=float, default=0.02)
    args = ap.parse_args()
    items, _ = load(args.data, args.pages)
    pages = {f"/wiki/{pid}": html.encode() for pid, _, html in items}
    home = "".join(f'<li><a href="/wiki/{pid}">{pid}</a></li>' for pid, _, _ in items)
    pages["/"] = f"<html><head><title>Home</title></head><body><ul>{home}</ul></body></html>".encode()
    srv, arrivals = serve(pages)
    base = f"http://127.0.0.1:{srv.server_address[1]}/"
    crawl = ["crawl", base, "--no-progress", "--no-sitemaps", "--delay", str(args.delay), "--per-host", "4"]
    rows: dict[str, list[tuple[float, float, float]]] = {"crawl alone": [], "crawl, then index": [],
                                                          "crawl --index": []}
    with tempfile.TemporaryDirectory() as d:
        for r in range(args.rounds):
            for name in rows:
                store = str(Path(d) / f"{r}-{name.replace(' ', '_').replace(',', '')}.db")
                arrivals.clear()
                extra = ["--index"] if name == "crawl --index" else []
                wall, err = run([*crawl, "--store", store, *extra])
                m = re.search(r"\(([\d.]+)/s\)", err)
                pps = float(m.group(1)) if m else float("nan")
                gaps = [b - a for a, b in zip(sorted(arrivals), sorted(arrivals)[1:])]
                if name == "crawl, then index":
                    wall += run(["index", "--store", store, "--quiet"])[0]
                rows[name].append((wall, pps, min(gaps) if gaps else float("nan")))
                print(f"  round {r} {name}: {wall:.1f} s, crawl {pps} pages/s", file=sys.stderr)
    srv.shutdown()
    alone = min(w for w, _, _ in rows["crawl alone"])
    print(f"\n{len(items)} wtq-dev pages on loopback, --delay {args.delay}, best of {args.rounds}, "
          f"load {os.getloadavg()[0]:.1f}\n")
    print("| run | wall s | x crawl alone | crawl pages/s | min gap at server s |\n|---|---:|---:|---:|---:|")
    for name, rs in rows.items():
        wall, pps, gap = min(rs)
        print(f"| {name} | {wall:.1f} | {wall / alone:.2f} | {pps:.1f} | {gap:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

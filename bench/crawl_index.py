"""Benchmark: `crawl --index` against the crawl alone, and `index` after the crawl.

Two sites served on 127.0.0.1, each with a home page linking into it:
- wiki: the first --pages wtq-dev pages (real Wikipedia pages, /work/shared/bench/data/wtq-dev,
  override with --data), the home page linking them all;
- docs: bench/docsfixture.py's generated documentation site with code (--docs-pages pages,
  text written for the benchmark).
For each site and each --delays value (0 is the crawl's default: no per-host delay), alternating,
crawls into a fresh store: crawl alone; `crawl --index`; and with --then-index, crawl alone then
`blockcrawl index` (the way to a searchable store before `--index`). Prints wall time, the ratio
to the crawl alone, the crawl's own pages/s (from its summary line), the chunks embedded by the
live indexer during the crawl and after it, the seconds from the last page to a searchable store,
and the minimum gap between request arrivals at the server (checked against the delay).

The server's threads ask for nice -5 (allowed as root, else ignored) so that arrival stamps are not
late on a loaded machine; the crawls run at the caller's priority.

Run: PYTHONPATH=. python bench/crawl_index.py [--sites wiki,docs] [--pages 300] [--docs-pages 500]
     [--delays 0,0.02] [--rounds 1] [--then-index]
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, WTQ_DEV  # noqa: E402 - first: it puts the repository on sys.path
from docsfixture import docs_site  # noqa: E402
from tables import load  # noqa: E402


def wiki_site(data: Path, n: int) -> dict[str, bytes]:
    items, _ = load(data, n)
    pages = {f"/wiki/{pid}": html.encode() for pid, _, html in items}
    home = "".join(f'<li><a href="/wiki/{pid}">{pid}</a></li>' for pid, _, _ in items)
    pages["/"] = f"<html><head><title>Home</title></head><body><ul>{home}</ul></body></html>".encode()
    return pages


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

    def loop() -> None:
        try:  # this thread and the handler threads it starts (Linux: niceness is per thread)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -5)
        except (OSError, AttributeError):
            pass
        srv.serve_forever()

    threading.Thread(target=loop, daemon=True).start()
    return srv, arrivals


def run(cmd: list[str]) -> tuple[float, str, float]:
    """(wall s, stderr, CPU s of the command and every process it waited for: parse workers, indexer)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "blockcrawl", *cmd], capture_output=True, text=True, env=env,
                       timeout=7200)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return wall, r.stderr, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _num(rx: str, text: str) -> float:
    m = re.search(rx, text)
    return float(m.group(1)) if m else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=WTQ_DEV)
    ap.add_argument("--sites", default="wiki,docs")
    ap.add_argument("--pages", type=int, default=300, help="wtq-dev pages (wiki site)")
    ap.add_argument("--docs-pages", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--delays", default="0,0.02", help="per-host delays, comma-separated (0: the default)")
    ap.add_argument("--then-index", action="store_true", help="also time crawl alone + `blockcrawl index`")
    args = ap.parse_args()
    delays = [float(x) for x in args.delays.split(",")]
    kinds = ["crawl alone", "crawl --index"] + (["crawl, then index"] if args.then_index else [])
    out: list[str] = []
    for site in args.sites.split(","):
        pages = wiki_site(args.data, args.pages) if site == "wiki" else docs_site(args.docs_pages)
        srv, arrivals = serve(pages)
        base = f"http://127.0.0.1:{srv.server_address[1]}/"
        # key (delay, kind) -> rows of (wall, pages/s, min gap, CPU s, chunks, during, after, tail)
        rows: dict[tuple[float, str], list[tuple[float, ...]]] = {}
        with tempfile.TemporaryDirectory() as d:
            for r in range(args.rounds):
                for delay in delays:
                    for kind in kinds:
                        store = str(Path(d) / f"{site}-{r}-{delay}-{kinds.index(kind)}.db")
                        arrivals.clear()
                        cmd = ["crawl", base, "--store", store, "--no-progress", "--no-sitemaps"]
                        if delay:
                            cmd += ["--delay", str(delay)]
                        wall, err, cpu = run([*cmd, *(["--index"] if kind == "crawl --index" else [])])
                        pps = _num(r"\(([\d.]+)/s\)", err)
                        stamps = sorted(arrivals)
                        gap = min((b - a for a, b in zip(stamps, stamps[1:])), default=float("nan"))
                        if kind == "crawl, then index":
                            w2, _, c2 = run(["index", "--store", store, "--quiet"])
                            wall, cpu = wall + w2, cpu + c2
                        row = (wall, pps, gap, cpu, _num(r"([\d]+) chunks;", err),
                               _num(r"(\d+) embedded during the crawl", err), _num(r"(\d+) after it", err),
                               _num(r"searchable ([\d.]+) s after", err))
                        rows.setdefault((delay, kind), []).append(row)
                        print(f"  {site} round {r} delay {delay} {kind}: {wall:.1f} s, {pps} pages/s, "
                              f"CPU {cpu:.1f} s, min gap {gap:.3f} s", file=sys.stderr)
        srv.shutdown()
        out.append(f"\n{site}: {len(pages) - 1} pages on loopback, best of {args.rounds}, "
                   f"load {os.getloadavg()[0]:.1f} at the end\n")
        out.append("| delay s | run | wall s | x crawl alone | crawl pages/s | CPU s | chunks | embedded during / "
                   "after the crawl | searchable s after the last page | min gap at server s |")
        out.append("|---:|---|---:|---:|---:|---:|---:|---|---:|---:|")
        for delay in delays:
            alone = min(rs[0] for rs in rows[(delay, "crawl alone")])
            for kind in kinds:
                wall, pps, gap, cpu, chunks, during, after, tail = min(rows[(delay, kind)])
                split = f"{during:.0f} / {after:.0f}" if kind == "crawl --index" else ""
                tl = f"{tail:.1f}" if kind == "crawl --index" else ""
                ok = "" if not delay or gap >= delay else " (below the delay)"
                out.append(f"| {delay:g} | {kind} | {wall:.1f} | {wall / alone:.2f} | {pps:.1f} | {cpu:.1f} | {chunks:.0f} | "
                           f"{split} | {tl} | {gap:.3f}{ok} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

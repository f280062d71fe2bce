#!/usr/bin/env python3
"""Which async HTTP client for the crawler: aiohttp vs httpx, measured on the same local server.

Starts ../shared/bench/websim.py (override with --websim or $WEBSIM) on 127.0.0.2, then fetches
the same N article URLs with each client at the same concurrency (keep-alive, one session),
alternating the order over --rounds, and prints requests/s and client CPU ms per request.

    python bench/http_client.py [--n 3000] [--concurrency 64] [--rounds 2]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time

from common import SHARED  # noqa: E402 - first: it puts the repository on sys.path


async def run_aiohttp(urls: list[str], conc: int) -> int:
    import aiohttp
    sem = asyncio.Semaphore(conc)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc)) as s:
        async def one(u: str) -> int:
            async with sem:
                async with s.get(u) as r:
                    return len(await r.read())
        return sum(await asyncio.gather(*(one(u) for u in urls)))


async def run_httpx(urls: list[str], conc: int) -> int:
    import httpx
    sem = asyncio.Semaphore(conc)
    limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
    async with httpx.AsyncClient(limits=limits, timeout=30) as c:
        async def one(u: str) -> int:
            async with sem:
                r = await c.get(u)
                return len(r.content)
        return sum(await asyncio.gather(*(one(u) for u in urls)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--websim", default=os.environ.get("WEBSIM", str(SHARED / "websim.py")))
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--port", type=int, default=8871)
    a = ap.parse_args()
    srv = subprocess.Popen([sys.executable, a.websim, "--hosts", "1", "--pages", str(a.n), "--port", str(a.port),
                            "--latency-ms", "0", "--max-seconds", "600"], stderr=subprocess.PIPE, text=True)
    try:
        while "READY" not in (srv.stderr.readline() or "READY"):
            pass
        urls = [f"http://127.0.0.2:{a.port}/s{i % 10}/p{i}.html" for i in range(a.n)]
        res: dict[str, list[tuple[float, float]]] = {"aiohttp": [], "httpx": []}
        for r in range(a.rounds):
            order = ["aiohttp", "httpx"] if r % 2 == 0 else ["httpx", "aiohttp"]
            for name in order:
                fn = run_aiohttp if name == "aiohttp" else run_httpx
                t0, c0 = time.perf_counter(), time.process_time()
                asyncio.run(fn(urls, a.concurrency))
                res[name].append((time.perf_counter() - t0, time.process_time() - c0))
        print(f"{a.n} GETs x {a.rounds} rounds, concurrency {a.concurrency}, websim latency 0")
        print("| client | requests/s (best) | client CPU ms/request (best) |")
        print("|---|---|---|")
        for name, xs in res.items():
            wall = min(w for w, _ in xs)
            cpu = min(c for _, c in xs)
            print(f"| {name} | {a.n / wall:.0f} | {1000 * cpu / a.n:.2f} |")
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()

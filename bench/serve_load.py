"""Load on `blockcrawl serve`: N requests over C keep-alive connections, latency percentiles.

    python bench/serve_load.py --url http://127.0.0.1:8000 --requests 2000 --connections 20
    python bench/serve_load.py --store site.db            # starts `blockcrawl serve` on it (real model)

The client is one asyncio loop speaking HTTP/1.1 on raw sockets (no client library, no threads), so
what it measures is the server. Every request carries a different query: nothing is answered from a
cache. Prints a table, or one JSON object with --json (tests/retrieval/test_serve.py reads it).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

WORDS = ["bread", "oven", "flour", "yeast", "germany", "mountains", "lowlands", "rivers", "python", "language",
         "sqlite", "database", "file", "custard", "sugar", "cream", "japan", "islands", "china", "population",
         "markup", "entities", "tag", "escape", "crust", "dough", "programming", "garbage", "collection",
         "relational", "engine", "capital", "city", "coast", "climate"]


def query(i: int) -> str:
    n = len(WORDS)
    return f"{WORDS[i % n]} {WORDS[(i * 7 + 3) % n]} {WORDS[(i * 13 + 5) % n]} {i}"


async def client(host: str, port: int, ids: list[int], mode: str, k: int,
                 lat: list[float], ok: list[int], errors: list[str]) -> None:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as e:
        errors.append(f"cannot connect: {e}")
        return
    try:
        for i in ids:
            qs = urllib.parse.urlencode({"q": query(i), "k": k, "mode": mode})
            t0 = time.perf_counter()
            writer.write(f"GET /api/search?{qs} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
            body = await reader.readexactly(int(m.group(1))) if m else b""
            lat.append(time.perf_counter() - t0)
            status = int(head.split(b" ", 2)[1])
            if status != 200:
                errors.append(f"{status} {body[:200]!r}")
            else:
                ok.append(i)
            if re.search(rb"(?i)\r\nconnection:\s*close", head):
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
    except (OSError, asyncio.IncompleteReadError) as e:
        errors.append(f"{type(e).__name__}: {e}")
    finally:
        writer.close()


async def load(url: str, requests: int, connections: int, mode: str, k: int) -> dict[str, float]:
    u = urllib.parse.urlsplit(url)
    host, port = u.hostname or "127.0.0.1", u.port or 80
    lat: list[float] = []
    ok: list[int] = []
    errors: list[str] = []
    t0 = time.perf_counter()
    await asyncio.gather(*(client(host, port, list(range(c, requests, connections)), mode, k, lat, ok, errors)
                           for c in range(connections)))
    wall = time.perf_counter() - t0
    lat.sort()

    def pct(p: float) -> float:
        return 1000 * lat[min(len(lat) - 1, int(p / 100 * len(lat)))] if lat else float("nan")

    return {"requests": requests, "connections": connections, "mode": mode, "ok": len(ok),
            "errors": requests - len(ok), "first_errors": errors[:5], "wall_s": round(wall, 2),
            "rps": round(len(lat) / wall, 1), "p50_ms": round(pct(50), 2), "p90_ms": round(pct(90), 2),
            "p99_ms": round(pct(99), 2), "max_ms": round(1000 * lat[-1], 2) if lat else float("nan")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a running server")
    ap.add_argument("--store", help="start `blockcrawl serve --quiet` on this indexed store instead")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--connections", type=int, default=20)
    ap.add_argument("--mode", default="hybrid", choices=("hybrid", "vector", "keyword"))
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    proc = None
    if args.store:
        root = Path(__file__).resolve().parents[1]
        env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
        proc = subprocess.Popen([sys.executable, "-m", "blockcrawl", "serve", "--store", args.store, "--port", "0",
                                 "--quiet"], stderr=subprocess.PIPE, text=True, env=env, cwd=root)
        assert proc.stderr is not None
        line = proc.stderr.readline()
        m = re.search(r"http://[\d.]+:\d+", line)
        if not m:
            proc.kill()
            print(f"serve did not start: {line}{proc.stderr.read()}", file=sys.stderr)
            return 1
        args.url = m.group(0)
    elif not args.url:
        ap.error("--url or --store")
    try:
        stats = asyncio.run(load(args.url, args.requests, args.connections, args.mode, args.k))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
    if args.json:
        print(json.dumps(stats))
    else:
        for key, value in stats.items():
            print(f"{key:>12}  {value}")
    return 0 if stats["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

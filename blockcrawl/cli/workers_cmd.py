"""`blockcrawl workers`: the worker processes of a shared crawl (crawl --frontier redis://...) and
their hosts, pages/s and queues, read from the frontier (each worker publishes a heartbeat there
twice a second)."""
from __future__ import annotations

import argparse
import json
import sys
import time

EXAMPLES = """examples:
  blockcrawl workers --frontier redis://10.0.0.5:6379/0            one JSON line per worker, then a summary
  blockcrawl workers --frontier redis://10.0.0.5:6379/0 --table    the same as a table

A worker is alive while its heartbeat is younger than its --lease-seconds; a dead worker's hosts
are taken over by the others once their leases expire (`refetched`: URLs that were in flight on
it and were fetched again).
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("workers", help="the workers of a shared crawl (--frontier redis://...)",
                       description="Show the worker processes of a crawl run with --frontier: per worker the "
                                   "hosts it owns, its pages and pages/s, and the URLs queued for its hosts.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frontier", required=True, metavar="URL", help="redis://HOST:PORT/DB the crawl uses")
    p.add_argument("--table", action="store_true", help="a readable table instead of JSON Lines")
    p.set_defaults(func=run)


def collect(url: str) -> tuple[list[dict[str, object]], dict[str, object]]:
    """(one record per worker, a summary of the crawl) from the frontier at url."""
    from ..store.redis_layout import PREFIX, connect, keys
    r = connect(url)
    now = time.time()
    meta = r.hgetall(PREFIX + "meta")
    active = sorted(r.smembers(PREFIX + "active"))
    pipe = r.pipeline(transaction=False)
    for h in active:
        k = keys(h)
        pipe.hlen(k["todo"])
        pipe.llen(k["inbox"])
        pipe.get(k["lease"])
    res = pipe.execute()
    todo = {h: int(res[3 * i]) for i, h in enumerate(active)}
    owner = {h: res[3 * i + 2] for i, h in enumerate(active)}
    seen = 0
    seen_keys = list(r.scan_iter(match=PREFIX + "seen:*", count=1000))
    pipe = r.pipeline(transaction=False)
    for key in seen_keys:
        pipe.scard(key)
    seen = sum(int(n) for n in pipe.execute())
    workers = []
    for wid, raw in sorted(r.hgetall(PREFIX + "workers").items()):
        try:
            b = json.loads(raw)
        except ValueError:
            continue
        age = now - float(b.get("t", 0))
        hosts = list(b.get("hosts", []))
        alive = bool(b.get("alive")) and age < float(b.get("lease_seconds", 30))
        workers.append({"worker": wid, "state": "alive" if alive else ("stopped" if not b.get("alive") else "dead"),
                        "version": b.get("version"), "heartbeat_age": round(age, 1), "hosts_owned": len(hosts),
                        "pages": b.get("pages", 0), "pages_per_s": b.get("pages_per_s", 0.0),
                        "queued_here": b.get("queued", 0), "queued_hosts": sum(todo.get(h, 0) for h in hosts),
                        "refetched": b.get("refetched", 0), "hosts": hosts})
    stats = r.hgetall(PREFIX + "stats")
    summary: dict[str, object] = {
        "crawl": meta.get("crawl"), "version": meta.get("version"), "seeds": json.loads(meta.get("seeds", "[]")),
        "workers_alive": sum(1 for w in workers if w["state"] == "alive"), "urls_seen": seen,
        "urls_to_fetch": sum(todo.values()), "hosts_with_work": len(active),
        "hosts_unowned": sum(1 for h in active if not owner[h]), "refetched": int(stats.get("refetched", 0)),
        "redis_used_memory": int(r.info("memory")["used_memory"]), "finished": bool(meta) and not active}
    return workers, summary


def run(args: argparse.Namespace) -> int:
    workers, summary = collect(args.frontier)
    if not summary["crawl"]:
        print(f"blockcrawl workers: {args.frontier} holds no crawl", file=sys.stderr)
        return 1
    if not args.table:
        for w in workers:
            print(json.dumps(w))
        print(json.dumps({"summary": summary}))
        return 0
    cols = ("worker", "state", "hosts_owned", "pages", "pages_per_s", "queued_here", "queued_hosts", "refetched",
            "heartbeat_age")
    rows = [[str(w[c]) for c in cols] for w in workers]
    width = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(width[i]) for i, c in enumerate(cols)))
    for r in rows:
        print("  ".join(v.ljust(width[i]) for i, v in enumerate(r)))
    s = summary
    mem = int(str(s["redis_used_memory"]))
    print(f"crawl {s['crawl']}: {s['workers_alive']} workers alive, {s['urls_seen']} URLs seen, "
          f"{s['urls_to_fetch']} to fetch on {s['hosts_with_work']} hosts ({s['hosts_unowned']} unowned), "
          f"{s['refetched']} fetched again after a worker died, Redis {mem / 1e6:.1f} MB"
          + ("; finished" if s["finished"] else ""))
    return 0

"""A crawl frontier in Redis shared by many worker processes (crawl --frontier redis://HOST:PORT/DB).

Hosts are owned, not shared: a worker leases a host (SET lease NX PX, renewed every
CLAIM_INTERVAL) and alone fetches it, so a host's politeness, robots.txt rules, block dedup and
site learning stay in one process. Links to other hosts go to Redis. A dead worker's leases
expire after --lease-seconds and other workers take its hosts over with everything not done yet.

The keys, the Item encoding and the Lua scripts (one per state change, on one host's keys) are in
store/redis_layout.py; this module is the logic over them: the lease and claim of hosts, the
hand-over of a dead worker's hosts, the batching of marks, the heartbeat.

The store's own frontier (SQLite) is not used; the crawl log goes there (one per worker,
`blockcrawl export --what log` on each worker's store), so the log is durable with the pages.

If Redis goes away during a crawl, every call pauses and retries with back-off (one log line
when lost, one when back): nothing is lost, the worker just waits.
"""
from __future__ import annotations

import json
import logging
import math
import os
import random
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, TypeVar

from .._version import __version__
from ..errors import ConfigError
from ..frontier_item import DONE, FAILED, IN_FLIGHT, QUEUED, SKIPPED, Frontier, Item, host_of
from .redis_layout import PREFIX, SCRIPTS, SEP, connect, crawl_id, decode, encode, keys, reply_key, safe_url, token

log = logging.getLogger("blockcrawl.crawl")

CLAIM_INTERVAL = 0.5  # seconds between lease renewals / inbox reads (the engine calls claim())
INBOX_BATCH = 1000  # items read from a host's inbox per claim
_T = TypeVar("_T")

class RedisFrontier:
    """The SharedFrontier of crawl.protocols on one Redis database."""

    def __init__(self, url: str, local: Frontier, *, worker_id: str | None = None, lease_seconds: float = 30.0,
                 cooldown: float = 0.0, delay_of: Callable[[str], float] | None = None) -> None:
        import redis
        self.url, self.local = url, local
        self.r = connect(url)
        self._errors: tuple[type[BaseException], ...] = (redis.ConnectionError, redis.TimeoutError)
        self.me = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        self.ttl_ms = max(1, int(lease_seconds * 1000))
        self.lease_seconds = lease_seconds
        self.cooldown = cooldown  # the least cool-down of a host given back (--delay)
        # a host's own delay (robots.txt Crawl-delay included), from the engine's Scheduler
        self.delay_of: Callable[[str], float] = delay_of or (lambda host: 0.0)
        self._scripts = {name: self.r.register_script(src) for name, src in SCRIPTS.items()}
        self.owned: set[str] = set()
        self._valid: dict[str, float] = {}  # host -> monotonic time its lease surely lasts until
        self._items: dict[str, Item] = {}  # handed to the engine, not finished
        self._by_host: dict[str, set[str]] = {}
        self._fly: dict[str, str] = {}  # URL in flight here -> its host
        self._flying: Counter[str] = Counter()  # host -> requests in flight here
        self._taken_at: dict[str, float] = {}  # host -> monotonic time this worker leased it
        self._pending: list[tuple[str, str]] = []  # (url, host) done/failed/skipped, sent at flush
        self._lost_since: float | None = None
        self.pages = 0  # URLs this worker finished
        self.refetched = 0  # in flight on a dead worker when this one took its host over
        self._rate = (time.monotonic(), 0)
        self._pps = 0.0
        self.started = time.time()

    # ------------------------------------------------------------------ Redis calls, paused while Redis is away
    def _call(self, fn: Callable[[], _T]) -> _T:
        wait = 0.1
        while True:
            try:
                out = fn()
            except self._errors as e:
                if self._lost_since is None:
                    self._lost_since = time.monotonic()
                    log.warning("frontier %s lost (%s): paused, retrying with back-off", safe_url(self.url), e)
                time.sleep(wait * (0.5 + random.random()))
                wait = min(wait * 2, 5.0)
                continue
            if self._lost_since is not None:
                log.warning("frontier %s back after %.1f s", safe_url(self.url), time.monotonic() - self._lost_since)
                self._lost_since = None
            return out

    # ------------------------------------------------------------------ the crawl's identity
    def join(self, seeds: list[str], options: str, resume: bool) -> list[str]:
        if not seeds:
            m = self._call(lambda: self.r.hmget(PREFIX + "meta", "seeds", "crawl"))
            if m[1] is None:
                raise ConfigError(f"{safe_url(self.url)} holds no crawl to resume; give seed URLs")
            seeds = list(json.loads(m[0]))
        cid = crawl_id(seeds, options)
        version, have, have_seeds, have_opts, created = self._call(
            lambda: self._scripts["join"](keys=[PREFIX + "meta"], args=[__version__, cid, json.dumps(seeds), options]))
        if version != __version__:
            raise ConfigError(f"{safe_url(self.url)} holds a crawl run by blockcrawl {version}; this is {__version__} "
                              "(finish it with that version, or use another database)")
        if have != cid:
            raise ConfigError(f"{safe_url(self.url)} holds another crawl (id {have}, seeds {have_seeds}, options "
                              f"{have_opts}); this one is {cid}: use another database number or FLUSHDB it")
        if resume and created:
            log.info("resume: %s held no crawl, starting it", safe_url(self.url))
        self._beat()
        return seeds

    # ------------------------------------------------------------------ Frontier protocol
    def get_meta(self, key: str) -> str | None:
        v = self._call(lambda: self.r.hget(PREFIX + "meta", key))
        return None if v is None else str(v)

    def set_meta(self, key: str, value: str) -> None:
        self._call(lambda: self.r.hset(PREFIX + "meta", key, value))

    def reset(self) -> None:
        """Nothing: a shared crawl is started over by emptying its database (FLUSHDB), never by one worker."""

    def size(self) -> int:
        return 1 if self.get_meta("crawl") else 0

    def seen_urls(self) -> set[str]:
        return set()  # the seen-set stays in Redis (share() tests membership there)

    def restore(self, limit: int | None = None) -> list[Item]:
        return []  # hosts come back through claim()

    def add(self, items: Iterable[Item]) -> None:
        self.share(items)

    def share(self, items: Iterable[Item]) -> list[Item]:
        groups: dict[str, list[Item]] = {}
        for it in items:
            groups.setdefault(it.host, []).append(it)
        if not groups:
            return []
        share, tok = self._scripts["share"], token()

        def run() -> list[Any]:
            pipe = self.r.pipeline(transaction=False)
            for host, its in groups.items():
                k = keys(host)
                args: list[str | int] = [self.me, host, tok, self.ttl_ms]
                for it in its:
                    args += [it.url, encode(it)]
                share(keys=[k["seen"], k["todo"], k["inbox"], k["lease"], PREFIX + "active", reply_key(host, self.me)],
                      args=args, client=pipe)
            return list(pipe.execute())
        out: list[Item] = []
        for its, (own, urls) in zip(groups.values(), self._call(run)):
            if own and urls:
                wanted = set(urls)
                out += [self._hand(it) for it in its if it.url in wanted and it.url not in self._items]
        return out

    def _hand(self, it: Item) -> Item:
        self._items[it.url] = it
        self._by_host.setdefault(it.host, set()).add(it.url)
        return it

    def mark(self, url: str, state: int, status: int | None = None, error: str | None = None,
             attempts: int | None = None, not_before: float = 0.0) -> None:
        it = self._items.get(url)
        host = it.host if it is not None else host_of(url)
        k = keys(host)
        if state == IN_FLIGHT:  # at once: a worker dying now has this URL counted as fetched twice
            self._call(lambda: self.r.sadd(k["fly"], url))
            self._fly[url] = host
            self._flying[host] += 1
            return
        if url in self._fly:
            self._flying[self._fly.pop(url)] -= 1
        if state == QUEUED:  # a retry (its attempts, not_before) or an interrupted fetch
            enc = encode(it) if it is not None else None

            def requeue() -> None:
                pipe = self.r.pipeline(transaction=False)
                pipe.srem(k["fly"], url)
                if enc is not None:
                    pipe.hset(k["todo"], url, enc)
                pipe.execute()
            self._call(requeue)
        elif state in (DONE, FAILED, SKIPPED):
            self._pending.append((url, host))
            if it is not None:
                del self._items[url]
                self._by_host.get(host, set()).discard(url)
                if it.kind == "page":
                    self.pages += 1

    def flush(self) -> None:
        if not self._pending:
            return
        pending, done = self._pending, self._scripts["done"]

        def run() -> None:
            pipe = self.r.pipeline(transaction=False)
            for url, host in pending:
                k = keys(host)
                done(keys=[k["todo"], k["fly"], PREFIX + "active"], args=[url, host], client=pipe)
            pipe.execute()
        self._call(run)
        self._pending = []

    def log(self, url: str, event: str, status: int | None = None, error: str | None = None,
            detail: str = "", nbytes: int = 0, elapsed: float = 0.0) -> None:
        self.local.log(url, event, status, error, detail, nbytes, elapsed)

    # ------------------------------------------------------------------ leases
    def holds(self, it: Item) -> bool:
        return self._items.get(it.url) is it

    def may_fetch(self, host: str) -> bool:
        """The lease, as of its last renewal (timed from before the renewal was sent), still has a
        quarter of its term to run: a request launched now is on the wire well before any other
        worker could lease the host."""
        return time.monotonic() < self._valid.get(host, 0.0) - self.lease_seconds / 4

    def _drop(self, host: str) -> None:
        self.owned.discard(host)
        self._valid.pop(host, None)
        self._taken_at.pop(host, None)
        for url in self._by_host.pop(host, set()):
            self._items.pop(url, None)

    def claim(self) -> tuple[list[Item], list[str]]:
        # (no flush here: done marks go out only after the store's commit, by the engine)
        out: list[Item] = []
        lost: list[str] = []
        tick = self._scripts["tick"]
        owned = sorted(self.owned)
        if owned:
            tok = token()

            def renew() -> list[Any]:
                pipe = self.r.pipeline(transaction=False)
                for h in owned:
                    k = keys(h)
                    tick(keys=[k["lease"], k["inbox"], reply_key(h, self.me)], args=[self.me, self.ttl_ms, INBOX_BATCH, tok],
                         client=pipe)
                return list(pipe.execute())
            sent = time.monotonic()
            for h, res in zip(owned, self._call(renew)):
                if res is None:
                    log.warning("lease of %s lost (another worker holds it now): its queue is dropped here", h)
                    self._drop(h)
                    lost.append(h)
                    continue
                self._valid[h] = sent + self.lease_seconds
                for s in res:
                    url, enc = s.split(SEP, 1)
                    if url not in self._items:
                        out.append(self._hand(decode(url, enc)))
        # hosts without work any more are given back (cooling down for the politeness delay)
        mine = sorted(self.owned)
        if mine:
            flags = self._call(lambda: self.r.smismember(PREFIX + "active", mine))
            for h, on in zip(mine, flags):
                if not on and not self._by_host.get(h):
                    self._release(h)
                    self._drop(h)
                    lost.append(h)
        n_active = int(self._call(lambda: self.r.scard(PREFIX + "active")))
        live, least = self._beat()
        share = math.ceil(n_active / max(1, live))
        if len(self.owned) > share and least < share:
            # more than a fair share while another worker has less (it joined later): one host a
            # claim is given back, one with nothing in flight here, held for a few claims at least
            now = time.monotonic()
            calm = [h for h in sorted(self.owned) if not self._flying.get(h)
                    and now - self._taken_at.get(h, now) > 4 * CLAIM_INTERVAL]
            if calm:
                h = calm[-1]
                self._release(h)
                self._drop(h)
                lost.append(h)
                log.info("gave %s back (%d hosts here, a fair share is %d)", h, len(self.owned) + 1, share)
        need = share - len(self.owned)
        free: list[str] = []
        if need > 0:
            # a random sample of the hosts with work (not all of them: 10^5 hosts read twice a
            # second by every worker would be Redis's first bottleneck), those without a lease
            sample = min(n_active, max(64, 4 * need))
            cand = [h for h in self._call(lambda: self.r.srandmember(PREFIX + "active", sample)) or []
                    if h not in self.owned]

            def leased() -> list[Any]:
                pipe = self.r.pipeline(transaction=False)
                for h in cand:
                    pipe.exists(keys(h)["lease"])
                return list(pipe.execute())
            free = [h for h, held in zip(cand, self._call(leased)) if not held]
            random.shuffle(free)
        take = self._scripts["take"]
        for h in free:
            if len(self.owned) >= share:
                break
            k = keys(h)
            sent = time.monotonic()
            res = self._call(partial(take, keys=[k["lease"], k["todo"], k["inbox"], k["fly"], reply_key(h, self.me)],
                                     args=[self.me, self.ttl_ms, token()]))
            if not res:
                continue
            n_fly, flat = int(res[0]), res[1]
            self.owned.add(h)
            self._valid[h] = sent + self.lease_seconds
            self._taken_at[h] = sent
            if n_fly:
                self.refetched += n_fly
                self._call(partial(self.r.hincrby, PREFIX + "stats", "refetched", n_fly))
                log.warning("took over %s: %d URLs were in flight on the worker that held it (fetched again)", h, n_fly)
            items = [decode(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
            items.sort(key=lambda it: it.depth)
            out += [self._hand(it) for it in items if it.url not in self._items]
        return out, lost

    def _release(self, host: str) -> None:
        """Give the lease back; it stays taken (empty) for the host's delay, so the next owner's
        first request is at least that long after this worker's last one."""
        cooldown = max(self.cooldown, self.delay_of(host))
        k = keys(host)
        self._call(lambda: self._scripts["release"](keys=[k["lease"]], args=[self.me, int(cooldown * 1000)]))

    def release(self) -> None:
        """(after the store's last commit: the pending done marks go out too)"""
        self.flush()
        for h in sorted(self.owned):
            self._release(h)
        self.owned.clear()
        self._valid.clear()
        self._beat(alive=False)

    def finished(self) -> bool:
        return int(self._call(lambda: self.r.scard(PREFIX + "active"))) == 0

    # ------------------------------------------------------------------ heartbeat (blockcrawl workers)
    def _beat(self, alive: bool = True) -> tuple[int, int]:
        """Publish this worker's state; returns how many workers are alive (this one included) and
        the fewest hosts another live worker holds (a large number when there is none)."""
        now, mono = time.time(), time.monotonic()
        t0, p0 = self._rate
        if mono - t0 >= 2.0:
            self._pps = (self.pages - p0) / (mono - t0)
            self._rate = (mono, self.pages)
        state = {"worker": self.me, "version": __version__, "t": round(now, 3), "alive": alive,
                 "lease_seconds": self.lease_seconds, "started": round(self.started, 3),
                 "hosts": sorted(self.owned), "pages": self.pages, "pages_per_s": round(self._pps, 2),
                 "queued": len(self._items), "refetched": self.refetched}
        beats = self._call(lambda: self._beat_tx(state))
        live, least = 1, 1 << 30
        for wid, v in beats.items():
            try:
                b = json.loads(v)
            except ValueError:
                continue
            if wid != self.me and b.get("alive") and now - float(b.get("t", 0)) < float(b.get("lease_seconds", 30)):
                live += 1
                least = min(least, len(b.get("hosts", [])))
        return live, least

    def _beat_tx(self, state: dict[str, object]) -> dict[str, str]:
        pipe = self.r.pipeline(transaction=False)
        pipe.hset(PREFIX + "workers", self.me, json.dumps(state))
        pipe.hgetall(PREFIX + "workers")
        return dict(pipe.execute()[1])

"""A crawl frontier in Redis shared by many worker processes (crawl --frontier redis://HOST:PORT/DB).

Hosts are owned, not shared: a worker leases a host (SET lease NX PX, renewed every
CLAIM_INTERVAL) and alone fetches it, so a host's politeness, robots.txt rules, block dedup and
site learning stay in one process. Links to other hosts go to Redis. A dead worker's leases
expire after --lease-seconds and other workers take its hosts over with everything not done yet.

Keys, one group per host with the host as Redis Cluster hash tag (all keys of a host in one slot,
so every script below touches one slot only, except the `active` set: see docs/scale.md):

    bc:meta                 hash: version, crawl (id), seeds (JSON), options (JSON)
    bc:seen:{host}          set of URL keys ever accepted (the seen-set; per host so it shards)
    bc:todo:{host}          hash URL key -> encoded Item, every URL not done/failed/skipped yet
    bc:inbox:{host}         list of encoded Items found by other workers, for the owner to queue
    bc:fly:{host}           set of URL keys in flight (fetched again if their worker dies)
    bc:lease:{host}         the owner's worker id, expiring; "" = released, cooling down
    bc:active               set of hosts with a non-empty todo (the crawl is finished when empty)
    bc:workers              hash worker id -> JSON heartbeat (blockcrawl workers shows it)
    bc:stats                hash: refetched (URLs in flight on a dead worker, fetched again)
    bc:reply:{host}:<worker> the worker's last reply of share/take/tick for the host, for a call
                            run again after its reply was lost (expires with the lease term)

Each state change is one Lua script on one host's keys, so "seen" and "queued" never part
(a URL in the seen-set without a todo entry would be lost). An Item is stored as one
'\\x1f'-joined string of its non-default fields (about 30 bytes + the URL).

The store's own frontier (SQLite) is not used; the crawl log goes there (one per worker,
`blockcrawl export --what log` on each worker's store), so the log is durable with the pages.

If Redis goes away during a crawl, every call pauses and retries with back-off (one log line
when lost, one when back): nothing is lost, the worker just waits.
"""
from __future__ import annotations

import hashlib
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
from ..errors import ConfigError, StoreError
from ..frontier_item import DONE, FAILED, IN_FLIGHT, QUEUED, SKIPPED, Frontier, Item, host_of

log = logging.getLogger("blockcrawl.crawl")

CLAIM_INTERVAL = 0.5  # seconds between lease renewals / inbox reads (the engine calls claim())
INBOX_BATCH = 1000  # items read from a host's inbox per claim
SEP = "\x1f"
PREFIX = "bc:"
_T = TypeVar("_T")

# A script's reply can be lost after Redis ran it (the connection drops between the two, as when
# Redis shuts down): _call then runs it again. share, take and tick are not idempotent (a second
# share finds its URLs seen and hands none: queued in Redis, never fetched here, the crawl never
# ends; a second take finds the lease set and gets nothing: the host waits out the lease; a second
# tick has trimmed the inbox: those URLs are lost), so each one that changed something keeps its
# reply in bc:reply:{host}:<worker> beside a token of the call, and the same call run again gets
# that reply back instead of running again. One key per host and worker, overwritten by the next
# call and gone with the lease term (an outage longer than that runs the script again, and a
# lease that lapsed is found lost at the next tick anyway).
_REPLY = """
local function replayed(key, token)
  local v = redis.call('GET', key)
  if v then
    local cut = string.find(v, ' ', 1, true)
    if cut and string.sub(v, 1, cut - 1) == token then return cjson.decode(string.sub(v, cut + 1)) end
  end
  return nil
end
local function keep(key, token, reply, ttl)
  redis.call('SET', key, token .. ' ' .. cjson.encode(reply), 'PX', ttl)
  return reply
end
"""
# KEYS seen todo inbox lease active reply; ARGV me host token ttl_ms url1 enc1 url2 enc2 ...
# -> {own (1/0), {urls new and own}}
_SHARE = _REPLY + """
local again = replayed(KEYS[6], ARGV[3])
if again then return again end
local holder = redis.call('GET', KEYS[4])
local own = holder == ARGV[1]
local out = {}
local added = 0
for i = 5, #ARGV, 2 do
  if redis.call('SADD', KEYS[1], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i+1])
    added = added + 1
    if own then
      out[#out+1] = ARGV[i]
    elseif holder and holder ~= '' then
      redis.call('RPUSH', KEYS[3], ARGV[i] .. '\\31' .. ARGV[i+1])
    end
  end
end
if added > 0 then redis.call('SADD', KEYS[5], ARGV[2]) end
if #out > 0 then return keep(KEYS[6], ARGV[3], {1, out}, ARGV[4]) end
return {own and 1 or 0, out}
"""
# KEYS lease todo inbox fly reply; ARGV me ttl_ms token -> false | {in flight before, {url, enc, ...}}
_TAKE = _REPLY + """
local again = replayed(KEYS[5], ARGV[3])
if again then return again end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
redis.call('DEL', KEYS[3])
local n = redis.call('SCARD', KEYS[4])
redis.call('DEL', KEYS[4])
return keep(KEYS[5], ARGV[3], {n, redis.call('HGETALL', KEYS[2])}, ARGV[2])
"""
# KEYS lease inbox reply; ARGV me ttl_ms n token -> false (lease lost) | {encoded items}
_TICK = _REPLY + """
local again = replayed(KEYS[3], ARGV[4])
if again then return again end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local items = redis.call('LRANGE', KEYS[2], 0, tonumber(ARGV[3]) - 1)
if #items > 0 then
  redis.call('LTRIM', KEYS[2], #items, -1)
  return keep(KEYS[3], ARGV[4], items, ARGV[2])
end
return items
"""
# KEYS todo fly active; ARGV url host
_DONE = """
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('SREM', KEYS[2], ARGV[1])
if redis.call('HLEN', KEYS[1]) == 0 then redis.call('SREM', KEYS[3], ARGV[2]) end
return 1
"""
# KEYS lease; ARGV me cooldown_ms
_RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then redis.call('SET', KEYS[1], '', 'PX', ARGV[2]) else redis.call('DEL', KEYS[1]) end
return 1
"""
# KEYS meta; ARGV version crawl seeds options -> {version, crawl, seeds, options, created (1/0)}
_JOIN = """
if redis.call('HEXISTS', KEYS[1], 'crawl') == 0 then
  redis.call('HSET', KEYS[1], 'version', ARGV[1], 'crawl', ARGV[2], 'seeds', ARGV[3], 'options', ARGV[4])
  return {ARGV[1], ARGV[2], ARGV[3], ARGV[4], 1}
end
local m = redis.call('HMGET', KEYS[1], 'version', 'crawl', 'seeds', 'options')
return {m[1], m[2], m[3], m[4], 0}
"""


def encode(it: Item) -> str:
    """The Item without its key and host (both follow from the URL): fields at their default are
    empty, so a typical link is its depth and nine separators."""
    return SEP.join((str(it.depth), "" if it.kind == "page" else it.kind, str(it.attempts) if it.attempts else "",
                     str(it.hops) if it.hops else "", it.via or "", repr(it.not_before) if it.not_before else "",
                     it.fetch or "", str(it.trail) if it.trail else ""))


def decode(url: str, s: str) -> Item:
    d, kind, att, hops, via, nb, fetch, trail = s.split(SEP)
    return Item(url, host_of(fetch or url), int(d), kind or "page", int(att or 0), int(hops or 0), via or None,
                float(nb or 0.0), fetch or None, int(trail or 0))


def keys(host: str) -> dict[str, str]:
    t = "{" + host + "}"
    return {k: f"{PREFIX}{k}:{t}" for k in ("seen", "todo", "inbox", "fly", "lease")}


def reply_key(host: str, worker: str) -> str:
    """Where a worker's last reply for a host is kept, for a call run again (_REPLY)."""
    return f"{PREFIX}reply:{{{host}}}:{worker}"


def token() -> str:
    """One call's token (the same for every retry of it)."""
    return os.urandom(8).hex()


def crawl_id(seeds: list[str], options: str) -> str:
    """What makes two runs the same crawl: the seeds (any order) and the scope options."""
    return hashlib.sha256(json.dumps([sorted(seeds), options]).encode()).hexdigest()[:16]


def connect(url: str, *, timeout: float = 5.0) -> Any:
    """A redis-py client for url, checked with PING: StoreError (one line) when unreachable."""
    try:
        import redis
    except ImportError:
        raise ConfigError("--frontier redis://... needs the redis package: pip install 'blockcrawl[scale]'") from None
    try:
        r = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout, decode_responses=True)
        r.ping()
    except (redis.ConnectionError, redis.TimeoutError) as e:
        raise StoreError(f"cannot reach the frontier at {_safe(url)}: {e}") from None
    except (ValueError, redis.RedisError) as e:
        raise StoreError(f"frontier {_safe(url)}: {e}") from None
    return r


def _safe(url: str) -> str:
    """The URL without a password (redis://:secret@host)."""
    if "@" in url:
        scheme, rest = url.split("://", 1) if "://" in url else ("", url)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return url


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
        self._scripts = {name: self.r.register_script(src) for name, src in
                         (("share", _SHARE), ("take", _TAKE), ("tick", _TICK), ("done", _DONE),
                          ("release", _RELEASE), ("join", _JOIN))}
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
                    log.warning("frontier %s lost (%s): paused, retrying with back-off", _safe(self.url), e)
                time.sleep(wait * (0.5 + random.random()))
                wait = min(wait * 2, 5.0)
                continue
            if self._lost_since is not None:
                log.warning("frontier %s back after %.1f s", _safe(self.url), time.monotonic() - self._lost_since)
                self._lost_since = None
            return out

    # ------------------------------------------------------------------ the crawl's identity
    def join(self, seeds: list[str], options: str, resume: bool) -> list[str]:
        if not seeds:
            m = self._call(lambda: self.r.hmget(PREFIX + "meta", "seeds", "crawl"))
            if m[1] is None:
                raise ConfigError(f"{_safe(self.url)} holds no crawl to resume; give seed URLs")
            seeds = list(json.loads(m[0]))
        cid = crawl_id(seeds, options)
        version, have, have_seeds, have_opts, created = self._call(
            lambda: self._scripts["join"](keys=[PREFIX + "meta"], args=[__version__, cid, json.dumps(seeds), options]))
        if version != __version__:
            raise ConfigError(f"{_safe(self.url)} holds a crawl run by blockcrawl {version}; this is {__version__} "
                              "(finish it with that version, or use another database)")
        if have != cid:
            raise ConfigError(f"{_safe(self.url)} holds another crawl (id {have}, seeds {have_seeds}, options "
                              f"{have_opts}); this one is {cid}: use another database number or FLUSHDB it")
        if resume and created:
            log.info("resume: %s held no crawl, starting it", _safe(self.url))
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

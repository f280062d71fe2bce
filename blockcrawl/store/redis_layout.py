"""The shared frontier's data in Redis: the keys of a host, an Item's encoding, the Lua scripts that
change a host's state in one step (each replaying a reply lost on the way), and the connection.
store/redis_frontier.py (RedisFrontier) is the logic over them: leases, claims, the pause while
Redis is away.

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
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from ..errors import ConfigError, StoreError
from ..frontier_item import Item, host_of

SEP = "\x1f"
PREFIX = "bc:"

# A script's reply can be lost after Redis ran it (the connection drops between the two, as when
# Redis shuts down): RedisFrontier._call then runs it again. share, take and tick are not idempotent (a second
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
        raise StoreError(f"cannot reach the frontier at {safe_url(url)}: {e}") from None
    except (ValueError, redis.RedisError) as e:
        raise StoreError(f"frontier {safe_url(url)}: {e}") from None
    return r


def safe_url(url: str) -> str:
    """The URL without a password (redis://:secret@host)."""
    if "@" in url:
        scheme, rest = url.split("://", 1) if "://" in url else ("", url)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return url


# name -> Lua source, registered once per client by RedisFrontier
SCRIPTS = {"share": _SHARE, "take": _TAKE, "tick": _TICK, "done": _DONE, "release": _RELEASE, "join": _JOIN}

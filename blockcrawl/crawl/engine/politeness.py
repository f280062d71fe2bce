"""Per-host politeness shared by every worker: at most `limit` requests in flight to a host, and
request starts to one host spaced by its delay (max of --delay and robots.txt Crawl-delay).
Hosts never wait for each other.

The Scheduler owns ALL per-host state (queues, in-flight count, delay, robots.txt rules and
whether they are known yet, next allowed start): the engine adds URLs, asks `take()` for the
next thing to start, passes `gate(host)` to the fetcher, and reports `finished`. Hosts are
named by their origin (scheme://host[:port]).
"""
from __future__ import annotations

import asyncio
import heapq
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial

from ..frontier import Item
from ..protocols import Clock
from ..sources.robots import HostRules
from .clock import SystemClock

# Added to a non-zero delay: the request leaves a few ms after we schedule it, and the next one
# must not arrive at the server earlier than the delay after it.
DELAY_MARGIN = 0.01
_NOT_FETCHED, _FETCHING, _KNOWN = 0, 1, 2


@dataclass(slots=True)
class Host:
    name: str  # scheme://host[:port]
    limit: int
    delay: float = 0.0
    queue: deque[Item] = field(default_factory=deque)  # found by following links (and seeds, retries)
    listed: deque[Item] = field(default_factory=deque)  # listed by a sitemap
    take_listed: bool = False  # whose turn it is: the two queues alternate
    inflight: int = 0
    next_allowed: float = 0.0  # monotonic time of the earliest next request start
    rules: HostRules | None = None
    robots_state: int = _NOT_FETCHED
    in_ready: bool = False
    in_timed: bool = False
    last_start: float = -1e9  # monotonic time the last request to the host was sent
    # the request between its gate and its send (at most one per host), and a future resolved
    # when it leaves: the next request's spacing counts from that moment
    holder: asyncio.Task[object] | None = None
    released: asyncio.Future[None] | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """What `take()` hands out. item None: fetch the host's robots.txt first. blocked: the item is
    disallowed by robots.txt and was not started (no slot or delay charged)."""

    host: str
    item: Item | None
    blocked: bool = False


class Scheduler:
    def __init__(self, per_host: int, delay: float, robots: bool = True, agent: str = "*",
                 clock: Clock | None = None) -> None:
        self.per_host, self.delay, self.robots, self.agent = per_host, delay, robots, agent
        self.clock: Clock = clock or SystemClock()
        self._hosts: dict[str, Host] = {}
        self._ready: deque[Host] = deque()
        self._timed: list[tuple[float, str]] = []
        self._later: list[tuple[float, int, Item]] = []  # retries waiting for their (wall) time
        self._later_seq = 0
        self.stopped: dict[str, str] = {}  # host -> why it was given up for this crawl (stop)

    # ------------------------------------------------------------------ queues
    def _host(self, name: str) -> Host:
        h = self._hosts.get(name)
        if h is None:
            h = self._hosts[name] = Host(name, self.per_host, self.delay)
        return h

    def add(self, it: Item, listed: bool = False) -> None:
        """Queue a URL at its host (listed: found in a sitemap; the two kinds take turns); one
        whose not_before (wall time) is still ahead waits in the delayed heap (`due`); one of a
        stopped host is not queued (it stays queued in the frontier, for --resume)."""
        if it.host in self.stopped:
            return
        if it.not_before > self.clock.time():
            self._later_seq += 1
            heapq.heappush(self._later, (it.not_before, self._later_seq, it))
            return
        h = self._host(it.host)
        (h.listed if listed else h.queue).append(it)
        self._poke(h)

    def delay_of(self, host: str) -> float:
        """The host's delay between request starts: --delay, or its robots.txt Crawl-delay if larger."""
        h = self._hosts.get(host)
        return self.delay if h is None else max(h.delay, self.delay)

    def drop(self, host: str) -> int:
        """Forget the host's queued URLs (a shared frontier's lease on it was lost: another worker
        fetches it now); requests in flight finish. Returns how many were dropped."""
        h = self._hosts.get(host)
        if h is None:
            return 0
        n = len(h.queue) + len(h.listed)
        h.queue.clear()
        h.listed.clear()
        return n

    def stop(self, host: str, why: str) -> int:
        """Give the host up for this crawl (it failed again and again: retry.host_verdict): its
        queued URLs are dropped here and no more are queued. Returns how many were dropped."""
        self.stopped[host] = why
        return self.drop(host)

    def queue_sizes(self) -> list[tuple[int, str]]:
        """(URLs waiting, host without scheme) of every host with a queue, for the progress bar."""
        return [(len(h.queue) + len(h.listed), h.name.split("//", 1)[-1]) for h in self._hosts.values()
                if h.queue or h.listed]

    # ------------------------------------------------------------------ robots.txt
    def blocks(self, host: str, url: str) -> bool:
        """Whether the host's robots.txt, if known already, disallows url."""
        if not self.robots:
            return False
        h = self._hosts.get(host)
        return h is not None and h.rules is not None and not h.rules.allowed(url, self.agent)

    def set_rules(self, host: str, rules: HostRules, fetch_started: float) -> None:
        """robots.txt is known (or given up on): its Crawl-delay applies from the robots.txt request on."""
        h = self._host(host)
        h.rules, h.robots_state = rules, _KNOWN
        h.delay = max(self.delay, rules.crawl_delay)
        if h.delay > 0:  # the robots.txt request itself counts
            h.next_allowed = max(h.next_allowed, fetch_started + h.delay + DELAY_MARGIN)

    # ------------------------------------------------------------------ starting requests
    def push_back(self, host: str, seconds: float) -> None:
        """Keep the host quiet for `seconds` (429 Too Many Requests)."""
        h = self._host(host)
        h.next_allowed = max(h.next_allowed, self.clock.monotonic() + seconds)

    def _wants(self, h: Host) -> bool:
        """The host has something to start once its slot and delay allow."""
        if self.robots and h.robots_state != _KNOWN:
            return h.robots_state == _NOT_FETCHED and bool(h.queue or h.listed)
        return bool(h.queue or h.listed)

    def _poke(self, h: Host) -> None:
        """Re-evaluate a host after its queue, in-flight count or rules changed."""
        if h.in_ready or h.in_timed or h.inflight >= h.limit or not self._wants(h):
            return
        if h.next_allowed <= self.clock.monotonic():
            h.in_ready = True
            self._ready.append(h)
        else:
            h.in_timed = True
            heapq.heappush(self._timed, (h.next_allowed, h.name))

    def _ready_host(self) -> Host | None:
        now = self.clock.monotonic()
        while self._timed and self._timed[0][0] <= now:
            _, name = heapq.heappop(self._timed)
            h = self._hosts[name]
            h.in_timed = False
            self._poke(h)
        while self._ready:
            h = self._ready.popleft()
            h.in_ready = False
            if h.inflight < h.limit and self._wants(h) and h.next_allowed <= now:
                return h
            self._poke(h)
            if h.in_ready:  # still ready but could not be used (cannot happen) - avoid spinning
                break
        return None

    def take(self) -> Turn | None:
        """The next request a host may start now, its slot and delay charged; None: none may."""
        h = self._ready_host()
        if h is None:
            return None
        if self.robots and h.robots_state == _NOT_FETCHED:
            h.robots_state = _FETCHING
            self._started(h)
            return Turn(h.name, None)
        it = self._next_item(h)
        if self.robots and it.kind == "page" and h.rules is not None and not h.rules.allowed(it.target, self.agent):
            self._poke(h)
            return Turn(h.name, it, blocked=True)
        self._started(h)
        return Turn(h.name, it)

    def _started(self, h: Host) -> None:
        h.inflight += 1
        h.next_allowed = self.clock.monotonic() + (h.delay + DELAY_MARGIN if h.delay > 0 else 0.0)
        self._poke(h)

    @staticmethod
    def _next_item(h: Host) -> Item:
        """The host's next URL: link-found and sitemap-listed URLs take turns. A sitemap can list
        a whole site at once; strictly first-in-first-out, the pages found by links (menus, /about/,
        whatever the sitemap forgot) would wait behind all of it."""
        h.take_listed = not h.take_listed
        if h.listed and (h.take_listed or not h.queue):
            return h.listed.popleft()
        return h.queue.popleft()

    async def turn(self, host: str) -> None:
        """Wait, just before sending, until the host's delay since its previous request LEFT has
        passed, and until no other request to the host sits between its gate and its send.

        The scheduler already spaced the launches; this also holds when the event loop was busy.
        A gate that only counted from the previous gate pass let requests leave together: a loop
        stall of ~3 s (a pool starting, a big import) between one request's gate and its send let
        the next request's gate open (its timer had fallen due), and both left when the loop
        resumed - 0.3-4 ms apart at the server against a 50 ms delay. So a gate pass holds the host
        until `sent()` (or the request ends: `finished()`, or its task is done)."""
        h = self._host(host)
        me = asyncio.current_task()
        while True:
            holder = h.holder
            if holder is not None and holder is not me and not holder.done():
                if h.released is None or h.released.done():
                    h.released = asyncio.get_running_loop().create_future()
                await asyncio.shield(h.released)
                continue
            wait = h.last_start + h.delay + DELAY_MARGIN - self.clock.monotonic() if h.delay > 0 else 0.0
            if wait <= 0:
                break
            await asyncio.sleep(wait)
        h.last_start = self.clock.monotonic()
        if h.delay > 0 and me is not None:
            h.holder = me
            # a request whose task ends without sending (an error, cancelled) frees the gate too
            me.add_done_callback(partial(self._task_done, h))

    def _task_done(self, h: Host, task: asyncio.Task[object]) -> None:
        if h.holder is task:
            h.last_start = max(h.last_start, self.clock.monotonic())
            self._release(h)

    def _release(self, h: Host) -> None:
        h.holder = None
        if h.released is not None and not h.released.done():
            h.released.set_result(None)

    def gate(self, host: str) -> Callable[[], Awaitable[None]]:
        """The politeness gate the fetcher awaits right before sending a request to host."""
        return partial(self.turn, host)

    def sent(self, host: str) -> Callable[[], None]:
        """Callback for the moment the request actually left: later requests count from then,
        and the host's next gate may open (after the delay)."""
        h, clock = self._host(host), self.clock

        def stamp() -> None:
            h.last_start = max(h.last_start, clock.monotonic())
            if h.holder is None or h.holder is asyncio.current_task():
                self._release(h)
        return stamp

    def finished(self, host: str) -> None:
        """A request to host (page, sitemap or robots.txt) is over: its slot is free."""
        h = self._hosts[host]
        h.inflight -= 1
        if h.holder is not None and h.holder is asyncio.current_task():
            # it passed the gate but never left (connection refused, cancelled): free the gate
            h.last_start = max(h.last_start, self.clock.monotonic())
            self._release(h)
        self._poke(h)

    def wake_time(self) -> float | None:
        """Monotonic time at which a waiting host becomes ready (None: none is waiting)."""
        if self._ready:
            return self.clock.monotonic()
        return self._timed[0][0] if self._timed else None

    def idle(self) -> bool:
        """No host is ready or waiting for its delay."""
        return not self._ready and not self._timed

    # ------------------------------------------------------------------ delayed retries
    def due(self, holds: Callable[[Item], bool] | None = None) -> None:
        """Queue the delayed items whose time has come (holds: whether this worker still owns the
        item's host in a shared frontier; an item it does not is dropped, its owner has it)."""
        wall = self.clock.time()
        while self._later and self._later[0][0] <= wall:
            it = heapq.heappop(self._later)[2]
            if holds is not None and not holds(it):
                continue
            it.not_before = 0.0
            self.add(it)

    def next_due(self) -> float | None:
        """Wall time of the next delayed item (None: none waits)."""
        return self._later[0][0] if self._later else None

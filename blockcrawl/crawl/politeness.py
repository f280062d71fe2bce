"""Per-host politeness shared by every worker: at most `limit` requests in flight to a host, and
request starts to one host spaced by its delay (max of --delay and robots.txt Crawl-delay).
Hosts never wait for each other. The engine asks `ready()` which hosts may start a request now
and `wake_time()` when the next one will be able to."""
from __future__ import annotations

import asyncio
import heapq
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .frontier import Item
from .robots import HostRules

# Added to a non-zero delay: the request leaves a few ms after we schedule it, and the next one
# must not arrive at the server earlier than the delay after it.
DELAY_MARGIN = 0.01


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
    robots_state: int = 0  # 0 not fetched, 1 fetching, 2 known
    in_ready: bool = False
    in_timed: bool = False
    last_start: float = -1e9  # monotonic time the last request to the host was sent


class Scheduler:
    def __init__(self, per_host: int, delay: float) -> None:
        self.per_host, self.delay = per_host, delay
        self.hosts: dict[str, Host] = {}
        self._ready: deque[Host] = deque()
        self._timed: list[tuple[float, str]] = []

    def host(self, name: str) -> Host:
        h = self.hosts.get(name)
        if h is None:
            h = self.hosts[name] = Host(name, self.per_host, self.delay)
        return h

    def set_crawl_delay(self, h: Host, crawl_delay: float) -> None:
        h.delay = max(self.delay, crawl_delay)

    def push_back(self, h: Host, seconds: float) -> None:
        """Keep the host quiet for `seconds` (429 Too Many Requests)."""
        h.next_allowed = max(h.next_allowed, time.monotonic() + seconds)

    @staticmethod
    def wants(h: Host, robots: bool) -> bool:
        """The host has something to start once its slot and delay allow."""
        if robots and h.robots_state != 2:
            return h.robots_state == 0 and bool(h.queue or h.listed)
        return bool(h.queue or h.listed)

    def poke(self, h: Host, robots: bool) -> None:
        """Re-evaluate a host after its queue, in-flight count or rules changed."""
        if h.in_ready or h.in_timed or h.inflight >= h.limit or not self.wants(h, robots):
            return
        if robots and h.robots_state == 1:
            return
        now = time.monotonic()
        if h.next_allowed <= now:
            h.in_ready = True
            self._ready.append(h)
        else:
            h.in_timed = True
            heapq.heappush(self._timed, (h.next_allowed, h.name))

    def take_ready(self, robots: bool) -> Host | None:
        """A host that may start a request now (its slot is then charged by `started`)."""
        now = time.monotonic()
        while self._timed and self._timed[0][0] <= now:
            _, name = heapq.heappop(self._timed)
            h = self.hosts[name]
            h.in_timed = False
            self.poke(h, robots)
        while self._ready:
            h = self._ready.popleft()
            h.in_ready = False
            if h.inflight < h.limit and self.wants(h, robots) and h.next_allowed <= now:
                return h
            self.poke(h, robots)
            if h.in_ready:  # still ready but could not be used (cannot happen) - avoid spinning
                break
        return None

    def started(self, h: Host, robots: bool) -> None:
        h.inflight += 1
        now = time.monotonic()
        h.next_allowed = now + (h.delay + DELAY_MARGIN if h.delay > 0 else 0.0)
        self.poke(h, robots)

    async def turn(self, h: Host) -> None:
        """Wait, just before sending, until the host's delay since its previous request has
        passed. The scheduler already spaced the launches; this also holds when the event loop
        was busy between a launch and its send (launched tasks would otherwise go out together)."""
        if h.delay > 0:
            while True:
                wait = h.last_start + h.delay + DELAY_MARGIN - time.monotonic()
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
        h.last_start = time.monotonic()

    @staticmethod
    def sent(h: Host) -> Callable[[], None]:
        """Callback for the moment the request actually left: later requests count from then."""
        def stamp() -> None:
            h.last_start = max(h.last_start, time.monotonic())
        return stamp

    def finished(self, h: Host, robots: bool) -> None:
        h.inflight -= 1
        self.poke(h, robots)

    def wake_time(self) -> float | None:
        """Monotonic time at which a waiting host becomes ready (None: none is waiting)."""
        if self._ready:
            return time.monotonic()
        return self._timed[0][0] if self._timed else None

    def queued(self) -> int:
        return sum(len(h.queue) + len(h.listed) for h in self.hosts.values())

    @staticmethod
    def next_item(h: Host) -> Item:
        """The host's next URL: link-found and sitemap-listed URLs take turns. A sitemap can list
        a whole site at once; strictly first-in-first-out, the pages found by links (menus, /about/,
        whatever the sitemap forgot) would wait behind all of it."""
        h.take_listed = not h.take_listed
        if h.listed and (h.take_listed or not h.queue):
            return h.listed.popleft()
        return h.queue.popleft()

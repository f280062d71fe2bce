"""An in-memory Fetcher: a dict url -> response, for engine tests and for replaying a site.

It implements crawl.protocols.Fetcher and nothing in the engine knows it exists. Each request is
recorded with the clock's time at which it was sent (after the politeness gate), the numbers of
requests in flight then (to its host, to all hosts), and the URL, so a test checks spacing and concurrency the
way a server would see them. A response can be a callable of the number of earlier requests to
its URL (a 503 first, then a page), and can take `latency` seconds (of the injected clock).
`follow` is not implemented (a 3xx is returned as is); a missing URL is a 404.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

from ...limits import MAX_BODY_BYTES
from ..engine.clock import SystemClock
from ..protocols import Clock
from ..urls import host_of
from .fetch import FetchResult


@dataclass(frozen=True, slots=True)
class Response:
    body: bytes | str = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)  # Location, Retry-After (seconds)
    latency: float = 0.0  # seconds between the request and the whole answer
    error: str | None = None  # a network failure instead of an answer (timeout, connect, ...)


@dataclass(frozen=True, slots=True)
class Request:
    t: float  # clock time the request was sent
    url: str
    inflight: int  # requests to the same host in flight, this one included
    total: int  # requests in flight to all hosts, this one included


Route = Response | Callable[[int], Response]


class MemoryFetcher:
    def __init__(self, routes: Mapping[str, Route] | None = None, clock: Clock | None = None,
                 max_bytes: int = MAX_BODY_BYTES) -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        self.clock: Clock = clock or SystemClock()
        self.max_bytes = max_bytes
        self.requests: list[Request] = []
        self._counts: Counter[str] = Counter()
        self._inflight: Counter[str] = Counter()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None

    def paths(self) -> list[str]:
        """The requested URLs' paths (and queries), in order."""
        return [r.url[r.url.find("/", r.url.find("//") + 2):] for r in self.requests]

    async def get(self, url: str, *, accept: tuple[str, ...] | None, follow: bool = False,
                  gate: Callable[[], Awaitable[None]] | None = None, on_sent: Callable[[], None] | None = None,
                  max_bytes: int | None = None, truncate: bool = False,
                  headers: Mapping[str, str] | None = None) -> FetchResult:
        if gate is not None:
            await gate()
        host = host_of(url)
        self._inflight[host] += 1
        try:
            t0 = self.clock.monotonic()
            self.requests.append(Request(t0, url, self._inflight[host], sum(self._inflight.values())))
            if on_sent is not None:
                on_sent()
            route = self.routes.get(url)
            n = self._counts[url]
            self._counts[url] += 1
            r = (route(n) if callable(route) else route) if route is not None else Response(
                "<html><body>not found</body></html>", 404)
            if r.latency:
                await asyncio.sleep(r.latency)
            return self._result(url, r, accept, max_bytes or self.max_bytes, truncate, self.clock.monotonic() - t0)
        finally:
            self._inflight[host] -= 1

    @staticmethod
    def _result(url: str, r: Response, accept: tuple[str, ...] | None, max_bytes: int, truncate: bool,
                elapsed: float) -> FetchResult:
        res = FetchResult(url, elapsed=elapsed)
        if r.error:
            res.error, res.detail = r.error, "memory fetcher"
            return res
        res.status, res.content_type = r.status, r.content_type
        res.location = r.headers.get("Location")
        ra = r.headers.get("Retry-After")
        res.retry_after = float(ra) if ra is not None else None
        if 300 <= r.status < 400 and res.location:
            return res
        ctype = r.content_type.split(";", 1)[0].strip().lower()
        if accept and r.status < 300 and ctype not in accept:
            res.error, res.detail = "content_type", ctype
            return res
        body = r.body.encode("utf-8") if isinstance(r.body, str) else r.body
        res.nbytes = len(body)
        if len(body) > max_bytes:
            if not truncate:
                res.error, res.detail = "too_large", f"body over {max_bytes} bytes"
                return res
            body = body[:max_bytes]
        res.body = body
        return res

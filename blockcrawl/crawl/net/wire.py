"""The wire side of fetch.AiohttpFetcher: a connector that awaits the politeness gate once it holds
the connection (the last await before aiohttp writes the request head), the hook that reports
the head has left, and the middleware that stops aiohttp from re-sending a request on its own.
fetch.py's docstring says why each exists (with the gaps each one closes, measured)."""
from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp


class _Dropped(aiohttp.ClientConnectionError):
    """The connection dropped after the request was written: raised instead of aiohttp's
    ServerDisconnectedError / ClientOSError so that aiohttp does not send the request again."""


@dataclass(slots=True)
class _Wire:
    """What one get() needs inside aiohttp (found there through a ContextVar: aiohttp runs the
    connector and the trace hooks in the caller's task)."""
    gate: Callable[[], Awaitable[None]] | None
    on_sent: Callable[[], None] | None
    deadline: Deadline  # the get's deadline, held while the gate waits
    timeout: float
    t_sent: float = 0.0
    waited: float = 0.0
    sends: int = 0


# A deadline callback that runs this much later than it was due means the event loop stood still
# (a blocking call in its thread): under load callbacks run a few ms late, a stall is seconds.
STALL = 0.25


class Deadline:
    """One get()'s asyncio Timeout, due at a time of ours, not counting time this process stood
    still. If the loop's thread blocks past the deadline (a frontier paused on a lost Redis
    sleeps in it: 11.7 s in a CI run whose pages answered in 0.05 s), the server's answer may be
    waiting unread in the socket; at the due time the Timeout would cancel the read before it is
    looked at (asyncio runs the expired timer in the same turn as the socket's callbacks) and
    the page would fail as "timeout". So the deadline fires only when it runs on time; run late
    by a stall, it moves out by as long as the stall lasted past it, and the answer is read. A
    server that does not answer still times out, after the timeout plus the stall.
    reschedule(None) holds it (the politeness gate's wait); cancel() when the get is over."""

    __slots__ = ("_timeout", "_loop", "_handle", "_when")

    def __init__(self, timeout: Any, when: float) -> None:
        self._timeout, self._loop = timeout, asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = None
        self._when = when
        self.reschedule(when)

    def reschedule(self, when: float | None) -> None:
        self.cancel()
        if when is not None:
            self._when = when
            self._handle = self._loop.call_at(when, self._due)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _due(self) -> None:
        self._handle = None
        late = self._loop.time() - self._when
        if late > STALL:
            self.reschedule(self._loop.time() + late)
        else:
            self._timeout.reschedule(self._loop.time())  # expires now: the get ends as a timeout


_WIRE: contextvars.ContextVar[_Wire | None] = contextvars.ContextVar("blockcrawl_fetch_wire", default=None)


class _GatedConnector(aiohttp.TCPConnector):
    """A TCPConnector that awaits the request's gate once it holds the connection: the last
    await before aiohttp writes the request head (ClientRequest.send writes synchronously
    after our trace hook)."""

    async def connect(self, req: aiohttp.ClientRequest, traces: list[Any],
                      timeout: aiohttp.ClientTimeout) -> aiohttp.connector.Connection:
        conn = await super().connect(req, traces, timeout)
        w = _WIRE.get()
        if w is None:
            return conn
        loop = asyncio.get_running_loop()
        if w.gate is not None:
            w.deadline.reschedule(None)  # the gate's wait is politeness, not the server's slowness
            t = time.monotonic()
            try:
                await w.gate()
            except BaseException:
                conn.release()  # nothing written: the connection is still good
                raise
            w.waited += time.monotonic() - t
            proto = conn.protocol
            if proto is None or not proto.is_connected():
                # the server closed the idle connection while we waited: take another one
                # before anything is written (no request is sent twice)
                conn.close()
                w.deadline.reschedule(loop.time() + w.timeout)
                conn = await super().connect(req, traces, timeout)
        w.deadline.reschedule(loop.time() + w.timeout)
        w.sends += 1
        w.t_sent = time.monotonic()
        return conn


async def _no_resend(req: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    """Client middleware: a dropped connection is reported, never silently retried."""
    try:
        return await handler(req)
    except aiohttp.ClientConnectorError:
        raise  # no connection was made: aiohttp does not retry these anyway
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as e:
        raise _Dropped(str(e) or type(e).__name__) from e


async def _headers_sent(session: aiohttp.ClientSession, ctx: Any, params: Any) -> None:
    w = _WIRE.get()
    if w is not None and w.on_sent is not None:
        w.on_sent()


def _socks_connector(proxy: str | None, kw: dict[str, Any]) -> aiohttp.TCPConnector | None:
    """A gated connector through a SOCKS proxy (socks4/socks5 URL), or None for other proxies.
    Needs the optional aiohttp-socks package; the target's name is resolved by the proxy, so the
    address check after DNS (addresses.py) cannot run there: the literal-host check still does."""
    if not proxy or not proxy.startswith("socks"):
        return None
    try:
        from aiohttp_socks import ProxyConnector
    except ImportError:
        from ...errors import ConfigError
        raise ConfigError("proxy: a socks proxy needs the aiohttp-socks package (pip install aiohttp-socks)") from None
    kw = {k: v for k, v in kw.items() if k != "resolver"}
    gated: type[ProxyConnector] = type("_GatedSocksConnector", (_GatedConnector, ProxyConnector), {})
    # typed through a variable: without the optional aiohttp-socks installed, mypy sees Any here
    conn: aiohttp.TCPConnector = gated.from_url(proxy, rdns=True, **kw)
    return conn

"""One HTTP GET with the crawler's safety rails, as the server sees it.

Guarantees at the wire (each tested against a real server in tests/crawl/test_fetch.py):

* Politeness gate at the socket. `gate` is awaited after a connection has been had (pooled or
  new) and immediately before the request head is written: between its return and the write
  there is no await of ours or of aiohttp's. Awaited before `session.get` (as the engine used
  to), the gate let requests that then queued for a pooled connection leave together: with
  --delay 0.05 the server saw 0.5-1.7 ms gaps. The gate's own wait is not counted against the
  timeout (a 30 s Crawl-delay must not turn into a timeout).
* One GET call, at most one request on the wire. aiohttp silently re-sends an idempotent request
  once when a reused keep-alive connection turns out dropped (ClientSession._request, the
  `retry_persistent_connection` branch: RFC 9112 9.3.1 allows it). That second send bypassed the
  gate: 6 requests for --retries 2, in pairs 1 ms apart. A client middleware turns the error into
  one aiohttp does not retry, so the engine sees "disconnect" and decides (back-off, gate) itself.
  Keep-alive stays on. A connection found dead while the gate waited is replaced before anything
  is written (that is not a re-send).
* Bounded body. `max_bytes` (default: the fetcher's) bounds the bytes read from the wire and the
  decompressed body alike, decoded incrementally (a 5 KB gzip bomb expands to 5 MB: we stop at
  the cap). Over it: error "too_large" (wire) or "bomb" (decoded), or with `truncate=True` the
  first max_bytes bytes and `truncated=True` (robots.txt: RFC 9309 says parse at least 500 KiB).
  The connection is closed, never returned to the pool with an unread body.
* Bounded time. The timeout counts from the moment the connection is had and the gate passed to
  the last body byte (a server that stalls mid-body ends as "timeout"); getting the connection
  (DNS, TCP connect, waiting for a pool slot) has its own limit of the same length. Time this
  process stood still past the deadline is not the server's (wire.Deadline).
* No automatic redirects unless `follow` (robots.txt only): the engine canonicalises each hop and
  sends it through robots and politeness. With `follow`, every hop passes the gate.
* Every failure becomes an error kind in FetchResult.error, never an exception.
"""
from __future__ import annotations

import asyncio
import email.utils
import time
import zlib
from asyncio import timeout as _timeout
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp

from ...compress import BodyTooLarge, Inflater
from ...limits import MAX_BODY_BYTES
from ..urls import wire_url
from .addresses import AddressPolicy, PolicyResolver, forbidden_reason, policy_middleware
from .credentials import Credentials, load_cookies, redact
from .resolve import StaticResolver
from .wire import _WIRE, Deadline, _Dropped, _GatedConnector, _headers_sent, _no_resend, _socks_connector, _Wire

if TYPE_CHECKING:
    from typing import Self

HTML_TYPES = ("text/html", "application/xhtml+xml")
CHUNK = 65536


@dataclass(slots=True)
class FetchResult:
    url: str
    status: int | None = None  # None: no HTTP answer (see error)
    content_type: str | None = None
    location: str | None = None
    retry_after: float | None = None  # seconds, from a Retry-After header
    body: bytes | None = None  # decoded (decompressed) body; None when not read
    error: str | None = None  # timeout, dns, connect, disconnect, too_large, bomb, content_type, http, ...
    detail: str = ""
    elapsed: float = 0.0  # seconds from the request leaving (after the gate) to the end of the body
    nbytes: int = 0  # bytes received on the wire (body, before decompression)
    truncated: bool = False  # truncate=True and the body was longer than max_bytes: body is its prefix
    waited: float = 0.0  # seconds spent in the gate
    robots_tag: tuple[str, ...] = ()  # X-Robots-Tag header values
    etag: str | None = None  # ETag, for a later conditional request (recrawl)
    last_modified: str | None = None  # Last-Modified, likewise


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds from now: delta-seconds or an HTTP date. Not capped: the engine
    gives a URL up when the wait is beyond retry.MAX_RETRY_WAIT, and says what the server asked
    (a cap here made "Retry-After: 99999" read "3600 s is beyond 600 s")."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


# Text compresses 3-10x with gzip (robots.txt of near-identical Disallow lines ~30x); runs of
# one byte, the stuff of decompression bombs, ~1000x.
BOMB_RATIO = 200


class AiohttpFetcher:
    def __init__(self, user_agent: str, timeout: float = 10.0, max_bytes: int = MAX_BODY_BYTES,
                 concurrency: int = 32, per_host: int = 4, addresses: AddressPolicy | None = None,
                 credentials: Credentials | None = None, resolve: dict[tuple[str, int], str] | None = None) -> None:
        """resolve: {(host, port): address} answered without DNS (crawl --resolve).
        addresses: which IP addresses may be connected to, checked after DNS (a public name
        re-bound to 127.0.0.1 is refused) and for literal hosts on redirects; None: any.
        credentials: extra headers, cookies, per-host Authorization and the proxy
        (crawl.net.credentials); their secrets are redacted from every error text."""
        self.addresses = addresses
        self.credentials = credentials or Credentials()
        self._secrets = self.credentials.secrets()
        self._resolver: PolicyResolver | StaticResolver | None = None
        self.resolve = resolve
        self.user_agent, self.timeout, self.max_bytes = user_agent, timeout, max_bytes
        self.concurrency, self.per_host = concurrency, per_host
        self.session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        middlewares: tuple[Any, ...] = (_no_resend,)
        static = StaticResolver(self.resolve) if self.resolve else None
        self._resolver = static
        if self.addresses is not None:
            self._resolver = PolicyResolver(self.addresses, static)
            middlewares += (policy_middleware(self.addresses),)
        cred = self.credentials
        kw: dict[str, Any] = dict(limit=self.concurrency, limit_per_host=self.per_host + 1,
                                  ttl_dns_cache=300, enable_cleanup_closed=True, resolver=self._resolver)
        conn = _socks_connector(cred.proxy, kw) or _GatedConnector(**kw)
        trace = aiohttp.TraceConfig()
        trace.on_request_headers_sent.append(_headers_sent)
        # one jar for the crawl: Set-Cookie honoured per host (unsafe: IP-literal hosts too)
        jar = aiohttp.CookieJar(unsafe=True)
        if cred.cookies:
            load_cookies(jar, cred.cookies)
        headers = {"User-Agent": self.user_agent, "Accept-Encoding": "gzip, deflate",
                   "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"}
        headers.update(cred.headers)
        self.session = aiohttp.ClientSession(
            connector=conn, trace_configs=[trace], auto_decompress=False, cookie_jar=jar,
            middlewares=middlewares, headers=headers, trust_env=False,  # proxies: Credentials.proxy_for
            # the total is ours (asyncio timeout around get, rescheduled around the gate)
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=min(self.timeout, 10.0)))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.session:
            await self.session.close()
        if self._resolver is not None:  # a connector does not close a resolver it was given
            await self._resolver.close()

    async def get(self, url: str, *, accept: tuple[str, ...] | None = HTML_TYPES, follow: bool = False,
                  gate: Callable[[], Awaitable[None]] | None = None, on_sent: Callable[[], None] | None = None,
                  max_bytes: int | None = None, truncate: bool = False,
                  headers: Mapping[str, str] | None = None) -> FetchResult:
        """GET url.

        accept: a body whose Content-Type is not one of these is not read (error "content_type").
        follow: let aiohttp follow up to 5 redirects (robots.txt only).
        gate: awaited with the connection in hand, immediately before the request head is written
              (the per-host politeness turn); on_sent: called as the head is written.
        max_bytes: cap on the wire bytes and on the decompressed body (default: the fetcher's).
        truncate: over the cap, return the first max_bytes bytes with truncated=True instead of
              the error "too_large" / "bomb".
        headers: extra headers for this request (recrawl: If-None-Match / If-Modified-Since)."""
        res = FetchResult(url)
        limit = self.max_bytes if max_bytes is None else max_bytes
        assert self.session is not None
        t0 = time.monotonic()
        w: _Wire | None = None
        token = None
        try:
            async with _timeout(None) as t:
                deadline = Deadline(t, asyncio.get_running_loop().time() + self.timeout)
                w = _Wire(gate, on_sent, deadline, self.timeout)
                token = _WIRE.set(w)
                try:
                    async with self.session.get(wire_url(url), allow_redirects=follow, max_redirects=5,
                                                **self._request_options(url, headers)) as r:
                        await self._read(r, res, accept, limit, truncate)
                finally:
                    deadline.cancel()
                    _WIRE.reset(token)
        except BodyTooLarge as e:
            res.error, res.detail, res.body = e.kind, str(e), None
        except TimeoutError:
            res.error, res.detail = "timeout", f"no complete answer in {self.timeout:g} s"
        except aiohttp.ClientConnectorDNSError as e:
            why = forbidden_reason(e)
            res.error, res.detail = ("forbidden", why) if why else ("dns", str(e))
        except aiohttp.ClientConnectorError as e:
            res.error, res.detail = "connect", str(e)
        except (_Dropped, aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError,
                aiohttp.ClientOSError, aiohttp.ClientConnectionResetError) as e:
            why = forbidden_reason(e)  # policy_middleware refused a literal private host
            res.error, res.detail = ("forbidden", why) if why else ("disconnect", str(e) or type(e).__name__)
        except (aiohttp.TooManyRedirects, aiohttp.RedirectClientError) as e:
            res.error, res.detail = "redirects", str(e)
        except (aiohttp.InvalidURL, ValueError, UnicodeError) as e:
            res.error, res.detail = "malformed", str(e)
        except (aiohttp.ClientError, OSError) as e:
            res.error, res.detail = "http", f"{type(e).__name__}: {e}"
        except zlib.error as e:
            res.error, res.detail = "decode", f"bad compressed body: {e}"
        except Exception as e:  # noqa: BLE001 - aiohttp-socks' own errors derive from Exception only
            if not type(e).__module__.startswith(("aiohttp_socks", "python_socks")):
                raise
            res.error, res.detail = "proxy", f"{type(e).__name__}: {e}"
        if res.error is not None and res.error != "content_type":
            res.body = None
        if res.detail:
            res.detail = redact(res.detail, self._secrets)
        end = time.monotonic()
        if w is not None and w.sends:
            res.elapsed, res.waited = end - w.t_sent, w.waited
        else:
            res.elapsed = end - t0
        return res

    def _request_options(self, url: str, headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Per-request headers, Authorization (only for the host it was given for) and proxy."""
        cred = self.credentials
        opts: dict[str, Any] = {"headers": dict(headers)} if headers else {}
        if cred.auth or cred.bearer:
            u = wire_url(url)
            if u.host:
                value = cred.authorization(u.host, u.port, {"http": 80, "https": 443}.get(u.scheme))
                if value:
                    opts.setdefault("headers", {})["Authorization"] = value
        if cred.proxy is None or not cred.proxy.startswith("socks"):
            proxy = cred.proxy_for(url)
            if proxy:
                opts["proxy"] = proxy
        return opts

    @staticmethod
    async def _read(r: aiohttp.ClientResponse, res: FetchResult, accept: tuple[str, ...] | None,
                    limit: int, truncate: bool) -> None:
        res.status = r.status
        res.content_type = r.headers.get("Content-Type")
        res.location = r.headers.get("Location")
        res.retry_after = parse_retry_after(r.headers.get("Retry-After"))
        res.robots_tag = tuple(r.headers.getall("X-Robots-Tag", ()))
        res.etag, res.last_modified = r.headers.get("ETag"), r.headers.get("Last-Modified")
        if 300 <= r.status < 400 and res.location:
            return
        ctype = (res.content_type or "").split(";", 1)[0].strip().lower()
        if accept and r.status < 300 and ctype and ctype not in accept:
            res.error, res.detail = "content_type", ctype
            r.close()  # body not read: the connection cannot be reused
            return
        n = r.content_length
        if n is not None and n > limit and not truncate:
            r.close()
            raise BodyTooLarge("too_large", f"Content-Length {n} over {limit} bytes")
        inf = Inflater(r.headers.get("Content-Encoding", ""), limit)
        total, wire_over = 0, False
        while True:
            chunk = await r.content.read(min(CHUNK, limit + 1 - total))
            if not chunk:
                break
            total += len(chunk)
            if total > limit:  # one byte beyond the cap read: the body is longer
                wire_over = True
                chunk = chunk[:len(chunk) - (total - limit)]
                total = limit
            if inf.feed(chunk) or wire_over:
                break
        res.nbytes = total
        if inf.over or wire_over:
            r.close()  # stop reading; the rest of the body stays unread
            # A prefix of an over-long body is worth parsing (robots.txt); one that expands more
            # than BOMB_RATIO:1 is a decompression bomb, not a document, and fails even then.
            if inf.over and truncate and inf.total > BOMB_RATIO * max(inf.consumed, 1):
                raise BodyTooLarge("bomb", f"decompressed body over {limit} bytes from {inf.consumed} bytes")
            if not truncate:  # (an identity body never goes over in the inflater: cut above)
                if inf.over:
                    raise BodyTooLarge("bomb", f"decompressed body over {limit} bytes")
                raise BodyTooLarge("too_large", f"body over {limit} bytes")
            res.truncated = True
        res.body = inf.result()

"""One HTTP GET with the crawler's safety rails: a size cap on the body, a decompression-bomb
guard (we decompress ourselves, bounded), no automatic redirects (the engine canonicalises each
hop and sends it through robots and politeness), and every failure turned into an error kind."""
from __future__ import annotations

import asyncio
import email.utils
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp

HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_RETRY_AFTER = 3600.0


@dataclass(slots=True)
class FetchResult:
    url: str
    status: int | None = None  # None: no HTTP answer (see error)
    content_type: str | None = None
    location: str | None = None
    retry_after: float | None = None  # seconds, from a Retry-After header
    body: bytes | None = None  # decoded (decompressed) body; None when not read
    error: str | None = None  # timeout, dns, connect, disconnect, too_large, bomb, content_type, http
    detail: str = ""
    elapsed: float = 0.0
    nbytes: int = 0  # bytes received on the wire


class BodyTooLarge(Exception):
    pass


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds from now: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, min(when.timestamp() - time.time(), MAX_RETRY_AFTER))


def decompress(data: bytes, encoding: str, limit: int) -> bytes:
    """gzip/deflate body, refusing output over `limit` bytes (a small bomb expands 1000x)."""
    encoding = encoding.lower().strip()
    if encoding in ("", "identity"):
        return data
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise ValueError(f"unsupported content-encoding {encoding}")
    wbits = 47 if encoding != "deflate" else 15  # 47: gzip or zlib header
    try:
        d = zlib.decompressobj(wbits)
        out = d.decompress(data, limit + 1)
    except zlib.error:
        if encoding != "deflate":
            raise
        d = zlib.decompressobj(-15)  # raw deflate, as some servers send
        out = d.decompress(data, limit + 1)
    if len(out) > limit or d.unconsumed_tail:
        raise BodyTooLarge(f"decompressed body over {limit} bytes")
    return out


class Fetcher:
    def __init__(self, user_agent: str, timeout: float = 10.0, max_bytes: int = 10 * 1024 * 1024,
                 concurrency: int = 32, per_host: int = 4) -> None:
        self.user_agent, self.timeout, self.max_bytes = user_agent, timeout, max_bytes
        self.concurrency, self.per_host = concurrency, per_host
        self.session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> "Fetcher":
        conn = aiohttp.TCPConnector(limit=self.concurrency, limit_per_host=self.per_host + 1,
                                    ttl_dns_cache=300, enable_cleanup_closed=True)
        # the request's send time, for politeness measured the way a server sees it
        trace = aiohttp.TraceConfig()

        async def headers_sent(session, ctx, params) -> None:  # noqa: ANN001
            if ctx.trace_request_ctx is not None:
                ctx.trace_request_ctx()
        trace.on_request_headers_sent.append(headers_sent)
        self.session = aiohttp.ClientSession(
            connector=conn, trace_configs=[trace], auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(),
            headers={"User-Agent": self.user_agent, "Accept-Encoding": "gzip, deflate",
                     "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"},
            timeout=aiohttp.ClientTimeout(total=self.timeout, sock_connect=min(self.timeout, 10.0)))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.session:
            await self.session.close()

    async def get(self, url: str, accept: tuple[str, ...] | None = HTML_TYPES,
                  follow: bool = False, gate: Callable[[], Awaitable[None]] | None = None,
                  on_sent: Callable[[], None] | None = None, max_bytes: int | None = None,
                  truncate: bool = False) -> FetchResult:
        """GET url. With `accept`, a body whose Content-Type is not one of them is not read
        (error "content_type"). `follow` lets aiohttp follow redirects (robots.txt only).
        `on_sent` is called when the request head has been written to the socket."""
        if gate is not None:  # branch engine: minimal; fetchsm awaits it once the connection is ready
            await gate()
        limit = max_bytes or self.max_bytes
        res = FetchResult(url)
        t0 = time.monotonic()
        assert self.session is not None
        try:
            async with self.session.get(url, allow_redirects=follow, max_redirects=5,
                                        trace_request_ctx=on_sent) as r:
                res.status = r.status
                res.content_type = r.headers.get("Content-Type")
                res.location = r.headers.get("Location")
                res.retry_after = parse_retry_after(r.headers.get("Retry-After"))
                if 300 <= r.status < 400 and res.location:
                    return res
                ctype = (res.content_type or "").split(";", 1)[0].strip().lower()
                if accept and r.status < 300 and ctype and ctype not in accept:
                    res.error, res.detail = "content_type", ctype
                    return res
                n = r.content_length
                if n is not None and n > limit and not truncate:
                    raise BodyTooLarge(f"Content-Length {n} over {limit} bytes")
                parts, total = [], 0
                async for chunk in r.content.iter_chunked(65536):
                    total += len(chunk)
                    if total > limit:
                        if not truncate:
                            raise BodyTooLarge(f"body over {limit} bytes")
                        parts.append(chunk[:len(chunk) - (total - limit)])
                        total = limit
                        break
                    parts.append(chunk)
                raw = b"".join(parts)
                res.nbytes = total
                res.body = decompress(raw, r.headers.get("Content-Encoding", ""), limit)
        except BodyTooLarge as e:
            res.error, res.detail = ("bomb" if "decompressed" in str(e) else "too_large"), str(e)
            res.body = None
        except asyncio.TimeoutError:
            res.error, res.detail = "timeout", f"no complete answer in {self.timeout:g} s"
        except aiohttp.ClientConnectorDNSError as e:
            res.error, res.detail = "dns", str(e)
        except aiohttp.ClientConnectorError as e:
            res.error, res.detail = "connect", str(e)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError) as e:
            res.error, res.detail = "disconnect", str(e) or type(e).__name__
        except (aiohttp.TooManyRedirects, aiohttp.RedirectClientError) as e:
            res.error, res.detail = "redirects", str(e)
        except (aiohttp.InvalidURL, ValueError, UnicodeError) as e:
            res.error, res.detail = "malformed", str(e)
        except (aiohttp.ClientError, OSError) as e:
            res.error, res.detail = "http", f"{type(e).__name__}: {e}"
        except zlib.error as e:
            res.error, res.detail = "decode", f"bad compressed body: {e}"
        res.elapsed = time.monotonic() - t0
        return res

AiohttpFetcher = Fetcher  # branch engine: the name helper fetchsm gives it; the engine imports this one

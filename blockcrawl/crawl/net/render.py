"""JavaScript rendering for `--render auto|always`: a Fetcher that wraps another (the aiohttp one)
and hands back, for pages whose text only exists after their scripts ran, the DOM headless
Chromium built (page.content()) instead of the static HTML.

How one page goes (RenderingFetcher.get):

1. The static GET through the wrapped fetcher, with the engine's gate: as without rendering.
2. The decision. `always`: every 2xx HTML page. `auto`: crawl.net.appshell's rule on the static
   bytes (~1 ms a page; none of the 3,477 development pages of the benchmark is rendered).
3. The render, in a bounded pool (`pool` Chromium pages at once, default 2) and with its own time
   limit. Chromium never touches the network: it is started with every host name mapped to
   nothing (--host-resolver-rules) and every request is intercepted (page.route):
   - the page itself is answered with the static body already fetched (no second GET);
   - scripts, XHR and fetch() GETs are fetched by the wrapped fetcher, so they pass the same
     rails as pages: the address policy (no private addresses unless allowed), the size cap, the
     timeout, and the politeness gate of their host (the page's own gate for its host, the
     Scheduler's gate of another host when `hosts` is given) and robots.txt where known;
   - everything else is refused: images, fonts, media, stylesheets, frames, beacons, websockets
     (`--disable-...` flags and the resolver map), and any method but GET (a crawler sends no
     POST, whatever a script wants);
   - at most MAX_SUBREQUESTS requests and `max_bytes` bytes per page.
   The page is done when its load event has fired and no intercepted request was pending for
   QUIET seconds; at the time limit, whatever the DOM holds then is taken.
4. The result: the static FetchResult with the rendered DOM as body (UTF-8), the bytes of the
   subrequests added to nbytes and the render time to elapsed. A render that fails (Chromium
   crashed, a page that never loads) falls back to the static result, counted as failed.

The slot: the engine holds the host's in-flight slot until get() returns, so a page being
rendered keeps its slot (at most --per-host pages of a host at a time, rendered or not), and its
subrequests are spaced by the host's --delay / Crawl-delay like any request.

Counts go to `stats` (CrawlStats: renders, render_requests, render_failed). Playwright is imported
lazily and Chromium started at the first page that needs it, so a crawl in `auto` mode of a
static site costs no browser. Without Playwright or Chromium, `auto` warns once and crawls
statically; `always` raises ConfigError (the CLI: one line, exit 2).
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

from ...errors import ConfigError
from ...limits import MAX_BODY_BYTES
from ..protocols import Fetcher, RenderTally
from .appshell import measure
from .chromium import CHROMIUM_ARGS, VIEWPORT, Job, chromium_path, origin, unavailable
from .fetch import HTML_TYPES, FetchResult

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright, Route

log = logging.getLogger("blockcrawl.crawl")

RENDER_MODES = ("never", "auto", "always")
POOL = 2  # pages rendered at once (each Chromium page: ~30-60 MB and a CPU core while scripts run)
MAX_SUBREQUESTS = 64  # script / XHR / fetch requests per rendered page
QUIET = 0.3  # seconds without a pending request after `load`: the page is done
ALLOWED_TYPES = frozenset({"script", "xhr", "fetch"})  # resource types fetched; the rest refused
MEASURE_INLINE = 256 * 1024  # larger bodies are measured in a thread, off the event loop


class Hosts(Protocol):
    """What the fetcher needs of the engine's Scheduler for subrequests to other hosts."""

    def gate(self, host: str) -> Callable[[], Awaitable[None]]: ...
    def sent(self, host: str) -> Callable[[], None]: ...
    def blocks(self, host: str, url: str) -> bool: ...


@dataclass
class RenderCounts:
    """The tally when no CrawlStats is given."""
    renders: int = 0  # pages whose body is the rendered DOM
    render_requests: int = 0  # subrequests fetched for them (scripts, XHR, fetch)
    render_failed: int = 0  # renders that fell back to the static body


class RenderingFetcher:
    """A Fetcher (protocols.Fetcher) that renders app-shell pages in headless Chromium.

    inner:     the fetcher doing every HTTP request (the page and the subrequests).
    mode:      "never" | "auto" | "always".
    timeout:   seconds for one render (the gate's waits for subrequests included).
    pool:      pages rendered at once.
    hosts:     the Scheduler (gate and robots.txt of subrequests' hosts); None: subrequests to
               other hosts go ungated and robots.txt is not asked.
    stats:     where renders are counted; default its own RenderCounts (the engine copies them
               into CrawlStats at the end of the run).
    max_bytes: cap on the rendered DOM and on the subrequests' bytes, per page."""

    def __init__(self, inner: Fetcher, mode: str = "auto", *, timeout: float = 20.0, pool: int = POOL,
                 hosts: Hosts | None = None, stats: RenderTally | None = None, user_agent: str | None = None,
                 max_bytes: int = MAX_BODY_BYTES) -> None:
        if mode not in RENDER_MODES:
            raise ConfigError(f"render must be one of {', '.join(RENDER_MODES)} (got {mode!r})")
        self.inner, self.mode, self.timeout, self.hosts = inner, mode, timeout, hosts
        self.stats: RenderTally = stats if stats is not None else RenderCounts()
        self.user_agent, self.max_bytes = user_agent, max_bytes
        self._slots = asyncio.Semaphore(max(1, pool))
        self._lock = asyncio.Lock()
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._off = mode == "never"  # rendering given up (unavailable, or Chromium would not start)

    async def __aenter__(self) -> Self:
        if not self._off:
            why = unavailable()
            if why is not None:
                if self.mode == "always":
                    raise ConfigError(f"--render always: {why}")
                log.warning("JavaScript rendering off: %s; pages are crawled as served", why)
                self._off = True
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            await self._close_browser()
        finally:
            await self.inner.__aexit__(exc_type, exc, tb)

    async def _close_browser(self) -> None:
        ctx, browser, pw = self._context, self._browser, self._pw
        self._context = self._browser = self._pw = None
        for close in (ctx.close if ctx else None, browser.close if browser else None, pw.stop if pw else None):
            if close is not None:
                try:
                    await close()
                except Exception as e:  # noqa: BLE001 - a browser dying at the end is not the crawl's problem
                    log.debug("closing Chromium: %r", e)

    async def _ensure_browser(self) -> BrowserContext | None:
        """Chromium, started at the first page that needs it; None if it cannot be started."""
        if self._context is not None or self._off:
            return self._context
        async with self._lock:
            if self._context is not None or self._off:
                return self._context
            try:
                from playwright.async_api import async_playwright
                self._pw = await async_playwright().start()
                self._browser = await self._pw.chromium.launch(executable_path=chromium_path(), args=list(CHROMIUM_ARGS),
                                                               headless=True, timeout=30_000)
                kw: dict[str, Any] = {"service_workers": "block", "viewport": VIEWPORT, "java_script_enabled": True}
                if self.user_agent:
                    kw["user_agent"] = self.user_agent
                self._context = await self._browser.new_context(**kw)
            except Exception as e:  # noqa: BLE001 - no browser: the crawl goes on without one
                await self._close_browser()
                if self.mode == "always":
                    raise ConfigError(f"--render always: Chromium did not start: {e}") from e
                log.warning("JavaScript rendering off: Chromium did not start (%s)", str(e).splitlines()[0] if str(e) else e)
                self._off = True
        return self._context

    # ------------------------------------------------------------------ the Fetcher protocol
    async def get(self, url: str, *, accept: tuple[str, ...] | None, follow: bool = False,
                  gate: Callable[[], Awaitable[None]] | None = None, on_sent: Callable[[], None] | None = None,
                  max_bytes: int | None = None, truncate: bool = False,
                  headers: Mapping[str, str] | None = None) -> FetchResult:
        res = await self.inner.get(url, accept=accept, follow=follow, gate=gate, on_sent=on_sent,
                                   max_bytes=max_bytes, truncate=truncate, headers=headers)
        if self._off or follow or truncate or not await self._wants(res):
            return res
        ctx = await self._ensure_browser()
        if ctx is None:
            return res
        limit = self.max_bytes if max_bytes is None else max_bytes
        job = Job(url, origin(url), res, gate, on_sent, limit)
        t0 = time.monotonic()
        async with self._slots:
            html, why = await self._render(ctx, job)
        body = html.encode("utf-8", "surrogatepass") if html is not None else None
        if body is not None and len(body) > limit:
            body, why = None, f"rendered DOM over {limit} bytes"
        self.stats.render_requests += job.requests
        if body is None:
            self.stats.render_failed += 1
            log.info("render of %s failed (%s): the static page is used", url, why)
            return res
        self.stats.renders += 1
        return replace(res, body=body, content_type="text/html; charset=utf-8", nbytes=res.nbytes + job.nbytes,
                       elapsed=res.elapsed + time.monotonic() - t0,
                       detail=f"rendered: {job.requests} requests, {job.refused} refused{why and '; ' + why}")

    async def _wants(self, res: FetchResult) -> bool:
        """Whether the static answer is an HTML page to render (the mode, then the app-shell rule)."""
        if res.error or res.body is None or res.status is None or not 200 <= res.status < 300:
            return False
        ctype = (res.content_type or "text/html").split(";", 1)[0].strip().lower()
        if ctype not in HTML_TYPES:
            return False
        if self.mode == "always":
            return True
        body = res.body
        if len(body) > MEASURE_INLINE:
            shell = await asyncio.to_thread(lambda: measure(body.decode("utf-8", "replace")))
        else:
            shell = measure(body.decode("utf-8", "replace"))
        if shell.needs_render():
            log.debug("render %s: %s", res.url, shell.reason())
            return True
        return False

    # ------------------------------------------------------------------ one render
    async def _render(self, ctx: BrowserContext, job: Job) -> tuple[str | None, str]:
        """(the DOM, "") or (the DOM so far, "time limit") or (None, why it failed)."""
        page: Page | None = None
        try:
            page = await ctx.new_page()
            p = page
            await page.route("**/*", lambda route: self._route(p, job, route))
            job.last_activity = time.monotonic()
            try:
                await asyncio.wait_for(self._load(page, job), timeout=self.timeout)
                why = ""
            except TimeoutError:
                why = "time limit"
            except Exception as e:  # noqa: BLE001 - e.g. the page's own navigation failed
                if not job.served:
                    return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                why = "load: " + (str(e).splitlines()[0] if str(e) else type(e).__name__)
            job.closed = True  # later subrequests are refused
            html = await asyncio.wait_for(page.content(), timeout=5.0)
            return html, why
        except Exception as e:  # noqa: BLE001 - Chromium crashed, the page closed...
            return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        finally:
            job.closed = True
            if page is not None:
                try:
                    await page.close()
                except Exception:  # noqa: BLE001
                    pass

    async def _load(self, page: Page, job: Job) -> None:
        """Load the page, then wait until no subrequest was pending for QUIET seconds."""
        await page.goto(job.url, wait_until="load", timeout=self.timeout * 1000)
        job.last_activity = time.monotonic()  # requests the load event's handlers start come to us a moment later
        while True:
            quiet_for = time.monotonic() - job.last_activity
            if job.pending == 0 and quiet_for >= QUIET:
                return
            await asyncio.sleep(max(0.02, min(QUIET - quiet_for, 0.1)))

    async def _route(self, page: Page, job: Job, route: Route) -> None:
        """Every request the page makes (module docstring, step 3)."""
        req = route.request
        url = req.url
        try:
            if not job.served and req.is_navigation_request() and req.frame == page.main_frame:
                job.served = True
                job.last_activity = time.monotonic()
                st = job.static
                await route.fulfill(status=st.status or 200, body=st.body or b"",
                                    headers={"content-type": st.content_type or "text/html"})
                return
            host = origin(url)
            if (job.closed or req.method != "GET" or req.resource_type not in ALLOWED_TYPES
                    or not url.startswith(("http://", "https://")) or job.requests >= MAX_SUBREQUESTS
                    or job.budget <= 0 or (self.hosts is not None and self.hosts.blocks(host, url))):
                job.refused += 1
                await route.abort("blockedbyclient")
                return
            if host == job.host:
                gate, on_sent = job.gate, job.on_sent
            else:
                gate, on_sent = ((self.hosts.gate(host), self.hosts.sent(host)) if self.hosts is not None
                                 else (None, None))
            job.pending += 1  # (a refused request is no activity: a page polling forever goes quiet at the cap)
            job.requests += 1
            try:
                res = await self.inner.get(url, accept=None, gate=gate, on_sent=on_sent, max_bytes=job.budget)
            finally:
                job.pending -= 1
                job.last_activity = time.monotonic()
            job.nbytes += res.nbytes
            job.budget -= len(res.body or b"")
            if res.status is None or (res.error and res.error != "content_type"):
                await route.abort("failed")
                return
            headers = {"content-type": res.content_type or "application/octet-stream"}
            if res.location:
                headers["location"] = res.location
            await route.fulfill(status=res.status, headers=headers, body=res.body or b"")
        except Exception as e:  # noqa: BLE001 - the page went away while we fetched
            log.debug("render route %s: %r", url, e)

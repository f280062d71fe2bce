"""`blockcrawl mcp`: an indexed store as tools for LLM agents, over the Model Context Protocol.

Tools (the official `mcp` SDK, v2: `pip install 'blockcrawl[mcp]'`):
- search(query, k, mode, site, url_prefix, kind, lang, since, per_page, context_tokens) -> hits with
  text, URL, title, heading path, score and rank (and context, when context_tokens is given)
- fetch_page(url, start, max_chars) -> the stored text of one crawled page, in slices
- list_sites(limit) -> the hosts in the store with their page counts
- crawl(url, max_pages) -> only with allow_crawl (`--allow-crawl`): crawl a site into the store and
  index it, by running `blockcrawl crawl` and `blockcrawl index` as child processes

Transports: stdio (an agent starts `blockcrawl mcp --store PATH` as a child process) or streamable
HTTP (`--http`, at /mcp, loopback by default, with the SDK's DNS-rebinding guard on Host and Origin).

Why these three: search answers a question in one call; fetch_page reads the page a hit came from
when the chunk is not enough; list_sites tells the agent what the store covers before it searches
(and which `site` filters exist). Everything else is read-only: the store is opened read-only, so a
crawl can write to it at the same time. crawl is off unless the operator asks for it: the agent then
chooses which addresses this machine fetches (the crawler's own address policy still applies: no
private addresses from public seeds), within max_pages and a time limit.
"""
from __future__ import annotations

import os
import re
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field

from ..errors import BlockcrawlError
from .options import MAX_K, PER_PAGE, SearchOptions
from .searcher import search

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from ..index.embed import Embedder
    from ..store import AnyStore

MAX_PAGE_CHARS = 100_000  # one fetch_page slice at most (~25k tokens); the agent asks for the next with start
DEFAULT_PAGE_CHARS = 20_000
INSTRUCTIONS = (
    "Search a collection of crawled web pages. Call list_sites to see which sites it holds, search to find "
    "passages that answer a question (each hit has the page URL; cite it), and fetch_page to read a whole page.")


class SearchHit(BaseModel):
    rank: int
    score: float
    url: str
    title: str
    heading_path: list[str]
    text: str
    context: str | None = None


class SearchResult(BaseModel):
    query: str
    hits: list[SearchHit]


class Page(BaseModel):
    url: str
    title: str
    text: str
    start: int
    total_chars: int
    truncated: bool  # more text after this slice: call again with start = start + len(text)


class Site(BaseModel):
    site: str
    pages: int


class Sites(BaseModel):
    sites: list[Site]
    total_sites: int


class Crawled(BaseModel):
    url: str
    pages_fetched: int
    store_pages: int
    summary: str  # the crawl's one-line summary


class Pages:
    """Whole pages of a store by URL, and its hosts. An SQLite store is read directly (one indexed
    look-up by URL; the host table it keeps for search filters); another store through its export
    (a pass over all pages: fine for the stores MCP clients browse, ~100k pages a second)."""

    def __init__(self, store: AnyStore) -> None:
        self.store = store
        self._lock = threading.Lock()

    def page(self, url: str) -> tuple[str, str, str] | None:
        """(url, title, text) of the page stored under url (or whose final URL it is), None if none."""
        return self.store.page_by_url(url)

    def sites(self) -> Counter[str]:
        return Counter(self.store.sites())


CRAWL_SECONDS = 300  # one crawl tool call: the crawl's --max-time (the index after it is not bounded)


def build_server(store: AnyStore, embedder: Embedder, *, public: Any = None, allow_crawl: bool = False,
                 crawl_max_pages: int = 50, location: str | None = None) -> MCPServer:
    """An MCPServer whose tools read store (opened read-only by the caller). public(message) cleans
    an error message before it leaves (over HTTP: no server paths). allow_crawl adds the crawl tool,
    at most crawl_max_pages pages a call, into the store at location (the path or URL it was opened by)."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from .._version import __version__

    pages = Pages(store)
    clean = public or (lambda m: m)
    server: MCPServer = MCPServer("blockcrawl", version=__version__, instructions=INSTRUCTIONS)

    @server.tool(name="search", title="Search the crawled pages")
    def search_tool(
        query: Annotated[str, Field(description="what to look for, in words (a question works); 1-1000 characters")],
        k: Annotated[int, Field(description=f"number of hits, 1-{MAX_K}", ge=1, le=MAX_K)] = 5,
        mode: Annotated[str, Field(description="hybrid (meaning + keywords, the default), vector or keyword")]
        = "hybrid",
        site: Annotated[str | None, Field(description="only pages on this host or its subdomains, e.g. docs.example.com")]
        = None,
        url_prefix: Annotated[str | None, Field(description="only pages whose URL starts with this")] = None,
        kind: Annotated[str | None, Field(description="only pages of this kind: article, listing or other")] = None,
        lang: Annotated[str | None, Field(description="only pages in this language, e.g. en")] = None,
        since: Annotated[str | None, Field(description="only pages published on or after this ISO date")] = None,
        per_page: Annotated[int, Field(description="at most this many hits from one page (0: no limit)", ge=0)]
        = PER_PAGE,
        context_tokens: Annotated[int | None, Field(
            description="also return up to this many tokens around each hit (rows around a table row, "
                        "the rest of a paragraph), 16-8000")] = None,
    ) -> SearchResult:
        """Search the crawled pages by meaning and keywords. Returns the best passages, best first, each
        with its page URL, title, heading path and score."""
        opts = SearchOptions(k, mode, site, url_prefix, 0, per_page, None, kind, lang, since, context_tokens)
        try:
            hits = search(store, query, embedder=embedder, options=opts)
        except BlockcrawlError as e:
            raise ToolError(clean(str(e))) from None
        return SearchResult(query=query, hits=[
            SearchHit(rank=h.rank, score=h.score, url=h.url, title=h.title, heading_path=h.heading_path,
                      text=h.text, context=h.context) for h in hits])

    @server.tool(title="Read a crawled page")
    def fetch_page(
        url: Annotated[str, Field(description="the page's URL, as a search hit gives it")],
        start: Annotated[int, Field(description="first character to return (to read on after a truncated slice)",
                                    ge=0)] = 0,
        max_chars: Annotated[int, Field(description=f"at most this many characters, 1-{MAX_PAGE_CHARS}", ge=1,
                                        le=MAX_PAGE_CHARS)] = DEFAULT_PAGE_CHARS,
    ) -> Page:
        """The stored text of one crawled page (its main content as Markdown where the crawl kept it),
        in slices of at most max_chars characters."""
        try:
            found = pages.page(url.strip())
        except BlockcrawlError as e:
            raise ToolError(clean(str(e))) from None
        if found is None:
            raise ToolError(f"no page with URL {url[:300]!r} in the store (search gives the URLs it holds)")
        real, title, text = found
        part = text[start:start + max_chars]
        return Page(url=real, title=title, text=part, start=start, total_chars=len(text),
                    truncated=start + len(part) < len(text))

    @server.tool(title="List the crawled sites")
    def list_sites(
        limit: Annotated[int, Field(description="at most this many sites, most pages first", ge=1, le=10_000)] = 100,
    ) -> Sites:
        """The sites (host names, with a port when not the default) in the store and how many pages each has."""
        try:
            counts = pages.sites()
        except BlockcrawlError as e:
            raise ToolError(clean(str(e))) from None
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return Sites(sites=[Site(site=s, pages=n) for s, n in top], total_sites=len(counts))

    if allow_crawl:
        crawl_lock = threading.Lock()
        target = location or store.location

        @server.tool(title="Crawl a site into the store")
        def crawl(
            url: Annotated[str, Field(description="the http(s) URL to start from; its site is crawled")],
            max_pages: Annotated[int, Field(description="at most this many pages (the server sets a cap)", ge=1)] = 20,
        ) -> Crawled:
            """Crawl a web site from url into the store and index it, so that search finds its pages.
            Takes a while (seconds to minutes); one crawl at a time."""
            from ..crawl.urls import canonicalize

            if canonicalize(url.strip()) is None:
                raise ToolError(f"not an http(s) URL: {url[:300]!r}")
            if max_pages > crawl_max_pages:  # a bound of the server, not of the schema (annotations are global)
                raise ToolError(f"max_pages must be at most {crawl_max_pages} on this server")
            if not crawl_lock.acquire(blocking=False):
                raise ToolError("a crawl is already running; try again when it has finished")
            try:
                before = sum(pages.sites().values())
                summary = _run_cli("crawl", url.strip(), "--store", target, "--max-pages", str(max_pages),
                                   "--max-time", str(CRAWL_SECONDS), "--no-progress")
                _run_cli("index", "--store", target, "--quiet")
                after = sum(pages.sites().values())
            except BlockcrawlError as e:
                raise ToolError(clean(str(e))) from None
            finally:
                crawl_lock.release()
            m = re.search(r"(\d+) pages? in ", summary)
            return Crawled(url=url.strip(), pages_fetched=int(m.group(1)) if m else after - before,
                           store_pages=after, summary=clean(summary))

    return server


def _run_cli(*args: str) -> str:
    """Run `blockcrawl ARGS` as a child process (its own event loop, workers and writer lock); its
    last stderr line, or BlockcrawlError with it when the command failed."""
    import subprocess

    r = subprocess.run([sys.executable, "-m", "blockcrawl", *args], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=CRAWL_SECONDS + 600)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    if r.returncode not in (0, 130):
        raise BlockcrawlError(last or f"blockcrawl {args[0]} failed (exit {r.returncode})")
    return last


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_line(line: bytes) -> bytes:
    """One JSON-RPC line from the client with every lone surrogate escape ("\\udce9", valid JSON but
    no Unicode text) turned into U+FFFD, as the SDK turns bytes that are not UTF-8. The SDK's parser
    refuses such a line as invalid JSON and then answers nothing at all, so a client waited for ever;
    cleaned, the request is answered, and a query holding U+FFFD is a search error (retrieval.options
    validate). Other lines are returned as they came."""
    if b"\\u" not in line:
        return line
    import json

    try:
        text = json.dumps(json.loads(line), ensure_ascii=False)
    except ValueError:
        return line  # the SDK reports it
    if not _SURROGATE.search(text):
        return line
    return _SURROGATE.sub("\ufffd", text).encode() + b"\n"


def clean_stdin() -> None:
    """Point fd 0 at a pipe fed by a thread that passes the real standard input through clean_line
    (the SDK's stdio transport then reads the pipe). End of input is passed on as the pipe's end."""
    r, w = os.pipe()
    src = os.dup(0)
    os.dup2(r, 0)
    os.close(r)

    def pump() -> None:
        with open(src, "rb") as inp, open(w, "wb", buffering=0) as out:
            try:
                for line in inp:
                    out.write(clean_line(line))
            except OSError:
                pass

    threading.Thread(target=pump, name="blockcrawl-mcp-stdin", daemon=True).start()


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """fd 1 pointed at stderr for the block: over stdio, stdout is the protocol's wire, and a stray
    print while the model loads (a library's banner) would corrupt it."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def open_for_mcp(store_path: str | Path, embedder: Embedder | None = None,
                 warm: bool = True) -> tuple[AnyStore, Embedder]:
    """The store opened read-only and checked (StoreMissing / NotIndexed now, not at the first call),
    and, with warm, the model and vectors loaded so the first search is as fast as the next."""
    from ..index.embed import default_embedder
    from ..store import open_store

    store = open_store(store_path, readonly=True)
    try:
        emb = embedder or default_embedder()
        if warm:
            search(store, "warm up", embedder=emb, options=SearchOptions(1))
        elif "generation" not in store.index_meta():
            search(store, "warm up", embedder=emb, options=SearchOptions(1, "keyword"))
    except BaseException:
        store.close()
        raise
    return store, emb


__all__ = ["build_server", "clean_line", "clean_stdin", "open_for_mcp", "stdout_to_stderr"]

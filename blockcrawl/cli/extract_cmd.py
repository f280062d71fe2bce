"""`blockcrawl extract`: pages (files, folders, URLs) -> blocks / chunks / text, as JSON Lines."""
from __future__ import annotations

import argparse
import http.client
import json
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..extraction.pdf import PdfError, is_pdf, pdf_blocks
from ..extraction.registry import ALGORITHMS, is_site
from ..parse import load
from ..pipeline import DEFAULTS, MODES, PageResult, PipelineConfig, SitePipeline

if TYPE_CHECKING:
    from ..crawl.net.addresses import AddressPolicy

HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz")
READ_SIZE = 64 * 1024
# What reading one input may raise: it is reported on one line and the next input is read.
INPUT_ERRORS = (OSError, ValueError, EOFError, zlib.error, http.client.HTTPException)


class InputError(ValueError):
    """One input cannot be used (too large, truncated, timed out); the others still are."""


EXAMPLES = """examples:
  blockcrawl extract page.html                      chunks of the page's blocks, JSON Lines
  blockcrawl extract site/ --format jsonl           every .html under site/, duplicates kept once
  blockcrawl extract page.html --mode main --format markdown   main content as Markdown (links, lists, tables)
  blockcrawl extract a.html b.html --chunk-size 100 --overlap 20
  blockcrawl extract page.html --mode text          plain text of each page
  blockcrawl extract page.html --mode main --format text   main content only (algorithm auto)
  blockcrawl extract page.html --mode main --algorithm all    main mode without filtering
  blockcrawl extract page.html --mode plain         baseline: whole text cut into fixed chunks
  curl -s https://example.org | blockcrawl extract -

JSON Lines fields (blocks/plain): url, text, heading_path, chunk_index, block_position, block_hash, n_tokens.
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("extract", help="extract blocks, chunks or text from HTML files or URLs",
                       description="Turn HTML pages into heading-aware text blocks cut into overlapping "
                                   "chunks. Pages given together count as one site: a block already seen "
                                   "on an earlier page is kept once.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="FILE_OR_URL",
                   help="HTML or PDF file, folder of .html files, http(s) URL, or - for standard input")
    p.add_argument("--mode", choices=MODES, default=DEFAULTS.mode,
                   help="blocks: a block per section, chunked (default); main: the same for the "
                        "main content only (see --algorithm); plain: whole text in fixed "
                        "chunks (baseline); text: the page's plain text")
    p.add_argument("--algorithm", default=DEFAULTS.algorithm, metavar="NAME",
                   help="main-content algorithm for --mode main: " + ", ".join(sorted(ALGORITHMS))
                        + f" or an installed plug-in (default {DEFAULTS.algorithm})")
    p.add_argument("--chunk-size", type=int, default=DEFAULTS.chunk_size, metavar="N",
                   help=f"maximum tokens per chunk (default {DEFAULTS.chunk_size})")
    p.add_argument("--overlap", type=int, default=DEFAULTS.overlap, metavar="M",
                   help=f"tokens shared by consecutive chunks of one block (default {DEFAULTS.overlap})")
    p.add_argument("--tokenizer", default=DEFAULTS.tokenizer, metavar="NAME",
                   help="'model' (the embedding model's tokenizer, default), 'words', or a tokenizer.json")
    p.add_argument("--format", choices=("jsonl", "text", "markdown"), default="jsonl", dest="fmt",
                   help="output format (default jsonl); markdown: the page (its main content with "
                        "--mode main) with links, lists, pipe tables, code and emphasis, one document "
                        "per page (site dedup applies to blocks and chunks, not to it)")
    p.add_argument("--images", action="store_true", help="markdown: write images as ![alt](src)")
    p.add_argument("--full-path", action="store_true",
                   help="prefix blocks with the whole heading path ('Europe > Germany: ...')")
    p.add_argument("--no-dedup", action="store_true", help="keep blocks already seen on earlier pages")
    p.add_argument("--encoding", metavar="CHARSET", help="charset of file inputs, if known")
    p.add_argument("--max-bytes", type=int, default=DEFAULTS.max_bytes, metavar="N",
                   help="largest input, also after .gz decompression; larger inputs are skipped "
                        f"(default {DEFAULTS.max_bytes // (1024 * 1024)} MiB)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="S",
                   help="total seconds to fetch one URL, however slowly it trickles in (default 30)")
    p.add_argument("--allow-private", action="store_true",
                   help="follow redirects to private, loopback and link-local addresses (refused by default, "
                        "as in crawl, unless the URL itself is on such an address)")
    p.set_defaults(func=run)


def _expand(inputs: list[str]) -> Iterator[str]:
    for item in inputs:
        path = Path(item)
        if item != "-" and path.is_dir():
            found = False
            for f in sorted(path.rglob("*")):
                if f.name.lower().endswith(HTML_SUFFIXES) and f.is_file():
                    found = True
                    yield str(f)
            if not found:
                print(f"blockcrawl extract: no .html files in {item}", file=sys.stderr)
        else:
            yield item


def _read_limited(f: IO[bytes], limit: int, what: str) -> bytes:
    data = f.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{what} is larger than --max-bytes {limit}")
    return data


def gunzip(data: bytes, limit: int) -> bytes:
    """A .gz file's content, refused past limit bytes (a 2 MB file can inflate to 2 GB) or when
    the stream is cut short or damaged (gzip.decompress would raise EOFError with a traceback)."""
    from ..compress import inflate

    z = inflate(data, limit)
    if z.over:
        raise InputError(f"decompresses to more than --max-bytes {limit}")
    if not z.complete:
        raise InputError("truncated gzip file" if "cut off" in z.error else f"damaged gzip file ({z.error})")
    return z.data


# A URL's fetch as crawl's address policy allows it (crawl/net/addresses.py): the URL given is the seed,
# its own block allowed; every redirect's literal host is judged before it is followed, and every
# connection's address after DNS (a name pointed at 127.0.0.1, a decimal 2130706433, [::1]), the
# way crawl's resolver judges them. Tests replace the name lookup and the connect (Network).

@dataclass(frozen=True, slots=True)
class Network:
    """How extract reaches a host: getaddrinfo(host, port) and connect((address, port), timeout)."""

    getaddrinfo: Callable[[str, int], list[tuple[Any, ...]]]
    connect: Callable[[tuple[str, int], float | None], socket.socket]


def _getaddrinfo(host: str, port: int) -> list[tuple[Any, ...]]:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def _connect(address: tuple[str, int], timeout: float | None) -> socket.socket:
    return socket.create_connection(address, timeout)


SYSTEM = Network(_getaddrinfo, _connect)


def _no_userinfo(url: str) -> str:
    """url without user:password@ (a Location header's credentials are neither sent nor printed)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _opener(policy: AddressPolicy, net: Network, connections: AddressPolicy | None = None
            ) -> urllib.request.OpenerDirector:
    """A urllib opener whose redirects obey policy and whose connections obey connections (default:
    policy; through a proxy, crawl's way: the proxy's block is allowed to connections only)."""
    conns = connections or policy
    from ..crawl.net.addresses import ForbiddenAddress, host_of_url
    from ..crawl.urls import canonicalize

    def create_connection(address: tuple[str, int], timeout: float | None = None,
                          source_address: object = None, *args: object) -> socket.socket:
        host, port = address
        infos = net.getaddrinfo(host, port)
        allowed = set(conns.connectable(host, [str(i[4][0]) for i in infos]))
        error: OSError = OSError(f"cannot connect to {host}")
        for info in infos:
            if str(info[4][0]) in allowed:
                try:
                    return net.connect((str(info[4][0]), port), timeout)
                except OSError as e:
                    error = e
        raise error

    def guarded(cls: type[http.client.HTTPConnection]) -> Callable[..., http.client.HTTPConnection]:
        def make(host: str, **kw: Any) -> http.client.HTTPConnection:
            conn = cls(host, **kw)
            conn._create_connection = create_connection  # type: ignore[attr-defined]
            return conn
        return make

    class Http(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(guarded(http.client.HTTPConnection), req)

    class Https(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(guarded(http.client.HTTPSConnection), req)

    class Redirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                             headers: Any, newurl: str) -> urllib.request.Request | None:
            newurl = _no_userinfo(newurl)
            canonical = canonicalize(newurl)
            if canonical is None:
                raise InputError("redirected to a URL that is not http(s) or not valid")
            why = policy.forbidden_host(host_of_url(canonical))
            if why is not None:
                raise ForbiddenAddress(f"redirected to {why}: not fetched; --allow-private fetches it")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return urllib.request.build_opener(Http(), Https(), Redirects())


def fetch(url: str, limit: int, timeout: float, allow_private: bool = False,
          net: Network = SYSTEM) -> tuple[bytes, str, str | None]:
    """GET url within timeout seconds in total. urllib's timeout bounds each socket operation, so a
    server sending a byte a second was read for as long as it liked (61 s, exit 0); the body is
    read in pieces against a deadline, and the whole request (name lookup, headers trickled in
    too) runs in a daemon thread that is abandoned at the deadline."""
    import threading

    from ..crawl.net.addresses import AddressPolicy
    from ..crawl.urls import canonicalize

    deadline = time.monotonic() + timeout
    result: list[tuple[bytes, str, str | None] | BaseException] = []
    # the URL is the seed; a proxy from the environment is connected to as crawl connects to --proxy
    # (its block allowed to connections, not to redirect targets)
    seed = canonicalize(url) or url
    proxies = [p for p in urllib.request.getproxies().values() if "://" in p]
    opener = _opener(AddressPolicy.from_seeds([seed], allow_private), net,
                     AddressPolicy.from_seeds([seed, *proxies], allow_private) if proxies else None)

    def work() -> None:
        try:
            result.append(_fetch(opener, url, limit, timeout, deadline))
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            result.append(e)

    t = threading.Thread(target=work, daemon=True, name="blockcrawl-fetch")
    t.start()
    t.join(timeout)
    if not result:
        raise InputError(f"timed out after {timeout:g} s (--timeout)")
    r = result[0]
    if isinstance(r, BaseException):
        raise r
    return r


def _fetch(opener: urllib.request.OpenerDirector, url: str, limit: int, timeout: float,
           deadline: float) -> tuple[bytes, str, str | None]:
    # one user agent for the whole project
    from ..crawl.config import DEFAULT_USER_AGENT
    from ..crawl.net.addresses import ForbiddenAddress

    req = urllib.request.Request(url, headers={"User-Agent": DEFAULT_USER_AGENT})
    try:
        resp = opener.open(req, timeout=timeout)
    except ForbiddenAddress as e:
        raise InputError(e.strerror) from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, ForbiddenAddress):
            raise InputError(e.reason.strerror) from None
        raise
    with resp:
        parts: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise InputError(f"timed out after {timeout:g} s (--timeout)")
            sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
            if sock is not None:  # no single read may outlast the deadline either
                sock.settimeout(left)
            try:
                part = resp.read1(READ_SIZE)
            except TimeoutError:
                raise InputError(f"timed out after {timeout:g} s (--timeout)") from None
            if not part:
                break
            size += len(part)
            if size > limit:
                raise InputError(f"body is larger than --max-bytes {limit}")
            parts.append(part)
        return b"".join(parts), _no_userinfo(resp.geturl()), resp.headers.get("Content-Type")


def _read(item: str, limit: int, timeout: float, allow_private: bool = False) -> tuple[bytes, str, str | None]:
    """(body, url, content type) of one input."""
    if item == "-":
        return _read_limited(sys.stdin.buffer, limit, "standard input"), "stdin", None
    if item.startswith(("http://", "https://")):
        return fetch(item, limit, timeout, allow_private)
    path = Path(item)
    with open(path, "rb") as f:
        if path.suffix == ".gz":  # compressed size is bounded by what it inflates to
            data = gunzip(_read_limited(f, limit, "the file"), limit)
        else:
            data = _read_limited(f, limit, "the file")
    return data, path.resolve().as_uri(), None


def _write(res: PageResult, mode: str, fmt: str, out: IO[str]) -> None:
    """One page's output. Text and Markdown carry no terminal control characters (plaintext.plain);
    JSON escapes them."""
    from ..plaintext import plain

    if fmt == "markdown":
        out.write(f"<!-- {plain(str(res.url))} -->\n")
        out.write(plain(res.markdown) + "\n")
        return
    if mode == "text":
        if fmt == "jsonl":
            out.write(json.dumps({"url": res.url, "title": res.title, "text": res.text}, ensure_ascii=False) + "\n")
        else:
            out.write(plain(res.text) + "\n\n")
        return
    if fmt == "jsonl":
        for c in res.chunks:
            out.write(json.dumps({"url": c.url, "text": c.text, "heading_path": list(c.heading_path),
                                  "chunk_index": c.chunk_index, "block_position": c.block_position,
                                  "block_hash": c.block_hash, "n_tokens": c.n_tokens}, ensure_ascii=False) + "\n")
    else:
        for c in res.chunks:
            out.write(plain(c.text) + "\n\n")


def run(args: argparse.Namespace) -> int:
    """Exit 0: every input extracted; 1: some inputs could not be read (one stderr line each,
    the others are still extracted); 2: nothing to do (a bad option, or no input found)."""
    from ..errors import ConfigError

    if args.timeout <= 0 or args.timeout != args.timeout:
        raise ConfigError(f"--timeout must be a positive number of seconds, not {args.timeout}")
    if args.encoding:
        import codecs

        try:
            codecs.lookup(args.encoding)
        except LookupError:
            raise ConfigError(f"--encoding: unknown character set {args.encoding[:100]!r}") from None
    # every extraction option is checked here, once (ConfigError: one line, exit 2)
    config = PipelineConfig(mode=args.mode, algorithm=args.algorithm, chunk_size=args.chunk_size,
                            overlap=args.overlap, tokenizer=args.tokenizer, dedup=not args.no_dedup,
                            full_path=args.full_path, max_bytes=args.max_bytes)
    pipe = SitePipeline(config)
    failures = inputs = 0
    out = sys.stdout
    # Site algorithms (template clustering) need every page before the first result.
    site = args.mode == "main" and is_site(args.algorithm)
    md = args.fmt == "markdown"
    pending: list[tuple[bytes, str, str | None]] = []
    for item in _expand(args.inputs):
        inputs += 1
        try:
            data, url, ctype = _read(item, config.max_bytes, args.timeout, args.allow_private)
        except INPUT_ERRORS as e:
            print(f"blockcrawl extract: skipped {item}: {e or type(e).__name__}", file=sys.stderr)
            failures += 1
            continue
        if args.encoding:
            ctype = f"text/html; charset={args.encoding}"
        if is_pdf(ctype, data):  # a PDF (extraction.pdf): its blocks, chunked and deduplicated as a page's
            try:
                title, blocks = pdf_blocks(data, url, max_chars=config.max_bytes, full_path=config.full_path)
            except PdfError as e:
                print(f"blockcrawl extract: skipped {item}: {e}", file=sys.stderr)
                failures += 1
                continue
            _write(pipe.process_blocks(blocks, url, title, markdown=md), args.mode, args.fmt, out)
        elif site:
            pending.append((data, url, ctype))
        else:
            _write(pipe.process_dom(load(data, url, ctype), markdown=md, images=args.images),
                   args.mode, args.fmt, out)
    for res in pipe.process_site(pending, markdown=md, images=args.images) if site else ():
        _write(res, args.mode, args.fmt, out)
    if not inputs:
        print("blockcrawl extract: no input: no HTML file found in " + ", ".join(args.inputs), file=sys.stderr)
        return 2
    return 1 if failures else 0

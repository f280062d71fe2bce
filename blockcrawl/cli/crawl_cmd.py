"""`blockcrawl crawl`: crawl sites into the store (pages, blocks, chunks, frontier, crawl log)."""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..pipeline import DEFAULTS, PipelineConfig, tokenizer_for

EXAMPLES = """examples:
  blockcrawl crawl https://example.org/ --store site.db
  blockcrawl crawl https://example.org/ --store site.db --max-pages 500 --delay 0.5
  blockcrawl crawl https://example.org/docs/ --store docs.db --include '/docs/' --exclude '\\?print='
  blockcrawl crawl --store site.db --resume          continue an interrupted crawl (kill -9 safe)
  blockcrawl crawl https://news.example/ --store news.db --algorithm site --only-articles
                                                     learn each site's templates; keep articles only
  blockcrawl sites --store news.db                   the site models learned
  blockcrawl export --store site.db --what pages     what was crawled, as JSON Lines
  blockcrawl crawl https://example.org/ --store w1.db --frontier redis://10.0.0.5:6379/0
                     one of N worker processes (same arguments, one store each or a shared one);
                     `blockcrawl workers --frontier redis://10.0.0.5:6379/0` shows them

Politeness: robots.txt is obeyed (its Crawl-delay too), at most --per-host requests are in flight
per host and request starts to one host are at least --delay apart; other hosts never wait.
Ctrl-C stops gracefully (requests in flight finish); a second Ctrl-C stops at once, and the
interrupted URLs are fetched again by --resume.
"""


_Num = TypeVar("_Num", int, float)


def _positive(kind: Callable[[str], _Num]) -> Callable[[str], _Num]:
    def conv(s: str) -> _Num:
        try:
            v = kind(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
        if v < 0:
            raise argparse.ArgumentTypeError(f"must not be negative: {s}")
        return v
    return conv


def _duration(s: str) -> float:
    """'3600', '90s', '90m', '12h', '7d', '2w' -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    t = s.strip().lower()
    mult = units.get(t[-1:], 0)
    num = t[:-1] if mult else t
    try:
        v = float(num) * (mult or 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {s!r} (e.g. 3600, 90m, 12h, 7d)") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"not a duration: {s!r}")
    return v


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ..crawl.config import CRAWL_DEFAULTS as D
    from ..crawl.net.render import RENDER_MODES
    p = sub.add_parser("crawl", help="crawl websites politely into the store",
                       description="Crawl from the seed URLs, same site only by default, and store every "
                                   "HTML page's blocks and chunks. The frontier lives in the store, so an "
                                   "interrupted crawl continues with --resume.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("urls", nargs="*", metavar="URL", help="seed URLs (optional with --resume)")
    p.add_argument("--store", required=True, metavar="PATH|URL", help="store to write: an SQLite file (created if missing) or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB")
    p.add_argument("--resume", action="store_true",
                   help="continue the crawl recorded in the store instead of starting afresh")
    g = p.add_argument_group("many workers (a shared frontier)")
    g.add_argument("--frontier", metavar="URL",
                   help="redis://HOST:PORT/DB (or rediss://, unix://): the seen-set and the queues live there, so N "
                        "processes started with the same arguments crawl together; each host is leased to one "
                        "of them (politeness, robots.txt, dedup stay in one process). Needs the redis package")
    g.add_argument("--worker-id", metavar="NAME", help="this worker's name in the frontier (default hostname:pid)")
    g.add_argument("--lease-seconds", type=_positive(float), default=D.lease_seconds, metavar="S",
                   help=f"host lease: a dead worker's hosts are taken over after this long (default {D.lease_seconds:g})")
    g = p.add_argument_group("politeness")
    g.add_argument("--concurrency", type=_positive(int), default=D.concurrency, metavar="N",
                   help=f"requests in flight over all hosts (default {D.concurrency})")
    g.add_argument("--per-host", type=_positive(int), default=D.per_host, metavar="N",
                   help=f"requests in flight per host (default {D.per_host})")
    g.add_argument("--delay", type=_positive(float), default=D.delay, metavar="S",
                   help=f"minimum seconds between request starts to one host (default {D.delay:g}; "
                        "a robots.txt Crawl-delay is honoured if larger)")
    g.add_argument("--user-agent", default=D.user_agent, metavar="UA",
                   help=f"User-Agent header; its first word is the robots.txt token (default {D.user_agent!r})")
    g.add_argument("--ignore-robots", action="store_true", help="do not fetch or obey robots.txt")
    g.add_argument("--no-sitemaps", action="store_true", help="do not seed from the sitemaps robots.txt lists")
    g.add_argument("--llms-txt", action="store_true",
                   help="also read each host's /llms.txt and /llms-full.txt: the pages they link are seeds "
                        "(bounded like sitemaps, counted in --max-sitemaps)")
    g.add_argument("--max-sitemaps", type=_positive(int), default=D.max_sitemaps, metavar="N",
                   help=f"sitemap files fetched per crawl, nested indexes included (default {D.max_sitemaps}; "
                        f"{D.max_sitemap_depth} levels at most)")
    g = p.add_argument_group("what to crawl")
    g.add_argument("--allow-private", action="store_true",
                   help="fetch private, loopback and link-local addresses (in any spelling, also after DNS) "
                        "though the seeds are public; seeds on such addresses always allow their own range")
    g.add_argument("--resolve", action="append", default=[], metavar="HOST:PORT:ADDR",
                   help="connect to HOST on PORT at the IP address ADDR, without DNS (as curl's --resolve; "
                        "repeatable): a site under its real name on a test address")
    g.add_argument("--scope", choices=("site", "host", "any"), default=D.scope,
                   help="site: the seeds' sites incl. subdomains (default); host: the seeds' hosts only; any: follow everywhere")
    g.add_argument("--include", action="append", default=[], metavar="REGEX",
                   help="only URLs matching this (repeatable: any may match)")
    g.add_argument("--exclude", action="append", default=[], metavar="REGEX", help="skip URLs matching this (repeatable)")
    g.add_argument("--max-depth", type=_positive(int), metavar="N", help="link hops from a seed (default unlimited)")
    g.add_argument("--date-hops", type=int, default=D.date_hops, metavar="N",
                   help="calendar-trap guard: links from a dated page (/2024/05/, ?month=5) to another dated page "
                        f"of its host are followed at most N in a row (default {D.date_hops}; -1: no limit). "
                        "Dated pages linked from undated ones (home, menus, sitemaps) start a new chain")
    g.add_argument("--content-types", default=",".join(D.content_types), metavar="LIST",
                   help="comma-separated media types to process (default HTML only)")
    # --- jsrender ---
    g.add_argument("--render", choices=RENDER_MODES, default=D.render,
                   help="run pages' JavaScript in headless Chromium (/usr/bin/chromium, Python package playwright): "
                        "auto: only pages whose HTML is an empty app shell (default); always: every page; never")
    g = p.add_argument_group("limits and errors")
    g.add_argument("--max-pages", type=_positive(int), metavar="N", help="stop after N page fetches")
    g.add_argument("--max-time", type=_positive(float), metavar="S", help="stop after S seconds")
    g.add_argument("--timeout", type=_positive(float), default=D.timeout, metavar="S",
                   help=f"per request (default {D.timeout:g})")
    g.add_argument("--retries", type=_positive(int), default=D.retries, metavar="N",
                   help="retries of timeouts, connection errors, 429 and 5xx, with back-off or Retry-After "
                        f"(default {D.retries})")
    g.add_argument("--max-bytes", type=_positive(int), default=D.max_bytes, metavar="N",
                   help=f"largest body accepted, also after decompression (default {D.max_bytes // 2**20} MiB)")
    g.add_argument("--max-redirects", type=_positive(int), default=D.max_redirects, metavar="N",
                   help=f"longest redirect chain (default {D.max_redirects})")
    # headers, cookies, credentials, proxy (crawl.net.credentials)
    g = p.add_argument_group("headers, cookies, credentials and proxy (secrets never reach logs or the store)")
    g.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="extra request header for every request (repeatable)")
    g.add_argument("--cookies", metavar="FILE",
                   help="Netscape cookies.txt loaded into the crawl's cookie jar (Set-Cookie is honoured anyway)")
    g.add_argument("--auth", action="append", default=[], metavar="HOST=USER:PASSWORD",
                   help="HTTP basic credentials sent to HOST (or HOST:PORT) only (repeatable)")
    g.add_argument("--bearer", action="append", default=[], metavar="HOST=TOKEN",
                   help="'Authorization: Bearer TOKEN' sent to HOST (or HOST:PORT) only (repeatable)")
    g.add_argument("--proxy", metavar="URL",
                   help="proxy for every request: http://[user:pass@]host:port, or socks5://... "
                        "(needs aiohttp-socks); default: the http_proxy/https_proxy/no_proxy variables")
    g.add_argument("--no-proxy-env", action="store_true", help="ignore the proxy environment variables")
    g.add_argument("--recrawl", action="store_true",
                   help="revisit the store's pages with conditional requests (ETag / Last-Modified): 304 keeps a "
                        "page, a changed one is replaced, 404/410 removes it; new links are followed")
    g.add_argument("--max-age", type=_duration, metavar="DURATION",
                   help="with --recrawl: only pages fetched longer ago than this (e.g. 3600, 90m, 12h, 7d)")
    g.add_argument("--no-feeds", action="store_true",
                   help="do not read the RSS/Atom/JSON feeds pages link (<link rel=alternate>) as URL sources")
    g.add_argument("--follow-nofollow", action="store_true",
                   help="follow rel=nofollow (ugc, sponsored) links too (default: skipped)")
    g = p.add_argument_group("extraction")
    g.add_argument("--algorithm", default=DEFAULTS.algorithm, metavar="NAME",
                   help="main-content algorithm from blockcrawl.extraction.registry "
                        f"(default {DEFAULTS.algorithm!r}; 'all' keeps every block; 'site' learns each site's "
                        "page templates from its first pages, then extracts by them, 'auto+template' removes what "
                        "repeats across a site's pages from auto's: see --learn-pages)")
    g.add_argument("--chunk-size", type=int, default=DEFAULTS.chunk_size, metavar="N",
                   help=f"tokens per chunk (default {DEFAULTS.chunk_size})")
    g.add_argument("--overlap", type=int, default=DEFAULTS.overlap, metavar="M",
                   help=f"chunk overlap (default {DEFAULTS.overlap})")
    g.add_argument("--tokenizer", default=DEFAULTS.tokenizer, metavar="NAME",
                   help=f"'model', 'words', or a tokenizer.json (default {DEFAULTS.tokenizer!r})")
    g.add_argument("--no-dedup", action="store_true", help="keep blocks already seen on the site")
    g.add_argument("--only-articles", action="store_true",
                   help="store blocks and chunks of article pages only (the page classifier's kind); other "
                        "pages are stored with their info (kind, metadata) but no blocks, and their links followed")
    g.add_argument("--learn-pages", type=_positive(int), default=DEFAULTS.learn_pages, metavar="N",
                   help=f"--algorithm site, auto+template: learn a site's model after N of its pages "
                        f"(default {DEFAULTS.learn_pages})")
    g.add_argument("--learn-seconds", type=_positive(float), default=DEFAULTS.learn_seconds, metavar="S",
                   help="--algorithm site, auto+template: or S seconds after the site's first page, if sooner; a site "
                        "idle S seconds, or at the crawl's end, learns on the pages it has "
                        f"(default {DEFAULTS.learn_seconds:g})")
    g.add_argument("--no-extract", action="store_true",
                   help="only crawl: store pages (URL, status, title) and follow links, no blocks or chunks")
    g.add_argument("--workers", type=_positive(int), default=None, metavar="N",
                   help="processes that parse and chunk pages (default: the CPU count, at most 4; "
                        "0: a thread of the crawler process; at most 256, and never more processes than the "
                        "CPUs and free memory hold)")
    g.add_argument("--analysis-timeout", type=_positive(float), default=D.analysis_timeout, metavar="S",
                   help="seconds one page's analysis may take in a worker process; past it the worker is "
                        "replaced and the page recorded as failed 'too complex' (default %(default)g)")
    g.add_argument("--index", action="store_true",
                   help="embed chunks for search while crawling, in a process of its own (on all CPUs but one), so the "
                        "crawl ends with the store searchable: 'blockcrawl index' run alongside")
    g = p.add_argument_group("keeping another index in sync (docs/sync.md)")
    g.add_argument("--on-change", metavar="URL",
                   help="when the crawl finishes (not when interrupted), POST a JSON summary of what it changed "
                        "(counts, crawl id, the 'blockcrawl changes' cursor) to URL, retried, never failing the crawl")
    g.add_argument("--on-change-secret-env", default="BLOCKCRAWL_WEBHOOK_SECRET", metavar="VAR",
                   help="environment variable holding the secret that signs the POST (X-Blockcrawl-Signature: "
                        "sha256=HMAC; default %(default)s; unset: unsigned, with a warning)")
    g.add_argument("--keep-changes", type=_duration, metavar="DURATION",
                   help="when the crawl finishes, drop the change log of crawls that ended longer ago (e.g. 30d)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="count", default=0, help="log retries and failures (-vv: debug)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..crawl import CrawlConfig, crawl
    from ..crawl.urls import canonicalize
    from ..errors import ConfigError
    from ..store import open_store

    def err(msg: str) -> int:
        print(f"blockcrawl crawl: {msg}", file=sys.stderr)
        return 2

    if not args.urls and not args.resume and not args.recrawl:
        return err("give at least one seed URL (or --resume, --recrawl)")
    if args.index and args.no_extract:
        return err("--index needs chunks: drop --no-extract")
    bad = [u for u in args.urls if canonicalize(u.strip()) is None]
    if bad:
        return err(f"not an http(s) URL: {bad[0]}")
    for rx in args.include + args.exclude:
        try:
            re.compile(rx)
        except re.error as e:
            return err(f"bad regular expression {rx!r}: {e}")
    # every extraction option is checked here, once (ConfigError: one line, exit 2)
    # (max_bytes and only_articles are the crawl's: CrawlConfig below; the engine hands them on)
    spec = PipelineConfig(mode="main", algorithm=args.algorithm, chunk_size=args.chunk_size,
                          overlap=args.overlap, tokenizer=args.tokenizer, dedup=not args.no_dedup,
                          extract=not args.no_extract,
                          learn_pages=args.learn_pages, learn_seconds=args.learn_seconds)
    logging.basicConfig(level=logging.WARNING - 10 * min(args.verbose, 2), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    try:
        tokenizer_for(args.tokenizer)  # fail here, not in a worker
    except (OSError, ValueError) as e:
        return err(f"tokenizer: {e}")
    cpus = os.cpu_count() or 1
    workers = args.workers if args.workers is not None else (min(cpus, 4) if cpus > 1 else 0)

    # credentials (ConfigError messages never repeat a secret)
    from ..crawl.net.credentials import Credentials, parse_auth, parse_bearer, parse_header
    try:
        credentials = Credentials(
            headers=tuple(parse_header(h) for h in args.header), cookies=args.cookies,
            auth=tuple(parse_auth(a) for a in args.auth), bearer=tuple(parse_bearer(b) for b in args.bearer),
            proxy=args.proxy, proxy_env=not args.no_proxy_env)
    except ConfigError as e:
        return err(f"--{e}")
    try:
        cfg = CrawlConfig(
            seeds=args.urls, concurrency=args.concurrency, per_host=args.per_host, delay=args.delay,
            timeout=args.timeout, retries=args.retries, max_pages=args.max_pages, max_time=args.max_time,
            max_depth=args.max_depth, date_hops=None if args.date_hops < 0 else args.date_hops,
            include=args.include, exclude=args.exclude, scope=args.scope,
            allow_private=args.allow_private, user_agent=args.user_agent, robots=not args.ignore_robots,
            sitemaps=not args.no_sitemaps, llms_txt=args.llms_txt,
            max_sitemaps=args.max_sitemaps,
            max_bytes=args.max_bytes, max_redirects=args.max_redirects,
            content_types=tuple(t.strip().lower() for t in args.content_types.split(",") if t.strip()),
            resume=args.resume, progress=not args.no_progress, workers=workers,
            analysis_timeout=args.analysis_timeout,
            credentials=credentials, feeds=not args.no_feeds, follow_nofollow=args.follow_nofollow,
            recrawl=args.recrawl, max_age=args.max_age, render=args.render, only_articles=args.only_articles,
            frontier=args.frontier, worker_id=args.worker_id, lease_seconds=args.lease_seconds,
            resolve=args.resolve)
    except ConfigError as e:  # named as the option the user typed: "--content-types is empty..."
        msg = str(e)
        name = msg.split(" ", 1)[0]
        return err(f"--{name.replace('_', '-')}{msg[len(name):]}" if name in CrawlConfig.__dataclass_fields__ else msg)
    # the writer lock for the whole crawl (a second crawl or index is refused); --resume never
    # creates a store: a mistyped path is an error, not a new empty crawl. StoreError: one line.
    # (with a shared frontier a worker may join a resumed crawl with a new store)
    store = open_store(args.store, create=not (args.resume or args.recrawl) or bool(args.frontier),
                       who="blockcrawl crawl")
    with store:
        if args.resume and not args.frontier and not store.frontier().size() and not args.urls:
            return err(f"{store.location} holds no crawl to resume; give seed URLs")
        if args.recrawl and not store.recrawl_pages() and not args.urls:
            return err(f"{store.location} holds no pages to recrawl; give seed URLs")
        payload, policy = None, None
        if args.on_change:
            from ..crawl.net.webhook import check_url
            policy = _hook_policy(store, args)
            if (why := check_url(args.on_change, policy)) is not None:
                return err(why.removeprefix("--on-change: ").removeprefix("--on-change "))
        if not args.index:
            stats = crawl(store, cfg, spec)
        else:
            stats, indexed = _crawl_and_index(store, args.store, cfg, spec)
        if stats.finished:
            payload = _finished(store, args, stats)
    print(stats.summary(), file=sys.stderr)
    if args.index:
        print(indexed, file=sys.stderr)
    if args.on_change and stats.finished:
        _deliver(args, payload, policy)
    return 130 if stats.stopped == "stopped: interrupted" else 0


def _hook_policy(store: Any, args: argparse.Namespace) -> Any:
    """The crawl's address policy (crawl.net.addresses) for the --on-change URL: from its seeds, those
    given and those the store's frontier kept (a recrawl gives none)."""
    from ..crawl.net.addresses import AddressPolicy
    from ..crawl.urls import canonicalize

    seeds = list(args.urls)
    if not args.frontier and store.schema_version:
        seeds += json.loads(store.frontier().get_meta("seeds") or "[]")
    return AddressPolicy.from_seeds([u for u in (canonicalize(s.strip()) for s in seeds) if u], args.allow_private)


def _finished(store: Any, args: argparse.Namespace, stats: Any) -> dict[str, Any] | None:
    """A finished crawl: --keep-changes compacts the change log; the --on-change summary, if asked."""
    if args.keep_changes is not None:
        store.compact_changes(time.time() - args.keep_changes)
    if not args.on_change:
        return None
    from ..crawl.net.webhook import summary

    row: dict[str, Any] = next((c for c in store.crawls() if c["id"] == stats.crawl_id), {})
    first, last = store.crawl_span(stats.crawl_id)
    return summary(stats.crawl_id, store.crawl_counts(stats.crawl_id), first, last, stats.stopped,
                   row.get("started"), row.get("ended"))


def _deliver(args: argparse.Namespace, payload: dict[str, Any] | None, policy: Any) -> None:
    """The webhook, after the store is closed (the receiver may read it at once); a failure is a warning."""
    from ..crawl.net.webhook import deliver

    secret = os.environ.get(args.on_change_secret_env) or None
    if secret is None:
        print(f"blockcrawl crawl: warning: ${args.on_change_secret_env} is not set: the --on-change POST is unsigned",
              file=sys.stderr)
    if payload is not None and (why := deliver(args.on_change, payload, secret, policy)) is not None:
        print(f"blockcrawl crawl: warning: --on-change not delivered ({why}); the crawl's changes are in the "
              f"store: blockcrawl changes --since {payload['since']}", file=sys.stderr)


def _crawl_and_index(store: Any, where: str, cfg: Any, spec: PipelineConfig) -> tuple[Any, str]:
    """crawl() with the live indexer (index.live) beside it, then the final build_index, which takes
    the indexer's vectors and embeds only what it had not reached."""
    import tempfile
    import time
    from pathlib import Path

    from ..crawl import crawl
    from ..index import build_index
    from ..index.embed import default_embedder
    from ..index.live import LiveIndexer, PrecomputedEmbedder

    emb = default_embedder()
    store.begin_index(emb.name, emb.dim)  # the tables the indexer reads exist before the first page
    with tempfile.TemporaryDirectory(prefix="blockcrawl-live-") as tmp:
        live = LiveIndexer(where, Path(tmp))
        try:
            stats = crawl(store, cfg, spec)
            t = time.perf_counter()
            live.finish()
        finally:
            live.kill()
        ls = live.stats()
        pre = PrecomputedEmbedder(Path(tmp) / "live-vectors.db", emb)
        try:
            st = build_index(store, pre)
        finally:
            pre.close()
    tail = time.perf_counter() - t
    during = (f" (indexer: model ready at {ls.get('load_s', 0):.1f} s, {ls.get('embed_s', 0):.1f} s embedding, "
              f"{ls.get('read_s', 0):.1f} s reading the store in {int(ls.get('looks', 0))} looks)") if ls else ""
    return stats, (f"indexed {store.location}: {st.chunks} chunks, {pre.hits} embedded during the crawl{during}, "
                   f"{st.embedded - pre.hits} after it, {st.reused} reused; searchable {tail:.1f} s after "
                   "the last page")

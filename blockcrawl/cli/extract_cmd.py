"""`blockcrawl extract`: pages (files, folders, URLs) -> blocks / chunks / text, as JSON Lines."""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from ..chunk import DEFAULT_OVERLAP, DEFAULT_SIZE, get_tokenizer
from ..extraction.blocks import outline
from ..extraction.registry import ALGORITHMS, SITE_ALGORITHMS
from ..pipeline import MODES, PageResult, SitePipeline

MAX_BYTES = 20 * 1024 * 1024
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz")

EXAMPLES = """examples:
  blockcrawl extract page.html                      chunks of the page's blocks, JSON Lines
  blockcrawl extract site/ --format markdown        every .html under site/, duplicates kept once
  blockcrawl extract a.html b.html --chunk-size 100 --overlap 20
  blockcrawl extract page.html --mode text          plain text of each page (seed 002)
  blockcrawl extract page.html --mode main --format text   main content only (algorithm auto)
  blockcrawl extract page.html --mode main --algorithm all    main mode without filtering
  blockcrawl extract page.html --mode plain         baseline: whole text cut into fixed chunks
  curl -s https://example.org | blockcrawl extract -

JSON Lines fields (blocks/plain): url, text, heading_path, chunk_index, block_position, block_hash, n_tokens.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extract", help="extract blocks, chunks or text from HTML files or URLs",
                       description="Turn HTML pages into heading-aware text blocks cut into overlapping "
                                   "chunks. Pages given together count as one site: a block already seen "
                                   "on an earlier page is kept once.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="FILE_OR_URL",
                   help="HTML file, folder of .html files, http(s) URL, or - for standard input")
    p.add_argument("--mode", choices=MODES, default="blocks",
                   help="blocks: a block per section, chunked (default); main: the same for the "
                        "main content only (see --algorithm); plain: whole text in fixed "
                        "chunks (baseline); text: the page's plain text")
    p.add_argument("--algorithm", default="auto", metavar="NAME",
                   help="main-content algorithm for --mode main: " + ", ".join(sorted(ALGORITHMS))
                        + " (default auto)")
    p.add_argument("--chunk-size", type=int, default=DEFAULT_SIZE, metavar="N",
                   help=f"maximum tokens per chunk (default {DEFAULT_SIZE})")
    p.add_argument("--overlap", type=int, default=DEFAULT_OVERLAP, metavar="M",
                   help=f"tokens shared by consecutive chunks of one block (default {DEFAULT_OVERLAP})")
    p.add_argument("--tokenizer", default="model", metavar="NAME",
                   help="'model' (the embedding model's tokenizer, default), 'words', or a tokenizer.json")
    p.add_argument("--format", choices=("jsonl", "text", "markdown"), default="jsonl", dest="fmt",
                   help="output format (default jsonl)")
    p.add_argument("--full-path", action="store_true",
                   help="prefix blocks with the whole heading path ('Europe > Germany: ...')")
    p.add_argument("--no-dedup", action="store_true", help="keep blocks already seen on earlier pages")
    p.add_argument("--encoding", metavar="CHARSET", help="charset of file inputs, if known")
    p.set_defaults(func=run)


def _expand(inputs: list[str]) -> Iterator[str]:
    for item in inputs:
        path = Path(item)
        if item != "-" and path.is_dir():
            yield from (str(f) for f in sorted(path.rglob("*")) if f.name.lower().endswith(HTML_SUFFIXES))
        else:
            yield item


def _read(item: str) -> tuple[bytes, str, str | None]:
    """(body, url, content type) of one input."""
    if item == "-":
        return sys.stdin.buffer.read(MAX_BYTES), "stdin", None
    if item.startswith(("http://", "https://")):
        from ..crawl.crawler import DEFAULT_USER_AGENT  # one user agent for the whole project

        req = urllib.request.Request(item, headers={"User-Agent": DEFAULT_USER_AGENT})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.read(MAX_BYTES), resp.geturl(), resp.headers.get("Content-Type")
    path = Path(item)
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES)
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data, path.resolve().as_uri(), None


def _write(res: PageResult, mode: str, fmt: str, out) -> None:
    if mode == "text":
        if fmt == "jsonl":
            out.write(json.dumps({"url": res.url, "title": res.title, "text": res.text}, ensure_ascii=False) + "\n")
        else:
            out.write(res.text + "\n\n")
        return
    if fmt == "jsonl":
        for c in res.chunks:
            out.write(json.dumps({"url": c.url, "text": c.text, "heading_path": list(c.heading_path),
                                  "chunk_index": c.chunk_index, "block_position": c.block_position,
                                  "block_hash": c.block_hash, "n_tokens": c.n_tokens}, ensure_ascii=False) + "\n")
    elif fmt == "text":
        for c in res.chunks:
            out.write(c.text + "\n\n")
    else:  # markdown: the page's outline with its blocks
        out.write(f"<!-- {res.url} -->\n")
        if mode == "plain":
            out.write(res.text + "\n\n")
            return
        for level, text in outline(res.blocks):
            out.write(("#" * min(level + 1, 6) + " " + text if level >= 0 else text) + "\n\n")


def run(args: argparse.Namespace) -> int:
    if args.chunk_size < 1 or not 0 <= args.overlap < args.chunk_size:
        print("blockcrawl extract: need --chunk-size >= 1 and 0 <= --overlap < --chunk-size", file=sys.stderr)
        return 2
    if args.algorithm not in ALGORITHMS:
        print(f"blockcrawl extract: unknown algorithm {args.algorithm!r}; choose from "
              f"{', '.join(sorted(ALGORITHMS))}", file=sys.stderr)
        return 2
    pipe = SitePipeline(mode=args.mode, algorithm=args.algorithm, chunk_size=args.chunk_size, overlap=args.overlap,
                        tokenizer=get_tokenizer(args.tokenizer), dedup=not args.no_dedup,
                        full_path=args.full_path)
    failures = 0
    out = sys.stdout
    # Site algorithms (template clustering) need every page before the first result.
    site = args.mode == "main" and args.algorithm in SITE_ALGORITHMS
    pending: list[tuple[bytes, str, str | None]] = []
    for item in _expand(args.inputs):
        try:
            data, url, ctype = _read(item)
        except (OSError, ValueError) as e:
            print(f"blockcrawl extract: skipped {item}: {e}", file=sys.stderr)
            failures += 1
            continue
        if args.encoding:
            ctype = f"text/html; charset={args.encoding}"
        if site:
            pending.append((data, url, ctype))
        else:
            _write(pipe.process(data, url, ctype), args.mode, args.fmt, out)
    for res in pipe.process_site(pending) if site else ():
        _write(res, args.mode, args.fmt, out)
    return 1 if failures else 0

#!/usr/bin/env python3
"""Parser choice: selectolax (lexbor) vs lxml, measured on the same pages in one run.

Reads the development pages of ../shared/bench/data (override with --data). For each parser:
median ms/page to parse and visit every node (what building blockcrawl's flat Dom costs), and
how many levels of a deeply nested page survive. Run: python bench/parser_choice.py
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path

from common import DATA  # noqa: E402 - first: it puts the repository on sys.path


def load_pages(data: Path, limit: int) -> list[str]:
    pages = []
    for ds in ("aeb", "cleaneval-dev", "cleanportaleval"):
        for f in sorted(p for p in (data / ds / "pages").rglob("*") if p.is_file())[:limit]:
            raw = f.read_bytes()
            if f.suffix == ".gz":
                raw = gzip.decompress(raw)
            pages.append(raw.decode("utf-8", "replace"))
    return pages


def walk_lexbor(html: str) -> int:
    from selectolax.lexbor import LexborHTMLParser

    stack, n = [LexborHTMLParser(html).root], 0
    while stack:
        node = stack.pop()
        if node is None:
            continue
        n += 1
        if node.tag == "-text":
            _ = node.text_content  # the property read (text of the node) is what is timed
        child = node.last_child
        while child is not None:
            stack.append(child)
            child = child.prev
    return n


def walk_lxml(html: str) -> int:
    import lxml.etree
    import lxml.html

    n = 0
    for _ev, el in lxml.etree.iterwalk(lxml.html.fromstring(html), events=("start",)):
        n += 1 + (el.text is not None) + (el.tail is not None)
    return n


def walk_blockcrawl(html: str) -> int:
    from blockcrawl.parse import parse_html

    return len(parse_html(html))


def depth_kept(parser: str, n: int) -> int:
    html = "<body>" + "<div>x" * n + "<a href='/deep'>deep</a>" + "</div>" * n + "</body>"
    if parser == "lxml":
        import lxml.html

        doc = lxml.html.fromstring(html, parser=lxml.html.HTMLParser(huge_tree=True))
        return max((sum(1 for _ in a.iterancestors("div")) for a in doc.iter("a")), default=0)
    from blockcrawl.parse import parse_html

    dom = parse_html(html)
    a = dom.find("a")
    return sum(1 for _ in _ancestors(dom, a) if dom.tag[_] == "div") if a >= 0 else 0


def _ancestors(dom, i):
    i = dom.parent[i]
    while i >= 0:
        yield i
        i = dom.parent[i]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA, help="benchmark data folder (../shared/bench/data)")
    ap.add_argument("--limit", type=int, default=60, help="pages per data set")
    args = ap.parse_args()
    if not args.data.exists():
        print(f"parser_choice: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    pages = load_pages(args.data, args.limit)
    print(f"{len(pages)} pages; median ms/page to parse and visit every node\n")
    print("| parser | ms/page | levels kept of 10,000 nested divs |")
    print("|---|---|---|")
    for name, fn, deep in (("selectolax/lexbor (raw walk)", walk_lexbor, None),
                           ("lxml (iterwalk, huge_tree for depth)", walk_lxml, "lxml"),
                           ("blockcrawl Dom (lexbor + flat arrays)", walk_blockcrawl, "blockcrawl")):
        times = []
        for html in pages:
            t = time.perf_counter()
            fn(html)
            times.append((time.perf_counter() - t) * 1000)
        kept = depth_kept(deep, 10_000) if deep else ""
        print(f"| {name} | {statistics.median(times):.2f} | {kept} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One extraction path: blockcrawl.extract(), SitePipeline(mode="main") and the crawl worker
(crawl/analysis/process.py analyse) must give one text for one page.

Every page of the development sets goes through all three, in one process, with the same bytes
and the same (canonical) URL: extract(bytes, url).text; SitePipeline(mode="main").process(...).text
with one pipeline per site, pages in id order (as a crawl feeds them); and process.analyse(site,
bytes, url, "text/html") as a crawl worker runs it, whose stored content_hash is the hash of its
main text (PageOut carries no text before page info; PageOut.info.text is compared too when
present). Pages the crawl would not extract at all (meta robots noindex, a canonical URL
elsewhere on the host) are counted apart; their text is still compared (analyse extract=True).

    python bench/onepath.py                              # all six sets
    python bench/onepath.py --sets aeb --limit 50 --examples 5
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path
from typing import Any

from common import BENCH  # noqa: E402 - first: it puts the repository on sys.path

SETS = ("aeb", "cleaneval-dev", "cleanportaleval", "cetd", "msv", "wcxb-dev")


def text_digest(text: str) -> str:
    """The crawl worker's content_hash of a main text (process.analyse)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def first_difference(a: str, b: str) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at char {i}: {a[max(0, i - 30):i + 40]!r} vs {b[max(0, i - 30):i + 40]!r}"


class OnePath:
    """The three paths over pages of sites; disagreements collected."""

    def __init__(self, algorithm: str = "auto") -> None:
        from blockcrawl.crawl.analysis import process
        from blockcrawl.pipeline import PipelineConfig

        self.algorithm = algorithm
        # words: the text does not depend on the tokenizer, and the model's costs chunking time
        self.config = PipelineConfig(mode="main", algorithm=algorithm, tokenizer="words")
        process.init_state(self.config)
        self.pipes: dict[str, Any] = {}
        self.pages = 0
        self.skipped_by_crawl = 0
        self.disagreements: list[dict[str, str]] = []

    def check(self, page_id: str, site: str, body: bytes, url: str) -> dict[str, str] | None:
        """Run the three paths on one page; the disagreement (or None)."""
        from blockcrawl import extract
        from blockcrawl.crawl.analysis import process
        from blockcrawl.crawl.sources.links import canonical_elsewhere
        from blockcrawl.pipeline import SitePipeline

        self.pages += 1
        doc = extract(body, url, algorithm=self.algorithm)
        pipe = self.pipes.get(site)
        if pipe is None:
            pipe = self.pipes[site] = SitePipeline(self.config)
        res = pipe.process(body, url)
        out = process.analyse(site, body, url, "text/html", True, extract=True)
        if out.signals.noindex or canonical_elsewhere(url, out.base, out.signals.canonical):
            self.skipped_by_crawl += 1
        problems = []
        if res.text != doc.text:
            problems.append("SitePipeline " + first_difference(doc.text, res.text))
        if out.error:
            problems.append(f"crawl worker error {out.error}")
        elif out.content_hash != text_digest(doc.text):
            problems.append("crawl worker content_hash is not the hash of extract()'s text")
        for name, info in (("PageResult.info", getattr(res, "info", None)), ("PageOut.info", getattr(out, "info", None)),
                           ("Document.info", getattr(doc, "info", None))):
            if info is not None and info.text != doc.text:
                problems.append(f"{name}.text " + first_difference(doc.text, info.text))
        if not problems:
            return None
        d = {"id": page_id, "url": url, "problems": "; ".join(problems)}
        self.disagreements.append(d)
        return d


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="extract(), SitePipeline(mode='main') and the crawl worker on every "
                                             "page of the development sets: do they give one text?")
    ap.add_argument("--bench", type=Path, default=BENCH, help="folder with score.py and data/")
    ap.add_argument("--sets", nargs="+", default=list(SETS), metavar="NAME")
    ap.add_argument("--algorithm", default="auto")
    ap.add_argument("--limit", type=int, metavar="N", help="first N pages of each set")
    ap.add_argument("--examples", type=int, default=10, metavar="N", help="disagreements shown per set")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.bench))
    import score

    from blockcrawl.crawl.urls import canonicalize

    data = str(args.bench / "data")
    total = bad = 0
    for ds in args.sets:
        op = OnePath(args.algorithm)
        t0 = time.perf_counter()
        gold = sorted(score.load_gold(data, ds), key=lambda r: r["id"])[:args.limit]
        for rec in gold:
            site = rec["id"].split("/", 1)[0] if "/" in rec["id"] else ds
            url = canonicalize(rec.get("url") or "") or f"http://{ds}.onepath.invalid/{rec['id']}"
            op.check(rec["id"], site, score.read_page(data, ds, rec), url)
        total += op.pages
        bad += len(op.disagreements)
        print(f"{ds}: {op.pages} pages, {len(op.disagreements)} disagreements, "
              f"{op.skipped_by_crawl} the crawl would not extract (noindex / canonical elsewhere), "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        for d in op.disagreements[:args.examples]:
            print(f"  {d['id']} {d['url']}\n    {d['problems']}", flush=True)
    print(f"all: {total} pages, {bad} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

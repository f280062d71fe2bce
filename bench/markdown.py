"""Markdown vs plain text: does the Markdown of the main content hold the same words?

For each page of the shared development sets: one parse, the algorithm's mask, then the plain
main text (extraction.api.main_content) and the Markdown of the same mask (extraction.markdown).
The Markdown is stripped back to text (markup removed, link and image URLs dropped, escapes
undone) and both are scored with the shared score.py (4-gram shingle F1). The Markdown walk is
timed alone. Differences come from word boundaries (a table cell, a list item) and from text
the blocks leave out (a lone heading is kept by both).

    python bench/markdown.py                      # aeb, cleaneval-dev, cleanportaleval with auto
    python bench/markdown.py --datasets aeb --algorithm auto
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

from common import BENCH  # noqa: E402 - first: it puts the repository on sys.path

from blockcrawl.extraction.api import main_content, main_mask  # noqa: E402
from blockcrawl.extraction.markdown import to_markdown  # noqa: E402
from blockcrawl.parse import load  # noqa: E402

DATASETS = ("aeb", "cleaneval-dev", "cleanportaleval")

_IMAGE = re.compile(r"!\[((?:\\.|[^\]\\])*)\]\([^)\s]*\)")
_LINK = re.compile(r"\[((?:\\.|[^\]\\])*)\]\([^)\s]*\)")
_FENCE = re.compile(r"^\s*(?:>\s?)*\s*`{3,}\S*\s*$", re.M)
_LINE_MARK = re.compile(r"^[ \t]*(?:>[ \t]?)*[ \t]*(?:#{1,6}[ \t]+|[-+*][ \t]+|\d{1,9}[.)][ \t]+)?", re.M)
_RULE = re.compile(r"^\s*(?:---|\|(?:\s*---\s*\|)+)\s*$", re.M)
_EMPH = re.compile(r"(?<!\\)(?:\*\*|~~|\*|`+)")
_ESCAPED = re.compile(r"\\([\\`*_\[\]|#>+\-.)<])")


def markdown_text(md: str) -> str:
    """The words of a Markdown document: markup and URLs removed, escapes undone."""
    md = _IMAGE.sub(r"\1", md)
    md = _LINK.sub(r"\1", md)
    md = _FENCE.sub("", md)
    md = _RULE.sub("", md)
    md = _LINE_MARK.sub("", md)
    md = md.replace(" | ", " ").replace("| ", "").replace(" |", "")
    md = _EMPH.sub("", md)
    return _ESCAPED.sub(r"\1", md)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, default=BENCH)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--algorithm", default="auto")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.bench))
    import score  # the shared scorer

    data = str(args.bench / "data")
    print("| dataset | pages | text F1 | markdown F1 | P text / md | R text / md | markdown ms/page (median) |")
    print("|---|---|---|---|---|---|---|")
    for ds in args.datasets:
        gold = score.load_gold(data, ds)
        texts: dict[str, str] = {}
        mds: dict[str, str] = {}
        times: list[float] = []
        for rec in gold:
            dom = load(score.read_page(data, ds, rec), rec.get("url"))
            out: list[str] = []
            _, texts[rec["id"]] = main_content(dom, args.algorithm, markdown=out)
            mask, _ = main_mask(dom, args.algorithm)
            t0 = time.perf_counter()
            to_markdown(dom, mask)
            times.append(time.perf_counter() - t0)
            mds[rec["id"]] = markdown_text(out[0]) if out else ""
        a = score.score(ds, texts, gold=gold)
        b = score.score(ds, mds, gold=gold)
        print(f"| {ds} | {len(gold)} | {a['f1']:.3f} | {b['f1']:.3f} | {a['precision']:.3f} / {b['precision']:.3f} "
              f"| {a['recall']:.3f} / {b['recall']:.3f} | {1000 * statistics.median(times):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU seconds of blockcrawl.extract() on pages nested deep, in the shapes tests/parse/test_parse.py uses.

The test asserts only how the time grows (4x the depth, < 8x the CPU: linear, not quadratic); the
seconds themselves depend on the machine and its load, so they are measured here:

    PYTHONPATH=. python bench/nesting.py              # depths 12,500 and 50,000, best of 3
    PYTHONPATH=. python bench/nesting.py --depth 100000 --rounds 1

Needs no benchmark data.
"""
from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

SHAPES: dict[str, Callable[[int], str]] = {
    "<ul><li>": lambda n: "<body>" + "<ul><li>x" * n + "</li></ul>" * n,
    "<Div>": lambda n: "<body>" + "<Div>x" * n + "</Div>" * n,
    "<span>": lambda n: "<body>" + "<span>x" * n + "</span>" * n,
    "<table><tr><td>": lambda n: "<body>" + "<table><tr><td>x" * n,
}


def cpu(html: str, rounds: int) -> float:
    from blockcrawl import extract

    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        t = time.process_time()
        extract(html)
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depth", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3, help="best of this many runs per cell")
    args = ap.parse_args()
    from blockcrawl import extract

    extract("<p>warm</p>")  # imports and caches are not the first shape's cost
    small = args.depth // 4
    print(f"| nesting | CPU s at {small:,} | CPU s at {args.depth:,} | ratio (linear 4, quadratic 16) |")
    print("|---|---:|---:|---:|")
    for name, shape in SHAPES.items():
        a, b = cpu(shape(small), args.rounds), cpu(shape(args.depth), args.rounds)
        print(f"| `{name}` | {a:.2f} | {b:.2f} | {b / max(a, 1e-4):.1f} |")


if __name__ == "__main__":
    main()

"""Where the bench scripts find the repository and the shared benchmark, in one place.

A script does `from common import ROOT, BENCH` first (python bench/x.py puts bench/ on sys.path):
that also puts the repository on sys.path, so `import blockcrawl` reads this tree, not an installed
copy. The shared benchmark lives next to the repository (../shared/bench) and is never copied in.

- BENCH: data/ and score.py of the extraction benchmark ($BLOCKCRAWL_BENCH overrides);
- SHARED: websim.py, politeness.py and anchors/ of the crawl benchmark ($BLOCKCRAWL_SHARED_BENCH);
- DATA: the benchmark's page sets ($BLOCKCRAWL_BENCH_DATA), WTQ_DEV its wtq-dev set.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _sibling() -> Path:
    """../shared/bench beside the repository; the main checkout's when a worktree has none beside it."""
    near = ROOT.parent / "shared" / "bench"
    return near if near.exists() else Path("/work/shared/bench")


BENCH = Path(os.environ.get("BLOCKCRAWL_BENCH") or _sibling())
SHARED = Path(os.environ.get("BLOCKCRAWL_SHARED_BENCH") or _sibling())
DATA = Path(os.environ.get("BLOCKCRAWL_BENCH_DATA") or _sibling() / "data")
WTQ_DEV = DATA / "wtq-dev"


"""How a call's CPU time grows with its input, measured in one run: the tests' only use of a clock.

No test asserts an absolute wall-clock or CPU time. On a shared machine a fixed bound passes or
fails with the load: `test_deep_nesting_of_any_tag_is_linear` asserted < 2.0 s of CPU and took
2.1 s beside another job. A ratio of two sizes measured back to back in the same process moves
far less with the load (both sides pay it), and it is what "linear" means: 4x the input costs
about 4x the time, a quadratic step 16x. So a test builds a small and a large input (4x apart
unless it says otherwise) and asserts `growth(...) < 8` - half-way, on a log scale, between the
two.

CPU time (`process_time`), not wall time: the other jobs' turns on the cores do not count. The
collector is off while timing (its pauses depend on everything else the test process holds),
and each size is run `repeat` times, interleaved, the best kept.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

FLOOR_S = 1e-4  # below this a CPU reading is mostly clock granularity


def cpu(fn: Callable[..., Any], *args: Any) -> float:
    """CPU seconds of one call fn(*args), the collector off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t = time.process_time()
        fn(*args)
        return time.process_time() - t
    finally:
        if enabled:
            gc.enable()


def growth(fn: Callable[[Any], Any], small: Any, large: Any, repeat: int = 1, warm: bool = True) -> float:
    """CPU(fn(large)) / CPU(fn(small)), best of `repeat` interleaved runs each.

    `warm`: one untimed call on `small` first, so lazy imports and caches filled on first use are
    not charged to the small size (which would hide a superlinear large one)."""
    if warm:
        fn(small)
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, x in enumerate((small, large)):
            best[i] = min(best[i], cpu(fn, x))
    return best[1] / max(best[0], FLOOR_S)

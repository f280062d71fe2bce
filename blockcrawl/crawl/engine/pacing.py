"""How long the engine's loop may sleep, and the sleep itself (woken early by any task that ends).
Pure but for the sleep: the loop passes its deadlines; tests/crawl/test_engine.py checks the timing
against a FakeClock."""
from __future__ import annotations

import asyncio
from contextlib import suppress

STOP_GRACE = 1.0  # seconds in-flight work may finish after --max-time or Ctrl-C before it is cancelled
# (they hold within about a second whatever is in flight: a page that takes a worker 14 s, a slow server)
CLAIM_INTERVAL = 0.5  # shared frontier: seconds between claim() calls (lease renewal, other workers' links)
MAX_BACKLOG_FACTOR = 4  # fetched pages waiting for analysis: at most this many times --concurrency ...
MAX_BACKLOG_BYTES = 256 * 1024 * 1024  # ... holding at most this many body bytes


def may_launch(fetching: int, backlog: int, backlog_bytes: int, concurrency: int, started: int,
               max_pages: int | None) -> bool:
    """Requests on the wire count against --concurrency; fetched pages waiting for a worker do not
    (a 5 MB page keeping a worker busy for seconds must not stall every host), but their number and
    bytes are bounded so that memory stays bounded; and the --max-pages budget."""
    return (fetching < concurrency and backlog < MAX_BACKLOG_FACTOR * concurrency
            and backlog_bytes < MAX_BACKLOG_BYTES and (max_pages is None or started < max_pages))


def wait_time(mono: float, wall: float, monotonic_times: tuple[float | None, ...], due: float | None) -> float | None:
    """Seconds until the first of the monotonic times (claim, sweep, a host ready, the deadline,
    the end of the stop's grace) or the wall time `due` (a delayed retry); None: none is set."""
    waits = [t - mono for t in monotonic_times if t is not None]
    if due is not None:
        waits.append(due - wall)
    return min(waits) if waits else None


async def nap(wake: asyncio.Event, timeout: float | None) -> None:
    """Sleep until woken or `timeout` s (at least 1 ms, so a timer due now does not spin); a
    timeout already past only yields to the other tasks."""
    if timeout is not None and timeout <= 0:
        await asyncio.sleep(0)
        return
    with suppress(asyncio.TimeoutError):
        await asyncio.wait_for(wake.wait(), timeout=None if timeout is None else max(timeout, 0.001))

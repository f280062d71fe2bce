"""Start-up of a crawl worker process (crawl/analysis/process.py), kept import-light on purpose.

A spawned worker unpickles its initializer before running it, so whatever module holds the
initializer is imported first: blockcrawl.crawl.analysis.process costs ~0.4 s (the crawl package imports
aiohttp). A parent watcher thread alone misses a crawler killed with -9 in that window: it starts
after the parent is gone and then watches init, and the workers run on for good. So the worker
asks the kernel first, before anything slow, to SIGKILL it when its
parent dies (Linux prctl PR_SET_PDEATHSIG), then checks that the parent is still the one that
started it (it may have died before the prctl); the watcher thread stays as the fallback where
prctl is missing. The config comes pickled as bytes, so unpickling it (importing the pipeline)
also waits until the death signal is armed.

PR_SET_PDEATHSIG fires when the parent THREAD that spawned the worker ends: the engine spawns
workers from its event-loop thread, which lives until the pools are shut down.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_INTERVAL = 0.5  # seconds between parent checks of the fallback watcher


def die_with_parent(parent: int) -> bool:
    """Arm SIGKILL-on-parent-death (Linux), then exit at once if parent is already gone.
    Returns True if the kernel took the request."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # died before the prctl: nobody would send the signal
        os._exit(0)
    return armed


def watch_parent(parent: int) -> None:
    """Fallback: a daemon thread that exits the process once the parent is gone."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_INTERVAL)
        os._exit(0)
    threading.Thread(target=watch, daemon=True, name="blockcrawl-parent-watch").start()


def init(parent: int, payload: bytes) -> None:
    """ProcessPoolExecutor initializer: parent is the engine's pid, payload the pickled
    PipelineConfig."""
    die_with_parent(parent)
    # Ctrl-C goes to the whole process group; the engine decides how to stop, not the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(parent)
    import pickle

    from .crawl.analysis.process import init_state

    init_state(pickle.loads(payload))

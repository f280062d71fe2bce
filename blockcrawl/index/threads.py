"""torch's intra-op thread count is process-wide: code that wants one thread for a small call
(a query's embedding, a memory-bound scan) shares one counted section, so that concurrent searches
(serve answers on several threads) never restore each other's setting out of order."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_saved = 1


@contextmanager
def torch_single_thread() -> Iterator[None]:
    global _depth, _saved
    import torch

    with _lock:
        if _depth == 0:
            _saved = torch.get_num_threads()
            torch.set_num_threads(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                torch.set_num_threads(_saved)

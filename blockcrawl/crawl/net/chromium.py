"""Headless Chromium for crawl/net/render.py: where it is, whether rendering can be had here, how it is
started (no network of its own: every request goes through our fetcher), and one page's render job."""
from __future__ import annotations

import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .fetch import FetchResult

CHROMIUM = "/usr/bin/chromium"  # Debian's package `chromium`; BLOCKCRAWL_CHROMIUM overrides
CHROMIUM_ARGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-extensions", "--mute-audio", "--disable-features=Translate,MediaRouter",
    # Chromium resolves no name: every request is answered through page.route by our fetcher, so
    # nothing it does can bypass the address policy, the gates or the caps.
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
VIEWPORT = {"width": 1280, "height": 1024}


def chromium_path() -> str:
    return os.environ.get("BLOCKCRAWL_CHROMIUM") or CHROMIUM


def unavailable() -> str | None:
    """Why rendering cannot be had here (no Playwright, no Chromium), or None."""
    import importlib.util
    # find_spec, not an import: importing Playwright costs ~0.3 s, paid only when a page needs it
    if importlib.util.find_spec("playwright") is None:
        return "the Python package playwright is not installed (pip install 'blockcrawl[render]')"
    exe = chromium_path()
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)) and not shutil.which(exe):
        return f"no Chromium at {exe} (apt-get install chromium)"
    return None


def origin(url: str) -> str:
    """scheme://host[:port] of a URL as Chromium writes it (always with a path)."""
    i = url.find("//")
    j = url.find("/", i + 2) if i >= 0 else -1
    return url if j < 0 else url[:j]


@dataclass(slots=True)
class Job:
    """One page being rendered."""
    url: str
    host: str
    static: FetchResult
    gate: Callable[[], Awaitable[None]] | None
    on_sent: Callable[[], None] | None
    budget: int  # bytes the subrequests may still bring
    served: bool = False  # the document was answered
    requests: int = 0
    refused: int = 0
    nbytes: int = 0
    pending: int = 0
    last_activity: float = 0.0
    closed: bool = False

"""Triage of one fetch result: retry, skip, fail, unchanged, gone - or go on to a redirect or to
reading the body (a page, a sitemap or a feed). Pure: the engine passes what it knows (whether
the URL was stored before, whether it is a /sitemap.xml guess, the jitter) and records the
returned value (tests/crawl/test_crawl_outcomes.py has the table).
"""
from __future__ import annotations

from typing import Final, Literal

from ..frontier import Item
from ..net.fetch import FetchResult
from .outcome import Failed, FailKind, Gone, Outcome, Retry, Skipped, SkipReason, Unchanged
from .retry import decide_retry

FOLLOW: Final = "follow"  # a 3xx with a Location: admission.Admission.redirect decides
READ: Final = "read"  # a 2xx with a body: the page step (pagestep.py) or the list reader (discovery.py)
Next = Literal["follow", "read"]


def triage(it: Item, res: FetchResult, *, stored: bool, probe: bool, retries: int, backoff: float,
           jitter: float, stopping: bool) -> Outcome | Next:
    """stored: a page of the store being recrawled (304 / 404 / 410 mean unchanged / gone);
    probe: a guessed /sitemap.xml (a 4xx there is skipped, not an error)."""
    out = _triage(it, res, stored, retries, backoff, jitter, stopping)
    if (probe and isinstance(out, Failed) and res.status is not None and 400 <= res.status < 500):
        return Skipped(SkipReason.NO_SITEMAP, "")
    return out


def _triage(it: Item, res: FetchResult, stored: bool, retries: int, backoff: float, jitter: float,
            stopping: bool) -> Outcome | Next:
    status = res.status
    d = decide_retry(status, res.error, res.retry_after, it.attempts, retries, backoff, jitter, stopping)
    if d.give_up:
        return Failed(FailKind.HTTP, f"http {status}", d.give_up)
    if d.retry:
        return Retry(d.wait)
    if res.error == "content_type":
        return Skipped(SkipReason.CONTENT_TYPE, res.detail)
    if res.error:
        return Failed(FailKind.of_fetch(res.error), res.error, res.detail)
    assert status is not None
    if stored and it.kind == "page":
        if status == 304:
            return Unchanged()
        if status in (404, 410):
            return Gone()
    if 300 <= status < 400 and res.location:
        return FOLLOW
    if status >= 400 or status < 200 or res.body is None:
        return Failed(FailKind.HTTP, f"http {status}")
    return READ

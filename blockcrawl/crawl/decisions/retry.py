"""Retry and redirect decisions as pure functions (table-tested in tests/crawl/test_crawl_policy.py).

The randomness of the back-off (jitter) is an argument, so a test can pin it; the engine passes
random.random().
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
RETRY_ERRORS = frozenset({"timeout", "connect", "disconnect", "dns"})
MAX_RETRY_WAIT = 600.0  # a server asking for a longer pause gets its URL recorded as failed


def retryable(status: int | None, error: str | None) -> bool:
    """An answer that may pass if asked again: 408/425/429/5xx, or no answer for a network reason."""
    if status is not None:
        return status in RETRY_STATUS
    return error in RETRY_ERRORS


def backoff_wait(backoff: float, attempt: int, jitter: float) -> float:
    """Seconds before retry number `attempt` (1, 2, ...): backoff doubling, times 0.75-1.25
    (jitter in [0, 1)) so that URLs failing together do not come back together."""
    return backoff * 2.0 ** (attempt - 1) * (0.75 + 0.5 * jitter)


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """retry: ask again after `wait` s; else give_up: a failure message (None: not an error to retry,
    let the caller handle the answer)."""

    retry: bool = False
    wait: float = 0.0
    give_up: str | None = None


NO_RETRY = RetryDecision()


def decide_retry(status: int | None, error: str | None, retry_after: float | None, attempts: int,
                 retries: int, backoff: float, jitter: float, stopping: bool = False) -> RetryDecision:
    """What to do with an answer after `attempts` earlier retries of the URL."""
    if not retryable(status, error):
        return NO_RETRY
    if retry_after is not None and retry_after > MAX_RETRY_WAIT:
        return RetryDecision(give_up=f"Retry-After {retry_after:.0f} s is beyond {MAX_RETRY_WAIT:.0f} s")
    # A timed-out request is retried once at most: a server too slow twice in a row is slow, not
    # unlucky, and each try holds a host slot for the whole timeout.
    limit = min(retries, 1) if error == "timeout" else retries
    if attempts >= limit or stopping:
        return NO_RETRY
    wait = retry_after if retry_after is not None else backoff_wait(backoff, attempts + 1, jitter)
    return RetryDecision(retry=True, wait=wait)


# A host that keeps failing is paused as a whole, not URL by URL: a site answering every page
# with "503, Retry-After: 30" got 302 requests in the first second and 300 more at once 30 s
# later, one per queued URL. An explicit overload answer (429, 503) pauses the host at once; other
# failures (5xx, timeouts, resets) once HOST_PAUSE_AFTER of them came in a row. The pause grows
# with the run (backoff doubling, like a URL's retries) or is the server's Retry-After, whichever
# is longer, up to MAX_HOST_PAUSE; after HOST_MAX_FAILURES failures in a row the host is stopped
# for this crawl (its URLs stay queued for --resume).
OVERLOAD_STATUS = frozenset({429, 503})
HOST_PAUSE_AFTER = 3
HOST_MAX_FAILURES = 10
MAX_HOST_PAUSE = 300.0


def host_failure(status: int | None, error: str | None) -> bool:
    """An answer that says the host (not the page) is in trouble: 429, any 5xx, or no answer for
    a network reason (timeout, refused, reset)."""
    if status is not None:
        return status == 429 or status >= 500
    return error in RETRY_ERRORS


@dataclass(frozen=True, slots=True)
class HostVerdict:
    """pause: seconds the whole host stays quiet from now (0: none); stop: why the host is given
    up for this crawl (None: not)."""

    pause: float = 0.0
    stop: str | None = None


def host_verdict(failures: int, status: int | None, error: str | None, retry_after: float | None,
                 backoff: float, jitter: float) -> HostVerdict:
    """What a host's `failures`-th failure in a row (this answer included) does to the host."""
    what = f"http {status}" if status is not None else (error or "error")
    if failures >= HOST_MAX_FAILURES:
        return HostVerdict(stop=f"{failures} failures in a row (last: {what})")
    if status not in OVERLOAD_STATUS and failures < HOST_PAUSE_AFTER:
        return HostVerdict()
    grown = backoff_wait(backoff, failures, jitter)
    wait = grown if retry_after is None or retry_after > MAX_RETRY_WAIT else max(grown, retry_after)
    return HostVerdict(pause=min(wait, MAX_HOST_PAUSE))


def robots_failed(status: int | None, error: str | None, has_body: bool) -> bool:
    """A robots.txt fetch that tells nothing (RFC 9309 2.3.1.3-4: "unreachable"): no answer, a 5xx,
    or a 2xx whose body could not be read (over the size cap, a decompression bomb, a body that
    stalled until the timeout). Such a host is treated as disallowed until robots.txt is read."""
    if status is None or status >= 500:
        return True
    return 200 <= status < 300 and not has_body


def robots_retry(status: int | None, error: str | None, has_body: bool) -> bool:
    """Whether to fetch robots.txt again: it failed, and not because the name does not resolve."""
    return robots_failed(status, error, has_body) and error != "dns"


def redirect_problem(target_key: str, chain: set[str], hops: int, max_redirects: int) -> str | None:
    """"redirect loop" when the target is already on the chain that led here, "too many redirects"
    when following it would make the chain longer than max_redirects; else None."""
    if target_key in chain:
        return "redirect loop"
    if hops + 1 > max_redirects:
        return "too many redirects"
    return None


def redirect_chain(url: str, via: str | None, via_of: Mapping[str, str]) -> set[str]:
    """The URLs of the redirect chain ending at url (each hop's `via`), cut at the first repeat."""
    chain, u = {url}, via
    while u is not None and u not in chain:
        chain.add(u)
        u = via_of.get(u)
    return chain

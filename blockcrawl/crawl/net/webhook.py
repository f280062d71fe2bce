"""`crawl --on-change URL`: when a crawl finishes (not when it is interrupted), POST a JSON summary of
what it changed - its id, the counts of its page and chunk ops, and the cursor from which
`blockcrawl changes` (or GET /api/changes) gives exactly them - to a receiver.

Signed as GitHub and Stripe sign theirs: X-Blockcrawl-Signature: sha256=HMAC-SHA256(secret, body)
in hex, the secret from an environment variable (never a command-line argument, which `ps` shows).
X-Blockcrawl-Delivery names the crawl, so a receiver can drop a repeat. Delivered after the crawl's
last commit, with its own short timeouts and a few retries with back-off: a receiver that is down
costs at most `budget` seconds after the crawl is over, never fails it (a warning says so). The URL
meets the crawl's address policy (crawl.net.addresses): a crawl of public sites cannot be made to POST
to 127.0.0.1 or the cloud metadata address.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from .addresses import AddressPolicy, PolicyResolver, forbidden_reason, host_of_url, policy_middleware

log = logging.getLogger("blockcrawl.crawl")

SECRET_ENV = "BLOCKCRAWL_WEBHOOK_SECRET"


@dataclass(frozen=True, slots=True)
class Delivery:
    attempts: int = 4
    timeout: float = 5.0  # seconds per attempt
    backoff: float = 0.5  # first wait; doubled after each failure
    budget: float = 30.0  # seconds for all attempts together


def sign(body: bytes, secret: str) -> str:
    """The X-Blockcrawl-Signature value of body: "sha256=" and the HMAC-SHA256 hex digest."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def retry_after(attempt: int, status: int | None, d: Delivery) -> float | None:
    """Seconds to wait before attempt `attempt + 1` after a failure (status None: no answer), or
    None to give up: 4xx other than 408/429 is the receiver's refusal, retrying will not help."""
    if attempt + 1 >= d.attempts:
        return None
    if status is not None and 400 <= status < 500 and status not in (408, 429):
        return None
    return float(d.backoff * 2 ** attempt)


def summary(crawl_id: int, counts: dict[str, int], since_seq: int, last_seq: int, stopped: str,
            started: float | None, ended: float | None) -> dict[str, Any]:
    """The JSON body: which crawl, how it ended, what it changed, and where its changes are."""
    return {"event": "crawl.finished", "crawl_id": crawl_id, "stopped": stopped, "started": started, "ended": ended,
            "counts": counts, "since": f"cursor:{since_seq}", "next": f"cursor:{last_seq}",
            "fetch": f"blockcrawl changes --store STORE --since cursor:{since_seq}"}


def check_url(url: str, policy: AddressPolicy) -> str | None:
    """Why the receiver's URL is refused before any request, or None."""
    if not url.lower().startswith(("http://", "https://")):
        return f"--on-change {url!r}: not an http(s) URL"
    why = policy.forbidden_host(host_of_url(url))
    return None if why is None else f"--on-change: {why} is not allowed for this crawl (--allow-private allows it)"


async def _post(url: str, body: bytes, headers: dict[str, str], policy: AddressPolicy, d: Delivery) -> str | None:
    import aiohttp

    t_end = time.monotonic() + d.budget
    connector = aiohttp.TCPConnector(resolver=PolicyResolver(policy))
    async with aiohttp.ClientSession(connector=connector, middlewares=(policy_middleware(policy),),
                                     trust_env=False) as session:
        attempt, error = 0, ""
        while True:
            status = None
            try:
                left = max(0.1, min(d.timeout, t_end - time.monotonic()))
                async with session.post(url, data=body, headers=headers, allow_redirects=False,
                                        timeout=aiohttp.ClientTimeout(total=left)) as r:
                    status = r.status
                    if 200 <= status < 300:
                        return None
                    error = f"HTTP {status}"
            except (TimeoutError, aiohttp.ClientError, OSError) as e:
                error = forbidden_reason(e) or f"{type(e).__name__}: {e}".strip()[:200]
            wait = retry_after(attempt, status, d)
            if wait is None or time.monotonic() + wait >= t_end:
                return f"{error} after {attempt + 1} attempts"
            await asyncio.sleep(wait)
            attempt += 1


def deliver(url: str, payload: dict[str, Any], secret: str | None, policy: AddressPolicy,
            d: Delivery = Delivery()) -> str | None:
    """POST payload to url (signed when a secret is given); None when the receiver took it, else
    why not (logged as a warning by the caller). Never raises for the receiver's faults."""
    body = json.dumps(payload, ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "blockcrawl-webhook",
               "X-Blockcrawl-Event": str(payload.get("event", "")),
               "X-Blockcrawl-Delivery": f"crawl-{payload.get('crawl_id')}"}
    if secret:
        headers["X-Blockcrawl-Signature"] = sign(body, secret)
    why = check_url(url, policy)
    if why is not None:
        return why
    return asyncio.run(_post(url, body, headers, policy, d))

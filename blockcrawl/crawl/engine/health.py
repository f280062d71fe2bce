"""A host's health over the crawl: its failures in a row, and what the next one does to the host
(retry.host_verdict decides: pause the host as a whole, or stop it for this crawl)."""
from __future__ import annotations

import random

from ..decisions.retry import HostVerdict, host_failure, host_verdict

HEALTHY = HostVerdict()


class HostHealth:
    def __init__(self, backoff: float) -> None:
        self.backoff = backoff
        self.failures: dict[str, int] = {}  # host -> failures in a row

    def answer(self, host: str, status: int | None, error: str | None, retry_after: float | None) -> HostVerdict:
        """An answer from host: a failure counts (429, 5xx, no answer for a network reason); any
        other HTTP answer ends the run of failures."""
        if not host_failure(status, error):
            if status is not None:
                self.failures.pop(host, None)  # it answered: whatever failed before is over
            return HEALTHY
        n = self.failures[host] = self.failures.get(host, 0) + 1
        return host_verdict(n, status, error, retry_after, self.backoff, random.random())

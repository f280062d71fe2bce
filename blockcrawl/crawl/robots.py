"""robots.txt rules per host (protego: RFC 9309 longest match, wildcards, Crawl-delay, Sitemap)."""
from __future__ import annotations

from dataclasses import dataclass, field

from protego import Protego


@dataclass(slots=True)
class HostRules:
    """What robots.txt says for one host. `parser` None means allow everything."""

    parser: Protego | None = None
    disallow_all: bool = False  # robots.txt unreachable (5xx / network error): RFC 9309 says stay out
    crawl_delay: float = 0.0
    sitemaps: list[str] = field(default_factory=list)

    def allowed(self, url: str, agent: str) -> bool:
        if self.disallow_all:
            return False
        if self.parser is None:
            return True
        return self.parser.can_fetch(url, agent)


def agent_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched against ("blockcrawl/0.1 (+...)" -> "blockcrawl")."""
    return user_agent.split("/", 1)[0].split()[0] if user_agent.strip() else "*"


def rules_from_response(status: int | None, body: bytes | None, agent: str) -> HostRules:
    """Rules from a robots.txt fetch: 2xx parse; 4xx (none) allow all; 5xx or no answer disallow all."""
    if status is None or status >= 500:
        return HostRules(disallow_all=True)
    if status >= 400 or body is None:
        return HostRules()
    text = body[:512 * 1024].decode("utf-8", "replace")
    try:
        p = Protego.parse(text)
    except Exception:  # noqa: BLE001 - a robots.txt protego cannot read restricts nothing
        return HostRules()
    delay = p.crawl_delay(agent)
    rate = p.request_rate(agent)
    d = float(delay) if delay else 0.0
    if rate and rate.requests:
        d = max(d, rate.seconds / rate.requests)
    return HostRules(p, False, min(d, 120.0), list(p.sitemaps))

"""robots.txt rules per host (protego: RFC 9309 longest match, wildcards, Crawl-delay, Sitemap)."""
from __future__ import annotations

from dataclasses import dataclass, field

from protego import Protego


@dataclass(slots=True)
class HostRules:
    """What robots.txt says for one host. `parser` None means allow everything."""

    parser: Protego | None = None
    disallow_all: bool = False  # robots.txt unreachable (5xx, network error, unreadable body): RFC 9309 says stay out
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


# RFC 9309 2.5: a crawler must parse at least the first 500 KiB; the rest is ignored, so robots.txt
# is fetched with this cap and cut there (fetch truncate=True), never refused for its size.
ROBOTS_MAX_BYTES = 512 * 1024


# Characters a file can start a line with that are not part of any directive: byte-order marks
# (also one left in the middle by concatenating two files), zero-width spaces and joiners, and
# white space. Protego reads "\ufeffUser-agent: *" as an unknown directive, so the group's
# Disallow lines then belong to no group: "Disallow: /" behind a UTF-8 BOM allowed everything.
_LINE_JUNK = "\ufeff\u200b\u200c\u200d\u2060 \t\v\f"


def robots_text(body: bytes) -> str:
    """robots.txt bytes as text the parser reads as a browser-era crawler would (Google's parser
    skips a leading BOM): UTF-16 by its BOM, else UTF-8 (invalid bytes replaced); the BOM and any
    invisible or blank characters at the start of every line dropped."""
    if body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = body.decode("utf-16", "replace")
    else:
        text = body.decode("utf-8", "replace")
    return "\n".join(line.lstrip(_LINE_JUNK) for line in text.splitlines())


def rules_from_response(status: int | None, body: bytes | None, agent: str) -> HostRules:
    """Rules from a robots.txt fetch: 2xx parse; 4xx (none) allow all; 5xx, no answer, or a 2xx
    whose body could not be read (a decompression bomb, a body stalled until the timeout) disallow
    all: an unreadable robots.txt may forbid everything, so it is not taken as allowing everything."""
    if status is None or status >= 500 or (200 <= status < 300 and body is None):
        return HostRules(disallow_all=True)
    if status >= 400 or body is None:
        return HostRules()
    text = robots_text(body[:ROBOTS_MAX_BYTES])
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

"""What happened to one fetched URL, as a frozen value: the decisions (triage.py, pagestep.py,
admission.py, discovery.py) return one, and the engine's `record` is the one place that applies
it to the frontier, the stats, the --max-pages budget and the stored pages.

Why values: when each decision changes the frontier, the stats and the page budget itself, that
bookkeeping is spread over dozens of call sites and a new behaviour means reading all of them. A
decision that returns a value is tested by a table (tests/crawl/test_crawl_outcomes.py) and cannot
forget half of its bookkeeping.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from ...records import Block, Chunk
    from ..analysis.process import PageOut
    from ..frontier import Item
    from ..net.fetch import FetchResult
    from ..sources.robots import HostRules
    from .seeding import SeedPlan


class FailKind(StrEnum):
    """Why a URL was given up on: the crawl summary's error kinds (CrawlStats.error_kinds). An enum,
    not the first word of a message, which would count "too many redirects" as the kind "too"."""

    HTTP = "http"  # an HTTP status that is not a page (4xx, 5xx after retries, no body), Retry-After too long
    TIMEOUT = "timeout"
    DNS = "dns"
    CONNECT = "connect"
    DISCONNECT = "disconnect"
    FORBIDDEN = "forbidden"  # a private address the address policy refuses
    PROXY = "proxy"
    MALFORMED = "malformed"  # an answer aiohttp cannot parse
    DECODE = "decode"  # a compressed body that does not inflate
    TOO_LARGE = "too_large"
    BOMB = "bomb"
    REDIRECTS = "redirects"  # too many redirects inside the fetcher (robots.txt)
    BAD_REDIRECT = "bad_redirect"
    REDIRECT_LOOP = "redirect_loop"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    PDF = "pdf"  # a PDF that cannot be read
    TOO_COMPLEX = "too complex"  # a page whose analysis ran over --analysis-timeout (pool.PoolAnalyzer)
    INTERNAL = "internal"  # a bug while handling the page (logged with its traceback)
    OTHER = "other"  # a fetch error this enum does not know (a new fetcher's)

    @classmethod
    def of_fetch(cls, error: str) -> FailKind:
        """The kind of a FetchResult.error (protocols.Fetcher's vocabulary)."""
        try:
            return cls(error)
        except ValueError:
            return cls.OTHER


class SkipReason(StrEnum):
    """Why a URL was fetched (or not) but nothing was stored for it, without being an error."""

    ROBOTS = "robots"  # disallowed by robots.txt (known when its turn came)
    CONTENT_TYPE = "content_type"  # not one of --content-types: the body was not read
    NO_SITEMAP = "no sitemap"  # the guessed /sitemap.xml answered 4xx
    NOINDEX = "noindex"  # meta robots / X-Robots-Tag
    CANONICAL = "canonical"  # its rel=canonical is another URL of the host, queued instead
    NOT_ARTICLE = "not article"  # --only-articles: stored without blocks (Stored.not_article)
    INDEX = "directory index"  # "/d/" and "/d/index.html" with one body: the second is not stored


@dataclass(frozen=True, slots=True)
class Links:
    """Links admitted from one page (admission.admit_links): new items, keys rejected for good,
    and the counts of those turned away."""

    items: tuple[Item, ...] = ()
    rejected: frozenset[str] = frozenset()
    filtered: Counter[str] = field(default_factory=Counter)
    invalid: Counter[str] = field(default_factory=Counter)
    robots_blocked: int = 0
    seen: int = 0  # hrefs looked at
    nofollow: int = 0  # hrefs not followed (rel=nofollow, a nofollow page)
    feeds: tuple[Item, ...] = ()  # feed files the page links (discovery.feed_items)
    feed_turned: Counter[str] = field(default_factory=Counter)

    def keys(self) -> set[str]:
        return {it.url for it in self.items} | {it.url for it in self.feeds}


NO_LINKS = Links()


@dataclass(frozen=True, slots=True)
class Stored:
    """A page stored (blocks empty when not an article under --only-articles)."""

    page: PageOut
    blocks: list[Block]
    chunks: list[Chunk]
    markdown: str
    body_hash: str
    links: Links = NO_LINKS
    not_article: bool = False
    stored_before: bool = False  # recrawl: replaces a stored page (changed) rather than a new one


@dataclass(frozen=True, slots=True)
class NotStored:
    """Fetched and read for links, not stored: noindex, or folded onto its canonical URL."""

    why: SkipReason
    detail: str
    links: Links = NO_LINKS
    canonical: Item | None = None  # the canonical URL to queue (new to the crawl)


@dataclass(frozen=True, slots=True)
class Unchanged:
    """Recrawl: 304, or a 200 with the body stored before. Both refund their --max-pages fetch
    (refunds): the budget counts pages that came in (new or changed), so a recrawl of an unchanged
    600-page site with --max-pages 100 does not stop after 0 pages, "600 unchanged"."""


@dataclass(frozen=True, slots=True)
class Gone:
    """Recrawl: a stored page now answers 404/410; it is removed from the store."""


@dataclass(frozen=True, slots=True)
class Redirected:
    """A 3xx followed as a new URL (target None: already known; filtered: why it is not followed)."""

    target_url: str
    target: Item | None = None
    filtered: str | None = None


@dataclass(frozen=True, slots=True)
class Retry:
    """Ask again after `wait` s (the host as a whole is paused by its health: health.py)."""

    wait: float


@dataclass(frozen=True, slots=True)
class Failed:
    """Given up: `label` is what the frontier records (e.g. "http 404"), kind what the summary counts.
    redirect: the failure is of a redirect (counted as one; its fetch is refunded)."""

    kind: FailKind
    label: str
    detail: str = ""
    redirect: bool = False


@dataclass(frozen=True, slots=True)
class Skipped:
    why: SkipReason
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ListRead:
    """A sitemap or feed read: the URLs it lists as items (listed: pages, not an index's sitemaps)."""

    items: tuple[Item, ...] = ()
    turned: Counter[str] = field(default_factory=Counter)
    listed: bool = True
    error: str | None = None  # what was wrong with it (parsed what it could), or why it could not be read


@dataclass(frozen=True, slots=True)
class RobotsRead:
    """A host's robots.txt read (or given up on), with the sitemaps it names (or the probe of
    /sitemap.xml) as items."""

    host: str
    rules: HostRules
    started: float  # monotonic time its fetch started (its Crawl-delay counts from then)
    requests: int = 0  # robots.txt requests made (it is asked again once when it failed)
    items: tuple[Item, ...] = ()
    turned: Counter[str] = field(default_factory=Counter)
    probes: tuple[str, ...] = ()  # keys of guessed /sitemap.xml items (a 4xx there is no error)


@dataclass(frozen=True, slots=True)
class Admitted:
    """A slice of a page's links (or of a sitemap's URLs) admitted ahead of its outcome, recorded
    at once so that the next slice sees it: the loop serves the other hosts between slices (the
    200k links of one page froze every host for 5.2 s in one piece; admission.ADMIT_SLICE)."""

    links: Links
    listed: bool = False  # a sitemap's pages (Scheduler.add: link-found and listed URLs take turns)


@dataclass(frozen=True, slots=True)
class Answered:
    """An answer came: counted, and the host's health updated (health.HostHealth), whatever is
    decided about the URL (recorded as it arrives, before the page's analysis)."""


@dataclass(frozen=True, slots=True)
class Launched:
    """A fetch of a page or list starts: it uses up one --max-pages fetch."""


@dataclass(frozen=True, slots=True)
class Requeued:
    """A hard stop cancelled the fetch: the URL goes back to the queue (--resume fetches it)."""


@dataclass(frozen=True, slots=True)
class SiteLearned:
    """A site learned its model at the end of its pages (Analyzer.finish)."""

    site: str
    page: PageOut


@dataclass(frozen=True, slots=True)
class Claimed:
    """Shared frontier: items handed to this worker (already in the shared seen-set)."""

    items: list[Item]


Outcome = (Stored | NotStored | Unchanged | Gone | Redirected | Retry | Failed | Skipped | ListRead
           | RobotsRead)
# what Recorder.apply takes
Event: TypeAlias = "Outcome | Admitted | Answered | Launched | Requeued | SiteLearned | Claimed | SeedPlan"
# the events of one frontier entry (Recorder._item): every Event but the five that name no entry
ItemEvent: TypeAlias = ("Stored | NotStored | Unchanged | Gone | Redirected | Retry | Failed | Skipped | ListRead"
                        " | Answered | Launched | Requeued")


Record = Callable[["Item | None", "FetchResult | None", Event], None]  # Recorder.apply


def no_record(it: Item | None, res: FetchResult | None, out: Event) -> None:
    """A decision run alone (a table test) records nothing."""


def refunds(out: object) -> bool:
    """Whether the fetch does not use up a --max-pages fetch: it brought no page (a retry, a
    redirect, a body not read for its type, a missing guessed sitemap, a recrawled page that has
    not changed: a 304, and a 200 with the stored body too, since what it costs in bytes is the
    server's choice, not the page's: see Unchanged). The one place that says so."""
    if isinstance(out, (Retry, Redirected, Unchanged)):
        return True
    if isinstance(out, Failed):
        return out.redirect
    return isinstance(out, Skipped) and out.why in (SkipReason.CONTENT_TYPE, SkipReason.NO_SITEMAP)

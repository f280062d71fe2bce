"""Link admission: which URLs a page, a redirect or a canonical link adds to the crawl.

`Known` holds what the crawl knows of URLs (seen, rejected for good, folded onto their canonical,
failed, redirect hops, guessed sitemaps); only the engine's `record` changes it. The decisions
here read it through `KnownView` (read-only set types: mypy refuses a write) and return values
(outcome.Links, Redirected, Failed, an Item), so each is tested by a table
(tests/crawl/test_crawl_outcomes.py).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Protocol

from ..frontier import Item
from ..sources.links import canonical_elsewhere
from ..sources.sitemaps import make_item
from ..urls import Resolver, host_of, url_key
from .outcome import Failed, FailKind, Links, Redirected
from .policy import UrlPolicy, date_trail, page_is_dated, permanent, reject_reason
from .retry import redirect_chain, redirect_problem


class KnownView(Protocol):
    """What the decisions may read of `Known`."""

    @property
    def seen(self) -> AbstractSet[str]: ...
    @property
    def rejected(self) -> AbstractSet[str]: ...
    @property
    def folded(self) -> AbstractSet[str]: ...
    @property
    def gone(self) -> AbstractSet[str]: ...
    @property
    def probes(self) -> AbstractSet[str]: ...
    @property
    def redirect_via(self) -> Mapping[str, str]: ...
    @property
    def directories(self) -> Mapping[str, tuple[str, str]]: ...


@dataclass(slots=True)
class Known:
    """URL keys the crawl knows: accepted (the seen-set), rejected for good (policy, robots.txt),
    not stored because their canonical is another URL, failed (a canonical pointing there is not
    followed), the hop each redirect target came from, /sitemap.xml guesses (a 404 there is
    no error), and the body hash of each directory (or its index file) stored."""

    seen: set[str] = field(default_factory=set)
    rejected: set[str] = field(default_factory=set)
    folded: set[str] = field(default_factory=set)
    gone: set[str] = field(default_factory=set)
    probes: set[str] = field(default_factory=set)
    redirect_via: dict[str, str] = field(default_factory=dict)
    # directory key -> (key, body hash) of the first of "/d/" and "/d/index.html" stored (pagestep.same_index)
    directories: dict[str, tuple[str, str]] = field(default_factory=dict)

    def known(self, key: str) -> bool:
        return key in self.seen or key in self.rejected


# URLs admitted in one piece on the loop. Admission costs about 10 us a URL (resolve, canonicalise,
# policy), so a slice holds the loop for some 20 ms; the 200k links of one page took 5.2 s in one
# piece, and a sitemap index of 10 x 50,000 URLs stopped every host for 10.9 s.
ADMIT_SLICE = 2000

Blocks = Callable[[str, str], bool]  # Scheduler.blocks(host, url): robots.txt, when known, disallows url


class Admission:
    """The link decisions of one crawl: its URL policy, resolver and robots.txt test, over `known`."""

    def __init__(self, known: KnownView, policy: UrlPolicy, resolver: Resolver, blocks: Blocks,
                 max_redirects: int) -> None:
        self.known, self.policy, self.resolver, self.blocks = known, policy, resolver, blocks
        self.max_redirects = max_redirects

    def knows(self, key: str) -> bool:
        return key in self.known.seen or key in self.known.rejected

    def links(self, page_url: str, base: str, hrefs: Iterable[str], depth: int, trail: int = 0,
              nofollow: int = 0) -> Links:
        """Resolve, canonicalise and filter the links of one page: the new items (each URL once)
        and why the others were turned away. trail: the page's own date-chain trail (crawl.decisions.traps)."""
        new: list[Item] = []
        keys: set[str] = set()
        rejected: set[str] = set()
        filtered: Counter[str] = Counter()
        invalid: Counter[str] = Counter()
        blocked = n = 0
        seen, rej, resolve = self.known.seen, self.known.rejected, self.resolver.resolve
        policy, blocks = self.policy, self.blocks
        page_dated = page_is_dated(policy, page_url)
        for href in hrefs:
            n += 1
            url, why = resolve(base, href)
            if url is None:
                invalid[why or "malformed"] += 1
                continue
            key = url_key(url)
            if key in seen or key in keys:
                continue
            if key in rej or key in rejected:
                filtered["repeat"] += 1
                continue
            reason = reject_reason(policy, url, depth)
            if reason:
                filtered[reason] += 1
                if permanent(reason):
                    rejected.add(key)
                continue
            t = date_trail(policy, page_url, trail, page_dated, url)
            if t is None:
                filtered["date-trap"] += 1  # not rejected for good: a shorter chain may reach it
                continue
            it = make_item(url, depth, trail=t)
            if blocks(it.host, url):
                blocked += 1
                rejected.add(key)
                continue
            keys.add(key)
            new.append(it)
        return Links(tuple(new), frozenset(rejected), filtered, invalid, blocked, n, nofollow)

    def fold(self, it: Item, base: str, href: str | None, links: Links) -> tuple[str | None, Item | None]:
        """The canonical URL this page defers to (then it is not stored) and the item to queue for
        it when it is new; (None, None): the page is stored.

        A page naming another URL of its host as canonical is not stored twice: the canonical URL
        is stored and this one skipped. It is stored after all when the canonical cannot stand
        for it: out of scope or excluded, disallowed by robots.txt, failed, itself folded onto
        another page (A <-> B canonicals: the second one is kept), or the URL that redirected here."""
        c = canonical_elsewhere(it.target, base, href)
        if c is None:
            return None, None
        key = url_key(c)
        k = self.known
        if (key in k.folded or key in k.gone or key in k.rejected or key in links.rejected
                or (it.via is not None and key in redirect_chain(it.url, it.via, k.redirect_via))
                or reject_reason(self.policy, c, 0) or self.blocks(host_of(c), c)):
            return None, None
        if key in k.seen or key in links.keys():
            return c, None
        return c, make_item(c, it.depth, trail=it.trail)

    def redirect(self, it: Item, location: str) -> Redirected | Failed:
        """A 3xx answer's Location: followed as a new URL (robots, politeness and dedup apply to
        every hop), or a failure (no URL, a loop, too many hops)."""
        target, why = self.resolver.resolve(it.target, location)
        if target is None:
            return Failed(FailKind.BAD_REDIRECT, "bad redirect", f"Location {location!r}: {why}", redirect=True)
        tkey = url_key(target)
        problem = redirect_problem(tkey, redirect_chain(it.url, it.via, self.known.redirect_via), it.hops,
                                   self.max_redirects)
        if problem == "redirect loop":
            return Failed(FailKind.REDIRECT_LOOP, problem, f"-> {target}", redirect=True)
        if problem:
            return Failed(FailKind.TOO_MANY_REDIRECTS, problem, f"{it.hops + 1} hops -> {target}", redirect=True)
        if tkey in self.known.seen:
            return Redirected(target)
        reason = reject_reason(self.policy, target, it.depth, it.kind)
        if reason:
            return Redirected(target, filtered=reason)
        return Redirected(target, make_item(target, it.depth, it.kind, hops=it.hops + 1, via=it.url, trail=it.trail))

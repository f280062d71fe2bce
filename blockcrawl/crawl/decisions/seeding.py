"""Seeding: what a crawl starts from - fresh seeds, a resumed frontier, or a recrawl of the store's
pages (the baseline its answers are compared with). Pure: the engine reads the frontier and the
store, passes what it read, and records the returned SeedPlan (tests/crawl/test_crawl_outcomes.py).
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..frontier import Item
from ..sources.sitemaps import make_item
from ..urls import url_key

if TYPE_CHECKING:
    from ..net.fetch import FetchResult
    from ..protocols import Fetcher

# recrawl baseline: url key -> (etag, last_modified, body_hash) of the stored page before this run
Validators = tuple[str | None, str | None, str | None]
StoredRow = tuple[str, str, float, str | None, str | None, str | None]  # Store.recrawl_pages()


@dataclass(frozen=True, slots=True)
class SeedPlan:
    seeds: list[str]  # every seed of the crawl (the URL policy's scope)
    reset: bool = False  # the frontier starts afresh
    meta: dict[str, str] = field(default_factory=dict)  # frontier meta values to set
    restore: list[Item] = field(default_factory=list)  # resume: queued as they are
    seen: frozenset[str] = frozenset()  # keys known without being accepted now
    done: list[Item] = field(default_factory=list)  # recrawl: fresh pages, recorded as done
    accept: list[Item] = field(default_factory=list)  # new URLs
    recrawl: bool = False
    baseline: dict[str, Validators] = field(default_factory=dict)
    message: str = ""


def old_seeds(meta: str | None) -> list[str]:
    return list(json.loads(meta or "[]"))


def fresh(seeds: list[str]) -> SeedPlan:
    return SeedPlan(seeds, reset=True, meta={"seeds": json.dumps(seeds), "recrawl": "0"},
                    accept=list({url_key(u): make_item(u, 0) for u in seeds}.values()))


def resume(seeds: list[str], old: list[str], seen: set[str], restored: list[Item], was_recrawl: bool,
           stored: Iterable[StoredRow]) -> SeedPlan:
    """Go on from the frontier: its queued rows as they are, new seeds added; an interrupted
    recrawl goes on as one (stored: the store's pages, read only then)."""
    seeds_all = list(dict.fromkeys(old + seeds))
    new = [make_item(u, 0) for u in seeds if url_key(u) not in seen]
    baseline = {u: (e, m, h) for u, _, _, e, m, h in stored} if was_recrawl else {}
    return SeedPlan(seeds_all, meta={"seeds": json.dumps(seeds_all)}, restore=restored, seen=frozenset(seen),
                    accept=new, recrawl=was_recrawl, baseline=baseline,
                    message=f"resuming: {len(seen)} URLs known, {len(restored) + len(new)} to fetch")


def recrawl(seeds: list[str], old: list[str], stored: Iterable[StoredRow], now: float,
            max_age: float | None, pending: Iterable[Item] = ()) -> SeedPlan:
    """Revisit the store's pages: every stored page (those fetched less than max_age ago are
    known but not fetched) is queued at depth 0 with its validators, then the seeds (the store's
    and any given); links are followed as in any crawl. The frontier starts afresh, but the URLs
    the previous run left queued or in flight (`pending`, Frontier.restore) are queued again after
    those, as they were (depth, attempts): dropping them (thousands of URLs of a capped crawl)
    would leave --resume nothing to extend."""
    seeds_all = list(dict.fromkeys(old + seeds))
    baseline: dict[str, Validators] = {}
    due: dict[str, Item] = {}
    done: list[Item] = []
    for url, final, fetched_at, etag, modified, digest in stored:
        baseline[url] = (etag, modified, digest)
        it = make_item(final, 0) if url_key(final) == url else make_item(url, 0)
        if max_age is not None and now - fetched_at < max_age:
            done.append(it)
        else:
            due[it.url] = it
    seen = frozenset(it.url for it in done)  # known, so not fetched again when linked
    accept = list(due.values()) + [make_item(u, 0) for u in seeds_all if url_key(u) not in due and url_key(u) not in seen]
    keys = {it.url for it in accept} | seen
    kept = [it for it in pending if it.url not in keys and it.url not in baseline]
    accept += kept
    return SeedPlan(seeds_all, reset=True, meta={"seeds": json.dumps(seeds_all), "recrawl": "1"}, seen=seen,
                    done=done, accept=accept, recrawl=True, baseline=baseline,
                    message=f"recrawl: {len(baseline)} stored pages, {len(due)} due, {len(done)} fresh, "
                            f"{len(kept)} still queued from the last run")


def conditional(v: Validators | None) -> dict[str, str] | None:
    """If-None-Match / If-Modified-Since for a stored page with validators (recrawl)."""
    if v is None or not (v[0] or v[1]):
        return None
    h = {}
    if v[0]:
        h["If-None-Match"] = v[0]
    if v[1]:
        h["If-Modified-Since"] = v[1]
    return h


async def conditional_get(fetcher: Fetcher, it: Item, accept: tuple[str, ...] | None,
                          gate: Callable[[], Awaitable[None]], on_sent: Callable[[], None],
                          stored: Validators | None) -> FetchResult:
    """The item's GET, conditional when it has validators (headers are passed only then, so a
    fetcher without them still works for a plain crawl)."""
    cond = conditional(stored)
    if cond:
        return await fetcher.get(it.target, accept=accept, gate=gate, on_sent=on_sent, headers=cond)
    return await fetcher.get(it.target, accept=accept, gate=gate, on_sent=on_sent)

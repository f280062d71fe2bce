"""The page decision: a fetched HTML page (or PDF) becomes Stored, NotStored (meta robots or
X-Robots-Tag noindex, folded onto its canonical URL), Unchanged (recrawl: the same body) or
Failed (an unreadable PDF), with the links it adds (admission.py).

`PageStep.take` does the awaiting (the site's dedup state and stored model sent to its analyser
first, the analysis off the loop); `decide` is the pure part, run after the last await so that
the seen-set it reads is the one the engine records against.
"""
from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from .admission import Admission
from .discovery import Discovery
from .fetch import FetchResult
from .frontier import Item
from .links import canonical_elsewhere, x_robots_tag
from .outcome import Failed, FailKind, Links, NotStored, Outcome, SiteLearned, SkipReason, Stored, Unchanged
from .process import PageOut
from .protocols import Analyzer
from .seeding import Validators
from .sitemodels import SiteModels, stored_content
from .triage import FOLLOW, READ, triage

log = logging.getLogger("blockcrawl.crawl")


@dataclass(frozen=True, slots=True)
class PageRules:
    """The crawl settings a page decision reads (from CrawlConfig and the pipeline's config)."""

    max_depth: int | None = None
    follow_nofollow: bool = False
    feeds: bool = True
    only_articles: bool = False
    extract: bool = True  # the pipeline extracts (not --no-extract)
    agent: str = "blockcrawl"


def decide(it: Item, res: FetchResult, page: PageOut, content: PageOut, body_hash: str, *, rules: PageRules,
           admission: Admission, discovery: Discovery | None, stored_before: bool) -> Outcome:
    """page: the analysis that gave the links and signals; content: the one whose blocks are
    stored (the same, or a second run of the pipeline when a canonical fold was refused)."""
    follow = rules.max_depth is None or it.depth < rules.max_depth
    h_noindex, h_nofollow = x_robots_tag(list(res.robots_tag), rules.agent)
    sig = page.signals
    links = Links()
    if follow and (sig.nofollow or h_nofollow):
        links = Links(nofollow=len(page.hrefs) + len(sig.nofollow_hrefs))
    elif follow:
        hrefs, nofollow = page.hrefs, 0
        if sig.nofollow_hrefs:
            if rules.follow_nofollow:
                hrefs = hrefs + list(sig.nofollow_hrefs)
            else:
                nofollow = len(sig.nofollow_hrefs)
        links = admission.links(it.target, page.base, hrefs, it.depth + 1, it.trail, nofollow)
        if rules.feeds and sig.feeds and discovery is not None:
            keys = links.keys()
            feeds, turned = discovery.feeds(page.base, sig.feeds, lambda k: admission.knows(k) or k in keys)
            links = replace(links, feeds=tuple(feeds), feed_turned=turned)
    if sig.noindex or h_noindex:
        return NotStored(SkipReason.NOINDEX, "noindex", links)
    canonical, item = admission.fold(it, page.base, sig.canonical, links)
    if canonical is not None:
        return NotStored(SkipReason.CANONICAL, "canonical " + canonical, links, item)
    blocks, chunks, markdown, not_article = stored_content(content, rules.only_articles)
    return Stored(content, blocks, chunks, markdown, body_hash, links, not_article, stored_before)


class PageStep:
    """One URL's way from its answer to its outcome: triage, then the redirect, the page or the list."""

    def __init__(self, analyzer: Analyzer, admission: Admission, discovery: Discovery, models: SiteModels,
                 rules: PageRules, baseline: Mapping[str, Validators], *, block_hashes: Callable[[str], list[tuple[str, str]]],
                 prime: bool, send_models: bool, retries: int, backoff: float) -> None:
        """block_hashes: the store's blocks of a site (its dedup state after a resume, or from
        another worker of a shared frontier) when prime; send_models: a stored site model goes to
        the site's pipeline before its first page (resume, recrawl)."""
        self.analyzer, self.admission, self.discovery, self.models = analyzer, admission, discovery, models
        self.rules, self.baseline, self.block_hashes = rules, baseline, block_hashes
        self.prime, self.send_models, self.retries, self.backoff = prime, send_models, retries, backoff
        self.primed: set[str] = set()

    async def outcome(self, it: Item, res: FetchResult, stopping: bool) -> Outcome:
        """What the answer `res` to `it` comes to (triage.triage first)."""
        out = triage(it, res, stored=it.url in self.baseline, probe=it.url in self.admission.known.probes,
                     retries=self.retries, backoff=self.backoff, jitter=random.random(), stopping=stopping)
        if out == FOLLOW:
            return self.admission.redirect(it, res.location or "")
        if out == READ:
            return await (self.take(it, res) if it.kind == "page" else self.discovery.read_list(it, res))
        assert not isinstance(out, str)
        return out

    def forget(self, host: str) -> None:
        """A host no longer leased here: primed again from the store if this worker gets it back."""
        self.primed.discard(host)

    async def take(self, it: Item, res: FetchResult) -> Outcome:
        if self.prime and it.host not in self.primed:
            # blocks kept before the interruption (or by the worker whose host this was): the
            # site's dedup state continues
            self.primed.add(it.host)
            await self.analyzer.prime(it.host, self.block_hashes(it.host + "/"))
        m = self.models.to_send(it.host) if self.send_models else None
        if m is not None and await self.analyzer.load_model(it.host, m.model):
            # resume (and recrawl): the crawl goes on extracting with the stored model instead of
            # learning it again
            self.models.loaded(it.host, m)
        rules = self.rules
        follow = rules.max_depth is None or it.depth < rules.max_depth
        # X-Robots-Tag is known before the analysis: a noindex page is parsed for links only
        h_noindex = x_robots_tag(list(res.robots_tag), rules.agent)[0]
        body = res.body or b""
        body_hash = hashlib.blake2b(body, digest_size=16).hexdigest()
        before = self.baseline.get(it.url)
        if before is not None and before[2] == body_hash:
            # recrawl, a 200 with the same body (a server without validators): kept as it is, and
            # not analysed (its links are the ones it had)
            return Unchanged()
        page = await self.analyzer.analyse(it.host, body, it.target, res.content_type, follow,
                                           False if h_noindex else None)
        if page.error is not None:  # a PDF that cannot be read, a page too complex: nothing stored
            return Failed(FailKind.of_fetch(page.error_kind), page.error_kind, page.error)
        content = page
        if not page.blocks and rules.extract and canonical_elsewhere(it.target, page.base, page.signals.canonical):
            out = decide(it, res, page, page, body_hash, rules=rules, admission=self.admission, discovery=None,
                         stored_before=False)
            if isinstance(out, Stored):
                # the worker skipped the pipeline expecting a fold that the admission refused: run it now
                content = await self.analyzer.analyse(it.host, body, it.target, res.content_type, False, True)
        return decide(it, res, page, content, body_hash, rules=rules, admission=self.admission,
                      discovery=self.discovery, stored_before=before is not None)

    async def finish_site(self, site: str) -> SiteLearned | None:
        """The site has no more pages for now: its pipeline learns on the pages it collected; the
        model and the revised pages to record, or None (nothing learned)."""
        try:
            out = await self.analyzer.finish(site)
        except Exception as e:  # a worker lost: the pages stay as stored (auto)
            log.warning("%s: site model not learned at the end of its pages (%r)", site, e)
            return None
        if out is None or (out.model is None and not out.revised):
            return None
        log.info("%s: site model learned on its last %d pages", site, len(out.revised))
        return SiteLearned(site, out)

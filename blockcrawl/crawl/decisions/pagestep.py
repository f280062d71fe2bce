"""The page decision: a fetched HTML page (or PDF) becomes Stored, NotStored (meta robots or
X-Robots-Tag noindex, folded onto its canonical URL or, a directory index, onto its directory),
Unchanged (recrawl: the same body) or Failed (an unreadable PDF), with the links it adds (admission.py).

`PageStep.take` does the awaiting (the site's dedup state and stored model sent to its analyser
first, the analysis off the loop); `decide` is the pure part, run after the last await so that
the seen-set it reads is the one the engine records against.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from ..analysis.process import PageOut
from ..frontier import Item
from ..net.fetch import FetchResult
from ..protocols import Analyzer
from ..sources.links import canonical_elsewhere, x_robots_tag
from .admission import ADMIT_SLICE, Admission
from .discovery import Discovery
from .outcome import (
    Admitted,
    Failed,
    FailKind,
    Links,
    NotStored,
    Outcome,
    Record,
    SiteLearned,
    SkipReason,
    Stored,
    Unchanged,
    no_record,
)
from .seeding import Validators
from .sitemodels import SiteModels, stored_content
from .triage import FOLLOW, READ, triage

log = logging.getLogger("blockcrawl.crawl")


# the files a server answers for a bare directory: "/zip/" and "/zip/index.html" are one page
INDEX_FILES = frozenset(("index.html", "index.htm", "index.php", "default.htm", "default.html", "default.aspx"))


def directory_of(key: str) -> str | None:
    """The directory key of a frontier key that is a directory ("/d/") or its index file
    ("/d/index.html", any case); None for any other URL, and any with a query."""
    if "?" in key:
        return None
    last = key[key.rfind("/") + 1:]
    if not last or last.lower() in INDEX_FILES:
        return key[:len(key) - len(last)]
    return None


def same_index(key: str, body_hash: str, directories: Mapping[str, tuple[str, str]]) -> str | None:
    """The stored URL this directory (or index file) is the same page as: the other of "/d/" and
    "/d/index.html" was stored with the same body (else a crawl stores both as two pages).
    A different body (an index.html that is not what the directory serves) is a page of its own."""
    d = directory_of(key)
    first = directories.get(d) if d is not None else None
    return first[0] if first is not None and first[0] != key and first[1] == body_hash else None


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
    first = same_index(it.url, body_hash, admission.known.directories)
    if first is not None:
        return NotStored(SkipReason.INDEX, "same page as " + first, links)
    blocks, chunks, markdown, not_article = stored_content(content, rules.only_articles)
    return Stored(content, blocks, chunks, markdown, body_hash, links, not_article, stored_before)


class PageStep:
    """One URL's way from its answer to its outcome: triage, then the redirect, the page or the list."""

    def __init__(self, analyzer: Analyzer, admission: Admission, discovery: Discovery, models: SiteModels,
                 rules: PageRules, baseline: Mapping[str, Validators], *, block_hashes: Callable[[str], list[tuple[str, str]]],
                 prime: bool, send_models: bool, retries: int, backoff: float, record: Record = no_record) -> None:
        """block_hashes: the store's blocks of a site (its dedup state after a resume, or from
        another worker of a shared frontier) when prime; send_models: a stored site model goes to
        the site's pipeline before its first page (resume, recrawl)."""
        self.analyzer, self.admission, self.discovery, self.models = analyzer, admission, discovery, models
        self.rules, self.baseline, self.block_hashes = rules, baseline, block_hashes
        self.prime, self.send_models, self.retries, self.backoff = prime, send_models, retries, backoff
        self.primed: set[str] = set()
        self.record = record  # Recorder.apply: the slices of a page's many links (_admit_ahead)

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
        h_noindex, h_nofollow = x_robots_tag(list(res.robots_tag), rules.agent)
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
        if follow and len(page.hrefs) > ADMIT_SLICE and not (page.signals.nofollow or h_nofollow):
            page = await self._admit_ahead(it, page)
        if not page.blocks and rules.extract and canonical_elsewhere(it.target, page.base, page.signals.canonical):
            out = decide(it, res, page, page, body_hash, rules=rules, admission=self.admission, discovery=None,
                         stored_before=False)
            if isinstance(out, Stored):
                # the worker skipped the pipeline expecting a fold that the admission refused: run it now
                content = await self.analyzer.analyse(it.host, body, it.target, res.content_type, False, True)
        return decide(it, res, page, content, body_hash, rules=rules, admission=self.admission,
                      discovery=self.discovery, stored_before=before is not None)

    async def _admit_ahead(self, it: Item, page: PageOut) -> PageOut:
        """All but the last ADMIT_SLICE of a page's links admitted and recorded a slice at a time,
        the loop serving the other hosts between slices; the page with its last slice for `decide`
        (which sees the earlier slices in the seen-set, as if it had admitted them itself)."""
        hrefs, n = page.hrefs, len(page.hrefs) - ADMIT_SLICE
        for i in range(0, n, ADMIT_SLICE):
            part = hrefs[i:min(i + ADMIT_SLICE, n)]
            self.record(it, None, Admitted(self.admission.links(it.target, page.base, part, it.depth + 1, it.trail)))
            await asyncio.sleep(0)
        return replace(page, hrefs=hrefs[n:])

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

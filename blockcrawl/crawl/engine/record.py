"""The engine's bookkeeping: `Recorder.apply` is the one place that writes the frontier, the crawl
stats, the --max-pages budget, the seen-sets and the stored pages, for every outcome a decision
returns (outcome.py) and the few events of the engine itself (a launch, a cancel, a seed plan,
a site learning at the end of its pages)."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import suppress
from typing import assert_never

from ...errors import StoreError
from ..analysis.process import PageOut
from ..decisions import outcome as o
from ..decisions.pagestep import directory_of
from ..decisions.seeding import SeedPlan
from ..decisions.sitemodels import stored_content
from ..frontier import DONE, FAILED, IN_FLIGHT, QUEUED, SKIPPED, Item
from ..net.fetch import FetchResult
from ..protocols import CrawlListener, RenderTally
from ..urls import url_key
from .context import CrawlContext
from .health import HostHealth
from .queues import Queues

log = logging.getLogger("blockcrawl.crawl")
_NO_RES = FetchResult("")


class Recorder:
    def __init__(self, ctx: CrawlContext) -> None:
        self.ctx = ctx
        self.store, self.frontier, self.shared, self.sched, self.known = (ctx.store, ctx.frontier, ctx.shared,
                                                                          ctx.sched, ctx.known)
        self.stats, self.models, self.baseline, self.clock = ctx.stats, ctx.models, ctx.baseline, ctx.clock
        self.queues = Queues(ctx.known, ctx.frontier, ctx.shared, ctx.sched, ctx.stats, ctx.config.max_queued)
        self.accept = self.queues.accept  # the in-memory cap: queues.py
        self.only_articles, self.health = ctx.config.only_articles, HostHealth(ctx.config.backoff)
        self.listeners: Sequence[CrawlListener] = ()
        self.started = 0  # page and list fetches started that count against --max-pages

    def apply(self, it: Item | None, res: FetchResult | None, out: o.Event) -> None:
        """Record what happened to `it` (its fetch's answer `res`). One case per kind of event; the
        last, assert_never, makes mypy name an event of outcome.py that no case handles."""
        r = res or _NO_RES
        if o.refunds(out):
            self.started -= 1
        match out:
            case SeedPlan():
                self._seeds(out)
            case o.SiteLearned():
                self._learned(out.site, out.page, own=False)
            case o.Claimed():
                for c in out.items:
                    self.known.seen.add(c.url)
                    self.sched.add(c)
            case o.RobotsRead():
                self._robots(r, out)
            case o.Admitted():
                self._links(out.links, out.listed)
            case _:
                assert it is not None
                self._item(it, r, out)

    def _item(self, it: Item, r: FetchResult, out: o.ItemEvent) -> None:
        """The events of one frontier entry."""
        match out:
            case o.Launched():
                self.started += 1
                self.queues.left()
                self.frontier.mark(it.url, IN_FLIGHT)
            case o.Answered():
                self._answered(it, r)
            case o.Requeued():  # if the store cannot take even that, the row stays in
                with suppress(StoreError):  # flight, which --resume also queues again
                    self.frontier.mark(it.url, QUEUED)
            case o.Stored():
                self._stored(it, r, out)
            case o.NotStored():
                self._not_stored(it, r, out)
            case o.Retry():
                self._retry(it, r, out)
            case o.Failed():
                self._failed(it, r, out)
            case o.Skipped():
                self._skipped(it, r, out)
            case o.Redirected():
                self._redirected(it, r, out)
            case o.ListRead():
                self._list(it, r, out)
            case o.Unchanged():
                self.stats.unchanged += 1
                self.store.touch_page(it.url, etag=r.etag, last_modified=r.last_modified)
                self._done(it, r, "unchanged")
            case o.Gone():  # a stored page answers 404/410: it and its blocks are removed
                self.stats.gone += 1
                self.known.gone.add(it.url)
                self.store.delete_page(it.url, reason=f"gone {r.status}")
                self.frontier.mark(it.url, FAILED, r.status, "gone")
                self.frontier.log(it.url, "gone", r.status, None, "removed from the store", r.nbytes, r.elapsed)
            case _:
                assert_never(out)

    # ------------------------------------------------------------------ the parts of apply
    def _seeds(self, p: SeedPlan) -> None:
        fr = self.frontier
        if p.reset:
            fr.reset()
        for k, v in p.meta.items():
            fr.set_meta(k, v)
        self.stats.recrawl = self.stats.recrawl or p.recrawl
        self.baseline.update(p.baseline)
        self.known.seen.update(p.seen)
        if p.done:
            fr.add(p.done)
            for it in p.done:
                fr.mark(it.url, DONE)
        for it in p.restore:
            self.queues.hold(it)
        self.accept(p.accept)
        if p.message:
            log.info("%s", p.message)

    def _links(self, links: o.Links, listed: bool = False) -> None:
        st = self.stats
        st.nofollow += links.nofollow
        st.invalid.update(links.invalid)
        st.filtered.update(links.filtered)
        st.robots_blocked += links.robots_blocked
        st.links_seen += links.seen
        self.known.rejected.update(links.rejected)
        self.accept(links.items, listed)
        st.filtered.update(links.feed_turned)
        self.accept(links.feeds)

    def _stored(self, it: Item, r: FetchResult, out: o.Stored) -> None:
        self._links(out.links)
        p, st = out.page, self.stats
        st.not_articles += out.not_article
        self.store.save_page(it.url, out.blocks, out.chunks, final_url=it.target, status=r.status or 200,
                             content_type=r.content_type, title=p.title, content_hash=p.content_hash,
                             markdown=out.markdown, etag=r.etag, last_modified=r.last_modified,
                             body_hash=out.body_hash, info=p.info)
        self._learned(it.host, p, own=True)
        self.models.page_stored(it.host, self.clock.monotonic())
        if (d := directory_of(it.url)) is not None:  # the first of "/d/" and "/d/index.html" (pagestep.same_index)
            self.known.directories.setdefault(d, (it.url, out.body_hash))
        if st.recrawl:
            if out.stored_before:
                st.changed += 1
            else:
                st.new += 1
        self._done(it, r, "fetched")
        st.pages += 1
        st.blocks += len(out.blocks)
        st.chunks += len(out.chunks)
        for listener in self.listeners:
            listener.page(st)

    def _learned(self, site: str, page: PageOut, own: bool) -> None:
        """The earlier pages a site's pipeline revised replace their stored versions, and a model
        learned is saved (sitemodels.SiteModels.learned says which row, with what counts)."""
        infos = []
        for rv in page.revised:
            if rv.url is None:
                continue
            blocks, chunks, markdown, _ = stored_content(rv, self.only_articles)
            if self.store.replace_content(url_key(rv.url), blocks, chunks, markdown=markdown,
                                          content_hash=rv.content_hash, info=rv.info) is None:
                continue  # not stored (noindex, canonical elsewhere): nothing to revise
            self.stats.revised += 1
            infos.append(rv.info)
        self.stats.models += page.model is not None
        m = self.models.learned(site, page.model, infos, (page.info,) if own else None)
        if m is not None:  # a new model is written with the page it was learned on
            self.store.save_site_model(site, m.model, version=m.version, pages=m.pages, fallbacks=m.fallbacks)

    def budget_spent(self, max_pages: int | None, inflight: bool) -> bool:
        """--max-pages fetches started, and they are over (or the pages asked for are in)."""
        return max_pages is not None and self.started >= max_pages and (not inflight or self.stats.pages >= max_pages)

    def commit(self) -> None:
        """Site model counts, then the store's transaction; a shared frontier's state changes go
        out after it (a page is stored before the frontier says it is done)."""
        for site, m in self.models.flush():
            self.store.save_site_model(site, m.model, version=m.version, pages=m.pages, fallbacks=m.fallbacks)
        self.store.commit()
        if self.shared is not None:
            self.shared.flush()

    def finish(self, renders: RenderTally | None, stopped: str, elapsed: float, after_error: bool) -> None:
        """The end of the run: the last commit (after_error: the store already refused a write, so
        this one may fail too); how it ended, and the rendering fetcher's counts."""
        self.stats.stopped, self.stats.elapsed = stopped, elapsed
        try:
            for site, m in self.models.flush():
                self.store.save_site_model(site, m.model, version=m.version, pages=m.pages, fallbacks=m.fallbacks)
            self.store.commit()
        except StoreError as e:
            if not after_error:
                raise
            log.debug("final commit after a store error: %s", e)
        if renders is not None:
            st = self.stats
            st.renders, st.render_requests, st.render_failed = (renders.renders, renders.render_requests,
                                                                renders.render_failed)

    def _not_stored(self, it: Item, r: FetchResult, out: o.NotStored) -> None:
        self._links(out.links)
        if out.why is o.SkipReason.NOINDEX:
            self.stats.noindex += 1
        else:
            self.stats.canonical += 1
            if out.canonical is not None:
                self.accept([out.canonical])
            self.known.folded.add(it.url)
        why = {o.SkipReason.CANONICAL: "canonical elsewhere"}.get(out.why, out.why.value)  # the change log's reason
        if it.url in self.baseline and self.store.delete_page(it.url, why):  # recrawl: stored before, not now
            self.stats.gone += 1
        self._done(it, r, "fetched", "not stored: " + out.detail)

    def _done(self, it: Item, r: FetchResult, event: str, detail: str = "") -> None:
        self.frontier.mark(it.url, DONE, r.status)
        self.frontier.log(it.url, event, r.status, None, detail, r.nbytes, r.elapsed)

    def _answered(self, it: Item, r: FetchResult) -> None:
        self.stats.requests += 1
        self.stats.bytes += r.nbytes
        v = self.health.answer(it.host, r.status, r.error, r.retry_after)
        if v.pause:  # a failing host is paused as a whole, growing, and stopped after a bound
            self.sched.push_back(it.host, v.pause)
        if v.stop and it.host not in self.sched.stopped:
            dropped = self.sched.stop(it.host, v.stop)
            self.queues.left(dropped)
            self.stats.hosts_stopped += 1
            log.warning("%s: stopped for this crawl: %s; %d queued URLs kept for --resume", it.host, v.stop, dropped)

    def _retry(self, it: Item, r: FetchResult, out: o.Retry) -> None:
        it.attempts += 1
        it.not_before = self.clock.time() + out.wait
        self.stats.retries += 1
        self.frontier.mark(it.url, QUEUED, r.status, r.error, attempts=it.attempts, not_before=it.not_before)
        self.frontier.log(it.url, "retry", r.status, r.error,
                          f"attempt {it.attempts}, again in {out.wait:.1f} s; {r.detail}", r.nbytes, r.elapsed)
        log.info("retry %s in %.1f s (%s)", it.url, out.wait, r.error or r.status)
        self.queues.hold(it, again=True)

    def _failed(self, it: Item, r: FetchResult, out: o.Failed) -> None:
        self.stats.redirects += out.redirect
        self.known.gone.add(it.url)
        self.stats.errors += 1
        self.stats.error_kinds[out.kind] += 1
        self.frontier.mark(it.url, FAILED, r.status, out.label)
        self.frontier.log(it.url, "failed", r.status, out.label, out.detail, r.nbytes, r.elapsed)
        log.info("failed %s: %s %s", it.url, out.label, out.detail)

    def _skipped(self, it: Item, r: FetchResult, out: o.Skipped) -> None:
        if out.why is o.SkipReason.ROBOTS:  # known at its turn: nothing was fetched
            self.stats.robots_blocked += 1
            self.queues.left()
            self.frontier.mark(it.url, SKIPPED, error="robots")
            self.frontier.log(it.url, "skipped", error="robots")
            return
        if out.why is o.SkipReason.NO_SITEMAP:  # the guessed /sitemap.xml is not there: nothing failed
            self.known.gone.add(it.url)
        else:
            self.stats.skipped += 1
        self.frontier.mark(it.url, SKIPPED, r.status, out.why.value)
        self.frontier.log(it.url, "skipped", r.status, out.why.value, out.detail, r.nbytes, r.elapsed)

    def _redirected(self, it: Item, r: FetchResult, out: o.Redirected) -> None:
        self.stats.redirects += 1
        self.frontier.mark(it.url, DONE, r.status, None)
        self.frontier.log(it.url, "redirect", r.status, None, out.target_url, r.nbytes, r.elapsed)
        if out.filtered:
            self.stats.filtered[out.filtered] += 1
            self.frontier.log(it.url, "skipped", r.status, "redirect " + out.filtered, out.target_url)
        elif out.target is not None:
            self.known.redirect_via[out.target.url] = it.url
            self.accept([out.target])

    def _list(self, it: Item, r: FetchResult, out: o.ListRead) -> None:
        self.stats.filtered.update(out.turned)
        self.accept(out.items, listed=out.listed)
        if out.error:  # parsed what it could (or nothing); say what was wrong
            self.frontier.log(it.url, "failed", error="sitemap", detail=out.error)
        if it.kind == "feed":
            self.stats.feeds += 1
        else:
            self.stats.sitemaps += 1
        self._done(it, r, "fetched", it.kind)

    def _robots(self, r: FetchResult, out: o.RobotsRead) -> None:
        self.sched.set_rules(out.host, out.rules, out.started)
        self.stats.requests += out.requests
        self.frontier.log(out.host + "/robots.txt", "robots", r.status, r.error, r.detail, r.nbytes, r.elapsed)
        self.stats.filtered.update(out.turned)
        self.known.probes.update(out.probes)
        self.accept(out.items)

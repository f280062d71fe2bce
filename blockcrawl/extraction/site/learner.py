"""The learning stage of the algorithm `site` in a SitePipeline: auto while pages are collected,
then the site model (fallback auto per page), re-learning when the model falls back too often.

SiteLearner.page(dom) -> (mask, cluster, learned): learned is None, or - on the page where a model
was (re)learned - the collected pages' (dom, mask, cluster) under the new model, in order, the
current page last: the pipeline re-runs the earlier ones (PageResult.revised); [] when the model
learned has no cluster (every page falls back: nothing to re-run).
SiteLearner.finish() -> learned: the site has no more pages for now (the crawl ended, or the site
was idle learn_seconds): learn on what was collected (>= MIN_CLUSTER pages), every page re-run.
Without it a site smaller than learn_pages crawled in under learn_seconds never learned (on the
cetd benchmark 45 of its 51 sites, 26 % of its pages).

Bounds: at most learn_pages Doms are kept (with auto's masks) while collecting; learning happens
when learn_pages pages are collected or learn_seconds have passed since the first (checked at each
page: the pipeline is never called back). A learn that fails (a bug, memory) logs one line and
leaves the pages on auto.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ...parse import Dom
from .model import MIN_CLUSTER, RELEARN_MIN, Reuse, SiteModel, learn, log

Mask = Sequence[bool] | None
Learned = list[tuple[Dom, Mask, int]]


def _auto(dom: Dom) -> Mask:
    from ..auto import select

    return select(dom) if len(dom) else None


class SiteLearner:
    def __init__(self, learn_pages: int, learn_seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.learn_pages, self.learn_seconds, self.clock = learn_pages, learn_seconds, clock
        self.model: SiteModel | None = None
        self.version = 0  # models learned (or loaded) so far
        self.collecting = True
        self.collected: list[tuple[Dom, Mask]] = []
        self.started = 0.0

    def load(self, model: SiteModel) -> None:
        """Use a saved model (crawl --resume): no collection until it falls back too often."""
        self.model, self.collecting, self.collected = model, False, []
        self.version += 1

    def page(self, dom: Dom) -> tuple[Mask, int, Learned | None]:
        auto = _auto(dom)
        mask, cluster = auto, -1
        if self.model is not None:
            mask, cluster = self.model.select(dom, auto)
            if not self.collecting and self.model.pages >= max(RELEARN_MIN, self.learn_pages) \
                    and self.model.needs_relearn():
                log.info("site model: %d of %d pages fell back to auto; re-learning",
                         self.model.fallbacks, self.model.pages)
                self.collecting = True
        if not self.collecting:
            return mask, cluster, None
        if not self.collected:
            self.started = self.clock()
        self.collected.append((dom, auto))
        if len(self.collected) < self.learn_pages and self.clock() - self.started < self.learn_seconds:
            return mask, cluster, None
        learned = self._learn()
        if not learned:  # None: no new model; []: a model, but no page to re-run with it
            return mask, cluster, learned
        d, m, c = learned[-1]
        return m, c, learned

    def finish(self) -> Learned | None:
        """Learn now on the pages collected (the site has no more for now); None when not
        collecting or fewer than MIN_CLUSTER pages are held (a model needs two to tell template
        from content: the pages stay on auto, and collection goes on if more come)."""
        if not self.collecting or len(self.collected) < MIN_CLUSTER:
            return None
        return self._learn()

    def _learn(self) -> Learned | None:
        pages, self.collected, self.collecting = self.collected, [], False
        known = Reuse()
        try:
            model = learn([d for d, _ in pages], [a for _, a in pages], reuse=known)
        except Exception as e:  # never lose the crawl to the learner: pages stay on auto
            log.warning("site model: learning on %d pages failed (%r); pages stay on auto", len(pages), e)
            model = SiteModel()
        if not model.clusters and self.model is not None:
            self.model.reset_counts()  # keep the old model; ask again after as many pages
            return None
        self.model = model
        self.version += 1
        if not model.clusters:
            return []
        return [(d, *model.select(d, a, known)) for d, a in pages]

    def learn_site(self, doms: Sequence[Dom]) -> list[tuple[Mask, int]]:
        """process_site: learn on the first learn_pages pages, select every page."""
        autos = [_auto(d) for d in doms]
        known = Reuse()
        try:
            model = learn(doms[:self.learn_pages], autos[:self.learn_pages], reuse=known)
        except Exception as e:
            log.warning("site model: learning on %d pages failed (%r); pages stay on auto",
                        min(len(doms), self.learn_pages), e)
            model = SiteModel()
        self.load(model)
        return [model.select(d, a, known) for d, a in zip(doms, autos)]

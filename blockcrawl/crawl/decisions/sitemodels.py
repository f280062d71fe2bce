"""Site learning as the crawl sees it (crawl --algorithm site): when a site learns its model, what
is stored of a page, and the store row of each site's model (version, JSON, counts).

The engine's `record` writes the store; this module decides: `stored_content` (what a page
stores under --only-articles), `SiteModels.idle` (which sites learn now: idle for the
pipeline's learn_seconds, or all at the end: a site of fewer than learn_pages pages crawled fast
would never learn otherwise) and `SiteModels.learned` (the new version and counts).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...records import Block, Chunk, PageInfo
    from ..analysis.process import PageOut

SWEEP_INTERVAL = 1.0  # seconds between looks for sites idle long enough to learn their model


def stored_content(page: PageOut, only_articles: bool) -> tuple[list[Block], list[Chunk], str, bool]:
    """What is stored of a page: its blocks, chunks and Markdown, and whether it was left without
    them; with --only-articles none unless its info says "article" (a page without info is not
    known to be one)."""
    if only_articles and (page.info is None or page.info.kind != "article"):
        return [], [], "", True
    return page.blocks, page.chunks, page.markdown, False


def model_counts(model: str) -> tuple[int, int]:
    """The "pages" and "fallbacks" a model's JSON states at its top level, else (-1, -1)."""
    try:
        d = json.loads(model)
    except ValueError:
        return -1, -1
    if not isinstance(d, dict):
        return -1, -1
    p, f = d.get("pages"), d.get("fallbacks")
    if type(p) is int and type(f) is int and p >= 0 and f >= 0:  # not bool
        return p, f
    return -1, -1


class SiteModel:
    """A site's model as the store keeps it, with the counts the engine updates."""

    __slots__ = ("fallbacks", "model", "pages", "version")

    def __init__(self, version: int, model: str, pages: int = 0, fallbacks: int = 0) -> None:
        self.version, self.model, self.pages, self.fallbacks = version, model, pages, fallbacks

    def count(self, info: PageInfo | None) -> None:
        self.pages += 1
        self.fallbacks += info is None or info.cluster < 0

    def row(self) -> tuple[str, int, int, int]:
        return self.model, self.version, self.pages, self.fallbacks


class SiteModels:
    """Each site's current model; `stored`: the store's rows (site -> SiteModel), read on first need."""

    def __init__(self, rows: Callable[[], Iterable[Mapping[str, object]]], learning: bool,
                 learn_seconds: float) -> None:
        """rows: reads the store's model rows (Store.site_models), called once, on first need."""
        self.rows, self.learning, self.learn_seconds = rows, learning, learn_seconds
        self.models: dict[str, SiteModel] = {}
        self._stored: dict[str, SiteModel] | None = None
        self.sent: set[str] = set()  # sites whose pipeline has its model (sent, or learned there)
        self.dirty: set[str] = set()  # sites whose counts changed since their row was written
        self.idle_since: dict[str, float] = {}  # sites still collecting pages -> their last page's time
        self.next_sweep = 0.0

    def stored(self, site: str) -> SiteModel | None:
        if self._stored is None:
            self._stored = {}
            for row in self.rows():
                self._stored[str(row["site"])] = SiteModel(
                    int(str(row["version"] or 0)), str(row["model"] or ""),
                    int(str(row["pages"] or 0)), int(str(row["fallbacks"] or 0)))
        return self._stored.get(site)

    def to_send(self, site: str) -> SiteModel | None:
        """Resume, recrawl: the stored model to hand the site's pipeline before its first page
        (asked once a site; None: none stored, or the pipeline already has its own)."""
        if site in self.sent:
            return None
        self.sent.add(site)
        m = self.stored(site)
        return m if m is not None and m.model else None

    def loaded(self, site: str, m: SiteModel) -> None:
        """The pipeline took the stored model: the site's pages now count against it."""
        self.models[site] = m

    def page_stored(self, site: str, now: float) -> None:
        if self.learning:
            self.idle_since[site] = now

    def idle(self, now: float | None) -> list[str]:
        """Sites to learn now (forgotten until their next page): idle for learn_seconds, or every
        site when now is None (the crawl is over). O(sites) a sweep, one sweep a SWEEP_INTERVAL."""
        sites = [s for s, t in self.idle_since.items() if now is None or now - t >= self.learn_seconds]
        for s in sites:
            del self.idle_since[s]
        return sites

    def learned(self, site: str, model: str | None, revised: list[PageInfo | None],
                own: tuple[PageInfo | None] | None) -> SiteModel | None:
        """A page of the site stored (own: its info; None: a learning at the end of its pages)
        whose pipeline revised `revised` stored pages and maybe learned `model`: the site's model
        to write now (a new one; version + 1), else None (new counts are written at the next
        commit: a model may be large, pages are many). The row counts the pages extracted with the
        model and those that fell back to auto (cluster -1): from the model JSON's "pages" and
        "fallbacks" when it states them, else from the pages revised at learning; every later
        page of the site adds to them."""
        m = self.models.get(site)
        engine_counts = False
        if model is not None:
            old = m or self.stored(site)
            m = self.models[site] = SiteModel(old.version + 1 if old else 1, model)
            m.pages, m.fallbacks = model_counts(model)
            engine_counts = m.pages < 0
            if engine_counts:
                m.pages = m.fallbacks = 0
                for info in revised:
                    m.count(info)
            self.sent.add(site)  # the pipeline has its own: no stored model is sent after this
        if m is None:
            return None
        if own is not None and (model is None or engine_counts):
            m.count(own[0])
        if model is not None:
            self.dirty.discard(site)
            return m
        self.dirty.add(site)
        return None

    def flush(self) -> list[tuple[str, SiteModel]]:
        """The rows whose counts changed since they were written."""
        out = [(s, self.models[s]) for s in self.dirty]
        self.dirty.clear()
        return out

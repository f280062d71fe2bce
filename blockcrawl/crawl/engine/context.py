"""What the engine's parts share, in one frozen record built once per crawl (as Scrapy hands its
crawler to a component's from_crawler): the config and the pipeline settings, the store and the
frontier, the clock, the stats, the scheduler and what the crawl knows of URLs.

The Crawler builds it and hands it to the Recorder and to setup.make_steps; a part takes what it
needs from it instead of a long list of positional arguments. The record is frozen, the objects
it holds are not: the stats count, the frontier and the store are written (by the Recorder only).
The progress listeners are not here: they are chosen when the run starts (a bar opens then).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...pipeline import PipelineConfig
    from ...store import AnyStore
    from ..config import CrawlConfig, CrawlStats
    from ..decisions.admission import Known
    from ..decisions.seeding import Validators
    from ..decisions.sitemodels import SiteModels
    from ..protocols import Clock, Frontier, SharedFrontier
    from .politeness import Scheduler


@dataclass(frozen=True, slots=True)
class CrawlContext:
    config: CrawlConfig
    spec: PipelineConfig  # what the analyser runs on each page
    store: AnyStore
    frontier: Frontier
    shared: SharedFrontier | None  # the frontier again when shared with other workers (hosts leased)
    clock: Clock
    stats: CrawlStats
    sched: Scheduler  # per-host politeness
    known: Known  # what the crawl knows of URLs (seen, rejected, folded, gone)
    models: SiteModels
    baseline: dict[str, Validators]  # a recrawl's stored validators by URL, filled by the seed plan
    agent: str  # the robots.txt token of the user agent

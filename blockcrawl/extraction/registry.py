"""Main-content algorithms by name. Each is a selector: Dom -> keep mask over its nodes
(keep[i] False drops text node i), which blocks_from_dom turns into main-content blocks.
Algorithms that need a set of pages (template clustering) expose select_site instead."""
from __future__ import annotations

from ..errors import ConfigError

import importlib
from collections.abc import Callable, Sequence

from ..parse import Dom

Selector = Callable[[Dom], Sequence[bool] | None]

# name -> "module:function", imported on first use so that `blockcrawl extract` starts fast.
ALGORITHMS: dict[str, str] = {
    "all": "blockcrawl.extraction.registry:keep_all",
    "auto": "blockcrawl.extraction.auto:select",
    # Tag-path algorithms (seeds 001, 003, 004); see docs/algorithms.md "Tag-path algorithms".
    "tps": "blockcrawl.extraction.tps:select",
    "tps-text": "blockcrawl.extraction.tps:select_text",
    "cepr": "blockcrawl.extraction.cepr:select",
    "cetr": "blockcrawl.extraction.cetr:select",
    "template": "blockcrawl.extraction.template:select_site",
    "template+cepr": "blockcrawl.extraction.template:select_site_cepr",
}

# Algorithms whose function takes a list of a site's Doms and returns one keep mask per page
# (select_site(doms) -> list[mask]) instead of a per-page selector.
SITE_ALGORITHMS: frozenset[str] = frozenset({"template", "template+cepr"})


def keep_all(dom: Dom) -> None:
    """No filtering: every text node is kept (the seed-000 block scraper on the whole page)."""
    return None


def get_selector(name: str) -> Selector:
    try:
        target = ALGORITHMS[name]
    except KeyError:
        raise ConfigError(f"unknown algorithm {name!r}; choose from {', '.join(sorted(ALGORITHMS))}") from None
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


SiteSelector = Callable[[list[Dom]], list[Sequence[bool] | None]]


# Variants for the block pipeline (crawl, --mode main), where headings are context for search:
# auto keeps the title heading there, while extract()'s Document.text drops it as annotators do.
BLOCK_VARIANTS: dict[str, str] = {"auto": "blockcrawl.extraction.auto:select_blocks"}


def page_selector(name: str, for_blocks: bool = False) -> Selector:
    """A per-page selector for any algorithm; a site algorithm sees the page as a site of one."""
    if for_blocks and name in BLOCK_VARIANTS:
        get_selector(name)  # validates the name
        module, func = BLOCK_VARIANTS[name].split(":")
        return getattr(importlib.import_module(module), func)
    fn = get_selector(name)
    if name in SITE_ALGORITHMS:
        return lambda dom: fn([dom])[0]
    return fn


def site_selector(name: str) -> SiteSelector:
    """A selector over a site's pages for any algorithm; page algorithms run page by page."""
    fn = get_selector(name)
    if name in SITE_ALGORITHMS:
        return fn
    return lambda doms: [fn(d) for d in doms]

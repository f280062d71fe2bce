"""Main-content algorithms by name: ONE table of `Algorithm` records, open to plug-ins.

A page selector maps a Dom to a keep mask over its nodes (keep[i] False drops text node i),
which blocks_from_dom turns into main-content blocks; a site selector maps a site's Doms to one
mask per page (template clustering needs every page). Selectors are named "module:function" and
imported on first use, so that `blockcrawl extract` starts fast (numpy-based algorithms cost
~0.1 s to import).

Plug-ins: a distribution declares an entry point in the group `blockcrawl.algorithms`, named
after the algorithm, pointing at an `Algorithm` record or at a plain page selector (Dom -> mask):

    [project.entry-points."blockcrawl.algorithms"]
    mine = "my_package.extract:ALGORITHM"

Entry points are read only when a name is not built in (or the full list is asked for), and
loaded only when that algorithm is used.
"""
from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .params import DEFAULTS, ExtractionParams

if TYPE_CHECKING:  # types only: importlib.metadata is imported when a plug-in is looked up
    from importlib.metadata import EntryPoint

    from ..parse import Dom

Mask = Sequence[bool] | None
Selector = Callable[["Dom"], Mask]
SiteSelector = Callable[[list["Dom"]], list[Mask]]
# "module:function" (imported on first use) or the function itself (plug-ins may give either)
Target = str | Callable[..., Any]

ENTRY_POINT_GROUP = "blockcrawl.algorithms"
# pages a site algorithm learns on before it selects by its model (PipelineConfig.learn_pages)
LEARN_PAGES = 20


def _load(target: Target) -> Callable[..., Any]:
    if not isinstance(target, str):
        return target
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Algorithm:
    """One main-content algorithm: page, a per-page selector (Dom -> mask), and/or site, a site
    selector (list[Dom] -> masks) for algorithms that need a set of pages; at least one is given.

    There is no block variant any more: `auto` kept the heading repeating <title> in the blocks
    (context for search) and dropped it from the text; that is now one step of the shared
    extraction path for every algorithm (extraction.api.title_context).
    """

    name: str
    page: Target | None = None
    site: Target | None = None
    description: str = ""
    # the page selector takes params= (an extraction.params.ExtractionParams): a tuning run or a
    # PipelineConfig.params other than DEFAULTS is passed to it; other algorithms refuse one
    tunable: bool = False

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ConfigError("an algorithm needs a name")
        if self.page is None and self.site is None:
            raise ConfigError(f"algorithm {self.name!r} has neither a page nor a site selector")

    @property
    def is_site(self) -> bool:
        """True if the algorithm looks at a site's pages together (process_site)."""
        return self.site is not None

    def page_selector(self, params: ExtractionParams | None = None) -> Selector:
        """A per-page selector; a site algorithm sees the page as a site of one. params (None or
        DEFAULTS: the defaults) goes to a tunable algorithm's selector; ConfigError for others."""
        if params is not None and params != DEFAULTS:
            if not self.tunable or self.page is None:
                raise ConfigError(f"algorithm {self.name!r} takes no extraction parameters")
            return functools.partial(_load(self.page), params=params)
        if self.page is not None:
            return _load(self.page)
        site = _load(self.site)  # type: ignore[arg-type]  # __post_init__: one of the two is set
        return lambda dom: site([dom])[0]

    def site_selector(self, params: ExtractionParams | None = None) -> SiteSelector:
        """A selector over a site's pages; page algorithms run page by page (params: as in
        page_selector)."""
        if self.site is not None:
            if params is not None and params != DEFAULTS:
                raise ConfigError(f"algorithm {self.name!r} takes no extraction parameters")
            return _load(self.site)
        page = self.page_selector(params)
        return lambda doms: [page(d) for d in doms]


def keep_all(dom: Dom) -> None:
    """No filtering: every text node is kept (the seed-000 block scraper on the whole page)."""
    return


_BUILTIN: tuple[Algorithm, ...] = (
    Algorithm("all", page="blockcrawl.extraction.registry:keep_all",
              description="no filtering: every block of the page"),
    Algorithm("auto", page="blockcrawl.extraction.auto:select", tunable=True,
              description="readability-style scoring on the flat Dom (default)"),
    # Tag-path algorithms; see docs/algorithms.md "Tag-path algorithms".
    Algorithm("tps", page="blockcrawl.extraction.tps:select",
              description="tag path sequence: the main region of the page's tag-path signal"),
    Algorithm("tps-text", page="blockcrawl.extraction.tps:select_text",
              description="tps on text-bearing tag paths"),
    Algorithm("cepr", page="blockcrawl.extraction.cepr:select",
              description="content extraction via path ratios"),
    Algorithm("cetr", page="blockcrawl.extraction.cetr:select",
              description="content extraction via tag ratios (per line)"),
    Algorithm("template", site="blockcrawl.extraction.template:select_site",
              description="site template clustering: text shared by a page's cluster is dropped"),
    Algorithm("template+cepr", site="blockcrawl.extraction.template:select_site_cepr",
              description="template, with cepr for pages that cluster with no other"),
    # Site learning (extraction/site): a page alone is auto's; SitePipeline learns as it goes.
    Algorithm("site", page="blockcrawl.extraction.auto:select",
              site="blockcrawl.extraction.site:select_site",
              description="auto until a site model (templates, tag-path patterns) is learned, then the model"),
    # Site template removal in the crawl (extraction/sitetemplate.py, seed 003 learned on a sample).
    Algorithm("auto+template", page="blockcrawl.extraction.auto:select",
              site="blockcrawl.extraction.sitetemplate:select_site",
              description="auto less the text that repeats across the site's pages (learned on its first pages)"),
)

# name -> Algorithm: the built-in algorithms (read-only; plug-ins are in algorithms()).
ALGORITHMS: Mapping[str, Algorithm] = MappingProxyType({a.name: a for a in _BUILTIN})

_plugins: dict[str, EntryPoint] | None = None  # name -> entry point, read once per process
_loaded: dict[str, Algorithm] = {}


def _entry_points() -> dict[str, EntryPoint]:
    global _plugins
    if _plugins is None:
        from importlib.metadata import entry_points

        _plugins = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in ALGORITHMS}
    return _plugins


def reload_plugins() -> None:
    """Forget the entry points read so far (after installing a plug-in in a running process)."""
    global _plugins
    _plugins = None
    _loaded.clear()


def names() -> list[str]:
    """Every algorithm name, built-in and plug-in, sorted."""
    return sorted({*ALGORITHMS, *_entry_points()})


def algorithms() -> dict[str, Algorithm]:
    """Every algorithm, built-in and plug-in (loads the plug-ins)."""
    return {name: get(name) for name in names()}


def validate(name: str) -> str:
    """name if it names an algorithm (no import of its code), else ConfigError."""
    if name in ALGORITHMS or (isinstance(name, str) and name in _entry_points()):
        return name
    raise ConfigError(f"unknown algorithm {name!r}; choose from {', '.join(names())}")


def get(name: str) -> Algorithm:
    """The algorithm record of a name (a plug-in's entry point is loaded here, once)."""
    algo = ALGORITHMS.get(name)
    if algo is not None:
        return algo
    algo = _loaded.get(name)
    if algo is not None:
        return algo
    ep = _entry_points()[validate(name)]
    try:
        obj = ep.load()
    except Exception as e:
        raise ConfigError(f"algorithm {name!r}: cannot load plug-in {ep.value}: {e}") from e
    if isinstance(obj, Algorithm):
        algo = obj if obj.name == name else replace(obj, name=name)
    elif callable(obj):
        doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
        algo = Algorithm(name, page=obj, description=doc[0] if doc else f"plug-in {ep.value}")
    else:
        raise ConfigError(f"algorithm {name!r}: plug-in {ep.value} is neither an Algorithm nor a selector")
    _loaded[name] = algo
    return algo


# ---------------------------------------------------------------- functions by name (shorthands)
def get_selector(name: str) -> Callable[..., Any]:
    """The algorithm's own function: a page selector, or for a site algorithm its site selector."""
    algo = get(name)
    return _load(algo.site if algo.site is not None else algo.page)  # type: ignore[arg-type]


def page_selector(name: str, for_blocks: bool = False) -> Selector:
    """A per-page selector for any algorithm; a site algorithm sees the page as a site of one.
    (for_blocks is accepted for old callers; the title context is added by extraction.api.)"""
    return get(name).page_selector()


def site_selector(name: str) -> SiteSelector:
    """A selector over a site's pages for any algorithm; page algorithms run page by page."""
    return get(name).site_selector()


def is_site(name: str) -> bool:
    return get(name).is_site

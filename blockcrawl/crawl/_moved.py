"""The crawl's modules under their names before the sub-packages: `import blockcrawl.crawl.fetch`
still works, warns DeprecationWarning and gives the module itself (blockcrawl.crawl.net.fetch), so
`blockcrawl.crawl.fetch.X is blockcrawl.crawl.net.fetch.X`. The package's modules are public API
(blockcrawl/__init__.py), so the old names stay for one minor version; nothing in blockcrawl,
tests or bench uses them.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType

# old name below blockcrawl.crawl -> its module now (crawler was an older name of the engine; the
# engine's own old name is the package engine/ now, whose Crawler and crawl warn: engine/__init__.py)
MOVED = {
    "crawler": "engine.loop",
    "record": "engine.record", "setup": "engine.setup", "progress": "engine.progress", "pacing": "engine.pacing",
    "queues": "engine.queues", "health": "engine.health", "politeness": "engine.politeness",
    "clock": "engine.clock", "shared": "engine.shared",
    "outcome": "decisions.outcome", "triage": "decisions.triage", "retry": "decisions.retry",
    "admission": "decisions.admission", "policy": "decisions.policy", "traps": "decisions.traps",
    "discovery": "decisions.discovery", "seeding": "decisions.seeding", "sitemodels": "decisions.sitemodels",
    "pagestep": "decisions.pagestep",
    "fetch": "net.fetch", "wire": "net.wire", "addresses": "net.addresses", "resolve": "net.resolve",
    "credentials": "net.credentials", "render": "net.render", "chromium": "net.chromium",
    "appshell": "net.appshell", "memfetch": "net.memfetch", "webhook": "net.webhook",
    "robots": "sources.robots", "sitemaps": "sources.sitemaps", "sitemap_parse": "sources.sitemap_parse",
    "feeds": "sources.feeds", "llmstxt": "sources.llmstxt", "links": "sources.links",
    "process": "analysis.process", "pool": "analysis.pool",
}
_PREFIX = "blockcrawl.crawl."


class _Loader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} is {self.target} now; the old name goes in the next minor version",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The module is the moved one, already run."""


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if not fullname.startswith(_PREFIX):
            return None
        new = MOVED.get(fullname[len(_PREFIX):])
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Loader(_PREFIX + new))


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())

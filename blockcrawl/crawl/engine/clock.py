"""Clocks for the engine: the system one, and a fake one whose time only moves when every task
waits, so an engine test of a 30 s crawl with delays and Retry-After runs in milliseconds and
measures exact spacings (tests/crawl/test_engine.py).

FakeClock.run(coro) runs coro on an event loop whose time is the fake clock: asyncio.sleep,
wait_for and call_later all use it. When nothing is ready to run, instead of blocking in select()
the loop jumps its time to the next timer. Work handed to the default executor
(asyncio.to_thread) runs inline, so no real thread can be left behind a jump.
"""
from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()


class FakeClock:
    """monotonic() starts at `start`; time() is a fixed epoch plus the same offset."""

    def __init__(self, start: float = 1000.0, epoch: float = 1_800_000_000.0) -> None:
        self.now = start
        self._epoch = epoch - start

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self._epoch + self.now

    def advance(self, seconds: float) -> None:
        self.now += max(0.0, seconds)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = _VirtualLoop(self)
        try:
            asyncio.set_event_loop(loop)
            return loop.run_until_complete(coro)
        finally:
            asyncio.set_event_loop(None)
            loop.close()


class _InlineExecutor(ThreadPoolExecutor):  # the loop accepts only this type
    """Runs each job at once in the caller's thread."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        f: Future[T] = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
            f.set_exception(e)
        return f


class _VirtualSelector:
    """Real file descriptors (the loop's self-pipe, signals) are still polled, without blocking."""

    def __init__(self, clock: FakeClock) -> None:
        self._inner = selectors.DefaultSelector()
        self._clock = clock

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = self._inner.select(0)
        if events or timeout == 0:
            return events
        if timeout is None:  # nothing scheduled: only a real event can wake us
            return self._inner.select(None)
        self._clock.advance(timeout)
        return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock: FakeClock) -> None:
        self._fake = clock
        super().__init__(_VirtualSelector(clock))  # type: ignore[arg-type]
        self.set_default_executor(_InlineExecutor())

    def time(self) -> float:
        return self._fake.now

"""Real servers a test starts and stops itself: redis-server on 127.0.0.1 on a free port, its data
in the test's tmp dir, nothing saved (for the shared-frontier tests, tests/store/test_redis_frontier.py).
Skips the test, saying why, when /usr/bin/redis-server (Debian package redis-server) or the
redis Python package (extra `scale`) is missing."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from .require import need_module, skip_or_fail


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    def __init__(self, tmp: Path) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            skip_or_fail("redis-server is not installed (Debian: apt-get install redis-server)")
        need_module("redis", "the redis package is not installed (pip install 'blockcrawl[scale]')")
        self.exe, self.port, self.dir = exe, free_port(), tmp
        import redis
        self.client = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True)
        self._start()

    def _start(self) -> None:
        import redis
        self.proc = subprocess.Popen([self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.dir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while True:
            try:
                if self.client.ping():
                    break
            except redis.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > end:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.02)

    def restart(self, down: float) -> None:
        """Save, stop, stay away `down` seconds, start again on the same port with the saved data
        (clients see connection refused meanwhile)."""
        import redis
        try:
            self.client.shutdown(save=True)
        except redis.ConnectionError:
            pass
        self.proc.wait(timeout=10)
        time.sleep(down)
        self._start()

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def redis_server_in(tmp_path: Path) -> Iterator[RedisServer]:
    """The body of a `redis_server` fixture: `yield from redis_server_in(tmp_path)` (killed at teardown)."""
    d = tmp_path / "redis"
    d.mkdir()
    r = RedisServer(d)
    try:
        yield r
    finally:
        r.stop()

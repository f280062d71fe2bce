"""A reply lost after Redis ran the script (the connection drops between the two, as when Redis
shuts down mid-call): the frontier runs the call again, and the second run must give what the
first one did. A real redis-server (tests/support/servers.py) behind a loopback proxy that, once armed,
passes one request matching a pattern to Redis, swallows its reply and closes the connection."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from blockcrawl.crawl.frontier import Item
from blockcrawl.store.redis_frontier import RedisFrontier

from ..support.servers import RedisServer, redis_server_in


class ReplyEater:
    """TCP proxy 127.0.0.1:port -> Redis. arm(pattern): the next client request containing
    pattern reaches Redis, and its reply never reaches the client (the connection is closed)."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.pattern: bytes | None = None
        self.eaten = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, pattern: bytes) -> None:
        with self.lock:
            self.pattern = pattern

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.target))
            state = {"mute": False}
            threading.Thread(target=self._up, args=(c, s, state), daemon=True).start()
            threading.Thread(target=self._down, args=(s, c, state), daemon=True).start()

    def _up(self, c: socket.socket, s: socket.socket, state: dict[str, bool]) -> None:
        try:
            while data := c.recv(65536):
                with self.lock:
                    hit = self.pattern is not None and self.pattern in data
                    if hit:
                        self.pattern = None
                        self.eaten += 1
                if hit:
                    state["mute"] = True
                    s.sendall(data)
                    time.sleep(0.3)  # Redis runs it; the reply is dropped by _down
                    break
                s.sendall(data)
        except OSError:
            pass
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            x.close()

    def _down(self, s: socket.socket, c: socket.socket, state: dict[str, bool]) -> None:
        try:
            while data := s.recv(65536):
                if not state["mute"]:
                    c.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()


class NoLog:
    def log(self, *a: object, **kw: object) -> None:
        pass


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    yield from redis_server_in(tmp_path)


@pytest.fixture
def eater(redis_server: RedisServer) -> Iterator[ReplyEater]:
    e = ReplyEater(redis_server.port)
    yield e
    e.close()


def frontier(eater: ReplyEater, worker: str = "w", direct: bool = False) -> RedisFrontier:
    port = eater.target if direct else eater.port
    f = RedisFrontier(f"redis://127.0.0.1:{port}/0", NoLog(), worker_id=worker)  # type: ignore[arg-type]
    for sc in f._scripts.values():  # loaded now: the eaten request is the script run itself
        f.r.script_load(sc.script)
    return f


def sha(f: RedisFrontier, name: str) -> bytes:
    """The run of script name on the wire (not the SCRIPT EXISTS a pipeline sends first)."""
    return b"EVALSHA\r\n$40\r\n" + str(f._scripts[name].sha).encode()


def item(host: str, n: int) -> Item:
    return Item(f"{host}/p{n}.html", host, 1)


def test_share_whose_reply_is_lost_still_hands_its_urls(eater):
    h = "http://127.0.0.1:9"
    f = frontier(eater)
    assert f.share([item(h, 0)]) == []  # nobody holds h yet: queued in Redis
    got, _ = f.claim()  # this worker leases h and gets its queue
    assert [it.url for it in got] == [f"{h}/p0.html"] and f.owned == {h}
    eater.arm(sha(f, "share"))
    new = f.share([item(h, 1), item(h, 2)])
    assert eater.eaten == 1
    assert sorted(it.url for it in new) == [f"{h}/p1.html", f"{h}/p2.html"]


def test_take_whose_reply_is_lost_still_gets_the_host(eater):
    h = "http://127.0.0.1:10"
    f = frontier(eater)
    f.share([item(h, 0), item(h, 1)])
    eater.arm(sha(f, "take"))
    got, _ = f.claim()
    assert eater.eaten == 1
    assert f.owned == {h}
    assert sorted(it.url for it in got) == [f"{h}/p0.html", f"{h}/p1.html"]


def test_tick_whose_reply_is_lost_keeps_the_inbox(eater):
    """Links another worker found for a host this worker holds wait in its inbox; the tick that
    reads (and trims) the inbox loses its reply: the URLs still reach this worker."""
    h = "http://127.0.0.1:11"
    mine, other = frontier(eater), frontier(eater, "other", direct=True)
    mine.share([item(h, 0)])
    mine.claim()
    assert mine.owned == {h}
    assert other.share([item(h, 5), item(h, 6)]) == []  # h is not other's: to mine's inbox
    eater.arm(sha(mine, "tick"))
    got, lost = mine.claim()
    assert eater.eaten == 1 and lost == []
    assert sorted(it.url for it in got) == [f"{h}/p5.html", f"{h}/p6.html"]

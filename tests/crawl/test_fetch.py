"""The fetcher at the wire: a raw HTTP/1.1 server on 127.0.0.1 (threads, keep-alive) records when
each request head arrives, by the server's clock, and answers from a per-request script (answer,
hang up without answering, stall mid-body), so what is checked is what a server would see."""
from __future__ import annotations

import asyncio
import gzip
import itertools
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from blockcrawl.crawl.net.fetch import AiohttpFetcher, FetchResult


@dataclass
class Arrival:
    t: float  # time.monotonic() when the request head was complete
    path: str
    conn: int  # connection number (0, 1, ...)
    nth: int  # requests before this one on the same connection
    index: int  # requests before this one on the server


def response(body: bytes, status: int = 200, ctype: str = "text/html", headers: dict[str, str] | None = None,
             length: bool = True) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"Content-Type: {ctype}"]
    if length:
        head.append(f"Content-Length: {len(body)}")
    else:
        head.append("Connection: close")
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


# A script returns bytes to send (the connection is kept unless the response says close), None to
# hang up without answering, or a callable that gets the socket and does what it likes.
Script = Callable[[Arrival], "bytes | None | Callable[[socket.socket], None]"]


class WireServer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.arrivals: list[Arrival] = []
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self._conns = 0
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                n, self._conns = self._conns, self._conns + 1
            threading.Thread(target=self._serve, args=(c, n), daemon=True).start()

    def _serve(self, c: socket.socket, conn: int) -> None:
        buf, nth = b"", 0
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = c.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                t = time.monotonic()
                path = head.split(b"\r\n", 1)[0].split(b" ")[1].decode()
                with self.lock:
                    a = Arrival(t, path, conn, nth, len(self.arrivals))
                    self.arrivals.append(a)
                nth += 1
                act = self.script(a)
                if act is None:
                    return  # hang up without answering
                if callable(act):
                    act(c)
                    return
                c.sendall(act)
                if b"Connection: close" in act.split(b"\r\n\r\n", 1)[0]:
                    return
        except OSError:
            pass
        finally:
            c.close()

    def gaps(self) -> list[float]:
        ts = sorted(a.t for a in self.arrivals)
        return [b - a for a, b in itertools.pairwise(ts)]

    def close(self) -> None:
        self._stop = True
        self.sock.close()


@pytest.fixture
def serve():
    servers: list[WireServer] = []

    def start(script: Script) -> WireServer:
        s = WireServer(script)
        servers.append(s)
        return s
    yield start
    for s in servers:
        s.close()


# The spacing gates below add a margin to the delay, as the scheduler does (DELAY_MARGIN, 10 ms):
# between the gate's return and the server's time stamp there is thread scheduling noise. On the
# loaded 2-core box (load 10-15) it was 0.1-0.3 ms typically, 8-13 ms for a request whose server
# thread had just been started (hence the warm-up request in _twelve_gated), and still 13 ms once
# in 8 runs after warm-up: hence 20 ms here. The bug these tests guard against gives 0.2-17 ms gaps.
TEST_MARGIN = 0.02


def spacing_gate(delay: float, margin: float = TEST_MARGIN) -> tuple[Callable[[], asyncio.Future[None]], list[int]]:
    """A per-host turn like Scheduler.turn: each request starts `delay` + margin after the
    previous one. Returns the gate and a call counter."""
    last = [-1e9]
    calls = [0]

    async def gate() -> None:
        calls[0] += 1
        while (wait := last[0] + delay + margin - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        last[0] = time.monotonic()
    return gate, calls  # type: ignore[return-value]


def fetch_all(urls: list[str], **kw) -> list[FetchResult]:
    fkw = {k: kw.pop(k) for k in ("timeout", "max_bytes", "concurrency", "per_host") if k in kw}

    async def main() -> list[FetchResult]:
        async with AiohttpFetcher("test/1.0", **fkw) as f:
            return list(await asyncio.gather(*(f.get(u, **kw) for u in urls)))
    return asyncio.run(main())


# ---------------------------------------------------------------- 1. politeness at the wire

def _uneven(a: Arrival) -> bytes:
    # answers that end at the same moment free two pooled connections together: requests
    # gated before they got a connection would then leave together
    if a.path != "/warm":
        time.sleep(0.25 if a.index % 2 == 1 else 0.25 - (0.05 + TEST_MARGIN))  # index 0: /warm
    return response(b"<html>ok</html>")


def _twelve_gated(s: WireServer, gate_inside: bool) -> list[FetchResult]:
    """One ungated warm-up request (a server thread that has to start for the first request
    stamps it late: 8-13 ms on the loaded box), then 12 concurrent gated GETs over 2 connections.
    The switch interval is lowered so that the server threads' time stamps wait less for the GIL."""
    gate, calls = spacing_gate(0.05)

    async def main() -> list[FetchResult]:
        async with AiohttpFetcher("test/1.0", concurrency=2, per_host=1) as f:
            await f.get(s.origin + "/warm")

            async def one(i: int) -> FetchResult:
                if gate_inside:
                    return await f.get(f"{s.origin}/p{i}", gate=gate)
                await gate()  # where the engine used to await its turn
                return await f.get(f"{s.origin}/p{i}")
            return list(await asyncio.gather(*(one(i) for i in range(12))))
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        res = asyncio.run(main())
    finally:
        sys.setswitchinterval(old)
    assert calls[0] == 12
    s.arrivals = [a for a in s.arrivals if a.path != "/warm"]
    return res


def test_gate_spaces_requests_as_the_server_sees_them(serve):
    """12 concurrent GETs to one host over 2 pooled connections, gate = 50 ms per-host spacing:
    every gap between arrivals at the server is >= 50 ms. (Awaited before get, as the engine did,
    the same gate let queued requests arrive together: the control below.)"""
    s = serve(_uneven)
    res = _twelve_gated(s, gate_inside=True)
    assert [r.status for r in res] == [200] * 12 and len(s.arrivals) == 12
    assert min(s.gaps()) >= 0.05, sorted(s.gaps())[:3]


def test_gate_before_get_is_not_enough_control(serve):
    """Control for the test above: the same server and gate awaited before get() (where the
    engine used to await its turn) - requests queued for a connection arrive together."""
    s = serve(_uneven)
    _twelve_gated(s, gate_inside=False)
    assert min(s.gaps()) < 0.05, sorted(s.gaps())[:3]  # the delay contract, broken: a gap under the 50 ms


def test_gate_wait_is_not_counted_in_the_timeout(serve):
    s = serve(lambda a: response(b"<html>ok</html>"))

    async def slow_gate() -> None:
        await asyncio.sleep(0.8)
    [r] = fetch_all([s.origin + "/"], gate=slow_gate, timeout=0.5)
    # the gate waited longer than the whole timeout, and the request still had all of it
    assert r.status == 200 and r.error is None and r.waited >= 0.8


def test_time_this_process_stood_still_is_not_the_servers(serve):
    """The server answers at once, but this process stands still past the timeout right after the
    request leaves (a frontier paused on a lost Redis sleeps in the event loop's thread: a CI run
    lost a page so, "timeout, no complete answer in 10 s" after an 11.7 s pause): the answer,
    waiting unread in the socket, is read, not thrown away as a timeout (and not fetched again)."""
    s = serve(lambda a: response(b"<html>ok</html>"))
    [r] = fetch_all([s.origin + "/"], on_sent=lambda: time.sleep(0.8), timeout=0.5)
    assert r.status == 200 and r.error is None and r.body == b"<html>ok</html>" and len(s.arrivals) == 1


def test_a_stall_does_not_stop_the_timeout_of_a_server_that_does_not_answer(serve):
    done = threading.Event()
    s = serve(lambda a: lambda c: done.wait(60))  # reads the request, never answers
    try:
        [r] = fetch_all([s.origin + "/"], on_sent=lambda: time.sleep(0.8), timeout=0.5)
    finally:
        done.set()
    # the 0.8 s stall is granted again (the answer could have been waiting), then it times out
    assert r.error == "timeout" and len(s.arrivals) == 1


def test_on_sent_called_once_per_request_after_gate(serve):
    s = serve(lambda a: response(b"<html>ok</html>"))
    order: list[str] = []

    async def gate() -> None:
        order.append("gate")
    fetch_all([s.origin + "/"], gate=gate, on_sent=lambda: order.append("sent"))
    assert order == ["gate", "sent"] and len(s.arrivals) == 1


# ---------------------------------------------------------------- 2. no silent re-send

def _drop_reused(a: Arrival) -> bytes | None:
    """Answers the first request on a connection (keep-alive); reads the second and hangs up."""
    return response(b"<html>first</html>") if a.nth == 0 else None


def test_dropped_keepalive_connection_is_not_resent(serve):
    """aiohttp re-sends an idempotent request once when a reused connection drops; every request
    on the wire must be one the caller's gate allowed: arrivals == gets, gate calls == gets."""
    s = serve(_drop_reused)
    gate, calls = spacing_gate(0.0, 0.0)

    async def main() -> list[FetchResult]:
        async with AiohttpFetcher("test/1.0", per_host=1) as f:
            out = []
            for i in range(3):  # one after the other: the 2nd and 3rd reuse the 1st's connection
                out.append(await f.get(f"{s.origin}/p{i}", gate=gate))
            return out
    res = asyncio.run(main())
    assert len(s.arrivals) == 3 == calls[0], [(a.path, a.conn, a.nth) for a in s.arrivals]
    assert res[0].status == 200 and res[1].error == "disconnect" and res[1].status is None


def test_connection_dropped_while_gate_waits_is_replaced_not_failed(serve):
    """A server closing an idle keep-alive connection during the gate's wait (its keep-alive
    timeout) costs nothing: nothing was written yet, another connection carries the request."""
    def answer_then_idle_close(c: socket.socket) -> None:
        c.sendall(response(b"<html>ok</html>"))  # keep-alive: the client pools the connection
        time.sleep(0.1)  # ... and the server drops it 0.1 s later
    s = serve(lambda a: answer_then_idle_close if a.conn == 0 else response(b"<html>ok</html>"))

    async def gate() -> None:
        await asyncio.sleep(0.4)  # the connection is in hand, the server closes it meanwhile

    async def main() -> list[FetchResult]:
        async with AiohttpFetcher("test/1.0", per_host=1) as f:
            return [await f.get(s.origin + "/a"), await f.get(s.origin + "/b", gate=gate)]
    r1, r2 = asyncio.run(main())
    assert r1.status == 200 and r2.status == 200, r2
    assert [(a.path, a.conn) for a in s.arrivals] == [("/a", 0), ("/b", 1)]


# ---------------------------------------------------------------- 3. max_bytes everywhere

BIG = b"<html>" + b"x" * 5000 + b"</html>"


def test_max_bytes_argument_overrides_the_default(serve):
    s = serve(lambda a: response(BIG))
    small, big = fetch_all([s.origin + "/a", s.origin + "/b"], max_bytes=1000)
    assert small.error == big.error == "too_large"
    r_small, r_big = (fetch_all([s.origin + "/c"], max_bytes=1000 if i else 10**6) for i in (1, 0))
    assert r_small[0].error == "too_large" and r_big[0].body == BIG

    async def main() -> tuple[FetchResult, FetchResult]:
        async with AiohttpFetcher("t", max_bytes=1000) as f:
            return await f.get(s.origin + "/d", max_bytes=100_000), await f.get(s.origin + "/e", max_bytes=10)
    up, down = asyncio.run(main())
    assert up.body == BIG and down.error == "too_large"


@pytest.mark.parametrize("length", [True, False])
def test_truncate_returns_the_prefix(serve, length):
    s = serve(lambda a: response(BIG, ctype="text/plain", length=length))
    [r] = fetch_all([s.origin + "/robots.txt"], accept=None, max_bytes=500, truncate=True)
    assert r.error is None and r.status == 200 and r.truncated and r.body == BIG[:500]
    [r] = fetch_all([s.origin + "/robots.txt"], accept=None, max_bytes=len(BIG), truncate=True)
    assert r.body == BIG and not r.truncated
    [r] = fetch_all([s.origin + "/robots.txt"], accept=None, max_bytes=500)
    assert r.error == "too_large" and r.body is None


@pytest.mark.parametrize("enc", ["gzip", "deflate", "raw-deflate"])
def test_decompression_is_bounded_also_when_truncating(serve, enc):
    plain = b"\0" * 5_000_000
    if enc == "gzip":
        data = gzip.compress(plain, 9)
    else:
        c = zlib.compressobj(9, zlib.DEFLATED, 15 if enc == "deflate" else -15)
        data = c.compress(plain) + c.flush()
    header = {"Content-Encoding": "gzip" if enc == "gzip" else "deflate"}
    s = serve(lambda a: response(data, headers=header))
    [bomb] = fetch_all([s.origin + "/"], max_bytes=100_000)
    assert bomb.error == "bomb" and bomb.body is None and len(data) < 100_000
    # zeros expand ~1000:1, beyond fetch.BOMB_RATIO: a bomb even when a prefix was asked for
    [pre] = fetch_all([s.origin + "/"], max_bytes=100_000, truncate=True)
    assert pre.error == "bomb" and pre.body is None
    [ok] = fetch_all([s.origin + "/"], max_bytes=6_000_000)
    assert ok.body == plain and not ok.truncated


@pytest.mark.parametrize("enc", ["gzip", "deflate"])
def test_truncate_keeps_the_prefix_of_a_long_compressed_text(serve, enc):
    """A long robots.txt sent compressed (text: a few times smaller) is cut, not refused."""
    plain = b"".join(b"Disallow: /p/%d/%x\n" % (i, i * 7919) for i in range(60_000))
    data = gzip.compress(plain, 9) if enc == "gzip" else zlib.compress(plain, 9)
    s = serve(lambda a: response(data, ctype="text/plain", headers={"Content-Encoding": enc}))
    [pre] = fetch_all([s.origin + "/robots.txt"], accept=None, max_bytes=100_000, truncate=True)
    assert pre.error is None and pre.truncated and pre.body == plain[:100_000]


def test_compressed_stream_of_empty_blocks_is_bounded_on_the_wire(serve):
    """Raw bytes that decode to nothing (empty stored deflate blocks) still count against the cap."""
    c = zlib.compressobj(0, zlib.DEFLATED, -15)
    head = c.compress(b"abc") + c.flush(zlib.Z_FULL_FLUSH)
    empty = b"\x00\x00\x00\xff\xff"  # an empty stored block: 5 bytes that decode to nothing
    data = head + empty * 40000 + b"\x01\x00\x00\xff\xff"  # ... and a last one
    s = serve(lambda a: response(data, headers={"Content-Encoding": "deflate"}))
    [r] = fetch_all([s.origin + "/"], max_bytes=50_000)
    assert r.error == "too_large"
    [r] = fetch_all([s.origin + "/"], max_bytes=50_000, truncate=True)
    assert r.truncated and r.body == b"abc" and r.nbytes == 50_000


@pytest.mark.parametrize("truncate", [False, True])
def test_stalled_body_ends_by_the_timeout(serve, truncate):
    done = threading.Event()

    def stall(c: socket.socket) -> None:  # stalls until the client has its answer: only the timeout ends it
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10000\r\n\r\n<html>")
        done.wait(60)
    s = serve(lambda a: stall)
    try:
        [r] = fetch_all([s.origin + "/"], timeout=0.5, max_bytes=100_000, truncate=truncate)
    finally:
        done.set()
    assert r.error == "timeout"


def test_content_type_and_redirect_not_read(serve):
    s = serve(lambda a: response(b"%PDF", ctype="application/pdf") if a.path == "/doc"
              else response(b"", status=301, headers={"Location": "/x"}))
    doc, red = fetch_all([s.origin + "/doc", s.origin + "/r"])
    assert doc.error == "content_type" and doc.detail == "application/pdf"
    assert red.status == 301 and red.location == "/x" and red.error is None


def test_follow_gates_every_hop_and_bad_gzip_is_a_decode_error(serve):
    s = serve(lambda a: response(b"", status=302, headers={"Location": "/b"}) if a.path == "/a"
              else response(b"not gzip at all", headers={"Content-Encoding": "gzip"}) if a.path == "/bad"
              else response(b"User-agent: *\n", ctype="text/plain"))
    gate, calls = spacing_gate(0.05)
    [r] = fetch_all([s.origin + "/a"], accept=None, follow=True, gate=gate)
    assert r.status == 200 and r.body == b"User-agent: *\n" and calls[0] == 2
    assert [a.path for a in s.arrivals] == ["/a", "/b"] and s.gaps()[0] >= 0.05
    [bad] = fetch_all([s.origin + "/bad"])
    assert bad.error == "decode" and bad.body is None

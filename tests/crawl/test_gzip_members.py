"""A gzip body of several members (RFC 1952 2.2: `cat a.gz b.gz`) is read whole, as `gzip -d` and
Python's gzip read it, under the same size limits; the page used to be stored with the first
member's text only."""
from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

from blockcrawl.compress import PIECE, Inflater, inflate
from blockcrawl.crawl import CrawlConfig, Crawler
from blockcrawl.pipeline import PipelineConfig as PipelineSpec
from blockcrawl.store import Store

from ..support.crawlsite import Route, Site


def _member_of_size(size: int, fill: bytes) -> bytes:
    """One stored (level 0) gzip member of exactly `size` bytes."""
    n = size - 23  # 10 header, 5 stored-block header, 8 trailer
    m = gzip.compress((fill * n)[:n], compresslevel=0, mtime=0)
    assert len(m) == size
    return m


def test_every_member_is_read_by_inflate():
    a, b, c = (gzip.compress(t * 50) for t in (b"alpha ", b"beta ", b"gamma "))
    want = b"alpha " * 50 + b"beta " * 50 + b"gamma " * 50
    for body in (a + b + c, a + b"\0\0\0" + b + c):  # zero padding between members is allowed
        z = inflate(body, 10**6)
        assert z.data == want == gzip.decompress(a + b + c) and z.complete and not z.error
    # a member ending exactly where inflate's piece ends: the next one is still read
    first = _member_of_size(PIECE, b"x")
    z = inflate(first + b, 10**6)
    assert z.data == b"x" * (PIECE - 23) + b"beta " * 50 and z.complete
    # trailing garbage after a member is ignored (gzip -d: "trailing garbage ignored")
    z = inflate(a + b"\n", 10**6)
    assert z.data == b"alpha " * 50 and z.complete
    # a second member cut off: what decoded, and the complaint
    z = inflate(a + b[:-6], 10**6)
    assert z.data.startswith(b"alpha " * 50) and not z.complete and "cut off" in z.error


def test_members_fed_a_byte_at_a_time():
    a, b = gzip.compress(b"one " * 30), gzip.compress(b"two " * 30)
    inf = Inflater("gzip", 10**6)
    for i in range(len(a + b)):
        inf.feed((a + b)[i:i + 1])
    assert inf.result() == b"one " * 30 + b"two " * 30 and inf.eof


def test_the_limit_counts_all_members_together():
    members = b"".join(gzip.compress(b"z" * 100_000) for _ in range(5))
    z = inflate(members, 250_000)
    assert z.over and len(z.data) == 250_000
    inf = Inflater("gzip", 250_000)
    assert inf.feed(members) and inf.over and len(inf.result()) == 250_000
    # the expansion ratio's divisor is the compressed input read, each byte once
    assert inf.consumed <= len(members)


def test_a_multi_member_page_is_stored_whole(tmp_path: Path):
    head = "<!DOCTYPE html><html><head><title>Members</title></head><body><h1>Members</h1>"
    parts = [head + "<p>The first member tells of lighthouses along the northern coast.</p>",
             "<p>The second member tells of harbour pilots guiding ships at night.</p>",
             "<p>The third member tells of foghorns sounding over the quiet bay.</p></body></html>"]
    body = b"".join(gzip.compress(p.encode()) for p in parts)
    site = Site()
    site.routes.update({
        "/robots.txt": Route("User-agent: *\n", ctype="text/plain"),
        "/": Route(body, headers={"Content-Encoding": "gzip"}),
    })
    site.start()
    try:
        with Store(tmp_path / "g.db") as store:
            cfg = CrawlConfig(seeds=[site.origin + "/"], progress=False, sitemaps=False, timeout=5.0)
            stats = asyncio.run(Crawler(store, cfg, PipelineSpec(tokenizer="words"), listeners=[]).run())
            store.commit()
            assert stats.pages == 1 and stats.errors == 0
            text = " ".join(t for (t,) in store.db.execute("SELECT text FROM chunks"))
    finally:
        site.stop()
    for words in ("lighthouses along the northern coast", "harbour pilots guiding ships",
                  "foghorns sounding over the quiet bay"):
        assert words in text, text

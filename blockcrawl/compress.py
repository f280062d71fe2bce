"""Bounded decompression, one implementation for every body blockcrawl inflates: HTTP bodies
(Content-Encoding gzip/deflate), gzip sitemaps, gzip pages served as text/html without
Content-Encoding, and `.gz` files given to `blockcrawl extract`.

A 5 KB gzip of zeros inflates to 5 MB and a 2 MB file to 2 GB, so nothing here ever produces
more than `limit` bytes (plus one decoder step) however the input expands.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from .errors import BlockcrawlError

PIECE = 4096  # input fed per step by inflate(): damage in a stream loses only what follows it


class BodyTooLarge(BlockcrawlError):
    """A body over its byte limit: on the wire ("too_large") or once decompressed ("bomb")."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


class Inflater:
    """Incremental, bounded decoder for one Content-Encoding (identity, gzip, deflate).

    `feed` returns True once the output went over `limit`; the output kept is at most limit
    bytes plus one piece, so memory stays bounded by the cap however the input expands.
    "deflate" is the zlib format by the RFC, raw deflate as some servers send: we try the first
    and fall back to the second while nothing has been produced yet.

    Several codings ("gzip, gzip": RFC 9110 8.4, listed in the order they were applied; seen from
    servers that compress what a framework already compressed) are undone last first: this
    decoder takes the last one and feeds its output to a decoder of the rest, each bounded by
    the same limit.

    A gzip body may hold several members one after another (RFC 1952 2.2; `cat a.gz b.gz`, or a
    server that flushes by starting a new member): each member that ends is followed by the next,
    as `gzip -d` and Python's gzip do, all of them under the one limit. Zero bytes between members
    are padding; anything else after a member is trailing garbage, ignored as `gzip -d` does."""

    __slots__ = ("_d", "_fallback", "_gzip", "_junk", "_next", "_parts", "_seen", "_tail", "consumed", "limit",
                 "over", "size")

    def __init__(self, encoding: str, limit: int) -> None:
        codings = [c.strip() for c in encoding.lower().split(",")]
        codings = [c for c in codings if c not in ("", "identity")]
        if len(codings) > 8:  # no server stacks more; a header that long is an attack
            raise ValueError(f"unsupported content-encoding {encoding}: {len(codings)} codings")
        self._next = Inflater(", ".join(codings[:-1]), limit) if len(codings) > 1 else None
        enc = codings[-1] if codings else ""
        self.limit, self.size, self.over = limit, 0, False
        self.consumed = 0  # compressed input bytes decoded so far (the expansion ratio's divisor)
        self._parts: list[bytes] = []
        self._fallback = enc == "deflate"
        self._seen: list[bytes] = []  # input fed while nothing came out (for the raw-deflate retry)
        self._gzip = enc in ("gzip", "x-gzip")  # a member's end may be followed by another member
        self._tail = b""  # after a member: the first byte of what may be the next member's magic
        self._junk = False  # after a member: trailing bytes that are not a member, ignored
        if enc in ("", "identity"):
            self._d: Any = None
        elif enc in ("gzip", "x-gzip"):
            self._d = zlib.decompressobj(47)  # 47: gzip or zlib header
        elif enc == "deflate":
            self._d = zlib.decompressobj(15)
        else:
            raise ValueError(f"unsupported content-encoding {encoding}")

    def feed(self, data: bytes) -> bool:
        if self.over or not data:
            return self.over
        if self._d is None:
            self._parts.append(data)
            self.size += len(data)
            self.over = self.size > self.limit
            return self.over
        if self._fallback and not self.size:
            self._seen.append(data)
        while data:
            if self._d.eof:
                data = self._next_member(data)
                if not data:
                    break
            try:
                out = self._d.decompress(data, self.limit - self.size + 1)
            except zlib.error:
                if not (self._fallback and not self.size):
                    raise
                self._fallback = False
                self._d = zlib.decompressobj(-15)  # raw deflate: replay what came so far
                data, self._seen = b"".join(self._seen), []
                continue
            # at a member's end the input after it is unused_data, not consumed
            rest = self._d.unused_data if self._d.eof else self._d.unconsumed_tail
            self.consumed += len(data) - len(rest)
            if out and self._next is not None:
                self.size += len(out)
                self._seen = []
                if self._next.feed(out) or self.size > self.limit:
                    self.over = True
                    return True
            elif out:
                self._parts.append(out)
                self.size += len(out)
                self._seen = []
                if self.size > self.limit:
                    self.over = True
                    return True
            data = rest
        return False

    def _next_member(self, data: bytes) -> bytes:
        """Input after a finished stream: what starts the next gzip member (a new decoder is set up
        for it), or b"" when there is none yet (padding, garbage, a deflate stream's tail, or one
        byte that may begin a member: kept for the next feed)."""
        if not self._gzip or self._junk:
            return b""
        data = (self._tail + data).lstrip(b"\x00")
        self._tail = b""
        if not data:
            return b""
        if data[:1] != b"\x1f" or (len(data) > 1 and data[1:2] != b"\x8b"):
            self._junk = True  # not a member: ignored, as gzip -d does ("trailing garbage")
            return b""
        if len(data) == 1:
            self._tail = data
            return b""
        self._d = zlib.decompressobj(31)  # a following member is gzip (its magic is checked)
        return data

    @property
    def eof(self) -> bool:
        """The compressed stream has ended (an identity body ends when its bytes do): for gzip, the
        last member begun has ended (another may still follow)."""
        own = self._d is None or (bool(self._d.eof) and not self._tail)
        return own and (self._next is None or self._next.eof)

    @property
    def total(self) -> int:
        """Bytes of fully decoded output so far (all codings undone)."""
        return self.size if self._next is None else self._next.total

    def result(self) -> bytes:
        """The output, at most `limit` bytes."""
        if self._next is not None:
            return self._next.result()
        out = b"".join(self._parts)
        return out[:self.limit] if len(out) > self.limit else out


@dataclass(frozen=True, slots=True)
class Inflated:
    """What inflate() made of a whole body."""

    data: bytes  # at most limit bytes
    over: bool  # the output went past limit: data is its prefix
    complete: bool  # the stream ended properly (False: cut off, or damaged - see error)
    error: str = ""  # the decoder's complaint, if any


def inflate(data: bytes, limit: int, encoding: str = "gzip") -> Inflated:
    """A whole compressed body, decoded up to limit bytes. Never raises on bad input: a damaged
    or cut-off stream gives what decoded before the damage, with complete=False."""
    inf = Inflater(encoding, limit)
    error = ""
    try:
        for i in range(0, len(data), PIECE):
            if inf.feed(data[i:i + PIECE]):  # not at eof: a gzip member may follow
                break
    except zlib.error as e:
        error = f"{encoding}: {e}"
    complete = inf.eof and not error
    if not complete and not error and not inf.over:
        error = f"{encoding}: stream cut off"
    return Inflated(inf.result(), inf.over, complete, error)

"""crawl --resolve HOST:PORT:ADDR (curl's option): named hosts connect to given addresses without
DNS - a test or benchmark site under its real name on a loopback address, no /etc/hosts edit.
The answers still pass the address policy (addresses.PolicyResolver wraps StaticResolver)."""
from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING

from aiohttp.abc import AbstractResolver

from .addresses import parse_ip

if TYPE_CHECKING:
    from aiohttp.abc import ResolveResult


def parse_resolve(entries: Iterable[str]) -> dict[tuple[str, int], str]:
    """crawl --resolve HOST:PORT:ADDR entries (curl's option) as {(host, port): address}: HOST on
    PORT connects to ADDR without asking DNS (a test or benchmark site under its real name on a
    loopback address, no /etc/hosts edit). ValueError names the first bad entry."""
    out: dict[tuple[str, int], str] = {}
    for e in entries:
        host, _, rest = e.partition(":")
        port, _, addr = rest.partition(":")
        ip = parse_ip(addr)
        if not host or not port.isdigit() or not 0 < int(port) < 65536 or ip is None:
            raise ValueError(f"resolve entry {e!r} is not HOST:PORT:ADDR (ADDR an IP address, e.g. "
                             "example.org:80:127.0.0.1)")
        out[(host.lower().rstrip("."), int(port))] = str(ip)
    return out


class StaticResolver(AbstractResolver):
    """Answers the (host, port) pairs of --resolve from its table, every other name through the
    wrapped resolver (aiohttp's default unless given). PolicyResolver wraps it, so the address
    policy judges these answers like any DNS answer."""

    def __init__(self, table: dict[tuple[str, int], str], inner: AbstractResolver | None = None) -> None:
        if inner is None:
            from aiohttp.resolver import DefaultResolver

            inner = DefaultResolver()
        self.table = table
        self.inner = inner

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        addr = self.table.get((host.lower().rstrip("."), port))
        if addr is None:
            return await self.inner.resolve(host, port, family)
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        return [{"hostname": host, "host": addr, "port": port, "family": fam, "proto": 0,
                 "flags": socket.AI_NUMERICHOST}]

    async def close(self) -> None:
        await self.inner.close()

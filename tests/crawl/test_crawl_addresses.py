"""Address policy: no private / loopback / link-local / multicast address unless the seeds are on
one (or --allow-private), for literal hosts in any spelling and for names after DNS."""
from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from blockcrawl.crawl.net.addresses import (
    AddressPolicy,
    ForbiddenAddress,
    PolicyResolver,
    block_of,
    forbidden_reason,
    parse_ip,
)
from blockcrawl.crawl.urls import canonicalize, resolve

PAGE = "http://public.example/dir/p.html"
HINT = "--allow-private fetches them"
PUBLIC = AddressPolicy.from_seeds(["http://public.example/", "https://93.184.216.34/"])

FORBIDDEN = ["http://0x7f.1/", "http://2130706433/", "http://127.1/", "http://0177.0.0.01/", "http://127.0.0.1:8080/x",
             "http://[::1]/", "http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/",
             "http://[::127.0.0.1]/", "http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/",
             "http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/", "http://10.0.0.1/", "http://0xa.1/",
             "http://192.168.0.1/", "http://3232235521/", "http://0300.0250.0.1/", "http://172.16.5.4/",
             "http://[fc00::1]/", "http://[fd12:3456::1]/", "http://224.0.0.1/", "http://[ff02::1]/",
             "http://0.0.0.0/", "http://0/", "http://100.64.0.1/", "http://255.255.255.255/",
             "http://localhost:8080/", "http://LOCALHOST./", "http://x.localhost/"]
ALLOWED = ["http://8.8.8.8/", "http://[2606:4700:4700::1111]/", "http://example.com/", "http://10.example/",
           "http://127.example.com/", "http://[::ffff:808:808]/"]


def test_literal_hosts_in_any_spelling_are_refused_for_public_seeds():
    for link in FORBIDDEN:
        url = resolve(PAGE, link)
        assert url is not None, link
        assert not PUBLIC.url_allowed(url), (link, url)
        assert PUBLIC.forbidden_host(url.split("/")[2].rsplit(":", 1)[0] if "[" not in url else
                                     url[url.find("["):url.find("]") + 1]), url
    for link in ALLOWED:
        url = resolve(PAGE, link)
        assert url is not None and PUBLIC.url_allowed(url), (link, url)


def test_numeric_loopback_regression():
    """The case that matters: a link to http://0x7f.1/ on a public page was keyed "0x7f.1" and fetched
    from 127.0.0.1. Now it is keyed by its standard form and refused."""
    url = resolve(PAGE, "http://0x7f.1/admin")
    assert url == "http://127.0.0.1/admin"
    assert not PUBLIC.url_allowed(url)
    assert PUBLIC.forbidden_host("127.0.0.1") == "loopback address 127.0.0.1"


def test_seeds_on_a_private_block_allow_that_block_only():
    local = AddressPolicy.from_seeds([canonicalize("http://127.0.0.1:8123/", merge_slash=False) or ""])
    assert local.url_allowed("http://127.0.0.2:9000/x") and local.url_allowed("http://[::1]:9000/")
    assert not local.url_allowed("http://10.0.0.1/") and not local.url_allowed("http://169.254.169.254/")
    lan = AddressPolicy.from_seeds(["http://192.168.1.5/"])
    assert lan.url_allowed("http://192.168.7.7/") and not lan.url_allowed("http://10.0.0.1/")
    assert not lan.url_allowed("http://127.0.0.1/")
    assert AddressPolicy.from_seeds(["http://localhost:8000/"]).url_allowed("http://127.0.0.1:8000/")
    anything = AddressPolicy.from_seeds(["http://public.example/"], allow_private=True)
    assert all(anything.url_allowed(u) for u in FORBIDDEN)


def test_blocks():
    assert block_of(parse_ip("[::ffff:a00:1]")) == "private 10/8"  # type: ignore[arg-type]
    assert block_of(parse_ip("93.184.216.34")) is None  # type: ignore[arg-type]
    assert parse_ip("example.com") is None and parse_ip("fe80::1%eth0") is not None


class FakeDNS(AbstractResolver):
    """A resolver answering from a table (no DNS server is reachable here)."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table, self.closed = table, False

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        if host not in self.table:
            raise OSError(f"no such host {host}")
        return [ResolveResult(hostname=host, host=a, port=port, family=socket.AF_INET6 if ":" in a else socket.AF_INET,
                              proto=0, flags=socket.AI_NUMERICHOST) for a in self.table[host]]

    async def close(self) -> None:
        self.closed = True


def test_resolver_drops_forbidden_addresses_after_dns():
    dns = FakeDNS({"rebind.example": ["127.0.0.1"], "mixed.example": ["10.0.0.7", "93.184.216.34", "::1"],
                   "public.example": ["93.184.216.34"], "meta.example": ["169.254.169.254", "fe80::1"],
                   "intranet.corp": ["10.1.2.3"]})
    policy = AddressPolicy.from_seeds(["http://public.example/", "http://intranet.corp/"])

    async def main() -> None:
        r = PolicyResolver(policy, dns)
        with pytest.raises(ForbiddenAddress, match="rebind.example"):
            await r.resolve("rebind.example", 80)
        with pytest.raises(OSError):
            await r.resolve("meta.example", 80)
        assert [i["host"] for i in await r.resolve("mixed.example", 80)] == ["93.184.216.34"]
        assert [i["host"] for i in await r.resolve("public.example", 80)] == ["93.184.216.34"]
        assert not policy.url_allowed("http://10.9.9.9/")
        # a seed's own name may resolve privately, and then its block is the crawl's own
        assert [i["host"] for i in await r.resolve("intranet.corp", 80)] == ["10.1.2.3"]
        assert policy.url_allowed("http://10.9.9.9/") and not policy.url_allowed("http://127.0.0.1/")
        with pytest.raises(ForbiddenAddress):
            await r.resolve("rebind.example", 80)
        assert r.refused == 3
        await r.close()
        assert dns.closed

    asyncio.run(main())


def test_aiohttp_refuses_a_name_rebound_to_loopback():
    """End to end through aiohttp: a public-seeded crawl asking for a name that DNS points at a
    real server on 127.0.0.1 never connects; with --allow-private it does."""
    hits: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits.append(await reader.readline())
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()

    async def get(policy: AddressPolicy, url: str) -> str:
        conn = aiohttp.TCPConnector(resolver=PolicyResolver(policy, FakeDNS({"rebind.example": ["127.0.0.1"]})))
        async with aiohttp.ClientSession(connector=conn) as s:
            try:
                async with s.get(url) as resp:
                    return await resp.text()
            except aiohttp.ClientConnectorDNSError as e:
                assert isinstance(e.os_error, ForbiddenAddress)
                assert forbidden_reason(e) == f"rebind.example resolves only to non-public addresses (127.0.0.1); {HINT}"
                return "refused: " + str(e)

    async def main() -> tuple[str, str]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        url = f"http://rebind.example:{port}/"
        refused = await get(AddressPolicy.from_seeds(["http://public.example/"]), url)
        allowed = await get(AddressPolicy.from_seeds(["http://public.example/"], allow_private=True), url)
        server.close()
        await server.wait_closed()
        return refused, allowed

    refused, allowed = asyncio.run(main())
    assert refused.startswith("refused: ") and "non-public" in refused, refused
    assert allowed == "ok" and len(hits) == 1


def test_middleware_refuses_a_redirect_aiohttp_follows_to_a_forbidden_literal():
    """robots.txt is fetched with aiohttp following redirects itself; a redirect to an IP literal
    never meets the resolver. The target here, 0.0.0.0, would reach this machine's server, so a
    failure of the check shows as a second hit (and no traffic leaves the machine)."""
    from blockcrawl.crawl.net.addresses import policy_middleware

    hits: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits.append((await reader.readline()).rstrip())
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        port = writer.get_extra_info("sockname")[1]
        writer.write(f"HTTP/1.1 301 Moved\r\nLocation: http://0.0.0.0:{port}/secret\r\nContent-Length: 0\r\n"
                     "Connection: close\r\n\r\n".encode())
        await writer.drain()
        writer.close()

    async def main() -> str:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        policy = AddressPolicy.from_seeds([f"http://127.0.0.1:{port}/"])
        async with aiohttp.ClientSession(middlewares=(policy_middleware(policy),)) as s:
            try:
                async with s.get(f"http://127.0.0.1:{port}/robots.txt") as resp:
                    out = f"status {resp.status}"
            except aiohttp.ClientError as e:  # aiohttp wraps it as ClientOSError
                out = f"refused: {forbidden_reason(e)}"
        server.close()
        await server.wait_closed()
        return out

    out = asyncio.run(main())
    assert out == "refused: unspecified address 0.0.0.0: not fetched; --allow-private fetches it", out
    assert hits == [b"GET /robots.txt HTTP/1.1"]

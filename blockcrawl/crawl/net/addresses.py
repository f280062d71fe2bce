"""Which IP addresses a crawl may connect to: no private, loopback, link-local, multicast (or
otherwise non-public) address when the seeds are public hosts, in any spelling and after DNS.

A page can link to http://127.0.0.1:6379/, http://169.254.169.254/ (cloud metadata) or
http://router.local/, and a public name can resolve (or be re-bound between two lookups) to
10.0.0.1: a crawler that follows them turns every page author into a client of the crawling
machine's own network. Two checks close that, both from one AddressPolicy:

* literal hosts, in URL policy (AddressPolicy.url_allowed): the canonical URL's host is the
  WHATWG serialisation, so `0x7f.1`, `2130706433`, `[::ffff:7f00:1]` are already `127.0.0.1` /
  `[::ffff:7f00:1]` and one parse of the dotted / bracketed form suffices; embedded IPv4
  (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96, 6to4) is judged by the IPv4 inside.
  `localhost` and `*.localhost` are loopback by definition (RFC 6761). aiohttp never asks the
  resolver about an IP literal, so this check is the only one those URLs meet.
* names, after DNS (PolicyResolver): an aiohttp resolver that wraps the default one and drops
  every forbidden address from its answer before a connection is made, so DNS pointing (or
  re-binding) a public name to 127.0.0.1 is refused at connect time; when nothing is left the
  lookup fails with an OSError that aiohttp reports as a DNS error.

Seeds on such addresses (a test site on 127.0.0.1, an intranet at 10.x) allow their own block:
a seed on 127.0.0.1 or `localhost` allows loopback (127.0.0.0/8 and ::1), one on 192.168.1.5
allows 192.168.0.0/16; a seed named by a host allows every address of that host and, once its
name has been resolved, the blocks of those addresses. allow_private=True (--allow-private)
turns the whole check off.
"""
from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING

from aiohttp.abc import AbstractResolver

if TYPE_CHECKING:
    from aiohttp import (
        ClientHandlerType,
        ClientMiddlewareType,
        ClientRequest,
        ClientResponse,
    )
    from aiohttp.abc import ResolveResult

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# (block, networks): the non-public blocks, each allowed as a whole by a seed inside it.
_BLOCKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("loopback", ("127.0.0.0/8", "::1/128")),
    ("unspecified", ("0.0.0.0/8", "::/128")),  # 0.0.0.0 connects to this machine on Linux
    ("private 10/8", ("10.0.0.0/8",)),
    ("private 172.16/12", ("172.16.0.0/12",)),
    ("private 192.168/16", ("192.168.0.0/16",)),
    ("unique local fc00::/7", ("fc00::/7", "fec0::/10")),  # + the deprecated site-local
    ("shared 100.64/10", ("100.64.0.0/10",)),  # carrier-grade NAT
    ("link-local", ("169.254.0.0/16", "fe80::/10")),  # cloud metadata lives here
    ("multicast", ("224.0.0.0/4", "ff00::/8")),
    ("reserved", ("240.0.0.0/4", "192.0.0.0/24", "198.18.0.0/15")),  # + broadcast, IETF, benchmarking
    ("documentation", ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")),
)
_NETS: tuple[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network], ...] = tuple(
    (name, ipaddress.ip_network(n)) for name, nets in _BLOCKS for n in nets)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPAT = ipaddress.ip_network("::/96")


def parse_ip(host: str) -> IPAddress | None:
    """The address of an IP-literal host ("127.0.0.1", "[::1]", "fe80::1%eth0"), or None for a
    name."""
    h = host[1:-1] if host[:1] == "[" and host[-1:] == "]" else host
    if not h or not (h[0].isdigit() or ":" in h):
        return None
    try:
        return ipaddress.ip_address(h.split("%", 1)[0])
    except ValueError:
        return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries to the IPv4 network, if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (ip in _COMPAT and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def block_of(ip: IPAddress) -> str | None:
    """The non-public block an address is in (see _BLOCKS), or None for a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        v4 = _embedded_v4(ip)
        if v4 is not None:
            return block_of(v4)
    for name, net in _NETS:
        if ip.version == net.version and ip in net:
            return name
    return None


def host_of_url(url: str) -> str:
    """The host of an absolute URL (no userinfo, no port; IPv6 in brackets)."""
    start = url.find("//") + 2
    end = len(url)
    for c in "/?#":
        i = url.find(c, start)
        if 0 <= i < end:
            end = i
    hostport = url[start:end].rpartition("@")[2]
    if hostport.startswith("["):
        return hostport[:hostport.find("]") + 1]
    return hostport.rpartition(":")[0] if ":" in hostport else hostport


def _is_localhost(host: str) -> bool:
    h = host.lower().rstrip(".")
    return h == "localhost" or h.endswith(".localhost")


class AddressPolicy:
    """Which addresses a crawl may connect to (module docstring). Built once per crawl from the
    seeds; the literal check is a dict hit after the first time a host is seen."""

    __slots__ = ("_memo", "allow_private", "allowed_blocks", "seed_hosts")

    def __init__(self, allowed_blocks: Iterable[str] = (), seed_hosts: Iterable[str] = (),
                 allow_private: bool = False) -> None:
        self.allow_private = allow_private
        self.allowed_blocks: set[str] = set(allowed_blocks)
        self.seed_hosts = frozenset(h.lower() for h in seed_hosts)
        self._memo: dict[str, str | None] = {}

    @classmethod
    def from_seeds(cls, seeds: Iterable[str], allow_private: bool = False) -> AddressPolicy:
        """The policy for a crawl of these (canonical) seed URLs."""
        blocks: set[str] = set()
        names: set[str] = set()
        for url in seeds:
            host = host_of_url(url)
            ip = parse_ip(host)
            if ip is not None:
                b = block_of(ip)
                if b is not None:
                    blocks.add(b)
            elif _is_localhost(host):
                blocks.add("loopback")
            elif host:
                names.add(host)
        return cls(blocks, names, allow_private)

    def address_allowed(self, address: str | IPAddress) -> bool:
        """May the crawl connect to this IP address?"""
        if self.allow_private:
            return True
        ip = address if not isinstance(address, str) else parse_ip(address)
        if ip is None:
            return False  # not an address at all
        b = block_of(ip)
        return b is None or b in self.allowed_blocks

    def forbidden_host(self, host: str) -> str | None:
        """Why a URL's host is refused before any lookup ("loopback 127.0.0.1"...), or None
        (names are judged after DNS by PolicyResolver)."""
        if self.allow_private:
            return None
        memo = self._memo
        if host in memo:
            return memo[host]
        why: str | None = None
        ip = parse_ip(host)
        if ip is not None:
            b = block_of(ip)
            if b is not None and b not in self.allowed_blocks:
                why = f"{b} address {host}"
        elif _is_localhost(host) and "loopback" not in self.allowed_blocks:
            why = f"loopback name {host}"
        if len(memo) > 100_000:
            memo.clear()
        memo[host] = why
        return why

    def url_allowed(self, url: str) -> bool:
        """May the crawl fetch this absolute URL, as far as its literal host tells?"""
        return self.forbidden_host(host_of_url(url)) is None

    def connectable(self, host: str, addresses: list[str]) -> list[str]:
        """Of the addresses a name resolved to, those a connection may use: all of them with
        allow_private or for a seed's own name (whose blocks are then learnt), else the allowed
        ones; ForbiddenAddress when none is (PolicyResolver for aiohttp, extract for urllib)."""
        if self.allow_private:
            return addresses
        if host.lower().rstrip(".") in self.seed_hosts:
            self.learn(host, addresses)
            return addresses
        kept = [a for a in addresses if self.address_allowed(a)]
        if not kept:
            shown = ", ".join(sorted(set(addresses))[:4])
            raise ForbiddenAddress(f"{host} resolves only to non-public addresses ({shown}); "
                                   "--allow-private fetches them")
        return kept

    def learn(self, host: str, addresses: Iterable[str]) -> None:
        """A seed host resolved to these addresses: their blocks are the crawl's own."""
        for a in addresses:
            ip = parse_ip(a)
            b = block_of(ip) if ip is not None else None
            if b is not None and b not in self.allowed_blocks:
                self.allowed_blocks.add(b)
                self._memo.clear()


class ForbiddenAddress(OSError):
    """A name resolved only to addresses the crawl may not connect to. aiohttp wraps it in
    ClientConnectorDNSError (its .os_error is this; its message shows ours as strerror)."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EACCES, message)


class PolicyResolver(AbstractResolver):
    """The aiohttp resolver that applies an AddressPolicy after DNS: it asks the wrapped
    resolver (aiohttp's default unless given) and keeps only the allowed addresses. Make it
    inside the running event loop (aiohttp's default resolvers bind to it)."""

    def __init__(self, policy: AddressPolicy, inner: AbstractResolver | None = None) -> None:
        if inner is None:
            from aiohttp.resolver import DefaultResolver

            inner = DefaultResolver()
        self.policy = policy
        self.inner = inner
        self.refused = 0  # lookups whose every address was dropped

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        infos = await self.inner.resolve(host, port, family)
        try:
            kept = set(self.policy.connectable(host, [i["host"] for i in infos]))
        except ForbiddenAddress:
            self.refused += 1
            raise
        return [i for i in infos if i["host"] in kept]

    async def close(self) -> None:
        await self.inner.close()


def policy_middleware(policy: AddressPolicy) -> ClientMiddlewareType:
    """An aiohttp client middleware (aiohttp >= 3.12) that refuses any request, redirects that
    aiohttp follows by itself included (robots.txt), whose literal host the policy forbids:
    aiohttp never asks the resolver about an IP literal, so without it a robots.txt redirect to
    http://169.254.169.254/ would be followed. Raises ForbiddenAddress before connecting."""

    async def middleware(req: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        why = policy.forbidden_host(host_of_url(str(req.url)))
        if why is not None:
            raise ForbiddenAddress(f"{why}: not fetched; --allow-private fetches it")
        return await handler(req)

    return middleware


def forbidden_reason(exc: BaseException) -> str | None:
    """The policy's message if a request failed because of it, else None. aiohttp wraps what
    PolicyResolver raises in ClientConnectorDNSError and what policy_middleware raises in
    ClientOSError; the fetcher calls this in its error handling to report "forbidden" instead
    of a DNS or connection error."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 5:
        if isinstance(e, ForbiddenAddress):
            return str(e.strerror)
        e = getattr(e, "os_error", None) or e.__cause__
        seen += 1
    return None

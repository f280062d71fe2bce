"""What a crawl sends besides the request itself: extra headers, cookies, per-host credentials and
the proxy; and how secrets are kept out of logs, the store and exports.

* Headers (`--header 'Name: value'`) go on every request, to every host.
* Cookies: one aiohttp.CookieJar for the whole crawl (domain/path matching per host, Set-Cookie
  honoured), optionally loaded from a Netscape cookies.txt (the format of curl, wget and browser
  export add-ons) through http.cookiejar.MozillaCookieJar. `unsafe=True`: cookies of IP-literal
  hosts are kept too (a crawl of 127.0.0.1 or an intranet address needs them).
* Credentials are per host (`--auth HOST=user:password` basic, `--bearer HOST=TOKEN`): the
  Authorization header is added only to requests whose URL is on that host (name or name:port), so
  a link or redirect to another host never carries it.
* Proxy: `--proxy URL` for every request, else the standard environment variables (http_proxy,
  https_proxy, all_proxy, no_proxy) read by urllib's rules. We do not use aiohttp's trust_env: it
  also sends ~/.netrc passwords to whatever host matches, which a crawler must not do unasked.
* Redaction: every secret (passwords, tokens, header values, cookie values, the userinfo of
  `--proxy` or of the environment's proxy variables) and the userinfo of any URL is replaced by
  `***` in the error text the fetcher returns, which is what reaches the crawl log, the store and
  the -v log. URLs are stored canonical, which drops `user:password@`.
"""
from __future__ import annotations

import base64
import email.utils
import http.cookiejar
import re
import time
import urllib.request
from dataclasses import dataclass
from http.cookies import Morsel
from typing import TYPE_CHECKING

from ...errors import ConfigError

if TYPE_CHECKING:
    import aiohttp

REDACTED = "***"
# header values shorter than this are not redacted from error texts: "1" or "no" would blot out
# unrelated text, and are no secrets
MIN_SECRET = 6


def parse_header(raw: str) -> tuple[str, str]:
    """'Name: value' -> (name, value); ConfigError for a missing colon, an empty or bad name, or a
    CR/LF anywhere (header injection)."""
    name, sep, value = raw.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not name:
        raise ConfigError(f"header must be 'Name: value' (got {raw!r})")
    if any(c in raw for c in "\r\n\0") or any(c.isspace() or c in '()<>@,;:\\"/[]?={}' for c in name):
        raise ConfigError(f"header {name!r}: bad character in the name or a line break in the value")
    return name, value


def _split_host(raw: str, what: str) -> tuple[str, str]:
    host, sep, rest = raw.partition("=")
    host = host.strip().lower()
    if not sep or not host or not rest:
        # the value is not repeated: a mistyped credential is still a credential
        raise ConfigError(f"{what} must be HOST=..." + (f" (got {host!r}=...)" if sep and host else ""))
    if "/" in host or "@" in host:
        raise ConfigError(f"{what}: HOST is a host name, optionally with :port, not a URL (got {host!r})")
    return host, rest


def parse_auth(raw: str) -> tuple[str, str, str]:
    """'HOST=user:password' -> (host, user, password). The message never repeats the password."""
    host, rest = _split_host(raw, "auth")
    user, sep, password = rest.partition(":")
    if not sep or not user:
        raise ConfigError(f"auth for {host}: give user:password")
    if any(c in rest for c in "\r\n\0"):
        raise ConfigError(f"auth for {host}: line break in the credentials")
    return host, user, password


def parse_bearer(raw: str) -> tuple[str, str]:
    """'HOST=TOKEN' -> (host, token)."""
    host, token = _split_host(raw, "bearer")
    if any(c.isspace() for c in token):
        raise ConfigError(f"bearer token for {host}: whitespace in the token")
    return host, token


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


@dataclass(frozen=True, slots=True, repr=False)
class Credentials:
    """Everything secret or site-specific a fetcher sends. repr() shows no secret."""

    headers: tuple[tuple[str, str], ...] = ()
    cookies: str | None = None  # Netscape cookies.txt path
    auth: tuple[tuple[str, str, str], ...] = ()  # (host[:port], user, password)
    bearer: tuple[tuple[str, str], ...] = ()  # (host[:port], token)
    proxy: str | None = None  # http(s):// or socks5:// URL; None: the environment's
    proxy_env: bool = True  # honour http_proxy / https_proxy / no_proxy

    def __repr__(self) -> str:
        return (f"Credentials(headers={[n for n, _ in self.headers]}, cookies={self.cookies!r}, "
                f"auth={[h for h, _, _ in self.auth]}, bearer={[h for h, _ in self.bearer]}, "
                f"proxy={REDACTED if self.proxy else None}, proxy_env={self.proxy_env})")

    def authorization(self, host: str, port: int | None, default_port: int | None) -> str | None:
        """The Authorization header for a request to host:port, or None. A credential given for a
        bare host name applies on its default port; 'host:port' on that port only."""
        host = host.lower()
        keys = {f"{host}:{port}"}
        if port == default_port:
            keys.add(host)
        for h, token in reversed(self.bearer):
            if h in keys:
                return "Bearer " + token
        for h, user, password in reversed(self.auth):
            if h in keys:
                return _basic(user, password)
        return None

    def secrets(self) -> list[str]:
        """Strings that must never be written anywhere, longest first (so that a secret containing
        another is redacted whole)."""
        out: set[str] = set()
        for _, user, password in self.auth:
            if password:
                out.add(password)
                out.add(_basic(user, password).split(" ", 1)[1])
        for _, token in self.bearer:
            out.add(token)
        for _, value in self.headers:
            if len(value) >= MIN_SECRET:
                out.add(value)
        # --proxy, else the environment's proxies (any of them may be used): their passwords
        proxies = [self.proxy] if self.proxy else \
            list(urllib.request.getproxies_environment().values()) if self.proxy_env else []
        for proxy in proxies:
            import yarl
            try:
                u = yarl.URL(proxy)
                parts = (u.user or "", u.password or "", u.raw_user or "", u.raw_password or "")
            except ValueError:  # a malformed variable: its userinfo as written
                info = proxy.partition("://")[2].partition("/")[0].rpartition("@")[0]
                name, _, secret = info.partition(":")
                parts = (name, secret, name, secret)
            puser, ppass, raw_user, raw_pass = parts
            if ppass:
                out.add(ppass)
                out.add(raw_pass or ppass)
            if puser and ppass:
                out.add(f"{raw_user}:{raw_pass}@")
        return sorted((s for s in out if s), key=len, reverse=True)

    def proxy_for(self, url: str) -> str | None:
        """The proxy for this URL: --proxy, else the environment's (no_proxy honoured), else None."""
        if self.proxy:
            return self.proxy
        if not self.proxy_env:
            return None
        import yarl
        u = yarl.URL(url)
        proxies = urllib.request.getproxies_environment()
        p = proxies.get(u.scheme or "http") or proxies.get("all")
        if not p:
            return None
        if u.host and urllib.request.proxy_bypass_environment(  # type: ignore[attr-defined]
                u.host if u.port is None else f"{u.host}:{u.port}", proxies):
            return None
        return p


# scheme://userinfo@ in any URL inside a text (an error message naming a proxy, a redirect target)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s'\"<>]*@")


def redact(text: str, secrets: list[str]) -> str:
    """text with every secret replaced by *** and the userinfo of every URL in it by ***
    ("http://user:pass@proxy:3128" -> "http://***@proxy:3128"): a password reaches an error
    message in URLs that are not ours to list (aiohttp names the proxy it failed to use)."""
    if "@" in text:
        text = _USERINFO.sub(r"\1" + REDACTED + "@", text)
    for s in secrets:
        if s in text:
            text = text.replace(s, REDACTED)
    return text


def load_cookies(jar: aiohttp.CookieJar, path: str) -> int:
    """Load a Netscape cookies.txt into the aiohttp jar; returns how many cookies were loaded.
    Expired cookies are dropped; session cookies (expiry 0 or empty) are kept for the crawl. A file that
    cannot be read is a ConfigError (one line), not a crawl without the cookies the user meant."""
    import yarl
    mj = http.cookiejar.MozillaCookieJar(path)
    try:
        # expiry judged below: curl and browser exports write 0 for a session cookie, which
        # MozillaCookieJar would take for 1970 and drop
        mj.load(ignore_discard=True, ignore_expires=True)
    except (OSError, http.cookiejar.LoadError) as e:
        raise ConfigError(f"cookies: cannot read {path}: {e}") from None
    n = 0
    now = time.time()
    for c in mj:
        if c.value is None or (c.expires and c.expires < now):
            continue
        domain = c.domain.lstrip(".")
        m: Morsel[str] = Morsel()
        m.set(c.name, c.value, c.value)
        m["path"] = c.path or "/"
        if c.domain_specified or c.domain.startswith("."):
            m["domain"] = domain  # the domain and its subdomains
        if c.secure:
            m["secure"] = True
        if c.expires:
            m["expires"] = email.utils.formatdate(c.expires, usegmt=True)
        jar.update_cookies({c.name: m}, response_url=yarl.URL.build(scheme="https" if c.secure else "http", host=domain))
        n += 1
    return n

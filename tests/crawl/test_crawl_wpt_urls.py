"""Link resolution against the web-platform-tests URL cases (tests/data/urltestdata.json, the
suite browsers run; provenance and licence in tests/data/urltestdata.LICENSE.md).

Every case is an href found on a page at `base`. Valid cases whose standard result is an http(s)
URL must resolve to that result with the crawler's documented rules applied on top (computed here
from the case's own components, not by the parser under test); cases the standard calls invalid
must be rejected. Links the crawler drops on purpose are excluded, with their reason.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from blockcrawl.crawl.urls import (
    TRACKING_PARAMS,
    TRACKING_PREFIXES,
    Resolver,
    canonicalize,
    parse,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "urltestdata.json"
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_C0_SPACE = "".join(chr(i) for i in range(0x21))


def cases() -> list[dict]:
    return [c for c in json.loads(DATA.read_text("utf-8")) if isinstance(c, dict)]


def _pct(s: str) -> str:
    def fix(m: re.Match[str]) -> str:
        c = chr(int(m.group(1), 16))
        return c if c in _UNRESERVED else "%" + m.group(1).upper()
    return re.sub(r"%([0-9A-Fa-f]{2})", fix, s)


def crawler_form(c: dict) -> str:
    """The standard's answer with the crawler's rules: no fragment, no userinfo, no trailing dot
    on the host, unreserved escapes decoded, hex upper-cased, parameters filtered and sorted."""
    host = c["hostname"].rstrip(".")
    netloc = f"{host}:{c['port']}" if c["port"] else host
    params = [_pct(p) for p in c["search"][1:].split("&") if p]
    params = sorted(p for p in params if not (p.split("=", 1)[0].lower() in TRACKING_PARAMS
                                              or p.split("=", 1)[0].lower().startswith(TRACKING_PREFIXES)))
    q = "?" + "&".join(params) if params else ""
    return f"{c['protocol']}//{netloc}{_pct(c['pathname'])}{q}"


def excluded(c: dict) -> str | None:
    """Why a valid http(s) case is not a link the crawler follows (on purpose), or None."""
    href = c["input"].strip(_C0_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")
    if not href:
        return "empty href: the page itself"
    if href[0] == "#":
        return "fragment-only href: the page itself"
    return None


def score() -> dict:
    r = Resolver()
    out: dict = {"valid": 0, "valid_ok": 0, "exact": 0, "invalid": 0, "rejected": 0,
                 "excluded": Counter(), "other_scheme": 0, "misses": [], "accepted_invalid": []}
    for c in cases():
        base = c.get("base") or ""  # no base: an href that must be absolute
        url, why = r.resolve(base, c["input"])
        if c.get("failure"):
            out["invalid"] += 1
            if url is None:
                out["rejected"] += 1
            else:
                out["accepted_invalid"].append((c["input"], base, url))
            continue
        if c["protocol"] not in ("http:", "https:"):
            out["other_scheme"] += 1  # the crawler fetches http(s) only
            assert url is None, (c["input"], base, url)
            continue
        reason = excluded(c)
        if reason:
            out["excluded"][reason] += 1
            continue
        out["valid"] += 1
        want = crawler_form(c)
        if url == want:
            out["valid_ok"] += 1
        else:
            out["misses"].append((c["input"], base, want, url, why))
        if url == c["href"].split("#", 1)[0]:
            out["exact"] += 1
    return out


def test_wpt_valid_http_links_resolve_as_the_standard_says():
    s = score()
    assert s["valid"] > 200
    rate = s["valid_ok"] / s["valid"]
    assert rate >= 0.97, (rate, s["misses"][:20])
    # the known misses, on purpose: hosts made only of dots, or whose form without its trailing
    # dots is no host ("foo.09" is an IPv4 number that does not parse), are rejected
    assert {m[0] for m in s["misses"]} <= {"http://./", "http://../", "http://foo.09.."}, s["misses"]
    # the links dropped on purpose, with their reasons (documented in docs/crawling.md, "Canonical URLs")
    assert set(s["excluded"]) <= {"empty href: the page itself", "fragment-only href: the page itself"}


def test_wpt_invalid_links_are_rejected():
    s = score()
    assert s["invalid"] > 200
    rate = s["rejected"] / s["invalid"]
    assert rate >= 0.95, (rate, s["accepted_invalid"][:20])


def test_canonical_form_is_standard_and_idempotent():
    """The frontier key is a WHATWG-normal URL (parsing it gives it back) and canonicalising
    twice changes nothing: the same page is never keyed two ways."""
    r = Resolver()
    n = 0
    for c in cases():
        url, _ = r.resolve(c.get("base") or "", c["input"])
        if url is None:
            continue
        n += 1
        assert parse(url).href == url, url
        assert canonicalize(url, merge_slash=False) == url, url
        assert canonicalize(canonicalize(url)) == canonicalize(url), url  # type: ignore[arg-type]
    assert n > 200


def test_spellings_of_one_address_have_one_key():
    for spelling in ("http://192.168.0.1/", "http://0xC0.0250.1/", "http://3232235521/", "http://192.168.1/",
                     "http://0300.0250.0.1/", "http://192.168.0.1./", "http://①⑨②.168.0.1/"):
        assert canonicalize(spelling) == "http://192.168.0.1/", spelling
    assert canonicalize("http://a.example/?'") == canonicalize("http://a.example/?%27") == "http://a.example/?%27"
    assert canonicalize("http://[0:0::FFFF:127.0.0.1]/") == "http://[::ffff:7f00:1]/"

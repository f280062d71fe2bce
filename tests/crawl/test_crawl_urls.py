"""URL resolution, classification and canonicalisation (seed 002 section 3)."""
from blockcrawl.crawl.sources.links import base_url, raw_links
from blockcrawl.crawl.urls import Resolver, canonicalize, url_key
from blockcrawl.parse import load

BASE = "http://example.org/dir/page.html"


def test_variants_of_one_page_have_one_canonical_form():
    variants = [
        "http://example.org/s3/p17.html", "HTTP://Example.ORG/s3/p17.html", "http://example.org:80/s3/p17.html",
        "http://example.org/s3/p17.html#comments", "http://example.org/s4/../s3/./p17.html",
        "http://example.org/s3/p%31%37.html", "http://example.org/s3/p17.html?utm_source=x&utm_medium=email",
        "http://example.org/s3/p17.html?fbclid=abc&gclid=1",
    ]
    assert {canonicalize(v) for v in variants} == {"http://example.org/s3/p17.html"}


def test_trailing_slash_query_order_and_escapes():
    assert canonicalize("http://a.org/s3") == canonicalize("http://a.org/s3/") == "http://a.org/s3/"
    assert canonicalize("http://a.org") == "http://a.org/"
    assert canonicalize("http://a.org/x?b=2&a=1") == canonicalize("http://a.org/x?a=1&b=2&utm_campaign=z")
    assert canonicalize("http://a.org/a%2fb.html") == "http://a.org/a%2Fb.html"  # reserved stays encoded
    assert canonicalize("http://a.org/%7euser/") == "http://a.org/~user/"
    assert canonicalize("https://a.org:443/x.html") == "https://a.org/x.html"
    assert canonicalize("https://a.org:8443/x.html") == "https://a.org:8443/x.html"
    assert canonicalize("http://a.org/статья.html") == "http://a.org/%D1%81%D1%82%D0%B0%D1%82%D1%8C%D1%8F.html"
    assert canonicalize("http://bücher.de/") == "http://xn--bcher-kva.de/"


def test_rejects_non_http_and_malformed():
    for bad in ("ftp://a.org/x", "mailto:a@b.c", "http://", "http://a.org:99999/", "http://[::1/", "not a url"):
        assert canonicalize(bad) is None, bad


def test_resolve_link_categories():
    r = Resolver()
    assert r.resolve(BASE, "/x/y.html") == ("http://example.org/x/y.html", None)  # root-relative
    assert r.resolve(BASE, "q.html") == ("http://example.org/dir/q.html", None)  # relative
    assert r.resolve(BASE, "../up.html") == ("http://example.org/up.html", None)
    assert r.resolve("https://example.org/a/", "//cdn.example.org/z.html") == ("https://cdn.example.org/z.html", None)
    assert r.resolve(BASE, "http://other.org/a") == ("http://other.org/a", None)  # absolute, fetched as written
    assert url_key("http://other.org/a") == url_key("http://other.org/a/") == "http://other.org/a/"
    assert url_key("http://other.org/a?x=1") == "http://other.org/a/?x=1"
    assert url_key("http://other.org") == "http://other.org"
    assert r.resolve(BASE, "  /padded.html\n") == ("http://example.org/padded.html", None)
    assert r.resolve(BASE, "?page=2&cat=1") == ("http://example.org/dir/page.html?cat=1&page=2", None)
    for href, why in [("#top", "fragment"), ("", "empty"), ("javascript:void(0)", "scheme"),
                      ("mailto:x@y.z", "scheme"), ("tel:+1555", "scheme"), ("data:text/html,hi", "scheme"),
                      ("http://a.org:notaport/", "malformed")]:
        assert r.resolve(BASE, href) == (None, why), href
    # the cache must not leak one origin's root-relative result into another origin
    assert r.resolve("http://b.org/", "/x/y.html") == ("http://b.org/x/y.html", None)


def test_links_from_dom_with_base_href_and_legacy_charset():
    html = ('<html><head><meta charset="windows-1251"><base href="/s4/"></head><body>'
            '<a href="p1.html">a</a><area href="/map.html"><a name="x">no href</a>'
            '<a href="/legacy/\xf1\xf2\xe0\xf2\xfc\xff.html">cp1251</a></body></html>').encode("latin-1")
    dom = load(html, "http://h.org/s3/p9.html", "text/html")
    base = base_url(dom, "http://h.org/s3/p9.html")
    assert base == "http://h.org/s4/"
    r = Resolver()
    urls = [r.resolve(base, h)[0] for h in raw_links(dom)]
    assert urls == ["http://h.org/s4/p1.html", "http://h.org/map.html",
                    "http://h.org/legacy/%D1%81%D1%82%D0%B0%D1%82%D1%8C%D1%8F.html"]


def test_link_at_the_bottom_of_10000_nested_divs():
    html = "<html><body>" + "<div>" * 10000 + '<a href="/deep-tail.html">t</a>' + "</div>" * 10000 + "</body></html>"
    assert raw_links(load(html, "http://h.org/")) == ["/deep-tail.html"]


def test_dated_urls_and_pathological_paths():
    from blockcrawl.crawl.decisions.traps import dated, pathological, trail

    for u in ("http://a.org/calendar/2024/01/", "http://a.org/calendar/2024/01/05/", "http://a.org/2024/05/a-post/",
              "http://a.org/2024-05-17-post.html", "http://a.org/news/20240517/x", "http://a.org/ev?month=5&year=2024",
              "http://a.org/x?d=2024-05"):
        assert dated(u), u
    for u in ("http://a.org/s3/p3.html", "http://a.org/p2024.html", "http://a.org/x?id=2024", "http://a.org/archive/2024/",
              "http://a.org/x/12345678/", "http://a.org/y/2024/13/", "http://a.org/"):
        assert not dated(u), u
    month = "http://a.org/calendar/2024/01/"
    assert trail(month, 1, True, "http://a.org/calendar/2024/02/") == 2  # dated -> dated: one more hop
    assert trail("http://a.org/", 0, False, month) == 0  # the way in
    assert trail(month, 1, True, "http://b.org/calendar/2024/02/") == 0  # another host
    assert trail(month, 1, True, "http://a.org/about/") == 0
    assert pathological("http://a.org/a/b/b/b/c.html") and pathological("http://a.org/x/a/b/a/b/a/b/")
    assert pathological("http://a.org/" + "d/" * 20 + "e/" * 20) and pathological("http://a.org/" + "x" * 2100)
    assert not pathological("http://a.org/a/b/a/b/") and not pathological("http://a.org/a/a/") and not pathological("http://a.org/")


def test_resolver_cache_never_answers_for_another_page():
    """Regression: "http:page2.html" is relative to an http page (WHATWG), so its result depends
    on the page; the old cache keyed it by the href alone and sent b.example's link to a.example.
    And a base with no path lost its last character in the old cache key."""
    from blockcrawl.crawl.urls import resolve

    r = Resolver()
    assert r.resolve("http://a.example/dir/page1.html", "http:page2.html") == ("http://a.example/dir/page2.html", None)
    assert r.resolve("http://b.example/other/x.html", "http:page2.html") == ("http://b.example/other/page2.html", None)
    assert r.resolve("http://b.example/other/x.html", "http:/p.html") == ("http://b.example/p.html", None)
    assert r.resolve("http://site.examplf", "/x") == ("http://site.examplf/x", None)
    assert r.resolve("http://site.example", "/x") == ("http://site.example/x", None)
    assert r.resolve("http://site.examplf", "/x") == ("http://site.examplf/x", None)
    # another port or scheme is another origin; "/\\host" and "/\t/host" are network-path links
    assert r.resolve("http://site.example:8080/a/", "/x") == ("http://site.example:8080/x", None)
    assert r.resolve("https://site.example/a/", "/x") == ("https://site.example/x", None)
    assert r.resolve("http://site.example/a/", "/\\evil.example/x") == ("http://evil.example/x", None)
    assert r.resolve("http://site.example/a/", "/\t/evil.example/y") == ("http://evil.example/y", None)
    assert r.resolve("http://site.example/a/", "/x") == ("http://site.example/x", None)
    assert resolve("http://b.example/d/p.html", "http:page2.html") == "http://b.example/d/page2.html"


def test_numeric_and_unicode_hosts_get_their_standard_form():
    """Regression: the old code kept "0x7f.1" and "2130706433" as host names that the system
    resolver then turned into 127.0.0.1; the key now says what is fetched."""
    from blockcrawl.crawl.urls import resolve

    page = "http://public.example/p.html"
    for spelling in ("http://0x7f.1/", "http://2130706433/", "http://0177.0.0.1/", "http://127.1/", "http://0x7f000001/"):
        assert resolve(page, spelling) == "http://127.0.0.1/", spelling
    assert resolve(page, "http://faß.example/") == "http://xn--fa-hia.example/"
    assert resolve(page, "http://example.com\\@evil.example/") == "http://example.com/@evil.example/"
    assert resolve(page, "https:/example.com/x") == "https://example.com/x"  # scheme change: absolute
    assert resolve(page, "http:/example.com/x") == "http://public.example/example.com/x"  # same scheme: relative
    assert resolve(page, "http://[::127.0.0.1]/") == "http://[::7f00:1]/"
    assert resolve(page, "http://EXAMPLE.com./a/../b?utm_source=x&b=2&a=%7e") == "http://example.com/b?a=~&b=2"
    assert resolve(page, "http://user:pw@example.com/") == "http://example.com/"  # no credentials sent
    for bad in ("http://a\x00b.example/", "http://a b.example/", "http://exa%00mple.com/", "http://[::1/",
                "http://1.2.3.4.5/", "http://256.0.0.1/", "http://a.example:65536/", "http://xn--/", "http://a<b/"):
        assert resolve(page, bad) is None, bad


def test_wire_url_sends_exactly_the_key():
    """The request line a real server receives carries the canonical URL's bytes exactly; yarl's
    own re-quoting (without wire_url) would change some of them."""
    import asyncio

    import aiohttp

    from blockcrawl.crawl.urls import resolve, wire_url

    lines: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lines.append((await reader.readline()).rstrip(b"\r\n"))
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()

    hrefs = ["/a%2fb/%7Euser/x.html?q=%41%2b+b&z=%e2%82%ac", "/x|y^z[1]/{a}?k='v'", "/caf\u00e9/%zz?a=%3d%3D",
             "/s%3Bp;q/?b=1&a=a%20b", "/%5B%5D%7C?x=[]",
             "/a?b=%2F&c=%3F"]

    async def main() -> list[str]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}/dir/page.html"
        urls = [resolve(base, h) for h in hrefs]
        async with aiohttp.ClientSession() as s:
            for u in urls:
                assert u is not None
                async with s.get(wire_url(u)) as resp:
                    await resp.read()
            for u in urls:  # what aiohttp sends from a plain string
                async with s.get(u) as resp:
                    await resp.read()
        server.close()
        await server.wait_closed()
        return [u for u in urls if u]

    urls = asyncio.run(main())
    want = [b"GET " + u.split("/", 3)[3].join(["/", ""]).encode("ascii") + b" HTTP/1.1" for u in urls]
    assert lines[:len(urls)] == want
    # yarl re-quotes a plain string ("%3B" -> ";", "%zz" -> "%25zz", "|" -> "%7C", "%2F" -> "/"
    # in a query...): the server would be asked for another URL than the frontier key
    plain = lines[len(urls):]
    assert len(plain) == len(urls) and sum(a != b for a, b in zip(plain, want)) >= 4

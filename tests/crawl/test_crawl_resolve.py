"""crawl --resolve HOST:PORT:ADDR: a site crawled under a name DNS does not know (the site
benchmark serves each development site under its real host name on a loopback address)."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp.abc import AbstractResolver

from blockcrawl.crawl import CrawlConfig, crawl
from blockcrawl.crawl.net.resolve import StaticResolver, parse_resolve
from blockcrawl.errors import ConfigError
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.store import Store

from ..support.crawlsite import Route, Site, page

ROOT = Path(__file__).resolve().parents[2]


def test_parse_resolve():
    assert parse_resolve(["News.Example.ORG.:8080:127.0.1.5", "v6.example:80:[::1]"]) == {
        ("news.example.org", 8080): "127.0.1.5", ("v6.example", 80): "::1"}
    for bad in ("news.example.org:8080", "news.example.org:x:127.0.0.1", ":80:127.0.0.1",
                "a.example:80:not-an-ip", "a.example:0:127.0.0.1"):
        with pytest.raises(ValueError, match="HOST:PORT:ADDR"):
            parse_resolve([bad])
    with pytest.raises(ConfigError, match="resolve entry"):
        CrawlConfig(seeds=["http://a.example/"], resolve=["a.example:80"])


def test_static_resolver_answers_its_table_and_asks_the_inner_one_otherwise():
    class Inner(AbstractResolver):  # a stand-in for DNS that records what it was asked
        asked: list[str] = []

        async def resolve(self, host, port=0, family=0):  # type: ignore[no-untyped-def]
            self.asked.append(host)
            return []

        async def close(self) -> None:
            pass

    r = StaticResolver({("a.example", 80): "127.0.1.7"}, Inner())
    got = asyncio.run(r.resolve("A.example", 80))
    assert [(x["host"], x["port"], x["hostname"]) for x in got] == [("127.0.1.7", 80, "A.example")]
    assert asyncio.run(r.resolve("a.example", 8080)) == []  # another port: not in the table
    assert Inner.asked == ["a.example"]


def test_crawl_reaches_a_named_host_on_loopback(tmp_path):
    site = Site().start()
    try:
        o = f"http://news.sitebench.invalid:{site.port}"
        site.routes["/"] = Route(page("Front page of the news", [f"{o}/a/story.html", "/b.html"]))
        site.routes["/a/story.html"] = Route(page("A story", []))
        site.routes["/b.html"] = Route(page("Another story", []))
        store = Store(tmp_path / "r.db")
        stats = crawl(store, CrawlConfig(seeds=[o + "/"], progress=False, timeout=5.0, render="never", sitemaps=False,
                                         resolve=[f"news.sitebench.invalid:{site.port}:127.0.0.1"]),
                      PipelineConfig(tokenizer="words"))
        store.commit()
        urls = sorted(str(r["url"]) for r in store.records("pages"))
        store.close()
        assert stats.pages == 3, stats.summary()
        assert urls == [o + "/", o + "/a/story.html", o + "/b.html"]
        assert sorted(site.paths()) == ["/", "/a/story.html", "/b.html", "/robots.txt"]
    finally:
        site.stop()


def test_cli_names_a_bad_resolve_entry(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "blockcrawl", "crawl", "http://a.example/", "--store",
                        str(tmp_path / "x.db"), "--resolve", "a.example:80"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "blockcrawl crawl: --resolve entry 'a.example:80' is not HOST:PORT:ADDR (ADDR an IP address, "
        "e.g. example.org:80:127.0.0.1)"]

"""`blockcrawl mcp`: the store as tools for LLM agents, tried with the official SDK's own client, over
stdio (the client starts the command as its child, as an agent does) and over streamable HTTP, on a
store indexed with the real model."""
from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..support.crawlsite import Route, Site, page
from ..support.search_pages import PAGES, indexed

pytest.importorskip("mcp", reason="the mcp package (pip install 'blockcrawl[mcp]')")

from mcp import Client, StdioServerParameters  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
TIMEOUT = 240  # the child loads the model (~2 s alone, 20 s on two cores shared with a test run)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return indexed(tmp_path_factory.mktemp("mcp") / "site.db")


def stdio(store: Path) -> Client:
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "blockcrawl", "mcp", "--store", str(store)],
                                        env=ENV, cwd=str(ROOT)), read_timeout_seconds=TIMEOUT)


async def round_trip(client: Client) -> dict[str, Any]:
    """What an agent does first: list the tools, list the sites, search, read the page of the best hit,
    and make one mistake."""
    out: dict[str, Any] = {}
    async with client as c:
        tools = (await c.list_tools()).tools
        out["tools"] = {t.name: t for t in tools}
        out["sites"] = (await c.call_tool("list_sites", {})).structured_content
        r = await c.call_tool("search", {"query": "how long does bread dough rise before baking", "k": 3})
        out["search_error"], out["search"] = r.is_error, r.structured_content
        out["search_text"] = r.content[0].text if r.content else ""
        r = await c.call_tool("search", {"query": "SQLite database file", "k": 2, "site": "site.test",
                                         "context_tokens": 200, "mode": "keyword"})
        out["filtered"] = r.structured_content
        url = out["search"]["hits"][0]["url"]
        out["page"] = (await c.call_tool("fetch_page", {"url": url})).structured_content
        out["page_slice"] = (await c.call_tool("fetch_page", {"url": url, "start": 10, "max_chars": 20})).structured_content
        out["missing"] = await c.call_tool("fetch_page", {"url": "http://site.test/none"})
        out["bad"] = await c.call_tool("search", {"query": "bread", "mode": "fuzzy"})
    return out


def check(out: dict[str, Any]) -> None:
    assert set(out["tools"]) == {"search", "fetch_page", "list_sites"}
    schema = out["tools"]["search"].input_schema
    assert schema["required"] == ["query"] and {"k", "site", "url_prefix", "context_tokens"} <= set(schema["properties"])
    assert out["sites"] == {"sites": [{"site": "site.test", "pages": len(PAGES)}], "total_sites": 1}
    hits = out["search"]["hits"]
    assert not out["search_error"] and len(hits) == 3
    assert hits[0]["url"] == "http://site.test/cooking" and hits[0]["heading_path"] == ["Recipes", "Bread"]
    assert all(h["url"].startswith("http://site.test/") and h["text"] and h["score"] > 0 for h in hits)
    assert [h["rank"] for h in hits] == [1, 2, 3] and "http://site.test/cooking" in out["search_text"]
    f = out["filtered"]["hits"]
    assert f[0]["heading_path"] == ["Languages", "SQLite"] and "SQLite" in f[0]["context"]
    page = out["page"]
    assert page["url"] == "http://site.test/cooking" and page["title"] == "Kitchen notes" and not page["truncated"]
    assert "knead the dough" in page["text"] and "caramelise" in page["text"] and page["total_chars"] == len(page["text"])
    sl = out["page_slice"]
    assert sl["text"] == page["text"][10:30] and sl["start"] == 10 and sl["truncated"]
    assert out["missing"].is_error and "no page with URL" in out["missing"].content[0].text
    assert out["bad"].is_error and "mode must be one of" in out["bad"].content[0].text


def test_stdio_round_trip_with_the_sdk_client(store):
    check(asyncio.run(round_trip(stdio(store))))


@pytest.mark.slow
def test_streamable_http_round_trip(store):
    proc = subprocess.Popen([sys.executable, "-m", "blockcrawl", "mcp", "--store", str(store), "--http", "--port", "0"],
                            stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert m, line
        check(asyncio.run(round_trip(Client(m.group(0), read_timeout_seconds=TIMEOUT))))
        # DNS rebinding: a page on another site that resolves its name to 127.0.0.1 is refused
        conn = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=30)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        conn.request("POST", "/mcp", body, {"Host": "evil.example", "Content-Type": "application/json",
                                            "Accept": "application/json, text/event-stream"})
        r = conn.getresponse()
        assert r.status in (403, 421) and b"tools" not in r.read()
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


ZEPPELIN = {
    "/": Route(page("Airships", ["/a.html", "/b.html"], "Airships of the last century and the people who flew them.")),
    "/a.html": Route(page("Zeppelin", ["/"], "The zeppelin LZ 129 crossed the Atlantic in two and a half days.")),
    "/b.html": Route(page("Blimps", ["/"], "A blimp has no rigid frame; its envelope keeps its shape by gas pressure.")),
}


@pytest.mark.slow
def test_crawl_tool_only_when_allowed(tmp_path):
    """--allow-crawl adds a crawl tool: the agent crawls a (loopback) site, then finds its pages."""
    path = indexed(tmp_path / "site.db")
    site = Site(dict(ZEPPELIN)).start()
    client = Client(StdioServerParameters(
        command=sys.executable, args=["-m", "blockcrawl", "mcp", "--store", str(path), "--allow-crawl",
                                      "--crawl-max-pages", "5"], env=ENV, cwd=str(ROOT)), read_timeout_seconds=TIMEOUT)

    async def agent() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with client as c:
            out["tools"] = {t.name for t in (await c.list_tools()).tools}
            out["too_many"] = await c.call_tool("crawl", {"url": site.origin + "/", "max_pages": 6})
            out["bad_url"] = await c.call_tool("crawl", {"url": "ftp://example.com/"})
            r = await c.call_tool("crawl", {"url": site.origin + "/", "max_pages": 5})
            out["crawl_error"], out["crawl"] = r.is_error, r.structured_content or r.content[0].text
            out["search"] = (await c.call_tool("search", {"query": "zeppelin Atlantic crossing", "k": 1})).structured_content
            out["sites"] = (await c.call_tool("list_sites", {})).structured_content
        return out

    try:
        out = asyncio.run(agent())
    finally:
        site.stop()
    assert out["tools"] == {"search", "fetch_page", "list_sites", "crawl"}
    assert out["too_many"].is_error and out["bad_url"].is_error and "not an http(s) URL" in out["bad_url"].content[0].text
    assert not out["crawl_error"], out["crawl"]
    assert out["crawl"]["pages_fetched"] == 3 and out["crawl"]["store_pages"] == len(PAGES) + 3
    assert out["search"]["hits"][0]["url"] == site.origin + "/a.html"
    assert {s["site"] for s in out["sites"]["sites"]} == {"site.test", site.origin.split("//")[1]}
    assert {"/", "/a.html", "/b.html"} <= set(site.paths())


def test_cli_help_and_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "blockcrawl", "mcp", "--help"], capture_output=True, text=True, env=ENV,
                       timeout=60)
    assert r.returncode == 0 and "blockcrawl mcp --store site.db" in r.stdout and "fetch_page" in r.stdout
    r = subprocess.run([sys.executable, "-m", "blockcrawl", "mcp", "--store", str(tmp_path / "none.db")],
                       capture_output=True, text=True, env=ENV, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith("blockcrawl mcp: ")
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_lone_surrogate_in_the_query_gets_an_error_result(store):
    """A tools/call whose query holds a lone surrogate (valid JSON: "\\udce9") was never answered,
    neither result nor error: an agent waits for ever. Raw JSON-RPC over stdio, as an agent sends it."""
    proc = subprocess.Popen([sys.executable, "-m", "blockcrawl", "mcp", "--store", str(store)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None

    def send(obj: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps(obj).encode() + b"\n")  # ensure_ascii: the surrogate as \udce9
        proc.stdin.flush()

    answers: list[dict[str, Any]] = []

    def read_all() -> None:
        for line in proc.stdout:
            answers.append(json.loads(line))

    import threading
    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "search", "arguments": {"query": "caf\udce9 bread"}}})
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "search", "arguments": {"query": "bread dough", "k": 1}}})
        for _ in range(TIMEOUT * 10):
            if {a.get("id") for a in answers} >= {1, 2, 3}:
                break
            reader.join(0.1)
        by_id = {a.get("id"): a for a in answers}
        assert 2 in by_id, answers
        bad = by_id[2]
        assert bad["result"]["isError"] and "not valid text" in bad["result"]["content"][0]["text"], bad
        assert not by_id[3]["result"].get("isError"), by_id[3]  # and the server goes on answering
    finally:
        proc.kill()
        proc.wait(timeout=30)

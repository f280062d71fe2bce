"""The network side: one HTTP GET with the crawler's safety rails, and what goes on the wire.

* fetch.py - `AiohttpFetcher` (the default Fetcher): limits, redirects by hand, decoding.
* wire.py - the aiohttp connector and hooks that put the politeness gate at the socket.
* addresses.py, resolve.py - which IP addresses a crawl may connect to; `--resolve HOST:PORT:ADDR`.
* credentials.py - headers, cookies, per-host credentials, the proxy; secrets kept out of logs.
* render.py, chromium.py, appshell.py - `--render auto|always`: JavaScript pages in headless Chromium.
* memfetch.py - an in-memory Fetcher for engine tests and replays.
* webhook.py - `crawl --on-change URL`: the summary POSTed when a crawl finishes.
"""

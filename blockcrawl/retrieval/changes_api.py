"""GET /api/changes?since=&limit=&vectors=: the changes feed (blockcrawl.feed) over `blockcrawl serve`,
one page at a time: {"changes": [...], "next": "cursor:N", "more": bool}; pass "next" as since for
the page after. Bad since or limit -> 400; changes compacted away -> 410; vectors asked of a store
not indexed -> 503. Read on the server's search threads (the store's reads block)."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl

from ..errors import ConfigError, NotIndexed, StoreError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ..store import AnyStore

MAX_LIMIT = 5000


class Searcher(Protocol):
    """What the endpoint needs of serve's Searcher (named here, so serve alone imports the other)."""

    @property
    def store(self) -> AnyStore: ...
    @property
    def pool(self) -> Executor: ...

    def public(self, message: str) -> str: ...


def changes_endpoint(searcher: Searcher, json_response: Callable[..., Response]) -> Callable[[Request], Awaitable[Response]]:
    async def api_changes(request: Request) -> Response:
        try:
            params = dict(parse_qsl(request.scope["query_string"].decode("utf-8"), errors="strict"))
        except (ValueError, UnicodeDecodeError):
            return json_response(400, {"error": "malformed query string"})
        raw = params.get("limit", "500")
        if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_LIMIT):
            return json_response(400, {"error": f"limit must be an integer between 1 and {MAX_LIMIT}"})
        since, vectors = params.get("since") or "last", params.get("vectors", "") in ("1", "true")
        from ..feed import changes_page

        def read() -> dict[str, Any]:
            return changes_page(searcher.store, since, int(raw), vectors=vectors)
        try:
            page = await asyncio.get_running_loop().run_in_executor(searcher.pool, read)
        except ConfigError as e:
            return json_response(400, {"error": str(e)})
        except NotIndexed as e:
            return json_response(503, {"error": searcher.public(str(e))})
        except StoreError as e:
            return json_response(410, {"error": searcher.public(str(e))})
        return json_response(200, page)
    return api_changes

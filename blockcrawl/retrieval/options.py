"""What a search asks besides its query (SearchOptions) and the one check every search path runs
(validate): filters by host, URL prefix and page info (kind, language, published since), the
number of hits and the page of results, the per-page limit and the context a hit brings along.
A value that cannot be meant is a SearchError: one line for the user, HTTP 400 in serve."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import QueryError
from .context import MAX_CONTEXT_TOKENS

MODES = ("hybrid", "vector", "keyword")
MAX_K = 100
MAX_QUERY_CHARS = 1000
MAX_DEPTH = 300  # offset + k: hits reachable by paging (3x that many candidates per list at most)
PER_PAGE = 3  # default: at most this many hits from one URL (0 or None: no limit)
MAX_PER_PAGE = 100
MAX_CONTEXT_CHUNKS = 5
_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[\w]([\w.-]*[\w])?)(:[0-9]{1,5})?$")
_URL_START = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/?#]*)(.*)$", re.DOTALL)


class SearchError(QueryError):
    """Bad query or arguments: shown to the user as one line (HTTP 400 in serve)."""


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """Everything but the query: one record that the CLI, serve and Python callers fill alike.

    k: hits to return (1-100). mode: hybrid | vector | keyword. site: only URLs on this host or its
    subdomains ("example.com", "docs.example.com:8080"; a port must match). url_prefix: only URLs
    starting with this ("https://example.com/docs/"; scheme and host compared lower-case). offset:
    skip this many hits (offset + k <= 300). per_page: at most this many hits from one URL (default
    3; 0 or None: no limit). context: None, "block" (the hit's whole block) or 1-5 (that many
    neighbouring chunks of the page either side), returned in Hit.context. kind, lang, since: only
    pages whose stored page info (crawl, schema 5) has that kind (records.PAGE_KINDS: a page type),
    that language or a subtag of it ("en" takes "en-gb"), a published date on or after since (an
    ISO 8601 date, "2024-03-01"; pages without a date are left out). context_tokens: bound the
    context to this many tokens (16-8000), grown from the hit outward (retrieval/context.py); alone,
    the hit's block first, then the rest of its page."""

    k: int = 10
    mode: str = "hybrid"
    site: str | None = None
    url_prefix: str | None = None
    offset: int = 0
    per_page: int | None = PER_PAGE
    context: str | int | None = None
    kind: str | None = None
    lang: str | None = None
    since: str | None = None
    context_tokens: int | None = None

    def checked(self) -> SearchOptions:
        """These options validated and normalised (host lower-case, context "2" -> 2); SearchError
        (one line) for a value that cannot be meant."""
        k, offset, per_page = self.k, self.offset, self.per_page
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise SearchError(f"k must be between 1 and {MAX_K}")
        if self.mode not in MODES:
            raise SearchError(f"mode must be one of {', '.join(MODES)}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0 or offset + k > MAX_DEPTH:
            raise SearchError(f"offset must be between 0 and {MAX_DEPTH - k} (offset + k at most {MAX_DEPTH})")
        if per_page is not None and (isinstance(per_page, bool) or not isinstance(per_page, int)
                                     or not 0 <= per_page <= MAX_PER_PAGE):
            raise SearchError(f"per_page must be between 0 (no limit) and {MAX_PER_PAGE}")
        return SearchOptions(k, self.mode, _check_site(self.site), _check_prefix(self.url_prefix), offset,
                             per_page or None, _check_context(self.context), _check_kind(self.kind),
                             _check_lang(self.lang), _check_since(self.since),
                             _check_context_tokens(self.context_tokens))

    def page_filters(self) -> dict[str, str]:
        """The page-info filters set (for the store's pages_matching), none when unset: a store
        without them still answers a plain site / url_prefix filter."""
        return {n: v for n, v in (("kind", self.kind), ("lang", self.lang), ("since", self.since)) if v is not None}


def _check_site(site: str | None) -> str | None:
    if site is None:
        return None
    host = site.strip().lower().rstrip(".")
    if "/" in host or "@" in host:
        raise SearchError(f"site must be a host name such as example.com, not {site[:100]!r} "
                          "(for a URL use url_prefix)")
    if host and not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")  # URLs are stored with punycode hosts
        except UnicodeError:
            raise SearchError(f"site {site[:100]!r} is not a valid host name") from None
    if not _HOST.match(host):
        raise SearchError(f"site {site[:100]!r} is not a valid host name (such as example.com)")
    return host


def _check_prefix(prefix: str | None) -> str | None:
    if prefix is None:
        return None
    m = _URL_START.match(prefix.strip())
    if m is None or not m.group(2):
        raise SearchError(f"url_prefix must start with a scheme and host, such as https://example.com/docs/, "
                          f"not {prefix[:100]!r}")
    return m.group(1).lower() + m.group(2).lower() + m.group(3)


_LANG = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{1,8})*$")


def _check_kind(kind: str | None) -> str | None:
    from ..records import PAGE_KINDS

    if kind is None or kind == "":
        return None
    k = kind.strip().lower()
    if k not in PAGE_KINDS:
        raise SearchError(f"kind must be one of {', '.join(PAGE_KINDS)}, not {kind[:100]!r}")
    return k


def _check_lang(lang: str | None) -> str | None:
    if lang is None or lang == "":
        return None
    tag = lang.strip().lower().replace("_", "-")
    if not _LANG.match(tag):
        raise SearchError(f"lang must be a language tag such as en or pt-br, not {lang[:100]!r}")
    return tag


def _check_since(since: str | None) -> str | None:
    """An ISO 8601 date or date-time, kept as given (stored dates are ISO strings: they compare as
    text in time order when written alike)."""
    if since is None or since == "":
        return None
    from datetime import date, datetime

    s = since.strip()
    try:
        if len(s) == 10:
            date.fromisoformat(s)
        else:
            datetime.fromisoformat(s)
    except ValueError:
        raise SearchError(f"since must be an ISO 8601 date such as 2024-03-01, not {since[:100]!r}") from None
    return s


def _check_context(context: str | int | None) -> str | int | None:
    if context is None or context == "":
        return None
    if context == "block":
        return "block"
    n = context
    if isinstance(context, str) and context.isdigit():
        n = int(context)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_CONTEXT_CHUNKS:
        raise SearchError(f"context must be 'block' or a number of neighbouring chunks, 1-{MAX_CONTEXT_CHUNKS}")
    return n


def _check_context_tokens(n: int | str | None) -> int | None:
    if n is None or n == "":
        return None
    if isinstance(n, str) and n.isdigit():
        n = int(n)
    if isinstance(n, bool) or not isinstance(n, int) or not 16 <= n <= MAX_CONTEXT_TOKENS:
        raise SearchError(f"context_tokens must be a number of tokens, 16-{MAX_CONTEXT_TOKENS}")
    return n


def validate(query: str, k: int, mode: str) -> str:
    """The query stripped, or SearchError: every search path (library, CLI, its forwarding to a
    running serve, the HTTP API, MCP) passes here. A lone surrogate (a command-line byte that is not
    UTF-8, read by Python as U+DC80-U+DCFF; a JSON "\\udce9") is no text: the tokenizer raised a
    bare TypeError on it. U+FFFD is refused too: it is what the readers put for such bytes."""
    if not isinstance(query, str) or not query.strip():
        raise SearchError("empty query")
    if len(query) > MAX_QUERY_CHARS:
        raise SearchError(f"query too long ({len(query)} characters, at most {MAX_QUERY_CHARS})")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise SearchError("the query is not valid text (a byte that is not UTF-8, or a lone surrogate)") from None
    if "\ufffd" in query:  # what a reader put for such bytes (the MCP SDK, our MCP transport)
        raise SearchError("the query is not valid text (U+FFFD stands for bytes that were not UTF-8)")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise SearchError(f"k must be between 1 and {MAX_K}")
    if mode not in MODES:
        raise SearchError(f"mode must be one of {', '.join(MODES)}")
    return query.strip()

"""What each stage needs from a store, as typing.Protocols: the stages hold no SQL and name no backend.

SqliteStore (store.sqlite) and PostgresStore (store.postgres) implement all of them, through one
class that writes their SQL once (store.base.SqlStore; see docs/store.md, "Adding a backend").
Each protocol is the smallest set one stage calls:

- PageSink: the crawler stores pages (with their info and site models) and reloads a site's dedup
  state and learned model on --resume.
- ChunkSource: `index` reads the chunks that lack a vector and writes vectors back.
- VectorIndex, KeywordIndex (together SearchStore): `search` ranks chunks and reads the winners.
- RecordSource: `export` streams what a crawl stored.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..records import Block, Chunk, PageInfo

# what `export` can write, in --help order
RECORD_KINDS = ("chunks", "pages", "blocks", "frontier")


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk as search shows it: its text, where it sits, and its page's title. kind: its block's
    kind (records.Block.kind: "table" chunks begin with the table's label line), "" when the page
    was stored without blocks."""

    id: int
    url: str
    heading_path: tuple[str, ...]
    text: str
    title: str
    page_id: int = 0
    block_position: int = 0
    chunk_index: int = 0
    kind: str = ""


@runtime_checkable
class PageSink(Protocol):
    def save_page(self, url: str, blocks: list[Block], chunks: list[Chunk], *, final_url: str | None = None,
                  status: int = 200, content_type: str | None = None, title: str = "",
                  content_hash: str | None = None, markdown: str | None = None, etag: str | None = None,
                  last_modified: str | None = None, body_hash: str | None = None,
                  info: PageInfo | None = None) -> int:
        """Insert or replace a page with its blocks and chunks (and its Markdown, validators, page
        info, if given); returns the page id. No commit."""
        ...

    def replace_content(self, url: str, blocks: list[Block], chunks: list[Chunk], *, markdown: str | None = None,
                        content_hash: str | None = None, info: PageInfo | None = None) -> int | None:
        """Replace a stored page's blocks, chunks, Markdown, content hash and info, keeping its fetch
        columns (status, validators, fetch time, title): a page re-extracted by a newly learned site
        model. None when no page is stored at url. No commit."""
        ...

    def save_site_model(self, site: str, model: str, *, version: int, pages: int, fallbacks: int) -> None:
        """Store or replace a site's learned model (JSON). No commit."""
        ...

    def site_models(self) -> list[dict[str, object]]:
        """Every stored site model: site, version, model, learned_at, pages, fallbacks."""
        ...

    def commit(self) -> None:
        """Make everything saved since the last commit durable (pages and frontier rows together)."""
        ...

    def block_hashes(self, url_prefix: str | None = None) -> list[tuple[str, str]]:
        """(text, hash) of stored blocks in page order, only pages whose URL starts with url_prefix."""
        ...


@runtime_checkable
class ChunkSource(Protocol):
    def begin_index(self, model: str, dim: int) -> dict[str, str]:
        """Create the index structures if missing and record the model; vectors of another model or
        dimension are dropped (another space). Returns the index meta as it was before."""
        ...

    def chunks_to_embed(self, after: int = 0) -> list[tuple[int, str]]:
        """(chunk id, text) of chunks without a vector, heading-only blocks left out; after: only
        chunk ids above it, in id order."""
        ...

    def vector_keys(self) -> set[bytes]:
        """Keys of every stored vector (see index.schema.vector_key)."""
        ...

    def map_vectors(self, pairs: Iterable[tuple[int, bytes]]) -> None:
        """Point chunks at stored vectors: (chunk id, key)."""
        ...

    def save_vectors(self, keys: Sequence[bytes], vectors: npt.NDArray[np.float32],
                     chunk_ids: Sequence[Sequence[int]]) -> None:
        """Store vectors[i] under keys[i] and point chunk_ids[i] at it."""
        ...

    def drop_unused_vectors(self) -> int:
        """Delete vectors no chunk points at; returns how many."""
        ...

    def repair_vectors(self, dim: int) -> int:
        """Delete stored vectors that are not dim finite float32 values (a damaged row) and the
        chunk mappings left without a vector, so those chunks are embedded again; returns how many
        chunks lost their vector. No commit."""
        ...

    def clear_vectors(self) -> None:
        """Forget every vector: `index --rebuild`. No commit."""
        ...

    def finish_index(self, generation: int, indexed_at: float) -> None:
        """Record a completed index run and commit."""
        ...

    def count_chunks(self) -> int: ...

    def commit(self) -> None: ...


@runtime_checkable
class VectorIndex(Protocol):
    location: str  # for messages: a path, a DSN without password...
    cache_key: str  # one per stored index, for the in-process vector cache
    ann_base: Path | None  # where ANN side files live (None: this backend keeps none)

    def index_meta(self) -> dict[str, str]:
        """model, dim, generation, indexed_at; {} when the store was never indexed; NotIndexed while
        its first index run (another process) is going on."""
        ...

    def load_vectors(self, dim: int | None = None) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(chunk ids ascending, float32 matrix (n, dim)) of every chunk with a vector."""
        ...


@runtime_checkable
class KeywordIndex(Protocol):
    def keyword_ranked(self, query: str, n: int, pages: Sequence[int] | None = None) -> list[tuple[int, float]]:
        """The n best chunks for the query's words, best first, as (chunk id, score), higher better;
        with pages, only chunks of those pages (filtered before the top n is cut). Safe to call from
        another thread than the store's owner (search runs it beside the model)."""
        ...


@runtime_checkable
class SearchStore(VectorIndex, KeywordIndex, Protocol):
    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        """The chunks still in the store among ids (a re-crawl may have dropped some)."""
        ...

    def pages_matching(self, site: str | None = None, url_prefix: str | None = None, kind: str | None = None,
                       lang: str | None = None, since: str | None = None) -> list[int]:
        """Ids of the pages on host site (or a subdomain; lower-case) whose URL starts with url_prefix;
        kind, lang, since: only pages whose stored info has that kind, that language (or a subtag
        of it), a published date on or after since (ISO 8601)."""
        ...

    def chunk_pages(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(chunk ids ascending, page id of each) of every chunk."""
        ...

    def has_blocks(self) -> bool:
        """Whether any page was stored with blocks (a plain-text crawl stores chunks only)."""
        ...

    def block_texts(self, keys: Sequence[tuple[int, int]]) -> dict[tuple[int, int], str]:
        """Text of the blocks at (page id, position), those that exist."""
        ...

    def page_chunks(self, page_id: int) -> list[tuple[int, str]]:
        """(chunk id, text) of a page's chunks in reading order."""
        ...


@runtime_checkable
class RecordSource(Protocol):
    location: str

    def records(self, what: str) -> Iterator[dict[str, object]]:
        """Every stored record of a kind in RECORD_KINDS, as JSON-ready dicts, in storage order."""
        ...

"""Records passed between the stages. Plain frozen dataclasses: cheap, typed, JSON-friendly."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Block:
    """A run of text that belongs to one section of one page (seed 000)."""

    text: str  # what gets embedded: the body prefixed by its heading ("Germany: Germany, ...")
    body: str  # the text without the heading prefix
    heading_path: tuple[str, ...]  # enclosing headings, outermost first
    tag_path: str  # path of the container element, e.g. "html/body/div/div"
    position: int  # order of the block on its page
    url: str | None
    hash: str  # hash of the normalised text, the exact-duplicate key
    # "text"; "heading" for a heading whose section holds only sub-blocks; "record" for the page's facts
    # (extraction.records: "Name — Label: value | ..."); "table" for a data table
    # (body: header line, then one line per row, cells joined by " | "); "infobox" for a key/value
    # table (body: one "key: value" line per row)
    kind: str = "text"
    # a table's rows as lines that stand alone behind its header ("2003 | Octane | Natasha ..."
    # under "Year | Title | Role"; "Year: 2003 | Title: Octane | ..." where no header applies): the
    # units a table is chunked by, never cut between two chunks unless one row exceeds the size
    rows: tuple[str, ...] = ()
    caption: str = ""  # a table's <caption>, part of its text's prefix and of every chunk of it
    header: str = ""  # a table's header line, column names in order: the first line of each of its chunks

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["heading_path"] = list(self.heading_path)
        d["rows"] = list(self.rows)
        return d


def embedding_text(context: str, text: str) -> str:
    """What the model embeds for a chunk: its context line, " > ", then its text
    ("Mischa Barton > Filmography > Film: Year: 2003 | Title: Octane | ...")."""
    return f"{context} > {text}" if context else text


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a block sized for the embedding model; chunks of one block may overlap."""

    text: str
    url: str | None
    heading_path: tuple[str, ...]
    block_position: int
    chunk_index: int  # index of the chunk within its block
    block_hash: str
    n_tokens: int  # tokens of the text; with the context's, at most the chunk size
    # What the text lacks to stand alone: the page title and the headings above the one its prefix
    # shows ("Mischa Barton > Filmography"). Embedded with the text, stored apart from it, so the
    # text stays what the page says ("Film: ...") and search shows it as such.
    context: str = ""

    @property
    def embed_text(self) -> str:
        return embedding_text(self.context, self.text)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["heading_path"] = list(self.heading_path)
        return d


@dataclass(frozen=True, slots=True)
class PageMeta:
    """What a page says about itself, from <meta>, OpenGraph, JSON-LD, microdata and <time>
    (extraction.metadata). Strings, "" when the page does not say; dates as ISO 8601
    ("2024-03-05" or "2024-03-05T10:00:00+00:00"), language as a lower-case BCP 47 tag ("en", "pt-br")."""

    title: str = ""
    author: str = ""
    published: str = ""
    modified: str = ""
    language: str = ""
    description: str = ""
    canonical: str = ""
    site_name: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# page types of the page classifier (extraction.nfas): WCXB's seven, and "other" for a page with
# no text (and in stores crawled before the seven, for every page neither article nor listing)
PAGE_TYPES = ("article", "documentation", "service", "forum", "collection", "listing", "product")
PAGE_KINDS = (*PAGE_TYPES, "other")


@dataclass(frozen=True, slots=True)
class PageInfo:
    """Page-level results stored with a page (pages table) and exported by `export --what pages`.

    text: the page's main content as Document.text (before site dedup: what the page says).
    kind, kind_score: the page type (PAGE_KINDS, extraction.nfas) and its probability of "article";
    exported as page_type too.
    summary: a few key sentences of an article ("" for other kinds).
    cluster: the site-model cluster the page was extracted with; -1 when `auto` extracted it
    (no model yet, or the page fell back).
    """

    text: str = ""
    kind: str = ""
    kind_score: float = 0.0
    summary: str = ""
    meta: PageMeta = PageMeta()
    cluster: int = -1

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["meta"] = self.meta.to_dict()
        return d


@dataclass(slots=True)
class Document:
    """The extraction result for one page."""

    url: str | None
    title: str
    text: str  # main text, blocks joined by blank lines
    blocks: list[Block] = field(default_factory=list)
    algorithm: str = "blocks"
    info: PageInfo | None = None  # metadata, kind, summary (extraction.pageinfo)

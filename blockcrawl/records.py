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
    kind: str = "text"  # "text", or "heading" for a heading whose section holds only sub-blocks

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["heading_path"] = list(self.heading_path)
        return d


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a block sized for the embedding model; chunks of one block may overlap."""

    text: str
    url: str | None
    heading_path: tuple[str, ...]
    block_position: int
    chunk_index: int  # index of the chunk within its block
    block_hash: str
    n_tokens: int

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["heading_path"] = list(self.heading_path)
        return d


@dataclass(slots=True)
class Document:
    """The extraction result for one page."""

    url: str | None
    title: str
    text: str  # main text, blocks joined by blank lines
    blocks: list[Block] = field(default_factory=list)
    algorithm: str = "blocks"

"""One search result (Hit): what search() returns, what the context and the listing fill in."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(slots=True)
class Hit:
    chunk_id: int
    score: float
    url: str
    heading_path: list[str]
    text: str
    title: str = ""
    vector_rank: int | None = None  # 1-based rank in the vector list, None if not in it
    keyword_rank: int | None = None
    rank: int = 0  # 1-based position in the whole result list (offset + position on this page)
    snippet: str = ""  # up to ~240 characters of text around the query's words
    # [start, end) of each query word in snippet, in characters (code points: Python indices; in
    # JavaScript index Array.from(snippet), not the UTF-16 string)
    highlights: list[tuple[int, int]] = field(default_factory=list)
    context: str | None = None  # with SearchOptions.context: the block, or the neighbouring chunks

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["highlights"] = [list(h) for h in self.highlights]
        return d

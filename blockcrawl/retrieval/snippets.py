"""A hit's snippet: about SNIPPET_CHARS characters of its text around the densest run of the
query's words, and where each of those words is in it (for highlighting)."""
from __future__ import annotations

from .terms import WORD, fold

SNIPPET_CHARS = 240


def snippet(text: str, terms: frozenset[str], width: int = SNIPPET_CHARS) -> tuple[str, list[tuple[int, int]]]:
    """About `width` characters of text around the densest run of query words, cut at spaces, with
    "…" where text was cut, and the [start, end) of every query word inside it. Linear in the text:
    one pass of the word regex, then a two-pointer sweep over the matches."""
    spans = [m.span() for m in WORD.finditer(text) if fold(m.group()) in terms] if terms else []
    if len(text) <= width:
        return text, spans
    if spans:
        best, best_n, j = 0, 0, 0
        for i in range(len(spans)):  # the window starting at match i that holds the most matches
            j = max(j, i)
            while j + 1 < len(spans) and spans[j + 1][1] - spans[i][0] <= width:
                j += 1
            if j - i + 1 > best_n:
                best, best_n = i, j - i + 1
        start = max(0, spans[best][0] - width // 6)
        if start > 0:  # begin at a word
            sp = text.find(" ", start, spans[best][0])
            start = sp + 1 if sp != -1 else spans[best][0]
    else:
        start = 0
    end = min(len(text), start + width)
    if end < len(text):
        sp = text.rfind(" ", start, end)
        if sp > start:
            end = sp
    lead = "…" if start > 0 else ""
    out = lead + text[start:end]
    shift = len(lead) - start
    marks = [(a + shift, b + shift) for a, b in spans if a >= start and b <= end]
    return out + ("…" if end < len(text) else ""), marks

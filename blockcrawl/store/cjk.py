"""CJK text for the keyword index: runs of Chinese, Japanese and Korean characters as overlapping bigrams.

FTS5's unicode61 tokenizer (and pgsearch.tokens, its copy) keeps a run of letters as one token, and
Chinese and Japanese write no spaces: "東京都に住んでいます" was one token, so a search for 東京 inside
that sentence found nothing. Both backends therefore index split_cjk(text), in which every run of
CJK characters is written as its overlapping bigrams ("東京都" -> "東京 京都"), the scheme of
Lucene's CJKBigramFilter; a query word is split the same way and searched as a phrase, so 東京都
matches the adjacent bigrams 東京 京都 and not a text holding 東京 and 京都 apart. Text without CJK
characters is unchanged (same tokens, same bm25). A one-character query word matches the bigrams
that start with it (a prefix query): "猫" finds 猫が, not い猫.
"""
from __future__ import annotations

import re

# Han (unified ideographs, extension A, compatibility, extensions B-F and the supplement planes),
# the iteration marks 々〆〇, Hiragana, Katakana (with phonetic extensions and half-width forms), Hangul
# syllables and jamo
CJK_CLASS = ("\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
              "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f")
_RUN = re.compile(f"[{CJK_CLASS}]+")
_ONE = re.compile(f"[{CJK_CLASS}]")


def _bigrams(m: re.Match[str]) -> str:
    run = m.group()
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "


def split_cjk(text: str) -> str:
    """text with each CJK run as its bigrams, set apart by spaces from the letters around it
    (unicode61 would join "ABC" and "東京" into one token). Linear in the text; ASCII returns as is."""
    if text.isascii():
        return text
    return _RUN.sub(_bigrams, text)


def is_cjk_char(term: str) -> bool:
    """Whether term is a single CJK character (searched as a prefix of the bigrams)."""
    return len(term) == 1 and _ONE.match(term) is not None

"""Text from crawled pages made safe to print on a terminal: the one helper every text output uses
(`search`'s listing, `extract --format text|markdown`, `export --format markdown`). JSON output
escapes control characters itself and does not need it.

A page controls its text, headings, title and URL. Written raw to a terminal, an ESC sequence in
them clears the screen, recolours it, retitles the window or shows a fake hyperlink (OSC 8); a
backspace or a bare carriage return overwrites what was printed before it. Here escape sequences
(CSI, OSC with its BEL or ST terminator, and two-character ESC sequences, in their 7-bit and
8-bit forms) are removed whole, CRLF and a bare CR become a newline, and every other C0 or C1
control character (and DEL) is removed; newline and tab stay.
"""
from __future__ import annotations

import re

# OSC (ESC ] ... BEL | ESC \ ; or 0x9d), DCS/SOS/PM/APC strings (ESC P/X/^/_ ... ST), CSI (ESC [ or 0x9b
# ... final byte), then any other ESC with the character after it
_SEQUENCES = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|\x1b[\x20-\x7e]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # a quick test: anything to do at all


def plain(text: str) -> str:
    """text without terminal control: escape sequences removed whole, CR and CRLF made newlines,
    other control characters but newline and tab removed."""
    if not _UNSAFE.search(text):
        return text
    text = _SEQUENCES.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", text)


__all__ = ["plain"]

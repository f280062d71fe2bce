"""Bytes -> text: the charset comes from the HTTP header, the BOM, a <meta> tag, then detection.

Declared charsets are often wrong ("iso-1252", utf-8 pages holding cp1252 bytes), so every
declared candidate is tried strictly and the first that decodes wins; nothing raises.
"""
from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_META_RE = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:\-]+)""", re.IGNORECASE
)
_HEADER_RE = re.compile(r"""charset\s*=\s*["']?\s*([a-zA-Z0-9_.:\-]+)""", re.IGNORECASE)

# WHATWG encoding labels that differ from Python's codec names, plus common misspellings.
_ALIASES = {
    "iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252", "iso8859-1": "cp1252",
    "us-ascii": "cp1252", "ascii": "cp1252", "iso-1252": "cp1252", "windows-1252": "cp1252",
    "x-sjis": "shift_jis", "shift-jis": "shift_jis", "sjis": "shift_jis", "ms_kanji": "shift_jis",
    "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "euc-cn": "gb18030",
    "iso-8859-9": "cp1254", "tis-620": "cp874", "ks_c_5601-1987": "cp949", "euc-kr": "cp949",
    "utf8": "utf-8", "unicode": "utf-16-le", "x-user-defined": "cp1252",
}


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str  # the codec that produced text
    source: str  # "header" | "bom" | "meta" | "utf-8" | "detected" | "fallback"


def normalize_charset(label: str | None) -> str | None:
    """Map a charset label to a Python codec name, or None if unknown."""
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    name = _ALIASES.get(name, name)
    try:
        return codecs.lookup(name).name
    except LookupError:
        # "iso-1252" and friends: keep the digits, guess the family.
        m = re.search(r"(\d{3,4})$", name)
        if m and m.group(1).startswith("125"):
            return codecs.lookup("cp" + m.group(1)).name
        return None


def charset_from_content_type(content_type: str | None) -> str | None:
    if not content_type:
        return None
    m = _HEADER_RE.search(content_type)
    return m.group(1) if m else None


def _strict(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def decode_html(data: bytes, content_type: str | None = None) -> Decoded:
    """Decode an HTML body; never raises. NUL bytes are dropped."""
    if not data:
        return Decoded("", "utf-8", "fallback")
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return _clean(data[len(bom):].decode(codec, errors="replace"), codec, "bom")
    candidates: list[tuple[str, str]] = []
    header = normalize_charset(charset_from_content_type(content_type))
    if header:
        candidates.append((header, "header"))
    m = _META_RE.search(data[:8192])
    meta = normalize_charset(m.group(1).decode("ascii", "replace")) if m else None
    if meta:
        candidates.append((meta, "meta"))
    for codec, source in candidates:
        if codec.startswith("utf-16") or codec.startswith("utf-32"):
            continue  # a <meta> cannot truthfully declare these in an ASCII-compatible file
        text = _strict(data, codec)
        if text is not None:
            return _clean(text, codec, source)
    text = _strict(data, "utf-8")
    if text is not None:
        return _clean(text, "utf-8", "utf-8")
    detected = _detect(data)
    if detected:
        text = _strict(data, detected)
        if text is not None:
            return _clean(text, detected, "detected")
    codec = candidates[0][0] if candidates else "cp1252"
    return _clean(data.decode(codec, errors="replace"), codec, "fallback")


def _detect(data: bytes) -> str | None:
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    best = from_bytes(data[:65536]).best()
    return normalize_charset(best.encoding) if best else None


def _clean(text: str, codec: str, source: str) -> Decoded:
    if "\x00" in text:
        text = text.replace("\x00", "")
    return Decoded(text, codec, source)


def looks_binary(data: bytes) -> bool:
    """True for bodies that are clearly not text (images, PDFs, archives)."""
    head = data[:1024]
    if head.startswith((b"%PDF", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04", b"\x1f\x8b")):
        return True
    if not head:
        return False
    if any(head.startswith(b) for b, _ in _BOMS):
        return False
    control = sum(1 for b in head if b < 9 or 13 < b < 32)
    return control / len(head) > 0.1

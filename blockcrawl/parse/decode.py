"""Bytes -> text: the charset comes from the BOM, the HTTP header, a <meta> tag, then detection.

Declared charsets are often wrong ("iso-1252", utf-8 pages holding cp1252 bytes), so every
declared candidate is tried strictly and the first that decodes wins; nothing raises.

Only the labels of the WHATWG Encoding Standard are honoured (the table below, as browsers do):
through Python's codec lookup a page could ask for UTF-7, cp500 (EBCDIC) or unicode_escape and
get text no browser shows. Unknown labels are ignored and detection
proceeds. The "replacement" labels (iso-2022-kr, hz-gb-2312, iso-2022-cn...) decode, per the
spec, to a single U+FFFD: these encodings can hide markup, and no browser reads them.

Bodies that are not text at all (gzip, PNG, PDF, random bytes) are recognised by sniff_binary()
and never decoded: random bytes once became 52 chunks that filled 9 of the top 10 hits of an
unrelated query.
"""
from __future__ import annotations

import codecs
import re
import zlib
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

REPLACEMENT = "replacement"  # the WHATWG encoding that decodes any input to one U+FFFD
X_USER_DEFINED = "x-user-defined"

# WHATWG Encoding Standard (encoding.spec.whatwg.org, "Names and labels"): encoding -> labels.
# The key is the Python codec that implements it (the spec's Shift_JIS is windows-31j = cp932,
# its EUC-KR is windows-949 = cp949, its Big5 includes HKSCS, its GBK decoder is gb18030's).
_WHATWG: dict[str, tuple[str, ...]] = {
    "utf-8": ("unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8"),
    "cp866": ("866", "cp866", "csibm866", "ibm866"),
    "iso8859-2": ("csisolatin2", "iso-8859-2", "iso-ir-101", "iso8859-2", "iso88592", "iso_8859-2",
                  "iso_8859-2:1987", "l2", "latin2"),
    "iso8859-3": ("csisolatin3", "iso-8859-3", "iso-ir-109", "iso8859-3", "iso88593", "iso_8859-3",
                  "iso_8859-3:1988", "l3", "latin3"),
    "iso8859-4": ("csisolatin4", "iso-8859-4", "iso-ir-110", "iso8859-4", "iso88594", "iso_8859-4",
                  "iso_8859-4:1988", "l4", "latin4"),
    "iso8859-5": ("csisolatincyrillic", "cyrillic", "iso-8859-5", "iso-ir-144", "iso8859-5", "iso88595",
                  "iso_8859-5", "iso_8859-5:1988"),
    "iso8859-6": ("arabic", "asmo-708", "csiso88596e", "csiso88596i", "csisolatinarabic", "ecma-114",
                  "iso-8859-6", "iso-8859-6-e", "iso-8859-6-i", "iso-ir-127", "iso8859-6", "iso88596",
                  "iso_8859-6", "iso_8859-6:1987"),
    "iso8859-7": ("csisolatingreek", "ecma-118", "elot_928", "greek", "greek8", "iso-8859-7", "iso-ir-126",
                  "iso8859-7", "iso88597", "iso_8859-7", "iso_8859-7:1987", "sun_eu_greek"),
    "iso8859-8": ("csiso88598e", "csisolatinhebrew", "hebrew", "iso-8859-8", "iso-8859-8-e", "iso-ir-138",
                  "iso8859-8", "iso88598", "iso_8859-8", "iso_8859-8:1988", "visual",
                  # ISO-8859-8-I: the same bytes, logical order
                  "csiso88598i", "iso-8859-8-i", "logical"),
    "iso8859-10": ("csisolatin6", "iso-8859-10", "iso-ir-157", "iso8859-10", "iso885910", "l6", "latin6"),
    "iso8859-13": ("iso-8859-13", "iso8859-13", "iso885913"),
    "iso8859-14": ("iso-8859-14", "iso8859-14", "iso885914"),
    "iso8859-15": ("csisolatin9", "iso-8859-15", "iso8859-15", "iso885915", "iso_8859-15", "l9"),
    "iso8859-16": ("iso-8859-16",),
    "koi8-r": ("cskoi8r", "koi", "koi8", "koi8-r", "koi8_r"),
    "koi8-u": ("koi8-ru", "koi8-u"),
    "mac-roman": ("csmacintosh", "mac", "macintosh", "x-mac-roman"),
    "cp874": ("dos-874", "iso-8859-11", "iso8859-11", "iso885911", "tis-620", "windows-874"),
    "cp1250": ("cp1250", "windows-1250", "x-cp1250"),
    "cp1251": ("cp1251", "windows-1251", "x-cp1251"),
    "cp1252": ("ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819", "iso-8859-1",
               "iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1", "latin1",
               "us-ascii", "windows-1252", "x-cp1252"),
    "cp1253": ("cp1253", "windows-1253", "x-cp1253"),
    "cp1254": ("cp1254", "csisolatin5", "iso-8859-9", "iso-ir-148", "iso8859-9", "iso88599", "iso_8859-9",
               "iso_8859-9:1989", "l5", "latin5", "windows-1254", "x-cp1254"),
    "cp1255": ("cp1255", "windows-1255", "x-cp1255"),
    "cp1256": ("cp1256", "windows-1256", "x-cp1256"),
    "cp1257": ("cp1257", "windows-1257", "x-cp1257"),
    "cp1258": ("cp1258", "windows-1258", "x-cp1258"),
    "mac-cyrillic": ("x-mac-cyrillic", "x-mac-ukrainian"),
    "gb18030": ("chinese", "csgb2312", "csiso58gb231280", "gb2312", "gb_2312", "gb_2312-80", "gbk",
                "iso-ir-58", "x-gbk", "gb18030"),
    "big5hkscs": ("big5", "big5-hkscs", "cn-big5", "csbig5", "x-x-big5"),
    "euc_jp": ("cseucpkdfmtjapanese", "euc-jp", "x-euc-jp"),
    "iso2022_jp": ("csiso2022jp", "iso-2022-jp"),
    "cp932": ("csshiftjis", "ms932", "ms_kanji", "shift-jis", "shift_jis", "sjis", "windows-31j", "x-sjis"),
    "cp949": ("cseuckr", "csksc56011987", "euc-kr", "iso-ir-149", "korean", "ks_c_5601-1987",
              "ks_c_5601-1989", "ksc5601", "ksc_5601", "windows-949"),
    REPLACEMENT: ("csiso2022kr", "hz-gb-2312", "iso-2022-cn", "iso-2022-cn-ext", "iso-2022-kr"),
    "utf-16-be": ("unicodefffe", "utf-16be"),
    "utf-16-le": ("csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16", "utf-16le"),
    X_USER_DEFINED: ("x-user-defined",),
}
LABELS: dict[str, str] = {label: codec for codec, labels in _WHATWG.items() for label in labels}
# Python codec names (codecs.lookup(...).name) a detector may answer with and that we accept.
_PY_CODECS = {codecs.lookup(c).name: c for c in _WHATWG if c not in (REPLACEMENT, X_USER_DEFINED)}
_PY_CODECS.update({"ascii": "cp1252", "latin-1": "cp1252", "iso8859-1": "cp1252",
                   "shift_jis": "cp932", "gbk": "gb18030", "gb2312": "gb18030", "big5": "big5hkscs",
                   "euc_kr": "cp949"})
# x-user-defined: bytes 0x80-0xFF are U+F780-U+F7FF
_X_USER = {b: 0xF700 + b for b in range(0x80, 0x100)}

SNIFF_BYTES = 1445  # WHATWG MIME Sniffing: the resource header is at most 1,445 bytes
# WHATWG MIME Sniffing "binary data byte": 0x00-0x08, 0x0B, 0x0E-0x1A, 0x1C-0x1F.
_BINARY_BYTES = bytes([*range(0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_BINARY_RE = re.compile(b"[" + re.escape(_BINARY_BYTES) + b"]")
# Signatures of non-text formats (MIME Sniffing's image, audio/video, archive and font patterns,
# plus PDF/PostScript and the compressors a server may send without Content-Encoding). Only the
# distinctive ones: a two-letter one ("BM", "MZ") would catch text; the binary-byte rule takes those.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b\x08", "gzip"), (b"PK\x03\x04", "zip"), (b"PK\x05\x06", "zip"), (b"Rar!\x1a\x07", "rar"),
    (b"7z\xbc\xaf\x27\x1c", "7z"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"%PDF-", "pdf"), (b"%!PS-Adobe-", "postscript"), (b"\x89PNG\r\n\x1a\n", "png"),
    (b"GIF87a", "gif"), (b"GIF89a", "gif"), (b"\xff\xd8\xff", "jpeg"), (b"\x00\x00\x01\x00", "ico"),
    (b"OggS\x00", "ogg"), (b"\x1aE\xdf\xa3", "webm"), (b"wOFF", "woff"), (b"wOF2", "woff2"),
    (b"\x7fELF", "elf"), (b"\x00\x01\x00\x00\x00", "ttf"),
)
# Markup at the start of a body (after white space): MIME Sniffing's HTML/XML patterns ("<!DOCTYPE
# HTML", "<HTML", "<P", "<!--", "<?xml" ...) widened to any tag, so a page that begins with <meta> or
# <section> and holds one stray control byte is still read as HTML (NULs are dropped) - as before.
_MARKUP_RE = re.compile(rb"[\t\n\x0c\r ]*<[!?/a-zA-Z]")


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str  # the codec that produced text ("" for a binary body, "replacement")
    source: str  # "header" | "bom" | "meta" | "utf-8" | "detected" | "fallback" | "binary"
    binary: str | None = None  # why the body is not text (sniff_binary), None for text


def sniff_binary(data: bytes, content_type: str | None = None) -> str | None:
    """Why data is not text, or None if it may be. Follows WHATWG MIME Sniffing's rules for an
    unknown type, in order: a BOM (UTF-8/16/32) means text; markup at the start means HTML; a
    signature names the format ("gzip", "zlib", "png", "pdf"...); any binary data byte in the first
    1,445 bytes means "binary". Exception: UTF-16 without a BOM (NULs only, all in one byte
    column, or a header declaring UTF-16) is text. Runs in microseconds: only the head is read."""
    if not data:
        return None
    head = bytes(data[:SNIFF_BYTES])
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return None
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if _MARKUP_RE.match(head):
        return None
    if _is_zlib(head):
        return "zlib"
    if _BINARY_RE.search(head) is None:
        return None
    if _utf16_without_bom(head) or (
            (charset := LABELS.get((charset_from_content_type(content_type) or "").lower())) is not None
            and charset.startswith("utf-16")):
        return None
    return "binary"


def _is_zlib(head: bytes) -> bool:
    """A zlib stream header (CMF 0x78, FCHECK) that also inflates: "x^" alone starts text too."""
    if len(head) < 3 or head[0] != 0x78 or (head[0] << 8 | head[1]) % 31:
        return False
    try:
        zlib.decompressobj().decompress(head, 64)
    except zlib.error:
        return False
    return True


def _utf16_without_bom(head: bytes) -> str | None:
    """'utf-16-le'/'utf-16-be' when the only binary bytes are NULs, all in one byte column, and at
    least a quarter of the code units have one (ASCII-range text in UTF-16); else None."""
    if len(head) < 4 or _BINARY_RE.search(head.replace(b"\x00", b"")) is not None:
        return None
    even, odd = head[0::2].count(0), head[1::2].count(0)
    units = len(head) // 2
    if odd >= units // 4 and even == 0:
        return "utf-16-le"
    if even >= units // 4 and odd == 0:
        return "utf-16-be"
    return None


def looks_binary(data: bytes) -> bool:
    """True for bodies that are not text (images, PDFs, archives, random bytes): sniff_binary."""
    return sniff_binary(data) is not None


def normalize_charset(label: str | None) -> str | None:
    """Map a WHATWG encoding label to a Python codec name ("replacement" and "x-user-defined" are
    returned as such), or None for a label the Encoding Standard does not know."""
    if not label:
        return None
    return LABELS.get(label.strip().strip("\"'").strip().lower())


def charset_from_content_type(content_type: str | None) -> str | None:
    if not content_type:
        return None
    m = _HEADER_RE.search(content_type)
    return m.group(1) if m else None


def _decode(data: bytes, codec: str, errors: str = "strict") -> str:
    if codec == X_USER_DEFINED:
        return data.decode("latin-1").translate(_X_USER)
    return data.decode(codec, errors)


def _strict(data: bytes, codec: str) -> str | None:
    try:
        return _decode(data, codec)
    except (UnicodeDecodeError, LookupError):
        return None


def decode_html(data: bytes, content_type: str | None = None) -> Decoded:
    """Decode an HTML body; never raises. NUL bytes are dropped. A binary body (sniff_binary)
    decodes to "" with Decoded.binary saying why."""
    if not data:
        return Decoded("", "utf-8", "fallback")
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return _clean(data[len(bom):].decode(codec, errors="replace"), codec, "bom")
    binary = sniff_binary(data, content_type)
    if binary is not None:
        return Decoded("", "", "binary", binary)
    candidates: list[tuple[str, str]] = []
    header = normalize_charset(charset_from_content_type(content_type))
    if header:
        candidates.append((header, "header"))
    m = _META_RE.search(data[:8192])
    meta = normalize_charset(m.group(1).decode("ascii", "replace")) if m else None
    if meta:
        # a <meta> that an ASCII-compatible parser could read cannot truthfully say UTF-16:
        # the spec reads such a page as UTF-8
        candidates.append(("utf-8" if meta.startswith("utf-16") else meta, "meta"))
    utf16 = _utf16_without_bom(data[:SNIFF_BYTES])
    for codec, source in candidates:
        if codec == REPLACEMENT:
            return Decoded("\ufffd", REPLACEMENT, source)
        if codec.startswith("utf-16") and codec != utf16:
            continue  # a header saying UTF-16 over bytes that do not look like it: a lie
        text = _strict(data, codec)
        if text is not None:
            return _clean(text, codec, source)
    if utf16:
        text = _strict(data[: len(data) // 2 * 2], utf16)
        if text is not None:
            return _clean(text, utf16, "detected")
    text = _strict(data, "utf-8")
    if text is not None:
        return _clean(text, "utf-8", "utf-8")
    detected = _detect(data)
    if detected:
        text = _strict(data, detected)
        if text is not None:
            return _clean(text, detected, "detected")
    codec = next((c for c, _ in candidates if c != REPLACEMENT and not c.startswith("utf-16")), "cp1252")
    return _clean(_decode(data, codec, errors="replace"), codec, "fallback")


def _detect(data: bytes) -> str | None:
    """charset_normalizer's best guess among the encodings of the WHATWG table (it also knows
    EBCDIC, UTF-7...). On a tie it takes windows-1252, the spec's default fallback: a short
    French page is as "coherent" in cp1250 as in cp1252, and cp1250 turns "crème" into "crčme"."""
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    best: tuple[float, float] | None = None
    found: str | None = None
    for match in from_bytes(data[:65536]):
        key = (match.chaos, -match.coherence)
        if best is not None and key != best:
            break
        names = [match.encoding, *match.could_be_from_charset]
        codecs_ = [c for c in map(_whatwg_codec, names) if c is not None]
        if not codecs_:
            continue
        if best is None:
            best, found = key, codecs_[0]
        if "cp1252" in codecs_:
            return "cp1252"
    return found


def _whatwg_codec(name: str) -> str | None:
    """The codec of the WHATWG table for a Python codec name, or None."""
    codec = LABELS.get(name.lower().replace("_", "-")) or LABELS.get(name.lower())
    if codec is None:
        try:
            codec = _PY_CODECS.get(codecs.lookup(name).name)
        except LookupError:
            return None
    return codec if codec not in (REPLACEMENT, X_USER_DEFINED) else None


def _clean(text: str, codec: str, source: str) -> Decoded:
    if "\x00" in text:
        text = text.replace("\x00", "")
    return Decoded(text, codec, source)

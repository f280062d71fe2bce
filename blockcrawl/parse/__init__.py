"""Parse stage: bytes -> text (decode) -> flat DOM (dom; built by build and linear)."""
from .build import parse_html
from .decode import Decoded, decode_html, looks_binary, normalize_charset, sniff_binary
from .dom import TEXT, Dom

__all__ = [
    "TEXT",
    "Decoded",
    "Dom",
    "decode_html",
    "load",
    "looks_binary",
    "normalize_charset",
    "parse_html",
    "sniff_binary",
]


def load(source: str | bytes, url: str | None = None, content_type: str | None = None) -> Dom:
    """Parse HTML given as text or as raw bytes (decoded with the charset rules of decode_html).

    A body that is not text (sniff_binary: gzip, PNG, PDF, random bytes; for str input, binary
    control characters in its head) or in a "replacement" encoding gives an empty Dom whose
    `binary` says why: no text, no blocks, no chunks."""
    if isinstance(source, (bytes, bytearray)):
        decoded = decode_html(bytes(source), content_type)
        if decoded.binary is not None:
            return Dom(url=url, binary=decoded.binary)
        if decoded.encoding == "replacement":
            return Dom(url=url, binary="replacement-encoding")
        source = decoded.text
    else:
        binary = sniff_binary(source[:1445].encode("utf-8", "surrogatepass"))
        if binary is not None:
            return Dom(url=url, binary=binary)
    return parse_html(source, url)

"""Parse stage: bytes -> text (decode) -> flat DOM (dom)."""
from .decode import Decoded, decode_html, looks_binary, normalize_charset
from .dom import TEXT, Dom, parse_html

__all__ = ["Decoded", "Dom", "TEXT", "decode_html", "looks_binary", "normalize_charset", "parse_html", "load"]


def load(source: str | bytes, url: str | None = None, content_type: str | None = None) -> Dom:
    """Parse HTML given as text or as raw bytes (decoded with the charset rules of decode_html)."""
    if isinstance(source, (bytes, bytearray)):
        source = decode_html(bytes(source), content_type).text
    return parse_html(source, url)

"""Dates as pages write them -> ISO 8601 ("2024-03-05" or "2024-03-05T10:00:00+00:00").

A small parser rather than python-dateutil (not a dependency; its fuzzy parser accepts almost
anything, which for metadata is worse than saying nothing): the forms seen in <meta>, JSON-LD
and <time> are few - ISO 8601 and its compact form, RFC 822/1123 (email.utils, standard
library), "March 5, 2024" / "5 March 2024" (English, French, German, Spanish month names),
"05.03.2024" (day first), "2024/03/05", "03/05/2024" (month first, as US pages write it, unless
the first number is > 12). Input is cut to 80 characters, every pattern is anchored or linear:
bounded whatever the page writes. A value that is no date gives "".
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

MAX_LEN = 80
YEARS = (1900, 2100)

_MONTHS: dict[str, int] = {}
for _n, _names in enumerate((
        "jan january janvier januar enero ene", "feb february fevrier février februar febrero",
        "mar march mars märz maerz marzo", "apr april avril abril abr",
        "may mai mayo", "jun june juin juni junio", "jul july juillet juli julio",
        "aug august août aout agosto ago", "sep sept september septembre septiembre set",
        "oct october octobre oktober okt octubre", "nov november novembre noviembre",
        "dec december décembre decembre dezember dez diciembre dic"), start=1):
    for _w in _names.split():
        _MONTHS[_w] = _n

_TZ_NAMES = {"z": 0, "utc": 0, "gmt": 0, "ut": 0, "est": -300, "edt": -240, "cst": -360, "cdt": -300,
             "mst": -420, "mdt": -360, "pst": -480, "pdt": -420, "cet": 60, "cest": 120, "bst": 60}

_ISO = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,]\d{1,9})?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?|UTC|GMT)?", re.I)
_COMPACT = re.compile(r"(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})?)?(Z|[+-]\d{4})?", re.I)
_YMD = re.compile(r"(\d{4})[/.](\d{1,2})[/.](\d{1,2})")
_DMY_DOT = re.compile(r"(\d{1,2})\.\s?(\d{1,2})\.\s?(\d{4})")
_SLASH = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})")
_TEXT_DMY = re.compile(r"(\d{1,2})(?:st|nd|rd|th|er)?\.?\s+(?:of\s+|de\s+)?([^\W\d_]{3,10})\.?,?\s+(?:de\s+)?(\d{4})")
_TEXT_MDY = re.compile(r"([^\W\d_]{3,10})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})")
_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?\s*(am|pm|a\.m\.|p\.m\.)?"
                   r"\s*(z\b|utc|gmt|[+-]\d{2}:?\d{2}|[a-z]{3,4}\b)?", re.I)


def _offset(tz: str | None) -> int | None:
    """Minutes east of UTC of a zone as written ("Z", "+0530", "-05:00", "EST"), None if unknown."""
    if not tz:
        return None
    t = tz.lower()
    if t in _TZ_NAMES:
        return _TZ_NAMES[t]
    if t[0] in "+-" and t[1:3].isdigit():
        digits = t[1:].replace(":", "")
        hh, mm = int(digits[:2]), (int(digits[2:4]) if len(digits) >= 4 else 0)
        if hh > 14 or mm > 59:  # no such zone ("-7200" is a year, not an offset)
            return None
        return (hh * 60 + mm) * (1 if t[0] == "+" else -1)
    return None


def _iso(y: int, mo: int, d: int, h: int | None = None, mi: int = 0, s: int = 0,
         off: int | None = None) -> str:
    if not YEARS[0] <= y <= YEARS[1]:
        return ""
    try:
        dt = datetime(y, mo, d, h or 0, mi, s)
    except ValueError:
        return ""
    if h is None:
        return dt.date().isoformat()
    if off is None:
        return dt.isoformat()
    return dt.replace(tzinfo=timezone(timedelta(minutes=off))).isoformat()


def _clock(rest: str) -> tuple[int | None, int, int, int | None]:
    """(hour, minute, second, offset) of the first time of day in rest, hour None if none."""
    m = _TIME.search(rest)
    if not m:
        return None, 0, 0, None
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    ampm = (m.group(4) or "").replace(".", "").lower()
    if ampm == "pm" and h < 12:
        h += 12
    elif ampm == "am" and h == 12:
        h = 0
    if h > 23 or mi > 59 or s > 59:
        return None, 0, 0, None
    return h, mi, s, _offset(m.group(5))


def normalize_date(value: str) -> str:
    """ISO 8601 of a date as pages write it, "" if it is none.

    >>> normalize_date("Tue, 05 Mar 2024 10:00:00 GMT")
    '2024-03-05T10:00:00+00:00'
    >>> normalize_date("March 5, 2024"), normalize_date("05.03.2024")
    ('2024-03-05', '2024-03-05')
    """
    v = " ".join(value.split())[:MAX_LEN]
    if not v:
        return ""
    m = _ISO.match(v)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if m.group(4) is None:
            return _iso(y, mo, d)
        return _iso(y, mo, d, int(m.group(4)), int(m.group(5)), int(m.group(6) or 0), _offset(m.group(7)))
    m = _COMPACT.fullmatch(v)
    if m:
        h = int(m.group(4)) if m.group(4) else None
        return _iso(int(m.group(1)), int(m.group(2)), int(m.group(3)), h, int(m.group(5) or 0),
                    int(m.group(6) or 0), _offset(m.group(7)))
    if v[:1].isalpha() and "," in v[:5]:  # RFC 822 / 1123, as feeds and Last-Modified write it
        from email.utils import parsedate_tz

        t = parsedate_tz(v)
        if t is not None and t[0] >= 100:
            off = t[9]
            return _iso(t[0], t[1], t[2], t[3], t[4], t[5], None if off is None else off // 60)
    for rx, order in ((_YMD, "ymd"), (_DMY_DOT, "dmy"), (_SLASH, "mdy")):
        m = rx.match(v)
        if m:
            a, b, c = (int(g) for g in m.groups())
            if order == "ymd":
                y, mo, d = a, b, c
            elif order == "dmy":
                d, mo, y = a, b, c
            else:
                mo, d, y = (b, a, c) if a > 12 else (a, b, c)
            h, mi, s, off = _clock(v[m.end():])
            return _iso(y, mo, d, h, mi, s, off)
    low = v.lower()
    m = _TEXT_DMY.search(low)
    if m and m.group(2) in _MONTHS:
        h, mi, s, off = _clock(low[m.end():])
        return _iso(int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1)), h, mi, s, off)
    m = _TEXT_MDY.search(low)
    if m and m.group(1) in _MONTHS:
        h, mi, s, off = _clock(low[m.end():])
        return _iso(int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2)), h, mi, s, off)
    return ""

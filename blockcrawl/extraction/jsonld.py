"""A page's JSON-LD (schema.org in <script type="application/ld+json">), read once, bounded.

Shared by the articleBody fallback (auto.article_body) and the page metadata (metadata.page_meta),
so both see the same values under the same limits:
- at most MAX_BYTES of script text per page are parsed (json.loads is linear, ~10 ms a MB here;
  a 5 MB script is skipped whole, a page's real JSON-LD is a few KB, the longest articleBody
  seen on the development sets ~150 KB);
- a value nested deeper than the interpreter's recursion limit fails to parse (RecursionError,
  caught: the script is skipped);
- walks over the parsed values are iterative and visit at most MAX_NODES containers.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator

from ..parse import TEXT, Dom

# the schema.org types of one product, book or work: its properties are the page's facts
SCHEMA_TYPES = re.compile(r"^(?:https?://schema\.org/)?(?:Product|ProductGroup|ProductModel|IndividualProduct|"
                          r"Book|Vehicle|Car|SoftwareApplication|VideoGame|MusicAlbum|Movie)$")

MAX_BYTES = 2_000_000  # script characters parsed per page, all scripts together
MAX_NODES = 20_000  # dicts and lists visited by one walk

LD_TYPE = re.compile(r"application/ld\+json", re.I)


def script_text(dom: Dom, i: int) -> str:
    """The text of the <script> at i (its text nodes; a script holds one)."""
    tags, texts = dom.tag, dom.text
    return "".join(texts[k] for k in range(i + 1, dom.end[i]) if tags[k] == TEXT)


def is_ld_script(dom: Dom, i: int) -> bool:
    return dom.tag[i] == "script" and LD_TYPE.search(dom.get_attr(i, "type") or "") is not None


def parse_scripts(raws: list[str]) -> list[object]:
    """The parsed JSON values of the scripts' texts, within MAX_BYTES in all; a script that
    does not parse (or would pass the budget) is skipped."""
    out: list[object] = []
    budget = MAX_BYTES
    for raw in raws:
        if len(raw) > budget:
            continue
        budget -= len(raw)
        raw = raw.strip()
        if raw.startswith("<!--"):  # old pages wrap the script text in a comment
            raw = raw[4:].rsplit("-->", 1)[0]
        try:
            out.append(json.loads(raw))
        except (ValueError, RecursionError):
            continue
    return out


def ld_values(dom: Dom) -> list[object]:
    """The parsed JSON-LD values of the page (one per script that parses), in page order."""
    raws: list[str] = []
    i = dom.find("script")  # list.index: a C loop to each <script>
    while i >= 0:
        if is_ld_script(dom, i):
            raws.append(script_text(dom, i))
        i = dom.find("script", i + 1)
    return parse_scripts(raws)


def walk(values: list[object], limit: int = MAX_NODES) -> Iterator[dict[str, object]]:
    """Every dict inside values, outermost first (an @graph's members, nested authors, lists),
    in document order; iterative, at most `limit` containers visited."""
    stack: list[object] = list(reversed(values))
    seen = 0
    while stack and seen < limit:
        o = stack.pop()
        seen += 1
        if isinstance(o, dict):
            yield o
            kids = [v for v in o.values() if isinstance(v, (dict, list))]
            stack.extend(reversed(kids))
        elif isinstance(o, list):
            stack.extend(reversed([v for v in o if isinstance(v, (dict, list))]))


def article_bodies(values: list[object]) -> list[str]:
    """Every schema.org articleBody string in values."""
    return [b for d in walk(values) if isinstance(b := d.get("articleBody"), str)]

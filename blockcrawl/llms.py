"""`export --format llms.txt`: an llms.txt (llmstxt.org) for the crawled site, built from the store.

The file: `# title` (the site's home page title, else its host), `> summary` (the home page's
summary), then one `## section` per page kind (articles, listings, other pages; per host when the
store holds several), each page a line `- [title](url): note`, the note its summary or, without one,
its first section headings. Pure: `build` takes page records (export --what pages) and the headings
of each page; the command streams them from the store.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

SECTIONS = (("article", "Articles"), ("listing", "Listings"), ("other", "Pages"))
NOTE_CHARS = 200


def _one_line(text: str, limit: int = NOTE_CHARS) -> str:
    t = " ".join(str(text or "").split())
    return t if len(t) <= limit else t[:limit - 1].rsplit(" ", 1)[0] + "…"


def _md_text(text: str) -> str:
    """A title as Markdown link text: brackets escaped."""
    return _one_line(text, 120).replace("[", "\\[").replace("]", "\\]") or "untitled"


def build(pages: Iterable[Mapping[str, object]], headings: Mapping[str, list[str]]) -> str:
    """The llms.txt of these page records (url, title, kind, summary, status) in their order; headings:
    url -> the page's section headings (h2 level and below), for pages without a summary."""
    by_host: dict[str, dict[str, list[Mapping[str, object]]]] = {}
    home: dict[str, Mapping[str, object]] = {}
    for p in pages:
        url = str(p.get("url") or "")
        parts = urlsplit(url)
        host = parts.netloc
        if parts.path in ("", "/") and host not in home:
            home[host] = p
        kind = str(p.get("kind") or "other")
        kind = kind if kind in dict(SECTIONS) else "other"
        by_host.setdefault(host, {}).setdefault(kind, []).append(p)
    hosts = list(by_host)
    if len(hosts) == 1:
        h = home.get(hosts[0], {})
        title = _one_line(str(h.get("title") or hosts[0]), 120)
    else:
        title = f"{len(hosts)} sites" if hosts else "Empty crawl"
    lines = [f"# {title}", ""]
    summary = _one_line(str(home[hosts[0]].get("summary") or "")) if len(hosts) == 1 and hosts[0] in home else ""
    if summary:
        lines += [f"> {summary}", ""]
    for host in hosts:
        for kind, name in SECTIONS:
            group = by_host[host].get(kind)
            if not group:
                continue
            lines += [f"## {name}" + (f" ({host})" if len(hosts) > 1 else ""), ""]
            for p in group:
                url = str(p["url"])
                note = _one_line(str(p.get("summary") or "")) or _one_line("; ".join(headings.get(url, [])[:5]))
                lines.append(f"- [{_md_text(str(p.get('title') or url))}]({url})" + (f": {note}" if note else ""))
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"

"""`blockcrawl sites`: the site models a crawl learned (crawl --algorithm site), one line per site."""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

EXAMPLES = """examples:
  blockcrawl sites --store news.db
  blockcrawl sites --store news.db | jq '{site, clusters: [.clusters[] | {id, pages}]}'
  blockcrawl sites --store news.db --model | jq .model        the models' JSON as stored

JSON Lines fields: site (scheme://host[:port]), version (1, +1 each time the site was learned
again), learned_at (UTC, ISO 8601), pages (pages extracted with the model), fallbacks (those it
did not fit, extracted by auto), fallback_rate, format (the model's format version), clusters
(id, pages, patterns and the other plain values each cluster of the model states).
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("sites", help="list the site models a crawl learned (--algorithm site)",
                       description="One JSON line per site with a learned model: its page clusters, their "
                                   "pages and URL patterns, how often pages fell back to auto, version and time.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, metavar="PATH", help="SQLite store written by 'blockcrawl crawl'")
    p.add_argument("--model", action="store_true", help="add each model's JSON as stored (key model)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..store import open_store

    with open_store(args.store, create=False, readonly=True) as store:  # StoreError (missing, foreign, damaged): one line, exit 2
        rows = store.site_models()
        where = store.location  # a URL's password is not shown
        counts = cluster_pages(store.records("pages"), {str(r.get("site")) for r in rows}) if rows else {}
    if not rows:
        print(f"blockcrawl sites: no site models in {where} (they are learned by "
              "'blockcrawl crawl --algorithm site')", file=sys.stderr)
        return 0
    for row in rows:
        d = describe(row, with_model=args.model)
        seen = counts.get(str(row.get("site")), Counter())
        for c in d["clusters"]:  # pages stored with each cluster's patterns (the model says 0)
            if seen and isinstance(c.get("id"), int):
                c["pages"] = seen.get(c["id"], 0)
        d["pages_auto"] = seen.get(-1, 0)
        sys.stdout.write(json.dumps(d, ensure_ascii=False) + "\n")
    return 0


def cluster_pages(pages: Iterable[dict[str, object]], sites: set[str]) -> dict[str, Counter[int]]:
    """Stored pages per (site, cluster) from the pages' `cluster` column (-1: extracted by auto).
    One streamed pass over the pages: a 1M-page store is read once, never held."""
    out: dict[str, Counter[int]] = {}
    for rec in pages:
        parts = urlsplit(str(rec.get("url", "")))
        site = f"{parts.scheme}://{parts.netloc}".lower()
        if site in sites:
            c = rec.get("cluster")
            out.setdefault(site, Counter())[c if isinstance(c, int) else -1] += 1
    return out


def describe(row: dict[str, object], with_model: bool = False) -> dict[str, Any]:
    """A stored model row as the command shows it. The model's JSON is read leniently: its shape
    belongs to the learning algorithm (extraction.site) and may change with its "format"; only
    "clusters" (a list of objects, or an object of them by id) is looked into."""
    pages = _int(row.get("pages"))
    fallbacks = _int(row.get("fallbacks"))
    learned = row.get("learned_at")
    out: dict[str, Any] = {
        "site": row.get("site"),
        "version": row.get("version"),
        "learned_at": datetime.fromtimestamp(learned, UTC).isoformat(timespec="seconds")
        if isinstance(learned, (int, float)) else None,
        "pages": pages,
        "fallbacks": fallbacks,
        "fallback_rate": round(fallbacks / pages, 3) if pages else None,
    }
    raw = row.get("model")
    try:
        model = json.loads(str(raw)) if raw is not None else None
    except ValueError:
        model = None
        out["error"] = "the stored model is not JSON"
    if isinstance(model, dict):
        out["format"] = model.get("format")
        out["clusters"] = clusters(model.get("clusters"))
    else:
        out["clusters"] = []
    if with_model:
        out["model"] = model if model is not None else raw
    return out


def clusters(value: object) -> list[dict[str, Any]]:
    """id, pages (a count; a list of pages is counted), patterns, and the cluster's other plain
    values (strings, numbers, booleans): templates and feature vectors are left to --model."""
    items: list[tuple[object, object]]
    if isinstance(value, list):
        items = [(i, c) for i, c in enumerate(value)]
    elif isinstance(value, dict):
        items = list(value.items())
    else:
        return []
    out = []
    for key, c in items:
        if not isinstance(c, dict):
            continue
        d: dict[str, Any] = {"id": c.get("id", key)}
        n = c.get("pages")
        d["pages"] = len(n) if isinstance(n, list) else n
        pats = c.get("patterns")
        d["patterns"] = [str(p) if not isinstance(p, (str, dict)) else p for p in pats] if isinstance(pats, list) \
            else ([] if pats is None else [pats])
        for k, v in c.items():
            if k not in d and (v is None or isinstance(v, (str, int, float, bool))):
                d[k] = v
        out.append(d)
    return out


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0

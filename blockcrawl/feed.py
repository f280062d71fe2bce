"""What changed since a crawl, as operations another index applies: `blockcrawl.changes(store, since=...)`,
`blockcrawl changes` and `GET /api/changes` (docs/sync.md).

The store's change log (store.changelog) holds every page and chunk op of every crawl. The feed
since a point is their net effect: each chunk touched after it, once, in the order of its last
op - an "upsert" of the chunk as stored now (with --vectors its vector), or a "delete" of a
chunk that is no longer stored. So applying a feed twice changes nothing the second time, and
applying every feed in order to an empty index gives exactly `export --what chunks`.

`since`: "last" (the newest crawl's changes), a crawl id ("3": what crawls after crawl 3 changed;
"0": everything), "cursor:N" (after change N: a record's "seq", a page's "next" cursor), or an
ISO 8601 date or date-time (UTC unless it names an offset).
"""
from __future__ import annotations

import difflib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, NotIndexed

if TYPE_CHECKING:
    from .store import AnyStore

BATCH = 500


def parse_since(since: str | int) -> tuple[str, float]:
    """(kind, value) for store.change_bound; ConfigError (one line) for anything else."""
    s = str(since).strip()
    if s == "last":
        return "last", 0
    if s.isdigit():
        return "crawl", int(s)
    if s.startswith("cursor:") and s[7:].isdigit():
        return "cursor", int(s[7:])
    try:
        t = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
    except ValueError:
        raise ConfigError(f"--since {s!r}: give 'last', a crawl id, cursor:N or an ISO 8601 date/time (UTC)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return "time", t.timestamp()


def vector_list(blob: bytes) -> list[float]:
    """A float32 vector as JSON numbers of 9 significant digits: each reads back as the same float32."""
    import numpy as np

    return [float(f"{x:.9g}") for x in np.frombuffer(blob, dtype=np.float32).tolist()]


def _vector_model(store: AnyStore, after: int | None = None) -> str:
    """The index's model; NotIndexed, before anything is written, when the store was never indexed or
    a chunk the output holds (after: those changed since that seq) has no vector yet."""
    meta = store.index_meta()
    if "generation" not in meta:
        raise NotIndexed(f"{store.location} is not indexed: run 'blockcrawl index --store {store.location}' "
                         "before asking for vectors")
    if (n := store.missing_vectors(after)) != 0:
        raise NotIndexed(f"{n} chunks have no vector yet: run 'blockcrawl index --store {store.location}' first")
    return str(meta["model"])


def with_vectors(store: AnyStore, recs: list[dict[str, Any]], model: str) -> None:
    """Each record's "model" and "vector" (None for a heading-only chunk, which gets none);
    NotIndexed when another chunk has none yet (index has not run since the crawl)."""
    vecs = store.chunk_vectors([int(r["id"] if "id" in r else r["chunk_id"]) for r in recs])
    for r in recs:
        cid = int(r["id"] if "id" in r else r["chunk_id"])
        blob = vecs.get(cid)
        if blob is None and not r.get("heading_only"):
            raise NotIndexed(f"chunk {cid} has no vector yet: run 'blockcrawl index --store {store.location}' first")
        r["model"], r["vector"] = model, None if blob is None else vector_list(blob)


def _batches(store: AnyStore, after: int, limit: int | None) -> Iterator[list[tuple[int, int, str]]]:
    ops = store.chunk_ops(after, limit)
    for i in range(0, len(ops), BATCH):
        yield ops[i:i + BATCH]


def chunk_changes(store: AnyStore, after: int, *, vectors: bool = False,
                  limit: int | None = None) -> Iterator[dict[str, Any]]:
    """The chunk operations after change `after` (store.change_bound), at most limit of them."""
    model = _vector_model(store, after) if vectors else ""
    for batch in _batches(store, after, limit):
        now = store.feed_chunks([cid for _, cid, _ in batch])
        out: list[dict[str, Any]] = []
        for seq, cid, url in batch:
            rec = now.get(cid)
            if rec is None:
                out.append({"op": "delete", "seq": seq, "chunk_id": cid, "url": url})
                continue
            cid = rec.pop("id")
            out.append({"op": "upsert", "seq": seq, "chunk_id": cid, **rec})
        if vectors:
            with_vectors(store, [r for r in out if r["op"] == "upsert"], model)
        for r in out:
            r.pop("heading_only", None)
            yield r


def page_changes(store: AnyStore, after: int, *, diff: bool = False) -> Iterator[dict[str, Any]]:
    """Per page touched after change `after`: its status over the span (added, changed, unchanged,
    removed, with the reason), in the order of its last op; with diff, a unified diff of its main
    text from before the span to now."""
    pages: dict[str, dict[str, Any]] = {}
    for seq, crawl_id, url, op, reason, before in store.page_ops(after):
        p = pages.pop(url, None)  # re-inserted: the dict keeps the order of last ops
        if p is None:
            p = {"first": op, "ops": set(), "before": before if op in ("changed", "removed") else None}
        elif p["before"] is None and op in ("changed", "removed") and p["first"] != "added":
            p["before"] = before
        p["ops"].add(op)
        p.update(seq=seq, crawl_id=crawl_id, last=op, reason=reason)
        pages[url] = p
    now = store.pages_now(list(pages)) if pages else {}
    for url, p in pages.items():
        if p["last"] == "removed":
            status = "removed"
        elif p["first"] == "added":
            status = "added"
        else:
            status = "changed" if "changed" in p["ops"] else "unchanged"
        title, text = now.get(url, ("", ""))
        rec: dict[str, Any] = {"url": url, "status": status, "reason": p["reason"] if status == "removed" else None,
                               "title": title, "crawl_id": p["crawl_id"], "seq": p["seq"]}
        if diff:
            old = "" if p["first"] == "added" else (p["before"] if p["before"] is not None else text)
            rec["diff"] = "\n".join(difflib.unified_diff(str(old).splitlines(), text.splitlines(),
                                                         f"{url} (before)", url, lineterm=""))
        yield rec


def changes(store: AnyStore, since: str | int = "last", *, what: str = "chunks", vectors: bool = False,
            diff: bool = False) -> Iterator[dict[str, Any]]:
    """The changes feed since `since` (module doc): chunk operations, or with what="pages" a
    summary per page. ConfigError for a bad since, StoreError when it is older than compaction kept."""
    after = store.change_bound(*parse_since(since))
    if what == "pages":
        return page_changes(store, after, diff=diff)
    if what != "chunks":
        raise ConfigError(f"what={what!r}: 'chunks' or 'pages'")
    return chunk_changes(store, after, vectors=vectors)


def changes_page(store: AnyStore, since: str | int, limit: int, *, vectors: bool = False) -> dict[str, Any]:
    """One page of the chunk feed (GET /api/changes): at most limit operations, the cursor that
    goes on after them ("next": pass it as since) and whether more are waiting."""
    after = store.change_bound(*parse_since(since))
    ops = list(chunk_changes(store, after, vectors=vectors, limit=limit + 1))
    more = len(ops) > limit
    ops = ops[:limit]
    last = ops[-1]["seq"] if ops else max(after, 0)
    return {"changes": ops, "next": f"cursor:{last}", "more": more}


def export_vectors(store: AnyStore) -> Iterator[dict[str, Any]]:
    """`export --what chunks --vectors`: every chunk record with "model" and "vector" (float32; None
    for heading-only chunks), streamed in batches; NotIndexed when a chunk has no vector yet."""
    model = _vector_model(store)
    batch: list[dict[str, Any]] = []

    def flush() -> Iterator[dict[str, Any]]:
        heads = store.feed_chunks([int(r["id"]) for r in batch])
        for r in batch:
            r["heading_only"] = heads.get(int(r["id"]), {}).get("heading_only", False)
        with_vectors(store, batch, model)
        for r in batch:
            r.pop("heading_only")
            yield r

    for rec in store.records("chunks"):
        batch.append(rec)
        if len(batch) >= BATCH:
            yield from flush()
            batch = []
    if batch:
        yield from flush()

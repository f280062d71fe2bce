"""Keep a Qdrant collection in sync with a blockcrawl store, through Qdrant's own Python client.

    pip install 'blockcrawl[sync]'                     # qdrant-client
    blockcrawl crawl https://example.org/ --store site.db --index
    python examples/sync_qdrant.py --store site.db --qdrant ./qdrant-data       # first run: full load
    blockcrawl crawl --recrawl --index --store site.db
    python examples/sync_qdrant.py --store site.db --qdrant ./qdrant-data       # then: only the changes

Qdrant runs embedded here (`QdrantClient(path=...)`, no server); for a server pass its URL to
`QdrantClient(url=...)` instead, nothing else changes. Each chunk is a point whose id is blockcrawl's
chunk id, with its vector (named "dense", dot product: the vectors are unit length, and Qdrant's
cosine would store them re-normalised) and the export record's fields as payload. Heading-only
chunks have no vector in blockcrawl and none here. The cursor of the last sync is kept in
`<qdrant path>/blockcrawl-sync.json`; a sync reads `blockcrawl.changes(store, since=cursor,
vectors=True)` (docs/sync.md) and applies each upsert and delete in order, so a sync interrupted
half way is simply run again.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import blockcrawl
from blockcrawl.feed import export_vectors

VECTOR = "dense"
FIELDS = ("url", "block_position", "chunk_index", "heading_path", "text", "block_hash", "n_tokens")
BATCH = 256


def _points(records: Iterable[dict[str, Any]]) -> Iterator[tuple[str, Any]]:
    """("upsert", PointStruct) or ("delete", chunk id) for feed or export records, in order."""
    from qdrant_client import models

    for r in records:
        cid = int(r["chunk_id"] if "chunk_id" in r else r["id"])
        if r.get("op") == "delete":
            yield "delete", cid
            continue
        payload = {k: r[k] for k in FIELDS} | {"model": r.get("model"), "title": r.get("title", "")}
        if "page" in r:
            payload["page"] = r["page"]
        vector = {VECTOR: r["vector"]} if r.get("vector") is not None else {}
        yield "upsert", models.PointStruct(id=cid, vector=vector, payload=payload)


def _apply(client: Any, collection: str, ops: Iterable[tuple[str, Any]]) -> int:
    """Send the operations in order, consecutive upserts (or deletes) batched together."""
    from qdrant_client import models

    n, kind = 0, ""
    batch: list[Any] = []

    def flush() -> None:
        if batch and kind == "upsert":
            client.upsert(collection, points=batch)
        elif batch:
            client.delete(collection, points_selector=models.PointIdsList(points=batch))

    for k, item in ops:
        if k != kind or len(batch) >= BATCH:
            flush()
            kind, batch = k, []
        batch.append(item)
        n += 1
    flush()
    return n


def sync(store: str, qdrant: str | Path, collection: str = "blockcrawl") -> dict[str, Any]:
    """Bring the collection up to date with the store; returns what was done."""
    from qdrant_client import QdrantClient, models

    state_file = Path(qdrant) / "blockcrawl-sync.json"
    client = QdrantClient(path=str(qdrant))
    try:
        with blockcrawl.open_store(store, readonly=True) as st:
            meta = st.index_meta()
            last = st.last_seq()  # taken first: what changes meanwhile is applied again next time
            state = json.loads(state_file.read_text()) if state_file.exists() else None
            if state is None or not client.collection_exists(collection):
                if client.collection_exists(collection):
                    client.delete_collection(collection)
                client.create_collection(collection, vectors_config={
                    VECTOR: models.VectorParams(size=int(meta["dim"]), distance=models.Distance.DOT)})
                n, how = _apply(client, collection, _points(export_vectors(st))), "full load"
            else:
                feed = blockcrawl.changes(st, since=state["cursor"], vectors=True)
                n, how = _apply(client, collection, _points(feed)), "changes"
        state_file.write_text(json.dumps({"cursor": f"cursor:{last}", "model": meta.get("model")}))
        return {"how": how, "operations": n, "cursor": f"cursor:{last}", "points": client.count(collection).count}
    finally:
        client.close()


def dump(qdrant: str | Path, collection: str = "blockcrawl") -> dict[int, dict[str, Any]]:
    """Every point as an export record (`blockcrawl export --what chunks --vectors`): id -> record."""
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(qdrant))
    out: dict[int, dict[str, Any]] = {}
    try:
        offset = None
        while True:
            points, offset = client.scroll(collection, limit=1000, offset=offset, with_payload=True, with_vectors=True)
            for p in points:
                vec = (p.vector or {}).get(VECTOR) if isinstance(p.vector, dict) else p.vector
                payload = p.payload or {}
                out[int(p.id)] = {"id": int(p.id), **{k: payload[k] for k in FIELDS}, "model": payload["model"],
                                  "vector": None if vec is None else [float(f"{x:.9g}") for x in vec]}
            if offset is None:
                return out
    finally:
        client.close()


def main() -> None:
    p = argparse.ArgumentParser(description="Sync a blockcrawl store into an embedded Qdrant collection.")
    p.add_argument("--store", required=True, help="the blockcrawl store (indexed: crawl --index, or index)")
    p.add_argument("--qdrant", required=True, help="folder of the embedded Qdrant database")
    p.add_argument("--collection", default="blockcrawl")
    a = p.parse_args()
    print(json.dumps(sync(a.store, a.qdrant, a.collection)))


if __name__ == "__main__":
    main()
